#!/bin/sh
# A name table that does not list every enumerator once, in declaration order, must not compile
# (src/base/enum_names.h): case 0 of tests/enum_names_probe.cc builds, cases 1-4 do not.
# usage: enum_names_compile_test.sh CXX SOURCE_DIR
set -u
cxx=$1
src=$2
compile() { "$cxx" -std=c++20 -fsyntax-only -I "$src/src" -DCASE="$1" "$src/tests/enum_names_probe.cc" 2>&1; }
if ! out=$(compile 0); then
  echo "FAIL: the well-formed table does not compile:"; echo "$out"; exit 1
fi
for c in 1 2 3 4; do
  if out=$(compile $c); then
    echo "FAIL: case $c of enum_names_probe.cc compiled; the table check let it through"; exit 1
  fi
  # The failure is the table's check (wrong count, or the consteval throw), not something else.
  if ! echo "$out" | grep -q "EnumNames\|no matching function"; then
    echo "FAIL: case $c failed for another reason:"; echo "$out"; exit 1
  fi
  echo "case $c rejected, as it must be"
done
