// Status and Result<T>: the error channel of the whole library. No exception crosses the API.
//
// A Status for bad input names the file, the byte offset (or line), what was expected and a hint,
// so the CLI can print it as one line and exit 2. Programmer errors use GPUSCOPE_CHECK instead.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gpuscope {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidInput,  // the input is not what we can read (bad file, bad JSON, not a trace)
  kNotFound,      // missing file or directory
  kIoError,       // read failure from the OS
  kUsage,         // bad command-line usage
  kInternal,
};

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(StatusCode code, std::string message) {
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    return s;
  }
  // Bad input located in a file: "FILE: at byte N: WHAT (hint: HINT)".
  static Status InputError(const std::string& file, uint64_t byte_offset, const std::string& what,
                           const std::string& hint);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* expr);

}  // namespace gpuscope

#define GPUSCOPE_CHECK(expr) ((expr) ? (void)0 : ::gpuscope::CheckFailed(__FILE__, __LINE__, #expr))

// The one way to pass a failure up (issue 34: 150 hand-written early returns had two shapes):
//   GPUSCOPE_RETURN_IF_ERROR(WriteHeader(out));        // a Status: returned when not ok
//   GPUSCOPE_TRY(model, LoadModelConfig(path));        // a Result: declared, its status returned
//   use(*model);                                       // when not ok
// The function returns Status or any Result<T> (a Status converts to both).
#define GPUSCOPE_RETURN_IF_ERROR(expr)                                        \
  do {                                                                        \
    if (::gpuscope::Status gpuscope_status_ = (expr); !gpuscope_status_.ok()) \
      return gpuscope_status_;                                                \
  } while (0)
#define GPUSCOPE_TRY(name, expr) \
  auto name = (expr);            \
  if (!name.ok()) return name.status()
