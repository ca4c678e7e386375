// Compiled by tests/enum_names_compile_test.sh with -DCASE=N: case 0 must build, every other case
// must not (base/enum_names.h checks a name table at compile time).
#include "base/enum_names.h"

namespace {
enum class Color { kRed, kGreen, kBlue };
#if CASE == 0
constexpr gpuscope::EnumNames<Color, 3> kNames({Color::kRed, "red"}, {Color::kGreen, "green"},
                                               {Color::kBlue, "blue"});
static_assert(gpuscope::NameOf(kNames, Color::kBlue) == "blue");
static_assert(*gpuscope::FromName(kNames, "green") == Color::kGreen);
#elif CASE == 1  // an enumerator left out
constexpr gpuscope::EnumNames<Color, 3> kNames({Color::kRed, "red"}, {Color::kBlue, "blue"});
#elif CASE == 2  // two entries swapped (the enum reordered without its table)
constexpr gpuscope::EnumNames<Color, 3> kNames({Color::kRed, "red"}, {Color::kBlue, "blue"},
                                               {Color::kGreen, "green"});
#elif CASE == 3  // one enumerator twice
constexpr gpuscope::EnumNames<Color, 3> kNames({Color::kRed, "red"}, {Color::kRed, "green"},
                                               {Color::kBlue, "blue"});
#elif CASE == 4  // an entry too many
constexpr gpuscope::EnumNames<Color, 3> kNames({Color::kRed, "red"}, {Color::kGreen, "green"},
                                               {Color::kBlue, "blue"}, {Color::kBlue, "azure"});
#endif
}  // namespace
