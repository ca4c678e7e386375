#!/bin/sh
# Where the time goes: perf profiles of `gpuscope analyze` on generated traces, drawn as flame graphs.
#
#   bench/profile.sh              1 GB and 4 GB generated traces
#   bench/profile.sh 256M 1G      other sizes
#
# For each size, one run of `gpuscope analyze FILE -j 1 --stats` (the whole report, one thread, so
# every stack is the work itself and not a wait) under `perf record -e cpu-clock --call-graph dwarf`
# (the Release build has no frame pointers), then bench/flamegraph.py draws:
#   bench/flamegraphs/analyze_SIZE.svg    everything: read, inflate, scan, parse, merge, analyses
#   bench/flamegraphs/analyses_SIZE.svg   the analyses alone: gpuscope_bench_analyses runs each 10
#                                         times on the loaded trace; stacks in gpuscope::analyze::
# and the folded stacks beside them (*.folded, `stack count` lines, one per distinct stack) for
# diffing two profiles.
# Generated traces are kept in ${GPUSCOPE_BENCH_DIR:-/tmp/gpuscope-bench}; perf data in a temporary
# folder, removed at the end. Needs `perf` (Debian linux-perf) allowed to profile this user
# (kernel.perf_event_paranoid <= 2).
set -eu
cd "$(dirname "$0")/.."
tools/build.sh release gpuscope gpuscope_bench_analyses >/dev/null
bin=build/release/gpuscope
gen="${GPUSCOPE_BENCH_DIR:-/tmp/gpuscope-bench}"
out=bench/flamegraphs
sizes="${*:-1G 4G}"
mkdir -p "$gen" "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "profile: $(uptime | sed 's/.*load/load/') (before)" >&2
for size in $sizes; do
  trace="$gen/synth_$size.json"
  [ -f "$trace" ] || $bin synth -o "$trace" --target-size "$size" --seed 1 >/dev/null
  # 499 Hz with 16 KiB of stack per sample: enough samples for 0.5 % frames, and perf script stays
  # under a minute at 4 GB.
  perf record -q -F 499 -e cpu-clock --call-graph dwarf,16384 -o "$tmp/perf.data" \
    "$bin" analyze "$trace" -j 1 --stats >/dev/null 2>"$tmp/stats.txt"
  stats=$(grep '^stats: load_seconds' "$tmp/stats.txt" | sed 's/^stats: //')
  perf script -i "$tmp/perf.data" 2>/dev/null >"$tmp/perf.txt"
  python3 bench/flamegraph.py "$tmp/perf.txt" --count-samples --folded-out "$out/analyze_$size.folded" \
    --title "gpuscope analyze, $size generated trace, 1 thread" -o "$out/analyze_$size.svg"
  # The analyses are a tenth of a run: profiled apart, each run 10 times on the loaded trace
  # (gpuscope_bench_analyses), keeping only the stacks inside them.
  perf record -q -F 499 -e cpu-clock --call-graph dwarf,16384 -o "$tmp/perf.data" \
    build/release/gpuscope_bench_analyses "$trace" --repeat 10 >/dev/null 2>&1
  perf script -i "$tmp/perf.data" 2>/dev/null >"$tmp/perf.txt"
  python3 bench/flamegraph.py "$tmp/perf.txt" --count-samples --folded-out "$tmp/all.folded" \
    -o /dev/null 2>/dev/null
  # Each analysis as the harness calls it (not again inside its RunAll rows), re-rooted at its
  # outermost gpuscope::analyze:: frame so that the analyses sit side by side at full width
  # ("gpuscope::" left out of the names, for room).
  awk '!/RunAll/ {
         n = split($0, f, ";"); for (i = 1; i <= n; i++) if (f[i] ~ /^gpuscope::analyze::/) break
         if (i > n) next
         s = f[i]; for (j = i + 1; j <= n; j++) s = s ";" f[j]
         gsub(/gpuscope::/, "", s); print s
       }' "$tmp/all.folded" >"$out/analyses_$size.folded"
  python3 bench/flamegraph.py --count-samples --folded-in "$out/analyses_$size.folded" \
    --title "gpuscope analyses, $size generated trace, each run alone, 1 thread (x10)" \
    -o "$out/analyses_$size.svg"
  echo "$size: $stats" >&2
  rm -f "$tmp/perf.data" "$tmp/perf.txt"
done
echo "profile: $(uptime | sed 's/.*load/load/') (after)" >&2
echo "wrote $out/" >&2
