#!/bin/sh
# Configures and builds one flavour of gpuscope into build/<flavour>.
#   tools/build.sh            Release (build/release)
#   tools/build.sh asan       ASan + UBSan, with debug info (build/asan)
#   tools/build.sh fuzz       clang + libFuzzer targets (build/fuzz)
#   tools/build.sh native     Release tuned for this CPU (build/native), for benchmarks
# The flavours are the configure presets of CMakePresets.json (`cmake --preset asan` does the same).
# Extra arguments are build targets (default: everything), e.g. `tools/build.sh release gpuscope`.
# Tests are built when GoogleTest is installed (tools/setup.sh --test).
set -eu
cd "$(dirname "$0")/.."
flavour="${1:-release}"
[ $# -gt 0 ] && shift
case "$flavour" in
  release|asan|fuzz|native) ;;
  *) echo "usage: tools/build.sh [release|asan|fuzz|native]" >&2; exit 2 ;;
esac
dir="build/$flavour"
# Without clang, configuring the fuzz flavour would leave a cache with no compiler that later
# configures fail on (an RPATH error): say what to install instead.
if [ "$flavour" = fuzz ] && ! command -v clang++ >/dev/null 2>&1; then
  echo "tools/build.sh fuzz: clang++ is not installed (run tools/setup.sh --dev)" >&2
  exit 1
fi
mkdir -p build
# Configure every time (fast when nothing changed) so newly installed packages, e.g. GoogleTest
# after `tools/setup.sh --test`, are picked up by an existing build folder.
cmake --preset "$flavour" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; exit 1; }
if [ $# -gt 0 ]; then
  cmake --build "$dir" --target "$@" -- --quiet
else
  cmake --build "$dir" -- --quiet
fi
