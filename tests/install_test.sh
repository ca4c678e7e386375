#!/bin/sh
# What a user installs runs: `cmake --install` into an empty prefix (mode prefix), or the Debian
# package from cpack unpacked into an empty root (mode deb). From each: --version, the bundled
# example's verdict, `man gpuscope`, bash completion, the docs. Exit 77 (skip) without the tools.
# usage: install_test.sh prefix|deb BUILD_DIR
set -eu
mode=$1
build=$(cd "$2" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$build/gpuscope.1" ] || { echo "SKIP: no man page in this build (configure found no help2man; tools/setup.sh installs it)"; exit 77; }
command -v man >/dev/null || { echo "SKIP: man is not installed (man-db; tools/setup.sh --test installs it)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check_tree() {  # $1: the installed tree holding bin/ and share/
  root=$1
  "$root/bin/gpuscope" --version | grep -qx "gpuscope [0-9][0-9.]*" || fail "gpuscope --version"
  example="$root/share/doc/gpuscope/examples/train_input_bound.pt.trace.json.gz"
  out=$("$root/bin/gpuscope" analyze "$example") || fail "analyze the example"
  echo "$out" | grep -q "^  verdict     input-bound$" || fail "the example's verdict: $out"
  page=$(MANPATH="$root/share/man" MANPAGER=cat man gpuscope 2>/dev/null) || fail "man gpuscope"
  echo "$page" | grep -q "^SUBCOMMANDS" || fail "man page without its SUBCOMMANDS section"
  echo "$page" | grep -q -- "--write-configs" || fail "man page without plan's options"
  comp="$root/share/bash-completion/completions/gpuscope"
  [ "$(bash -c ". '$comp'; COMP_WORDS=('$root/bin/gpuscope' ana); COMP_CWORD=1; _gpuscope; echo \${COMPREPLY[*]}")" = analyze ] ||
    fail "completion of 'ana'"
  [ "$(bash -c ". '$comp'; COMP_WORDS=('$root/bin/gpuscope' analyze --js); COMP_CWORD=2; _gpuscope; echo \${COMPREPLY[*]}")" = --json ] ||
    fail "completion of 'analyze --js'"
  [ -f "$root/share/doc/gpuscope/docs/planner.md" ] || fail "docs not installed"
  grep -q "^License: Apache-2.0" "$root/share/doc/gpuscope/copyright" || fail "no copyright file"
  grep -q "Apache License" "$root/share/doc/gpuscope/LICENSE" || fail "no LICENSE"
  # The binary links no MPI: OpenMPI is the plugin's, loaded only for --mpi.
  if command -v readelf >/dev/null; then
    ! readelf -d "$root/bin/gpuscope" | grep -q "NEEDED.*libmpi" || fail "gpuscope links libmpi"
  fi
}

# Where the build has the MPI plugin, the installed binary finds it in ../lib/gpuscope.
check_mpi_plugin() {  # $1: the installed tree
  [ -f "$build/libgpuscope-mpi.so" ] || return 0
  [ -f "$1/lib/gpuscope/libgpuscope-mpi.so" ] || fail "no lib/gpuscope/libgpuscope-mpi.so in $1"
  ! "$1/bin/gpuscope" analyze --help | grep -q "no MPI plugin here" || fail "the installed binary misses its MPI plugin"
}

case $mode in
  prefix)
    cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
    check_tree "$tmp/prefix"
    check_mpi_plugin "$tmp/prefix"
    echo "cmake --install: the example, man gpuscope and completion work from $tmp/prefix"
    ;;
  deb)
    command -v dpkg-shlibdeps >/dev/null || { echo "SKIP: dpkg-shlibdeps missing (dpkg-dev; tools/setup.sh --test installs it)"; exit 77; }
    (cd "$tmp" && cpack --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) ||
      { cat "$tmp/cpack.log" >&2; fail "cpack"; }
    deb=$(ls "$tmp"/pkg/gpuscope_*.deb)
    depends=$(dpkg-deb -f "$deb" Depends)
    for lib in libc6 libsqlite3 libfmt; do
      echo "$depends" | grep -q "$lib" || fail "Depends lacks $lib: $depends"
    done
    ! echo "$depends" | grep -qi "mpi" || fail "gpuscope Depends on MPI: $depends"
    dpkg-deb -x "$deb" "$tmp/root"
    check_tree "$tmp/root/usr"
    echo "$(basename "$deb") (Depends: $depends): the example, man gpuscope and completion work from its files"
    if [ -f "$build/libgpuscope-mpi.so" ]; then
      mpi_deb=$(ls "$tmp"/pkg/gpuscope-mpi_*.deb) || fail "no gpuscope-mpi package"
      mpi_depends=$(dpkg-deb -f "$mpi_deb" Depends)
      echo "$mpi_depends" | grep -q "libopenmpi" || fail "gpuscope-mpi does not depend on OpenMPI: $mpi_depends"
      echo "$mpi_depends" | grep -q "gpuscope (= " || fail "gpuscope-mpi does not depend on gpuscope: $mpi_depends"
      dpkg-deb -f "$deb" Recommends | grep -q gpuscope-mpi || fail "gpuscope does not recommend gpuscope-mpi"
      dpkg-deb -x "$mpi_deb" "$tmp/root"
      check_mpi_plugin "$tmp/root/usr"
      echo "$(basename "$mpi_deb") (Depends: $mpi_depends): the installed binary loads the plugin"
    fi
    ;;
  *) fail "usage: install_test.sh prefix|deb BUILD_DIR" ;;
esac
