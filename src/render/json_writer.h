// A small streaming JSON writer. Output is valid JSON for any input bytes: strings are escaped and
// invalid UTF-8 becomes U+FFFD, so names from a trace can never break the contract.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::render {

class JsonWriter {
 public:
  explicit JsonWriter(int indent = 2) : indent_(indent) {}
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value, int decimals = 6);
  // The shortest text that reads back as the same double ("0.3", "3.0147658855571522e+19").
  JsonWriter& ShortestDouble(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  const std::string& str() const { return out_; }

  static void AppendEscaped(std::string* out, std::string_view s);

 private:
  void BeforeValue();
  void Newline();
  std::string out_;
  int indent_;
  struct Level {
    bool is_object;
    bool first;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace gpuscope::render
