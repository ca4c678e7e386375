#include "tune/params.h"

#include <cmath>
#include <set>

#include "base/numbers.h"

namespace gpuscope::tune {

namespace {

constexpr const char* kParamExample =
    " (expected NAME=V1,V2,… or NAME=pow2:LO..HI, e.g. --param WORKERS=0,1,2,4 or "
    "--param BATCH=pow2:8..512)";

Status Usage(std::string message) { return Status::Error(StatusCode::kUsage, std::move(message)); }

bool IsNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

bool IsName(std::string_view s) {
  if (s.empty() || !IsNameStart(s[0])) return false;
  for (char c : s)
    if (!IsNameChar(c)) return false;
  return true;
}

// Calls `on_placeholder(name)` for every {NAME} of `arg` and `on_text(piece)` for the text
// between them ("{{" → "{", "}}" → "}"). A "{" not followed by a name and "}" is text.
template <typename OnText, typename OnName>
void ScanPlaceholders(std::string_view arg, OnText on_text, OnName on_placeholder) {
  size_t i = 0;
  while (i < arg.size()) {
    if (arg.compare(i, 2, "{{") == 0 || arg.compare(i, 2, "}}") == 0) {
      on_text(arg.substr(i, 1));
      i += 2;
      continue;
    }
    if (arg[i] == '{') {
      const size_t close = arg.find('}', i + 1);
      if (close != std::string_view::npos && IsName(arg.substr(i + 1, close - i - 1))) {
        on_placeholder(arg.substr(i + 1, close - i - 1));
        i = close + 1;
        continue;
      }
    }
    on_text(arg.substr(i, 1));
    ++i;
  }
}

}  // namespace

Result<Param> ParseParam(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos)
    return Usage("--param \"" + std::string(text) + "\" has no '='" + kParamExample);
  Param p;
  p.name = std::string(text.substr(0, eq));
  if (!IsName(p.name))
    return Usage("--param \"" + std::string(text) + "\": \"" + p.name +
                 "\" is not a name (letters, digits and _, not starting with a digit)" +
                 kParamExample);
  const std::string_view spec = text.substr(eq + 1);
  if (spec.substr(0, 5) == "pow2:") {
    const std::string_view range = spec.substr(5);
    const size_t dots = range.find("..");
    int64_t lo = 0, hi = 0;
    if (dots == std::string_view::npos ||
        ParseInt64(range.substr(0, dots), &lo) != NumberError::kOk ||
        ParseInt64(range.substr(dots + 2), &hi) != NumberError::kOk)
      return Usage("--param \"" + std::string(text) +
                   "\": pow2 needs a range of whole numbers LO..HI" + kParamExample);
    // 2^40: far beyond any batch size; keeps doubling clear of overflow.
    if (lo < 1 || hi < lo || hi > (int64_t{1} << 40))
      return Usage("--param \"" + std::string(text) +
                   "\": pow2 needs 1 ≤ LO ≤ HI (e.g. pow2:8..512)" + kParamExample);
    p.kind = ParamKind::kPow2;
    p.lo = lo;
    p.hi = hi;
    return p;
  }
  p.kind = ParamKind::kList;
  size_t start = 0;
  std::set<std::string> seen;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string value(TrimSpace(spec.substr(start, comma - start)));
    if (value.empty())
      return Usage("--param \"" + std::string(text) + "\": an empty value" + kParamExample);
    if (!seen.insert(value).second)
      return Usage("--param \"" + std::string(text) + "\": \"" + value + "\" is listed twice");
    p.values.push_back(value);
    start = comma + 1;
  }
  return p;
}

Status CheckParams(const std::vector<Param>& params) {
  if (params.empty())
    return Usage("nothing to tune: give at least one --param" + std::string(kParamExample));
  std::set<std::string> names;
  for (const Param& p : params) {
    if (!names.insert(p.name).second) return Usage("--param " + p.name + " is given twice");
    if (p.name == kTraceDirPlaceholder)
      return Usage("--param " + p.name + ": the name is taken by the trace folder ({TRACE_DIR})");
  }
  return Status::Ok();
}

