// A subcommand's flags from its options table (api/options.h): one CLI11 option per row, with the
// row's help and default, its allowed values (shown in --help as `TEXT:{a,b}`, which completion
// reads) or range, and the options it excludes.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "api/options.h"

namespace gpuscope::cli {

template <typename O>
void AddOptions(CLI::App* app, const api::OptionTable<O>& table, O* values) {
  for (const api::Option<O>& opt : table) {
    const std::string flag =
        (opt.short_name.empty() ? "" : "-" + std::string(opt.short_name) + ",") + "--" +
        std::string(opt.name);
    const std::string help = api::HelpText(opt);
    CLI::Option* added = std::visit(
        [&](auto member) -> CLI::Option* {
          auto& field = values->*member;
          using T = std::decay_t<decltype(field)>;
          if constexpr (std::is_same_v<T, bool>) {
            return app->add_flag(flag, field, help);
          } else {
            CLI::Option* o = app->add_option(flag, field, help);
            // An integer's range in integers (--help: "INT in [0 - 256]").
            if (opt.range && std::is_same_v<T, double>)
              o->check(CLI::Range(opt.range->first, opt.range->second));
            else if (opt.range)
              o->check(CLI::Range(static_cast<int64_t>(opt.range->first),
                                  static_cast<int64_t>(opt.range->second)));
            return o;
          }
        },
        opt.member);
    if (!opt.allowed.empty()) added->check(CLI::IsMember(opt.allowed));
    if (!opt.value_name.empty()) added->type_name(std::string(opt.value_name));
  }
  for (const api::Option<O>& opt : table)
    for (std::string_view other : opt.excludes)
      app->get_option("--" + std::string(opt.name))->excludes("--" + std::string(other));
}

}  // namespace gpuscope::cli
