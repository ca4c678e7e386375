// Command-line manners: "did you mean …?" for a mistyped command or option, a hint when `run`'s
// command is not after `--`, and each command's description and examples for its --help.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::cli {

// Optimal-string-alignment distance (Damerau–Levenshtein without repeated edits of one
// substring): insertions, deletions, substitutions and swaps of two adjacent letters each cost 1,
// so "anaylze" is 1 from "analyze".
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if close enough to be what was meant: within 1 edit for words
// up to 4 letters, 2 up to 8, 3 beyond; or the one candidate `word` is a prefix of (2+ letters).
std::optional<std::string> ClosestMatch(std::string_view word,
                                        const std::vector<std::string>& candidates);

// Called after CLI11 rejected `args` (argv without the program name) with `error`: a one-line
// message (without "gpuscope: error: ") for an unknown command or option, a missing command, or
// `run` arguments that belong after `--`; nullopt when none of those is the problem and CLI11's
// own message should stand.
std::optional<std::string> ExplainUsageError(const CLI::App& app,
                                             const std::vector<std::string>& args,
                                             const CLI::ParseError& error);

// Ends the top-level --help with examples.
void AddHelpExamples(CLI::App& app);

// Adds subcommand `name` with its description and examples from the one table of them in
// usage.cc (so the help reads as one text); the caller adds its options.
CLI::App* AddCommand(CLI::App& app, std::string_view name);

}  // namespace gpuscope::cli
