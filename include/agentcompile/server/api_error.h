#pragma once
// Errors as the OpenAI API reports them: an HTTP status and the body
// {"error": {"message", "type", "param", "code"}}.
#include <stdexcept>
#include <string>

namespace ac::server {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "", std::string code = "")
      : std::runtime_error(message), status(status), message(std::move(message)), param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string message, param, code;
};

// "invalid_request_error" (400, 404, 413), "authentication_error" (401), ...
std::string error_type(int status);
// The JSON body; `param` and `code` are null when empty.
std::string error_body(int status, const std::string& message, const std::string& param = "",
                       const std::string& code = "");
inline std::string error_body(const ApiError& e) { return error_body(e.status, e.message, e.param, e.code); }

}  // namespace ac::server
