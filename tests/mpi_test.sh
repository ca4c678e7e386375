#!/bin/sh
# `mpirun -n N gpuscope analyze --mpi FOLDER` prints what one process prints (ctest label `mpi`).
#   tests/mpi_test.sh GPUSCOPE PROCESSES [mpirun flags...]
# A synthetic 6-rank job with a planted late rank and clock offsets, plus two files that cannot be
# read (their errors must come in the same order): JSON, text and stderr are compared byte for byte
# with the single-process run, and the JSON must name the planted rank. Exits 77 (ctest: skipped)
# with a message when mpirun is absent or there is no MPI plugin beside gpuscope.
set -u
gpuscope="$1"
processes="$2"
shift 2

if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (install Debian's openmpi-bin and libopenmpi-dev: tools/setup.sh --test, then rebuild)"
  exit 77
fi
if "$gpuscope" analyze --help | grep -q "no MPI plugin here"; then
  echo "SKIP: no MPI plugin beside $gpuscope (install libopenmpi-dev, then rebuild: tools/build.sh)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-mpi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# OpenMPI keeps its session folder in TMPDIR: inside ours, removed with it.
export TMPDIR="$tmp"
# OpenMPI refuses root unless told (containers, CI); its allocations are not ours to leak-check.
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# Shared memory between local processes without cross-memory attach (blocked in most containers).
export OMPI_MCA_btl_vader_single_copy_mechanism=none

fail() {
  echo "FAIL: $*"
  exit 1
}

job="$tmp/job"
"$gpuscope" synth --ranks 6 --late-rank 4 --late 1500us --clock-offset 20ms --seed 7 -o "$job" \
  >/dev/null || fail "synth"
printf '{"traceEvents": [' >"$job/rank6.pt.trace.json"  # cut short
echo 'not a trace' >"$job/notes.json"

"$gpuscope" analyze --json "$job" >"$tmp/one.json" 2>"$tmp/one.err"
one_rc=$?
"$gpuscope" analyze "$job" >"$tmp/one.txt" 2>/dev/null
[ "$one_rc" = 2 ] || fail "single process: exit $one_rc, expected 2 (two unreadable files)"
named=$(python3 -c 'import json, sys
job = json.load(open(sys.argv[1]))["sections"]["jobs"]["sections"]["job_1"]
print(job["items"]["straggler"]["fields"]["rank"]["value"])' "$tmp/one.json") ||
  fail "single process: no straggler row in the JSON"
[ "$named" = 4 ] || fail "single process: straggler $named named, the planted late rank is 4"

mpirun -n "$processes" "$@" "$gpuscope" analyze --mpi --json "$job" >"$tmp/mpi.json" 2>"$tmp/mpi.err"
mpi_rc=$?
[ "$mpi_rc" = 2 ] || { cat "$tmp/mpi.err"; fail "mpirun -n $processes: exit $mpi_rc, expected 2"; }
cmp "$tmp/one.json" "$tmp/mpi.json" || fail "mpirun -n $processes: the JSON differs from one process's"
# gpuscope's own lines of stderr (mpirun adds its note on the exit code).
grep '^gpuscope' "$tmp/mpi.err" >"$tmp/mpi.gpuscope.err"
cmp "$tmp/one.err" "$tmp/mpi.gpuscope.err" || fail "mpirun -n $processes: errors differ from one process's"
[ "$(grep -c '^gpuscope: error:' "$tmp/one.err")" = 2 ] || fail "expected 2 errors, one per unreadable file"

mpirun -n "$processes" "$@" "$gpuscope" analyze --mpi "$job" >"$tmp/mpi.txt" 2>/dev/null
cmp "$tmp/one.txt" "$tmp/mpi.txt" || fail "mpirun -n $processes: the text differs from one process's"
echo "PASS: mpirun -n $processes $*: JSON, text and errors as one process's"
