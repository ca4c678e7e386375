#!/bin/sh
# The JSON contract for tune's documents: a search with a batch ladder, an OOM boundary bisected
# and a list param, and one where no trial gave a throughput (exit 2), both `--json`, validate
# against docs/schema/document.schema.json (tests/json_contract.py validate). A fake command keeps
# it fast (the real PyTorch runs: tests/python/tune_test.py).
#   json_contract_tune.sh GPUSCOPE SOURCE_DIR PYTHON
set -u
g="$1"
src="$2"
python="$3"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat >"$d/fake.sh" <<'SCRIPT'
[ "$1" -gt 40 ] && { echo "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2; exit 1; }
for i in 1 2 3 4; do echo "$(( $1 * ($2 + 1) )) samples/s"; done
SCRIPT
"$g" tune -q --results "$d/r.jsonl" --param B=pow2:4..256 --param W=0,1 \
  --metric '([0-9.]+) samples/s' --trial-time 5s --json -- sh "$d/fake.sh" {B} {W} \
  >"$d/tune.json" 2>"$d/tune.err" || fail "tune: $(cat "$d/tune.err")"
"$g" tune -q --results "$d/n.jsonl" --param N=1 --metric '([0-9.]+) samples/s' --trial-time 5s \
  --json -- true >"$d/none.json" 2>/dev/null
[ $? -eq 2 ] || fail "a tune without any throughput: exit code 2 expected"
"$python" "$src/tests/json_contract.py" validate "$src/docs/schema/document.schema.json" \
  "$d/tune.json" "$d/none.json" || exit $?
# A few values read back, so the files are not empty shells.
"$python" - "$d/tune.json" <<'PY' || fail "values of the tune document"
import json, sys
d = json.load(open(sys.argv[1]))
best = {k: v["value"] for k, v in d["sections"]["best"]["items"]["params"]["fields"].items()}
b = d["sections"]["boundaries"]["items"]["boundary_B"]["fields"]
assert best == {"B": "40", "W": "1"}, best
assert (b["largest_fit"]["value"], b["first_oom"]["value"]) == (40, 41), b
assert len(d["sections"]["trials"]["items"]["trials"]["rows"]) >= 10
PY
echo "ok: tune documents validate"
