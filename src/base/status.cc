#include "gpuscope/status.h"

#include <string>

namespace gpuscope {

Status Status::InputError(const std::string& file, uint64_t byte_offset, const std::string& what,
                          const std::string& hint) {
  std::string message = file + ": at byte " + std::to_string(byte_offset) + ": " + what;
  if (!hint.empty()) message += " (hint: " + hint + ")";
  return Error(StatusCode::kInvalidInput, std::move(message));
}

void CheckFailed(const char* file, int line, const char* expr) {
  std::fprintf(stderr, "gpuscope: internal error: CHECK(%s) failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace gpuscope
