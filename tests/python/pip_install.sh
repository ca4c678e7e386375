#!/bin/sh
# pip_install.sh SOURCE VENV PYTHON [PREBUILT]: the acceptance's install, into a fresh test venv.
# VENV is made with PYTHON's base interpreter; a .pth file there adds PYTHON's site-packages (the
# project's venv: torch, pandas, setuptools … from requirements-test.txt) behind the venv's own,
# so gpuscope installed here is the one imported. Then `pip install --no-build-isolation SOURCE`
# offline. PREBUILT, when given, is a CMake build holding the module and the binary
# (GPUSCOPE_PYTHON=ON): setup.py packages them and compiles nothing; without it setup.py builds
# them with CMake into VENV.build (removed with the venv). Skips (77) with the reason when a
# piece is missing.
set -u
src="$1"
venv="$2"
python="$3"
prebuilt="${4:-}"
skip() { echo "SKIP: $1 (tools/setup.sh --test installs it)"; exit 77; }
[ -x "$python" ] || skip "no Python at $python"
"$python" -c "import venv, ensurepip" 2>/dev/null || skip "$python has no venv/ensurepip (Debian: python3-venv)"
"$python" -c "import setuptools, wheel" 2>/dev/null || skip "setuptools or wheel missing in $python"
if [ -n "$prebuilt" ] && ! ls "$prebuilt"/_gpuscope*.so >/dev/null 2>&1; then
  echo "no module in $prebuilt: compiling it with setup.py"
  prebuilt=""
fi
if [ -z "$prebuilt" ]; then
  found=""
  for d in /usr/lib/cmake/pybind11 /usr/share/cmake/pybind11 /usr/local/lib/cmake/pybind11; do
    [ -f "$d/pybind11Config.cmake" ] && found=1
  done
  [ -n "$found" ] || skip "pybind11 (CMake package) missing (Debian: pybind11-dev)"
  command -v cmake >/dev/null || skip "cmake missing"
  command -v ninja >/dev/null || skip "ninja missing (Debian: ninja-build)"
fi

rm -rf "$venv" "$venv.build"
base=$("$python" -c 'import sys; print(sys._base_executable)')
"$base" -m venv "$venv" || { echo "FAIL: $base -m venv $venv"; exit 1; }
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$python" -c 'import sysconfig; p = sysconfig.get_paths(); print(p["purelib"]); print(p["platlib"])' \
  >"$site/gpuscope_test_deps.pth"
"$venv/bin/python" -m pip --version >/dev/null 2>&1 || skip "pip missing in the venv"
start=$(date +%s)
if [ -n "$prebuilt" ]; then
  export GPUSCOPE_PREBUILT_DIR="$prebuilt"
else
  export GPUSCOPE_BUILD_DIR="$venv.build"
fi
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$venv/bin/python" -m pip install --no-build-isolation --no-deps "$src" >"$venv.pip.log" 2>&1
rc=$?
end=$(date +%s)
if [ $rc -ne 0 ]; then
  tail -40 "$venv.pip.log"
  rm -f "$venv.pip.log"
  echo "FAIL: pip install --no-build-isolation $src (exit $rc)"
  exit 1
fi
rm -f "$venv.pip.log"
echo "pip install --no-build-isolation $src${prebuilt:+ (module and binary of $prebuilt)}: $((end - start)) s"
