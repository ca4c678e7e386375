#include "render/json_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/utf8.h"

namespace gpuscope::render {

void JsonWriter::AppendEscaped(std::string* out, std::string_view s) {
  out->push_back('"');
  AppendUtf8Escaped(
      s, out, "\\ufffd",
      [](unsigned char c, std::string* o) {
        if (AppendListedEscape(kJsonShortEscapes, c, o)) return;
        // Controls must be escaped; < > & are, so the JSON can be embedded in an HTML <script>
        // block safely.
        if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&') {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o->append(buf);
        } else {
          o->push_back(static_cast<char>(c));
        }
      },
      [](std::string_view seq, std::string* o) { o->append(seq); });
  out->push_back('"');
}

void JsonWriter::Newline() {
  if (indent_ <= 0) return;
  out_.push_back('\n');
  out_.append(stack_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!stack_.empty()) {
    const bool first = stack_.back().first;
    stack_.back().first = false;
    if (stack_.back().one_line) {
      if (!first) out_.append(indent_ > 0 ? ", " : ",");
      return;
    }
    if (!first) out_.push_back(',');
    Newline();
  }
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  stack_.push_back({true, true});
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  const bool empty = stack_.back().first;
  stack_.pop_back();
  if (!empty) Newline();
  out_.push_back('}');
  if (stack_.empty() && indent_ > 0) out_.push_back('\n');
  return *this;
}

JsonWriter& JsonWriter::BeginArray(bool one_line) {
  BeforeValue();
  out_.push_back('[');
  stack_.push_back({false, true, one_line});
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  const bool empty = stack_.back().first, one_line = stack_.back().one_line;
  stack_.pop_back();
  if (!empty && !one_line) Newline();
  out_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  AppendEscaped(&out_, key);
  out_.append(indent_ > 0 ? ": " : ":");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendEscaped(&out_, value);
  return *this;
}

namespace {

// `magnitude` > 2^53 with every digit kept: 1731295583000000000 → 1.731295583e+18.
void AppendExponentForm(std::string* out, bool negative, uint64_t magnitude) {
  const std::string digits = std::to_string(magnitude);
  size_t last = digits.find_last_not_of('0');  // magnitude > 0, so there is one
  if (negative) out->push_back('-');
  out->push_back(digits[0]);
  if (last > 0) {
    out->push_back('.');
    out->append(digits, 1, last);
  }
  out->append("e+");
  out->append(std::to_string(digits.size() - 1));
}

}  // namespace

void JsonWriter::AppendInt(std::string* out, int64_t value) {
  // Magnitude in uint64: −INT64_MIN does not fit in int64.
  const uint64_t magnitude =
      value < 0 ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  if (magnitude <= kMaxExactInteger)
    out->append(std::to_string(value));
  else
    AppendExponentForm(out, value < 0, magnitude);
}

void JsonWriter::AppendUint(std::string* out, uint64_t value) {
  if (value <= kMaxExactInteger)
    out->append(std::to_string(value));
  else
    AppendExponentForm(out, false, value);
}

void JsonWriter::AppendDouble(std::string* out, double value, int decimals) {
  if (!std::isfinite(value)) {
    out->append("null");
    return;
  }
  char buf[64];
  if (std::fabs(value) <= static_cast<double>(kMaxExactInteger)) {
    // At most 16 integer digits, so `decimals` up to 40 fit.
    std::snprintf(buf, sizeof buf, "%.*f", std::clamp(decimals, 0, 40), value);
    out->append(buf);
    return;
  }
  // Shortest round-trip form, e.g. 3.0147658855571522e+19: %.*f would print 20 or more
  // integer digits of which only the first 17 mean anything.
  const auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  out->append(buf, r.ptr);
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  AppendInt(&out_, value);
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  AppendUint(&out_, value);
  return *this;
}

JsonWriter& JsonWriter::ExactInt(int64_t value) {
  BeforeValue();
  out_.append(std::to_string(value));
  return *this;
}

JsonWriter& JsonWriter::Double(double value, int decimals) {
  if (!std::isfinite(value)) return Null();
  BeforeValue();
  AppendDouble(&out_, value, decimals);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_.append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_.append("null");
  return *this;
}

JsonWriter& JsonWriter::ShortestDouble(double value) {
  if (!std::isfinite(value)) return Null();
  BeforeValue();
  const size_t start = out_.size();
  out_ += fmt::format("{}", value);
  // "3" would read back as an integer: a double keeps its point, so a value's kind round-trips.
  if (out_.find_first_of(".eE", start) == std::string::npos) out_ += ".0";
  return *this;
}

}  // namespace gpuscope::render
