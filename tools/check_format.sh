#!/bin/sh
# House style: every C++ file of src/, include/ and fuzz/ is as clang-format (.clang-format)
# writes it.
# Lists the files that differ and how to fix them; exit 77 (skip) without clang-format.
# usage: tools/check_format.sh [SOURCE_DIR]
set -eu
cd "${1:-$(dirname "$0")/..}"
command -v clang-format >/dev/null ||
  { echo "SKIP: clang-format is not installed (tools/setup.sh --test installs it)"; exit 77; }
bad=""
for f in $(find src include fuzz -name '*.cc' -o -name '*.h' | sort); do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
  echo "not as clang-format writes them:$bad" >&2
  echo "fix: clang-format -i$bad" >&2
  exit 1
fi
echo "clang-format: $(find src include fuzz -name '*.cc' -o -name '*.h' | wc -l) files clean ($(clang-format --version))"
