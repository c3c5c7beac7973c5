#include "agentcompile/server/api_error.h"

#include "agentcompile/core/json.h"

namespace ac::server {

std::string error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 503: return "service_unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string error_body(int status, const std::string& message, const std::string& param, const std::string& code) {
  Json e = {{"message", message},
            {"type", error_type(status)},
            {"param", param.empty() ? Json(nullptr) : Json(param)},
            {"code", code.empty() ? Json(nullptr) : Json(code)}};
  return Json{{"error", e}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace ac::server
