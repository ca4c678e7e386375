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
  // one_line: the elements on one line ("[0, 4, 0, 1520000]"), for short tuples of which a
  // document holds many.
  JsonWriter& BeginArray(bool one_line = false);
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  // Numbers. An integer with |v| ≤ 2^53 is written as an integer literal: every JSON reader holds
  // it exactly. Beyond 2^53 a number is written with an exponent (1.731295583e+18), because readers
  // that keep numbers as doubles (JavaScript, our HTML report) round larger integer literals
  // silently, int64 readers fail above 2^63 and simdjson rejects integer literals above 2^64.
  // Int and Uint keep every digit in that form, so the text stays exact.
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  // `decimals` fixed digits for |value| ≤ 2^53; beyond it the shortest exponent form that reads
  // back as the same double; NaN and ±inf → null.
  JsonWriter& Double(double value, int decimals = 6);
  // The shortest text that reads back as the same double ("0.3", "3.0147658855571522e+19").
  JsonWriter& ShortestDouble(double value);
  // Always an integer literal, exact over all of int64. Only for data files that gpuscope reads
  // back itself with an int64 parser (the monitor recording's unix-ns times, all above 2^53);
  // reports use Int.
  JsonWriter& ExactInt(int64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  const std::string& str() const { return out_; }

  static void AppendEscaped(std::string* out, std::string_view s);
  // The number forms of Int, Uint and Double, for code that builds JSON text by hand.
  static void AppendInt(std::string* out, int64_t value);
  static void AppendUint(std::string* out, uint64_t value);
  static void AppendDouble(std::string* out, double value, int decimals);

  // 2^53: the largest magnitude below which every integer is exact in a double.
  static constexpr uint64_t kMaxExactInteger = uint64_t{1} << 53;

 private:
  void BeforeValue();
  void Newline();
  std::string out_;
  int indent_;
  struct Level {
    bool is_object;
    bool first;
    bool one_line = false;
  };
  std::vector<Level> stack_;
  bool after_key_ = false;
};

}  // namespace gpuscope::render
