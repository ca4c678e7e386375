#!/bin/sh
# Installs what gpuscope needs. Idempotent; silent when all is present.
#   tools/setup.sh          build dependencies (Debian 12 packages)
#   tools/setup.sh --test   + test dependencies: Debian packages (GoogleTest, OpenMPI, pybind11,
#                           Chromium …) and the project's Python venv (.venv, or $GPUSCOPE_VENV)
#                           with requirements-test.txt, pinned (torch 2.13.0 CPU, HTA,
#                           transformers, DeepSpeed, Accelerate, megatron-core, pandas …)
#   tools/setup.sh --dev    + fuzzing (clang), benchmarks (GNU time, hyperfine)
# C++ dependencies come from Debian only; Python ones from PyPI, into the venv only. The venv is
# made with $GPUSCOPE_PYTHON (default: python3 on PATH; Python 3.11, the Python of the CPU torch
# wheel). CMake finds .venv/bin/python for the tests and the Python module (docs/python.md).
set -eu
cd "$(dirname "$0")/.."

packages="cmake ninja-build g++ libsimdjson-dev libisal-dev zlib1g-dev libcli11-dev libfmt-dev libsqlite3-dev help2man"
test_packages="googletest libgtest-dev libgmock-dev chromium openmpi-bin libopenmpi-dev man-db dpkg-dev pybind11-dev python3-dev python3-venv clang-format"
venv=""
for arg in "$@"; do
  case "$arg" in
    --test) packages="$packages $test_packages"; venv=1 ;;
    --dev) packages="$packages $test_packages clang libclang-rt-14-dev time hyperfine pigz"; venv=1 ;;
    *) echo "usage: tools/setup.sh [--test] [--dev]" >&2; exit 2 ;;
  esac
done

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" -eq 0 ]; then
    sudo=""
  elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "gpuscope setup: missing Debian packages:$missing" >&2
    echo "  install them as root: apt-get install -y$missing" >&2
    exit 1
  fi
  echo "gpuscope setup: installing$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  if ! { $sudo apt-get update -q && $sudo apt-get install -y -q --no-install-recommends $missing; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "gpuscope setup: apt-get failed (see above)" >&2
    exit 1
  fi
  rm -f "$log"
fi

[ -n "$venv" ] || exit 0
exec sh tools/setup_venv.sh
