#!/bin/sh
# Makes the project's Python venv for the tests (tools/setup.sh --test runs it): $GPUSCOPE_VENV
# (default .venv) from $GPUSCOPE_PYTHON (default python3), with requirements-test.txt installed.
# Idempotent: a venv whose stamp holds the requirements file's checksum is left as it is.
# torch goes in first and alone, and only as a CPU build: pip's choice is read from a dry run
# (--report) before anything is downloaded, so a CUDA build of several GB is never fetched.
set -eu
cd "$(dirname "$0")/.."
venv="${GPUSCOPE_VENV:-.venv}"
python="${GPUSCOPE_PYTHON:-python3}"
req=requirements-test.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp="$venv/.gpuscope-requirements"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
fail() { echo "gpuscope setup: $1" >&2; exit 1; }
command -v "$python" >/dev/null 2>&1 || fail "no $python (set GPUSCOPE_PYTHON to a Python 3.11)"
"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
  echo "gpuscope setup: warning: $python is not Python 3.11, the Python the tests are pinned for" >&2
echo "gpuscope setup: Python venv $venv ($req)" >&2
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv" || fail "$python -m venv $venv failed (Debian: python3-venv)"
pip="$venv/bin/python -m pip --disable-pip-version-check"
log=$(mktemp)
trap 'rm -f "$log" "$log.report"' EXIT
torch=$(grep -E '^torch==' "$req")
# Which torch would pip take? A CPU build says so in its version (2.13.0+cpu).
$pip install --dry-run --quiet --report "$log.report" "$torch" >"$log" 2>&1 || { cat "$log" >&2; fail "pip cannot resolve $torch"; }
got=$("$venv/bin/python" -c '
import json, sys
for item in json.load(open(sys.argv[1]))["install"]:
    if item["metadata"]["name"] == "torch":
        print(item["metadata"]["version"], item["download_info"]["url"])' "$log.report")
case "$got" in
  ""|*+cpu*) ;;
  *) fail "pip would install torch $got, not a CPU build: refusing (several GB). Put the CPU wheel of $torch where pip finds it (pip's find-links, or PyTorch's CPU index) and run again" ;;
esac
if ! { $pip install "$torch" && $pip install --no-build-isolation -r "$req"; } >"$log" 2>&1; then
  grep -v '^WARNING: Location' "$log" | tail -30 >&2
  fail "pip install -r $req failed (see above)"
fi
"$venv/bin/python" -c 'import torch, sys; sys.exit(torch.version.cuda is not None)' || fail "the venv's torch is a CUDA build"
echo "$want" >"$stamp"
