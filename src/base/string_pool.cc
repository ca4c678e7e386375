#include "gpuscope/string_pool.h"

#include <algorithm>
#include <cstring>

namespace gpuscope {

namespace {
constexpr size_t kBlockBytes = 1 << 20;  // 1 MiB text blocks; larger strings get their own block
}

StringPool::StringPool() {
  views_.emplace_back();
  index_.emplace(std::string_view(), 0);
}

StringId StringPool::Intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  char* dst;
  if (s.size() > kBlockBytes / 4) {
    blocks_.emplace_back(new char[s.size()]);
    dst = blocks_.back().get();
    // Keep the current small-string block as the active one by swapping it back to the end.
    if (blocks_.size() >= 2) std::swap(blocks_[blocks_.size() - 1], blocks_[blocks_.size() - 2]);
  } else {
    if (blocks_.empty() || block_used_ + s.size() > block_size_) {
      blocks_.emplace_back(new char[kBlockBytes]);
      block_size_ = kBlockBytes;
      block_used_ = 0;
    }
    dst = blocks_.back().get() + block_used_;
    block_used_ += s.size();
  }
  if (!s.empty()) std::memcpy(dst, s.data(), s.size());
  text_bytes_ += s.size();
  std::string_view stored(dst, s.size());
  const StringId id = static_cast<StringId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return id;
}

}  // namespace gpuscope
