#!/bin/sh
# The JSON contract for memory-snapshot documents: `analyze --json` of the shared snapshots (when
# ../shared is there) and of one made here with python3 (segment events, an oom, allocator
# settings) validate against docs/schema/document.schema.json; then the reserved bytes are read back.
#   json_contract_snapshot.sh GPUSCOPE SHARED_DIR PYTHON SOURCE_DIR
# Exit 77 (skipped) when jsonschema is missing, as json_contract.py says.
set -u
g="$1"
shared="$2"
python="$3"
src="$4"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$python" -c "
import pickle, sys
M = 1 << 20
snap = {'segments': [{'device': 0, 'address': 0, 'total_size': 64 * M, 'allocated_size': 8 * M,
          'active_size': 8 * M, 'requested_size': 8 * M, 'stream': 0, 'segment_type': 'large',
          'is_expandable': False, 'frames': [],
          'blocks': [{'address': 0, 'size': 8 * M, 'requested_size': 8 * M, 'state': 'active_allocated', 'frames': []},
                     {'address': 8 * M, 'size': 56 * M, 'requested_size': 0, 'state': 'inactive', 'frames': []}]}],
        'device_traces': [[
          {'action': 'segment_alloc', 'addr': 0, 'size': 64 * M, 'stream': 0, 'time_us': 1, 'frames': []},
          {'action': 'alloc', 'addr': 0, 'size': 8 * M, 'stream': 0, 'time_us': 2,
           'frames': [{'name': 'forward', 'filename': 'model.py', 'line': 3}]},
          {'action': 'oom', 'addr': 0, 'size': 60 * M, 'stream': 0, 'time_us': 3, 'device_free': 0, 'frames': []}]],
        'allocator_settings': {'expandable_segments': False}}
sys.stdout.buffer.write(pickle.dumps(snap, protocol=4))
" >"$d/made.pickle" || fail "python3 could not make the snapshot"
"$g" analyze --json "$d/made.pickle" >"$d/made.json" || fail "analyze made.pickle"
files="$d/made.json"
for f in mosaic_test_output magma27_assignment2_memory_snapshot; do
  p="$shared/traces/memory_snapshots/$f.pickle"
  [ -f "$p" ] || { echo "note: $p not found: left out"; continue; }
  "$g" analyze --json "$p" >"$d/$f.json" || fail "analyze $f.pickle"
  files="$files $d/$f.json"
done
"$python" "$src/tests/json_contract.py" validate "$src/docs/schema/document.schema.json" $files
rc=$?
[ $rc -eq 0 ] || exit $rc
grep -q '"value": 67108864' "$d/made.json" || fail "made.json: segments_reserved_bytes 67108864 not found"
echo "ok"
