#include "api/options.h"

#include <fmt/format.h>

namespace gpuscope::api {

std::string PythonName(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

std::string FormatNumber(double v) { return fmt::format("{}", v); }

}  // namespace gpuscope::api
