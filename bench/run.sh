#!/bin/sh
# Ingest and full-report benchmarks beside the physical limit measured in the same run.
#
#   bench/run.sh              generated 256 MB, 1 GB and 4 GB traces, plain and gzip, 1 and 2
#                             threads, each beside bench/ceiling.cc's one-core simdjson passes
#   bench/run.sh --quick      256 MB and 1 GB only
#   bench/run.sh --corpus     also every shared real trace (../shared/traces), ingest only
#   bench/run.sh --real       also a real A100 trace replicated to ~466 MB (bench/replicate.py,
#                             from ../shared/traces/hta): the size and kind of input issue 17
#                             compared with HTA (88 s there)
#
# Each gpuscope row is the fastest of 3 runs of `gpuscope analyze FILE -j N --stats` (the whole
# report, every analysis; output to /dev/null), timed by /usr/bin/time: wall seconds, CPU seconds,
# peak RSS. The ceiling row of a file is bench/ceiling.cc (gpuscope_ceiling): the file read into
# memory on one core, then three one-core simdjson On-Demand passes over its events — "tokens"
# (every value delimited), "parse" (every value decoded) and "document" (the tokens pass over
# 1 GiB windows, the file as one document: the pass issue 17 set its goal against). The ratio
# columns are gpuscope's wall time over each pass's time. The load average is printed before and
# after: numbers taken beside other work are not comparable with quiet ones.
#
# GPUSCOPE_BENCH_BIN=path measures another gpuscope binary (e.g. an older build) the same way.
# Generated traces are kept in ${GPUSCOPE_BENCH_DIR:-/tmp/gpuscope-bench}.
# Writes bench/out/results.tsv (and prints it).
set -eu
cd "$(dirname "$0")/.."
tools/build.sh release gpuscope gpuscope_ceiling >/dev/null
bin="${GPUSCOPE_BENCH_BIN:-build/release/gpuscope}"
ceiling=build/release/gpuscope_ceiling
out=bench/out
gen="${GPUSCOPE_BENCH_DIR:-/tmp/gpuscope-bench}"
mkdir -p "$out" "$gen"
results="$out/results.tsv"
sizes="256M 1G 4G"
corpus=0
real=0
for arg in "$@"; do
  case "$arg" in
    --quick) sizes="256M 1G" ;;
    --corpus) corpus=1 ;;
    --real) real=1 ;;
    *) echo "usage: bench/run.sh [--quick] [--corpus] [--real]" >&2; exit 2 ;;
  esac
done

echo "bench: $(uptime | sed 's/.*load/load/') (before)" >&2
printf 'input\tjson_MB\tthreads\twall_s\tcpu_s\tload_s\tanalyze_s\tpeak_rss_MB\trss_per_json\tceil_read_s\tceil_tokens_s\tceil_parse_s\tceil_document_s\tx_tokens\tx_parse\tx_document\n' >"$results"

# ceiling FILE → sets c_tokens c_parse c_document json_mb
ceiling() {
  line=$($ceiling "$1")
  c_read=$(echo "$line" | sed 's/.* read_seconds=\([0-9.]*\).*/\1/')
  c_tokens=$(echo "$line" | sed 's/.* tokens_seconds=\([0-9.]*\).*/\1/')
  c_parse=$(echo "$line" | sed 's/.* parse_seconds=\([0-9.]*\).*/\1/')
  c_document=$(echo "$line" | sed 's/.* document_seconds=\([0-9.]*\).*/\1/')
  json_mb=$(echo "$line" | sed 's/.* json_bytes=\([0-9]*\).*/\1/' | awk '{ printf "%.0f", $1 / 1e6 }')
}

# run FILE LABEL THREADS: the fastest of 3 by wall time
run() {
  best_wall=""
  for i in 1 2 3; do
    t=$( { /usr/bin/time -f 'time: %e %U %S %M' "$bin" analyze "$1" -j "$3" --stats >/dev/null; } 2>&1 )
    wall=$(echo "$t" | sed -n 's/^time: \([0-9.]*\) .*/\1/p')
    if [ -z "$best_wall" ] || awk "BEGIN { exit !($wall < $best_wall) }"; then
      best_wall=$wall
      best="$t"
    fi
  done
  cpu=$(echo "$best" | sed -n 's/^time: [0-9.]* \([0-9.]*\) \([0-9.]*\) .*/\1 \2/p' | awk '{ printf "%.2f", $1 + $2 }')
  # %M is KiB; MB here is 10^6 bytes, the unit of json_MB, so the ratio compares like with like.
  rss=$(echo "$best" | sed -n 's/^time: .* \([0-9]*\)$/\1/p' | awk '{ printf "%.0f", $1 * 1024 / 1e6 }')
  stats=$(echo "$best" | grep '^stats: load_seconds')
  load=$(echo "$stats" | sed 's/.*load_seconds=\([0-9.]*\).*/\1/')
  analyze=$(echo "$stats" | sed 's/.*analyze_seconds=\([0-9.]*\).*/\1/')
  awk -v l="$2" -v mb="$json_mb" -v th="$3" -v w="$best_wall" -v c="$cpu" -v ld="$load" \
      -v an="$analyze" -v r="$rss" -v cr="$c_read" -v ct="$c_tokens" -v cp="$c_parse" -v cd="$c_document" \
      'BEGIN { printf "%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\n",
               l, mb, th, w, c, ld, an, r, r / mb, cr, ct, cp, cd, w / ct, w / cp, w / cd }' |
    tee -a "$results"
}

for size in $sizes; do
  plain="$gen/synth_$size.json"
  [ -f "$plain" ] || $bin synth -o "$plain" --target-size "$size" --seed 1 >/dev/null
  [ -f "$plain.gz" ] || gzip -1 -k -c "$plain" >"$plain.gz"
  for f in "$plain" "$plain.gz"; do
    ceiling "$f"
    for t in 1 2; do run "$f" "$(basename "$f")" "$t"; done
  done
done

if [ "$real" = 1 ]; then
  source_trace="${GPUSCOPE_SHARED_DIR:-../shared}/traces/hta/negative_queue_length_A100-80GB_rank0of16.json.gz"
  replica="$gen/real_A100_466M.json"
  if [ -f "$source_trace" ]; then
    [ -f "$replica" ] || python3 bench/replicate.py "$source_trace" "$replica" --target-mb 466
    ceiling "$replica"
    for t in 1 2; do run "$replica" "$(basename "$replica")" "$t"; done
  else
    echo "bench: $source_trace not found; skipping the real-derived trace" >&2
  fi
fi

if [ "$corpus" = 1 ]; then
  shared="${GPUSCOPE_SHARED_DIR:-../shared}"
  if [ -d "$shared/traces" ]; then
    for f in "$shared"/traces/*/*.json.gz; do
      case "$f" in *memory_timeline*) continue ;; esac
      ceiling "$f" 2>/dev/null || continue
      for t in 1 2; do run "$f" "$(basename "$f")" "$t"; done
    done
  else
    echo "bench: $shared/traces not found; skipping the real traces" >&2
  fi
fi
echo "bench: $(uptime | sed 's/.*load/load/') (after)" >&2
echo "wrote $results" >&2
