#!/bin/sh
# Configures and builds one flavour of gpuscope into build/<flavour>.
#   tools/build.sh            Release (build/release)
#   tools/build.sh asan       ASan + UBSan, with debug info (build/asan)
#   tools/build.sh fuzz       clang + libFuzzer targets (build/fuzz)
#   tools/build.sh native     Release tuned for this CPU (build/native), for benchmarks
set -eu
cd "$(dirname "$0")/.."
flavour="${1:-release}"
case "$flavour" in
  release) args="-DCMAKE_BUILD_TYPE=Release" ;;
  asan) args="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSCOPE_SANITIZE=ON" ;;
  fuzz) args="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSCOPE_FUZZ=ON -DGPUSCOPE_SANITIZE=ON -DCMAKE_CXX_COMPILER=clang++" ;;
  native) args="-DCMAKE_BUILD_TYPE=Release -DGPUSCOPE_NATIVE=ON" ;;
  *) echo "usage: tools/build.sh [release|asan|fuzz|native]" >&2; exit 2 ;;
esac
dir="build/$flavour"
mkdir -p build
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja $args >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; exit 1; }
fi
cmake --build "$dir" -- --quiet
