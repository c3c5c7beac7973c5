#include "agentcompile/server/http_server.h"

namespace ac::server {

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return &v;
  return nullptr;
}

}  // namespace ac::server
