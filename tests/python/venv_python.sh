#!/bin/sh
# venv_python.sh VENV SCRIPT ARGS…: runs SCRIPT with the venv's python that Python.PipInstall made;
# skips (77) when it is not there (that test skipped or failed).
venv="$1"
shift
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import gpuscope" 2>/dev/null; then
  echo "SKIP: no venv with gpuscope installed at $venv (Python.PipInstall skipped or failed)"
  exit 77
fi
exec "$venv/bin/python" "$@"
