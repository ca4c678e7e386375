// What `gpuscope tune` varies and how it reads its flags: --param NAME=V1,V2,… (a list, tried in
// the order given) and NAME=pow2:LO..HI (a batch-size-like integer: doubled from LO, bisected
// between the last size that fitted and the first that ran out of memory); {NAME} placeholders
// in the command; durations ("60s", "20m"), the plateau threshold ("5%") and the warm-up ("2"
// values or "10s"). docs/tune.md has the rules; every error says what was expected, with an
// example.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope::tune {

enum class ParamKind : uint8_t { kList, kPow2 };

struct Param {
  std::string name;  // [A-Za-z_][A-Za-z0-9_]*: also the environment variable GPUSCOPE_<NAME>
  ParamKind kind = ParamKind::kList;
  std::vector<std::string> values;  // kList: the values as given, in order
  int64_t lo = 0, hi = 0;           // kPow2: the range, lo ≥ 1, hi ≥ lo
};

// One point of the search: param name → value (as text, as it goes into the command).
using Setting = std::map<std::string, std::string>;

// "BATCH=pow2:8..512", "WORKERS=0,1,2,4". Errors (kUsage) name the text and show an example.
Result<Param> ParseParam(std::string_view text);

// Checks a set of params: at least one, names unique.
Status CheckParams(const std::vector<Param>& params);

// The placeholder that names the trial's trace folder (--traces): {TRACE_DIR}.
inline constexpr std::string_view kTraceDirPlaceholder = "TRACE_DIR";

// Every {NAME} in the command must name a param (or TRACE_DIR when `traces`); "{{" and "}}" are
// a literal brace. kUsage naming the unknown placeholder and the params there are.
Status CheckPlaceholders(const std::vector<std::string>& command, const std::vector<Param>& params,
                         bool traces);

// The command with {NAME} replaced by the setting's value and {TRACE_DIR} by `trace_dir`.
std::vector<std::string> Substitute(const std::vector<std::string>& command, const Setting& setting,
                                    const std::string& trace_dir);

// "GPUSCOPE_BATCH=64" for each param of the setting (and GPUSCOPE_TRACE_DIR when given).
std::vector<std::string> SettingEnvironment(const Setting& setting, const std::string& trace_dir);

// The first value of every param: where the search starts (the baseline "first value").
Setting FirstSetting(const std::vector<Param>& params);

// "BATCH=64 WORKERS=4", in the params' order.
std::string SettingText(const Setting& setting, const std::vector<Param>& params);

// "90s", "1.5m", "20m", "1h", "500ms" → ns (> 0). A unit is required.
Result<int64_t> ParseTuneDuration(std::string_view text, std::string_view flag);

// "5%" or "5" → 0.05; between 0 and 100 %.
Result<double> ParsePercent(std::string_view text, std::string_view flag);

// The warm-up left out of every trial's throughput: the first `count` metric values (or step
// lines, or profiler steps), or everything in the first `ns` of the trial.
struct Warmup {
  int64_t count = 2;
  int64_t ns = 0;  // > 0: a time, and count is 0
};
// "2" (values) or "10s" (a time).
Result<Warmup> ParseWarmup(std::string_view text);

}  // namespace gpuscope::tune
