#!/bin/sh
# Builds the fuzz flavour, seeds a corpus per target and runs the targets one after another.
#   fuzz/run.sh [SECONDS-PER-TARGET] [TARGET]     default 60 s, every target
# Targets (fuzz/CMakeLists.txt):
#   kineto_reader_fuzz  Kineto/Chrome traces: seeds from ../shared/traces (first 64 KiB of each,
#                       decompressed, plus the whole small ones) and examples/
#   monitor_log_fuzz    nvidia-smi logs (query CSV with/without header, dmon), DCGM logs (dcgmi dmon,
#                       dcgm-exporter) and recordings (JSONL, CSV, Chrome trace):
#                       fuzz/seeds/monitor (the samples of tests/monitor_nvidia_smi_test.cc,
#                       docs/monitor.md and `gpuscope run --record` output)
#   registry_fuzz       any input through the registry: fuzz/seeds/registry (one file of every
#                       format and known non-input, plain and gzip)
#   plan_config_fuzz    HF config.json (+ --gpu-spec): models/*.json, with and without a spec line
#   diff_fuzz           two traces: pairs of examples/ and small shared traces
#   summary_fuzz        summary files: `gpuscope map` (build/release, built if missing) of examples/
#                       and of small synthetic ranks (one file each, and two in one), and copies cut
#                       short or with a damaged page
#   torch_snapshot_fuzz CUDA memory snapshots: fuzz/seeds/snapshot (made by python3, see its README)
#                       and ../shared/traces/memory_snapshots (the first 256 KiB of each)
#   nsys_sqlite_fuzz    Nsight Systems SQLite exports: ../shared/traces/nsys/*.sqlite cut down to the
#                       tables the reader reads and a few rows each (fuzz/nsys_seeds.py, 30-110 KB)
#   tune_results_fuzz   tune results files: fuzz/seeds/tune (real runs of tests/python/tune_train.py,
#                       one with a cut last line)
#   exact_step_fuzz     plan's exact-mode measurements: tests/data/plan/exact_*.json (real runs of
#                       python/gpuscope/exact.py), each with the three mode bits
# Corpora grow in build/fuzz/corpus/TARGET; crashes are written to build/fuzz/crashes/.
set -eu
cd "$(dirname "$0")/.."
seconds="${1:-60}"
only="${2:-}"
all="kineto_reader_fuzz monitor_log_fuzz registry_fuzz plan_config_fuzz diff_fuzz summary_fuzz torch_snapshot_fuzz nsys_sqlite_fuzz tune_results_fuzz exact_step_fuzz"
if [ -n "$only" ]; then
  case " $all " in *" $only "*) ;; *) echo "fuzz: unknown target $only (one of: $all)" >&2; exit 2 ;; esac
fi
tools/setup.sh --dev
# Only the fuzz targets (not the gpuscope binary and tests, which take minutes under clang).
tools/build.sh fuzz ${only:-$all}
shared="${GPUSCOPE_SHARED_DIR:-../shared}"
mkdir -p build/fuzz/crashes

seed_kineto_reader_fuzz() {
  if [ -d "$shared/traces" ]; then
    for f in "$shared"/traces/*/*.json.gz; do
      name=$(basename "$f" .json.gz)
      # byte 0 of a fuzz input selects threads/batch; the rest is the trace.
      { printf 'a'; zcat "$f" | head -c 65536; } >"$1/$name.head" || true
      [ "$(stat -c %s "$f")" -lt 50000 ] && { printf 'b'; cat "$f"; } >"$1/$name.gz"
    done
  else
    echo "fuzz: $shared/traces not found; starting from the examples only" >&2
  fi
  for f in examples/*.json.gz; do { printf 'c'; cat "$f"; } >"$1/$(basename "$f")"; done
}

# Byte 0 of a monitor_log_fuzz input picks the line cap (odd: 64 bytes) and (bit 1) a read with a
# --smi-fields list; the rest is the file.
seed_monitor_log_fuzz() {
  for f in fuzz/seeds/monitor/*; do
    { printf '\000'; cat "$f"; } >"$1/$(basename "$f")"
    { printf '\001'; cat "$f"; } >"$1/$(basename "$f").cap"
    { printf '\002'; cat "$f"; } >"$1/$(basename "$f").fields"
  done
}

# Byte 0 of a registry_fuzz input picks threads, batch size and (bit 7) a 256-byte element cap.
seed_registry_fuzz() {
  for f in fuzz/seeds/registry/*; do
    { printf '\000'; cat "$f"; } >"$1/$(basename "$f")"
    { printf '\201'; cat "$f"; } >"$1/$(basename "$f").cap"
    { printf '\003'; gzip -c "$f"; } >"$1/$(basename "$f").gz"
  done
}

seed_plan_config_fuzz() {
  # byte 0: bit 0 = first line is a --gpu-spec, bits 1-3 the table GPU, bit 6/7 the request.
  for f in models/*.json; do
    name=$(basename "$f" .json)
    { printf '\002'; cat "$f"; } >"$1/$name.search"
    { printf '\200'; cat "$f"; } >"$1/$name.exact"
    { printf '\001h800:80:989:3350:200:1979\n'; cat "$f"; } >"$1/$name.spec"
  done
  cp fuzz/seeds/plan_config/* "$1/"  # past findings, byte 0 included
}

# Bytes 1-4: the before trace's length, little endian.
le32() { printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($1 & 255)) $(($1 >> 8 & 255)) \
  $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }
seed_diff_fuzz() {
  small=""
  for f in examples/*.json.gz "$shared"/traces/*/*.json.gz; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 50000 ] && small="$small $f"
  done
  i=0
  for a in $small; do
    for b in $small; do
      i=$((i + 1))
      [ $i -gt 24 ] && break 2
      { printf '\000'; le32 "$(stat -c %s "$a")"; cat "$a" "$b"; } >"$1/pair$i"
    done
  done
}

