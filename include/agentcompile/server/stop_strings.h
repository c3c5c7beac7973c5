#pragma once
// Generated text with the request's stop strings cut out. Text that could still be the start of a
// stop string is held back until later text decides, so a stop string is never sent, not even
// split across two stream chunks; pieces pushed whole UTF-8 characters come out whole.
#include <string>
#include <string_view>
#include <vector>

namespace ac::server {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Adds text; returns what may be sent now. Once a stop string has appeared, stopped() is true,
  // the text before it is the last returned, and later pushes return nothing.
  std::string push(std::string_view text);
  // The text held back, at the end of a generation that met no stop string.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace ac::server
