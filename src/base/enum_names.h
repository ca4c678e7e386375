// One name table per enum, read both ways (issue 34; DuckDB's EnumUtil is the model): the name an
// enumerator prints as, the enumerator a name parses to, and the list of allowed names that the
// CLI's checks, Python's keyword checks, the man page and completion show. A table replaces the
// hand-written switch to a name and the chain of comparisons back, which drifted apart.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// A table lists every enumerator once, in declaration order from 0 (checked at compile time by
// `static_assert(EnumTableIsDense(kTable))`), so NameOf is an index, not a search.
template <typename E, size_t N>
using EnumNames = std::array<EnumName<E>, N>;

template <typename E, size_t N>
constexpr bool EnumTableIsDense(const EnumNames<E, N>& table) {
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(table[i].value) != i) return false;
  return true;
}

// "?" for a value outside the table (a corrupt enum), never out of bounds.
template <typename E, size_t N>
constexpr std::string_view NameOf(const EnumNames<E, N>& table, E value) {
  const auto i = static_cast<size_t>(value);
  return i < N ? table[i].name : std::string_view("?");
}

// The same as a C string: a table's names are string literals, so NUL-terminated.
template <typename E, size_t N>
constexpr const char* CNameOf(const EnumNames<E, N>& table, E value) {
  return NameOf(table, value).data();
}

template <typename E, size_t N>
constexpr std::optional<E> FromName(const EnumNames<E, N>& table, std::string_view name) {
  for (const EnumName<E>& e : table)
    if (e.name == name) return e.value;
  return std::nullopt;
}

template <typename E, size_t N>
std::vector<std::string> NamesOf(const EnumNames<E, N>& table) {
  std::vector<std::string> out;
  out.reserve(N);
  for (const EnumName<E>& e : table) out.emplace_back(e.name);
  return out;
}

}  // namespace gpuscope