seed_summary_fuzz() {
  [ -x build/release/gpuscope ] || tools/build.sh release gpuscope
  g=build/release/gpuscope
  tmp=$(mktemp -d)
  for f in examples/*.json.gz; do cp "$f" "$tmp/"; done
  "$g" synth -o "$tmp/synth" --ranks 2 --steps 2 --layers 1 --seed 3 >/dev/null
  "$g" synth -o "$tmp/one.json" --steps 2 --layers 1 --exposed-comm 0.2 >/dev/null
  "$g" map "$tmp"/*.json.gz "$tmp"/synth "$tmp/one.json" -o "$1/" >/dev/null
  "$g" map "$tmp"/synth -o "$1/two_ranks.gpuscope.db" >/dev/null
  rm -rf "$tmp"
  # Damaged copies: cut at half, and the second 1 KiB page (the first table's root) overwritten.
  for f in "$1"/*.gpuscope.db; do
    n=$(stat -c %s "$f")
    head -c $((n / 2)) "$f" >"$f.half"
    { head -c 1024 "$f"; head -c 1024 /dev/zero | tr '\000' '\132'; tail -c +2049 "$f"; } >"$f.page"
  done
}

# Byte 0 of a torch_snapshot_fuzz input picks the string cap (odd: 64 bytes); the rest is the file.
seed_torch_snapshot_fuzz() {
  for f in fuzz/seeds/snapshot/*.pickle "$shared"/traces/memory_snapshots/*.pickle; do
    [ -f "$f" ] || continue
    { printf '\000'; head -c 262000 "$f"; } >"$1/$(basename "$f")"
    { printf '\001'; head -c 4096 "$f"; } >"$1/$(basename "$f").cap"
  done
}

# Byte 0 of an nsys_sqlite_fuzz input: bit 0 reads the database from a file instead of memory.
seed_nsys_sqlite_fuzz() {
  cp fuzz/seeds/nsys/* "$1/"  # past findings, byte 0 included
  if ls "$shared"/traces/nsys/*.sqlite >/dev/null 2>&1; then
    python3 fuzz/nsys_seeds.py "$1" "$shared"/traces/nsys/*.sqlite
  else
    echo "fuzz: $shared/traces/nsys not found; nsys_sqlite_fuzz starts from an empty corpus" >&2
  fi
}

seed_tune_results_fuzz() {
  cp fuzz/seeds/tune/* "$1/"
}

# Byte 0 of an exact_step_fuzz input: bit 0 fp32, bit 1 full recompute, bit 2 a search.
seed_exact_step_fuzz() {
  for f in tests/data/plan/exact_*.json; do
    for m in 000 001 002 004; do
      { printf "\\$m"; cat "$f"; } >"$1/$(basename "$f" .json).$m"
    done
  done
}

for target in $all; do
  [ -n "$only" ] && [ "$target" != "$only" ] && continue
  corpus="build/fuzz/corpus/$target"
  mkdir -p "$corpus"
  "seed_$target" "$corpus"
  echo "fuzz: $target for $seconds s" >&2
  ASAN_OPTIONS=detect_leaks=1 "build/fuzz/fuzz/$target" "$corpus" -max_total_time="$seconds" \
    -max_len=262144 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/crashes/$target-"
done
