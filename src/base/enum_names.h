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
#include <utility>
#include <vector>

namespace gpuscope {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// A table lists every enumerator once, in declaration order from 0, so NameOf is an index, not a
// search:
//   constexpr EnumNames<Color, 2> kColorNames({Color::kRed, "red"}, {Color::kBlue, "blue"});
// The build checks both halves: the constructor takes exactly N entries (one parameter per
// enumerator, so a missing or extra entry does not compile), and it is consteval, so its throw on
// an entry out of declaration order is a compile error. Each entry names its enumerator, so a
// reordered enum is caught too, not only a wrong count. (Entries as constructor arguments rather
// than a nested braced list so that clang-format fills the lines instead of giving each entry one.)
template <typename T, size_t>
using RepeatType = T;  // a type once per index of a pack: N parameters of one type

// The third parameter is the index pack the constructor's parameters are made from; functions
// that take a table take all three (clang cannot deduce through the defaulted
// std::make_index_sequence, gcc can).
template <typename E, size_t N, typename = std::make_index_sequence<N>>
class EnumNames;

template <typename E, size_t N, size_t... I>
class EnumNames<E, N, std::index_sequence<I...>> {
 public:
  consteval EnumNames(RepeatType<EnumName<E>, I>... entries) : entries_{entries...} {
    for (size_t i = 0; i < N; ++i)
      if (static_cast<size_t>(entries_[i].value) != i)
        throw "EnumNames: the entries are not the enumerators in declaration order from 0";
  }

  static constexpr size_t size() { return N; }
  constexpr const EnumName<E>& operator[](size_t i) const { return entries_[i]; }
  constexpr const EnumName<E>* begin() const { return entries_.data(); }
  constexpr const EnumName<E>* end() const { return entries_.data() + N; }

 private:
  std::array<EnumName<E>, N> entries_;
};

// "?" for a value outside the table (a corrupt enum), never out of bounds.
template <typename E, size_t N, typename I>
constexpr std::string_view NameOf(const EnumNames<E, N, I>& table, E value) {
  const auto i = static_cast<size_t>(value);
  return i < N ? table[i].name : std::string_view("?");
}

// The same as a C string: a table's names are string literals, so NUL-terminated.
template <typename E, size_t N, typename I>
constexpr const char* CNameOf(const EnumNames<E, N, I>& table, E value) {
  return NameOf(table, value).data();
}

template <typename E, size_t N, typename I>
constexpr std::optional<E> FromName(const EnumNames<E, N, I>& table, std::string_view name) {
  for (const EnumName<E>& e : table)
    if (e.name == name) return e.value;
  return std::nullopt;
}

template <typename E, size_t N, typename I>
std::vector<std::string> NamesOf(const EnumNames<E, N, I>& table) {
  std::vector<std::string> out;
  out.reserve(N);
  for (const EnumName<E>& e : table) out.emplace_back(e.name);
  return out;
}

}  // namespace gpuscope
