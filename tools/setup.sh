#!/bin/sh
# Installs what gpuscope needs from Debian packages (Debian 12). Idempotent; silent when all present.
#   tools/setup.sh          build dependencies
#   tools/setup.sh --test   + test dependencies (OpenMPI included: the `mpi` tests, analyze --mpi)
#   tools/setup.sh --dev    + fuzzing (clang), benchmarks (GNU time, hyperfine)
set -eu

packages="cmake ninja-build g++ libsimdjson-dev libisal-dev zlib1g-dev libcli11-dev libfmt-dev libsqlite3-dev help2man"
for arg in "$@"; do
  case "$arg" in
    --test) packages="$packages googletest libgtest-dev libgmock-dev chromium python3 python3-jsonschema python3-yaml openmpi-bin libopenmpi-dev man-db dpkg-dev pybind11-dev python3-venv python3-pip python3-setuptools python3-wheel python3-torch python3-pandas" ;;
    --dev) packages="$packages googletest libgtest-dev libgmock-dev chromium python3 python3-jsonschema python3-yaml openmpi-bin libopenmpi-dev man-db dpkg-dev pybind11-dev python3-venv python3-pip python3-setuptools python3-wheel python3-torch python3-pandas clang libclang-rt-14-dev time hyperfine pigz" ;;
    *) echo "usage: tools/setup.sh [--test] [--dev]" >&2; exit 2 ;;
  esac
done

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

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
