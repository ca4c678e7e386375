#!/bin/sh
# pip_install.sh SOURCE VENV MODULE_BUILD: the acceptance's install. A fresh
# `python3 -m venv --system-site-packages VENV`, then `pip install --no-build-isolation SOURCE`
# (offline: setuptools, wheel and pybind11 come from Debian). MODULE_BUILD is the CMake build
# folder setup.py uses (kept between runs; GPUSCOPE_BUILD_DIR). Skips (77) with the reason when a
# piece is missing.
set -u
src="$1"
venv="$2"
module_build="$3"
python=/usr/bin/python3
skip() { echo "SKIP: $1 (tools/setup.sh --test installs it)"; exit 77; }
[ -x "$python" ] || skip "no $python"
"$python" -c "import venv, ensurepip" 2>/dev/null || skip "python3 venv/ensurepip missing (Debian: python3-venv)"
"$python" -c "import setuptools, wheel" 2>/dev/null || skip "setuptools or wheel missing (Debian: python3-setuptools, python3-wheel)"
found=""
for d in /usr/lib/cmake/pybind11 /usr/share/cmake/pybind11 /usr/local/lib/cmake/pybind11; do
  [ -f "$d/pybind11Config.cmake" ] && found=1
done
[ -n "$found" ] || skip "pybind11 (CMake package) missing (Debian: pybind11-dev)"
command -v cmake >/dev/null || skip "cmake missing"
command -v ninja >/dev/null || skip "ninja missing (Debian: ninja-build)"

rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv" || { echo "FAIL: python3 -m venv"; exit 1; }
"$venv/bin/python" -m pip --version >/dev/null 2>&1 || skip "pip missing in the venv (Debian: python3-pip)"
start=$(date +%s)
GPUSCOPE_BUILD_DIR="$module_build" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$venv/bin/pip" install --no-build-isolation "$src" >"$venv.pip.log" 2>&1
rc=$?
end=$(date +%s)
if [ $rc -ne 0 ]; then
  tail -40 "$venv.pip.log"
  rm -f "$venv.pip.log"
  echo "FAIL: pip install --no-build-isolation $src (exit $rc)"
  exit 1
fi
rm -f "$venv.pip.log"
echo "pip install --no-build-isolation $src: $((end - start)) s"