Status CheckPlaceholders(const std::vector<std::string>& command, const std::vector<Param>& params,
                         bool traces) {
  std::string known;
  for (const Param& p : params) known += (known.empty() ? "" : ", ") + p.name;
  if (traces) known += ", TRACE_DIR";
  for (const std::string& arg : command) {
    Status bad;
    ScanPlaceholders(
        arg, [](std::string_view) {},
        [&](std::string_view name) {
          if (!bad.ok()) return;
          if (traces && name == kTraceDirPlaceholder) return;
          for (const Param& p : params)
            if (p.name == name) return;
          bad =
              Usage("the command's {" + std::string(name) + "} names no --param (known: " + known +
                    (name == kTraceDirPlaceholder ? "; {TRACE_DIR} needs --traces" : "") +
                    "; a literal brace is written {{ or }})");
        });
    if (!bad.ok()) return bad;
  }
  return Status::Ok();
}

std::vector<std::string> Substitute(const std::vector<std::string>& command, const Setting& setting,
                                    const std::string& trace_dir) {
  std::vector<std::string> out;
  for (const std::string& arg : command) {
    std::string s;
    ScanPlaceholders(
        arg, [&](std::string_view t) { s += t; },
        [&](std::string_view name) {
          if (name == kTraceDirPlaceholder && !trace_dir.empty()) {
            s += trace_dir;
            return;
          }
          const auto it = setting.find(std::string(name));
          // Checked beforehand (CheckPlaceholders); kept as written otherwise.
          if (it != setting.end()) {
            s += it->second;
          } else {
            s += '{';
            s += name;
            s += '}';
          }
        });
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> SettingEnvironment(const Setting& setting, const std::string& trace_dir) {
  std::vector<std::string> env;
  for (const auto& [name, value] : setting) env.push_back("GPUSCOPE_" + name + "=" + value);
  if (!trace_dir.empty()) env.push_back("GPUSCOPE_TRACE_DIR=" + trace_dir);
  return env;
}

Setting FirstSetting(const std::vector<Param>& params) {
  Setting s;
  for (const Param& p : params)
    s[p.name] = p.kind == ParamKind::kPow2 ? std::to_string(p.lo) : p.values.front();
  return s;
}

std::string SettingText(const Setting& setting, const std::vector<Param>& params) {
  std::string out;
  for (const Param& p : params) {
    const auto it = setting.find(p.name);
    if (it == setting.end()) continue;
    out += (out.empty() ? "" : " ") + p.name + "=" + it->second;
  }
  return out;
}

Result<int64_t> ParseTuneDuration(std::string_view text, std::string_view flag) {
  int64_t ns = 0;
  // 1 ms … 30 days.
  if (ParseDurationNs(text, &ns) != NumberError::kOk || ns < 1'000'000 ||
      ns > 30 * 86'400'000'000'000)
    return Usage(std::string(flag) + " \"" + std::string(text) +
                 "\" is not a duration (hint: e.g. 90s, 5m, 1.5h, 500ms)");
  return ns;
}

Result<double> ParsePercent(std::string_view text, std::string_view flag) {
  std::string_view t = TrimSpace(text);
  if (!t.empty() && t.back() == '%') t.remove_suffix(1);
  double v = 0;
  if (ParseDouble(t, &v) != NumberError::kOk || !(v >= 0 && v <= 100))
    return Usage(std::string(flag) + " \"" + std::string(text) +
                 "\" is not a percentage from 0 to 100 (hint: e.g. 5%)");
  return v / 100;
}

Result<Warmup> ParseWarmup(std::string_view text) {
  Warmup w;
  int64_t n = 0;
  if (ParseInt64(TrimSpace(text), &n) == NumberError::kOk) {
    if (n < 0 || n > 1'000'000)
      return Usage("--warmup \"" + std::string(text) + "\": a count from 0 to 1,000,000");
    w.count = n;
    return w;
  }
  auto ns = ParseTuneDuration(text, "--warmup");
  if (!ns.ok())
    return Usage("--warmup \"" + std::string(text) +
                 "\" is neither a count of values nor a duration (hint: e.g. 2 or 10s)");
  w.count = 0;
  w.ns = *ns;
  return w;
}

}  // namespace gpuscope::tune
