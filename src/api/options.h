// One options table per subcommand (issue 34): each option's name, help, type, allowed values,
// default and the member of the subcommand's options struct it sets, written once. The CLI builds
// its flags from it (cli/options.h, and through --help the man page and bash completion), the
// Python binding its keyword arguments, and api checks given values against it, so the CLI and
// Python accept and refuse the same things with the same words.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "gpuscope/status.h"

namespace gpuscope::api {

template <typename Options>
struct Option {
  // The member the option sets; its type is the option's: a flag (bool), text, a number, or an
  // integer that may be absent (so "plan needs --gpus" differs from a bad --gpus 0).
  using Member = std::variant<bool Options::*, std::string Options::*, int Options::*,
                              double Options::*, std::optional<int64_t> Options::*>;
  // A row names what it sets; the fields after it keep their defaults (none, no range, …).
  Option(std::string_view name_, Member member_, std::string_view help_,
         std::vector<std::string> allowed_ = {},
         std::optional<std::pair<double, double>> range_ = std::nullopt,
         std::vector<std::string_view> excludes_ = {}, std::string_view short_name_ = {},
         std::string_view value_name_ = {})
      : name(name_),
        member(member_),
        help(help_),
        allowed(std::move(allowed_)),
        range(range_),
        excludes(std::move(excludes_)),
        short_name(short_name_),
        value_name(value_name_) {}

  std::string_view name;  // the CLI's long name without "--"; Python's keyword: '-' → '_'
  Member member;
  // Without the default: HelpText adds it from a default-constructed Options, where it is written.
  std::string_view help;
  std::vector<std::string> allowed;                // an enumeration's values; empty: any
  std::optional<std::pair<double, double>> range;  // inclusive, for numbers
  std::vector<std::string_view> excludes;          // options that cannot be given with this one
  std::string_view short_name;                     // "j" for -j,--threads; empty: none
  std::string_view value_name;  // --help's name of the value ("all|N,M"); empty: its type
};

template <typename Options>
using OptionTable = std::vector<Option<Options>>;

// -j,--threads as every subcommand spells it: 0 (all cores) to kMaxThreads (map and reduce, which
// have no options table, declare it with the same bound in cli/job_command.cc).
inline constexpr int kMaxThreads = 256;
template <typename Options>
Option<Options> ThreadsOption(int Options::*member, std::string_view help) {
  return {"threads", member, help, {}, std::pair<double, double>{0, kMaxThreads}, {}, "j"};
}

std::string PythonName(std::string_view name);  // "global-batch" → "global_batch"

// The option's value in `o` as text ("" for an empty text, an absent integer or a false flag).
template <typename O>
std::string ValueText(const Option<O>& opt, const O& o);

// Whether `o` gives the option (its value differs from the default-constructed one's).
template <typename O>
bool IsGiven(const Option<O>& opt, const O& o) {
  static const O defaults{};
  return ValueText(opt, o) != ValueText(opt, defaults);
}

// The help with the default added from the default-constructed Options: "… (default: 0.45)";
// nothing added where the default is empty (absent, a flag, text the code chooses) or where the
// help says it in words (a 0 that means "all cores": "(default: all cores)").
template <typename O>
std::string HelpText(const Option<O>& opt) {
  static const O defaults{};
  std::string text(opt.help);
  const std::string d = ValueText(opt, defaults);
  if (!d.empty() && !std::holds_alternative<bool O::*>(opt.member) &&
      text.find("default") == std::string::npos)
    text += " (default: " + d + ")";
  return text;
}

// A given value outside the allowed ones or the range, or two options that exclude each other:
// a usage error worded as the CLI's own checks word it ("--zero: 5 not in {0, 1, 2, 3}").
template <typename O>
Status CheckOptions(const OptionTable<O>& table, const O& o);

std::string FormatNumber(double v);  // shortest round-trip text: 0.45, 1, 50

template <typename O>
std::string ValueText(const Option<O>& opt, const O& o) {
  return std::visit(
      [&](auto member) -> std::string {
        const auto& v = o.*member;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, int>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return FormatNumber(v);
        } else {
          return v ? std::to_string(*v) : "";
        }
      },
      opt.member);
}

template <typename O>
Status CheckOptions(const OptionTable<O>& table, const O& o) {
  auto usage = [](std::string m) { return Status::Error(StatusCode::kUsage, std::move(m)); };
  for (const Option<O>& opt : table) {
    if (!IsGiven(opt, o)) continue;
    const std::string value = ValueText(opt, o);
    if (!opt.allowed.empty()) {
      bool ok = false;
      std::string list;
      for (const std::string& a : opt.allowed) {
        ok = ok || a == value;
        list += (list.empty() ? "" : ", ") + a;
      }
      if (!ok) return usage("--" + std::string(opt.name) + ": " + value + " not in {" + list + "}");
    }
    if (opt.range) {
      const double v = std::stod(value);
      if (!(v >= opt.range->first && v <= opt.range->second))
        return usage("--" + std::string(opt.name) + ": value not in range " +
                     FormatNumber(opt.range->first) + " to " + FormatNumber(opt.range->second));
    }
    for (std::string_view other : opt.excludes)
      for (const Option<O>& x : table)
        if (x.name == other && IsGiven(x, o))
          return usage("--" + std::string(opt.name) + " excludes --" + std::string(other));
  }
  return Status::Ok();
}

}  // namespace gpuscope::api
