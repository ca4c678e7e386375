#!/bin/sh
# Load benchmarks: MB/s of JSON, events/s and peak RSS for every shared trace and for generated
# 100 MB and 1 GB traces (plain and gzip), with 1 and 2 parser threads. Writes bench/out/results.tsv.
#   bench/run.sh            corpus + 100 MB + 1 GB
#   bench/run.sh --huge     also a generated 5 GB trace (plain), loaded once with 2 threads
# Each configuration runs 3 times; the fastest run is kept (the machine is shared and noisy).
set -eu
cd "$(dirname "$0")/.."
tools/build.sh >/dev/null
bin=build/release/gpuscope
out=bench/out
gen="${GPUSCOPE_BENCH_DIR:-/tmp/gpuscope-bench}"
mkdir -p "$out" "$gen"
results="$out/results.tsv"
printf 'input\tfile_bytes\tjson_bytes\tevents\tthreads\tseconds\tjson_MBps\tevents_per_s\tpeak_rss_MB\n' >"$results"

run() {  # run INPUT LABEL THREADS
  best=""
  for i in 1 2 3; do
    line=$($bin analyze "$1" -j "$3" --stats 2>&1 >/dev/null | grep '^stats:')
    secs=$(echo "$line" | sed 's/.*load_seconds=\([0-9.]*\).*/\1/')
    if [ -z "$best" ] || awk "BEGIN { exit !($secs < $best_secs) }"; then best="$line"; best_secs="$secs"; fi
  done
  f() { echo "$best" | sed "s/.* $1=\([0-9.]*\).*/\1/"; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$2" "$(f file_bytes)" "$(f json_bytes)" "$(f events)" "$3" \
    "$(f load_seconds)" "$(f json_MBps)" "$(f events_per_s)" "$(f peak_rss_MB)" | tee -a "$results"
}

shared="${GPUSCOPE_SHARED_DIR:-../shared}"
if [ -d "$shared/traces" ]; then
  for f in "$shared"/traces/*/*.json.gz; do
    case "$f" in *memory_timeline*) continue ;; esac
    for t in 1 2; do run "$f" "$(basename "$f")" "$t"; done
  done
else
  echo "bench: $shared/traces not found; skipping the real traces" >&2
fi

for size in 100M 1G; do
  [ -f "$gen/synth_$size.json" ] || $bin synth -o "$gen/synth_$size.json" --target-size "$size" >/dev/null
  [ -f "$gen/synth_$size.json.gz" ] || $bin synth -o "$gen/synth_$size.json.gz" --target-size "$size" --gzip >/dev/null
  for t in 1 2; do
    run "$gen/synth_$size.json" "synth_$size.json" "$t"
    run "$gen/synth_$size.json.gz" "synth_$size.json.gz" "$t"
  done
done

if [ "${1:-}" = "--huge" ]; then
  [ -f "$gen/synth_5G.json" ] || $bin synth -o "$gen/synth_5G.json" --target-size 5G >/dev/null
  line=$(/usr/bin/time -f 'time_rss_kb=%M' $bin analyze "$gen/synth_5G.json" -j 2 --stats 2>&1 >/dev/null | tr '\n' ' ')
  echo "synth_5G.json: $line" | tee "$out/huge.txt"
fi
echo "wrote $results" >&2
