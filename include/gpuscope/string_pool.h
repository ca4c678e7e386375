// Interned strings: every name in the model is a 32-bit id into one pool per trace.
// Kernel and op names repeat thousands of times; interning makes the tables small and compares
// cheap.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpuscope {

using StringId = uint32_t;
inline constexpr StringId kEmptyString = 0;  // id 0 is always ""

class StringPool {
 public:
  StringPool();
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;
  StringPool(StringPool&&) noexcept = default;
  StringPool& operator=(StringPool&&) noexcept = default;

  StringId Intern(std::string_view s);
  // The id of `s` if it is interned already, else kNotInterned (readers check new strings only).
  static constexpr StringId kNotInterned = UINT32_MAX;
  StringId Find(std::string_view s) const {
    auto it = index_.find(s);
    return it == index_.end() ? kNotInterned : it->second;
  }
  std::string_view Get(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  // Bytes held by the pool's text blocks (for memory accounting).
  size_t text_bytes() const { return text_bytes_; }

 private:
  // Text lives in fixed blocks that never move, so the string_views stay valid.
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = 0;
  size_t block_size_ = 0;
  size_t text_bytes_ = 0;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StringId> index_;
};

}  // namespace gpuscope
