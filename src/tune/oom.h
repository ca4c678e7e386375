// Out of memory is a result, not a failure: a trial ran out of device memory when its output
// holds one of the messages the frameworks print (the table below: text → framework), or when it
// failed while a GPU's memory was at its limit.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace gpuscope::tune {

struct OomPattern {
  std::string_view text;       // found anywhere in a line of stdout or stderr (case-sensitive)
  std::string_view framework;  // who prints it
};

// The table, most specific first (a line is matched against each in turn).
std::span<const OomPattern> OomPatterns();

// The first pattern found in `line`, or nullptr.
const OomPattern* MatchOom(std::string_view line);

// PyTorch's cap of this process when the message names one: "… 13.98 GiB allowed; …" is printed
// when torch.cuda.set_per_process_memory_fraction (or PYTORCH_CUDA_ALLOC_CONF's per-process
// fraction) limited the caching allocator below the device's memory — the cap ran out, not the
// GPU (the H200 lab's tune run: 13.98 GiB allowed, 126.35 GiB free). In GiB; nullopt otherwise.
std::optional<double> PerProcessCapGib(std::string_view message);

// A trial that failed (exit code ≠ 0) while a GPU's used memory reached this share of its total
// ran out of memory, whatever it printed (a framework that dies without its message, or one we do
// not know). 0.97: the CUDA context and allocator slack keep used memory a little below total
// even when an allocation failed.
inline constexpr double kMemoryAtLimitShare = 0.97;

}  // namespace gpuscope::tune
