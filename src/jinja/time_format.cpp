// strftime_now's formatting: the reference understands only a few directives (%Y %m %d %b %B
// %H %M %%) and leaves any other one as written; month names are English (en-US).
#include <string>

#include "agentcompile/jinja/template.h"

namespace ac::jinja {

std::string format_time_like_reference(std::string_view format, const std::tm& t) {
  static const char* const kLong[] = {"January", "February", "March",     "April",   "May",      "June",
                                      "July",    "August",   "September", "October", "November", "December"};
  static const char* const kShort[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  auto pad2 = [](int n) { return (n < 10 ? "0" : "") + std::to_string(n); };
  const int month = t.tm_mon >= 0 && t.tm_mon < 12 ? t.tm_mon : 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      out.push_back(format[i]);
      continue;
    }
    switch (format[i + 1]) {
      case 'Y': out += std::to_string(t.tm_year + 1900); break;
      case 'm': out += pad2(t.tm_mon + 1); break;
      case 'd': out += pad2(t.tm_mday); break;
      case 'b': out += kShort[month]; break;
      case 'B': out += kLong[month]; break;
      case 'H': out += pad2(t.tm_hour); break;
      case 'M': out += pad2(t.tm_min); break;
      case '%': out += '%'; break;
      default: out.push_back('%'); continue;
    }
    ++i;
  }
  return out;
}

}  // namespace ac::jinja
