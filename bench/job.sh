#!/bin/sh
# Job-level benchmark (issue 13): synthetic jobs of many ranks through `analyze FOLDER` (map in
# parallel + reduce, a few rank models in memory at once), and through `map` and `reduce` run
# separately. Per job: wall time, s/GB of JSON, peak RSS (GNU time's maximum resident set), the
# summaries' total and mean size and their share of the traces' JSON. Appends to
# bench/out/job.tsv; the generated traces and summaries are deleted after each job.
#   bench/job.sh [RANKS...]          default: 10 100 1000
# Environment:
#   RANK_SIZE=20M          JSON per rank (`gpuscope synth --target-size`)
#   GZIP=1                 write the traces gzip (when the disk is short)
#   GPUSCOPE_BENCH_DIR     where the traces go (default /tmp/gpuscope-bench-job)
#   NICE=19                niceness of every command (the machine is shared)
set -eu
cd "$(dirname "$0")/.."
tools/build.sh release gpuscope >/dev/null
bin="$(pwd)/build/release/gpuscope"
size="${RANK_SIZE:-20M}"
gen="${GPUSCOPE_BENCH_DIR:-/tmp/gpuscope-bench-job}"
nice_level="${NICE:-19}"
gzip_flag=""
[ "${GZIP:-0}" = 1 ] && gzip_flag="--gzip"
out=bench/out
mkdir -p "$out" "$gen"
results="$out/job.tsv"
[ -f "$results" ] || printf 'ranks\trank_size\tgzip\tfile_bytes\tjson_bytes\tanalyze_wall_s\tanalyze_s_per_GB\tanalyze_peak_rss_MB\tanalyze_json_wall_s\tanalyze_json_peak_rss_MB\tmap_wall_s\tmap_peak_rss_MB\treduce_wall_s\treduce_peak_rss_MB\tsummary_bytes\tsummary_mean_bytes\tsummary_share\tload_before\tload_after\tcommit\n' >"$results"

# timed LABEL CMD...: runs CMD at the chosen niceness under GNU time; sets $wall and $rss_mb.
timed() {
  label="$1"
  shift
  /usr/bin/time -f '%e %M' -o "$gen/time.txt" nice -n "$nice_level" "$@" >/dev/null 2>"$gen/stderr.txt" || {
    echo "bench: $label failed:" >&2
    cat "$gen/stderr.txt" >&2
    exit 1
  }
  wall=$(tail -n 1 "$gen/time.txt" | cut -d' ' -f1)
  rss_mb=$(tail -n 1 "$gen/time.txt" | awk '{ printf "%.1f", $2 / 1024 }')
  echo "bench: $label: ${wall} s, peak RSS ${rss_mb} MB" >&2
}

commit=$(git rev-parse --short HEAD)
for ranks in ${*:-10 100 1000}; do
  job="$gen/job$ranks"
  sums="$gen/summaries$ranks"
  rm -rf "$job" "$sums"
  echo "bench: $ranks ranks of $size $gzip_flag; $(df -h "$gen" | tail -n 1 | awk '{ print $4 }') free in $gen" >&2
  nice -n "$nice_level" "$bin" synth --ranks "$ranks" --target-size "$size" $gzip_flag -o "$job" >/dev/null
  file_bytes=$(du -sb "$job" | cut -f1)
  load_before=$(cut -d' ' -f1 /proc/loadavg)

  # The JSON size of every trace, from analyze's own count (gzip or not).
  timed "analyze $ranks ranks" "$bin" analyze "$job" --stats
  analyze_wall=$wall analyze_rss=$rss_mb
  json_bytes=$(sed -n 's/.* json_bytes=\([0-9]*\).*/\1/p' "$gen/stderr.txt")
  timed "analyze --json $ranks ranks" "$bin" analyze --json "$job"
  analyze_json_wall=$wall analyze_json_rss=$rss_mb
  timed "map $ranks ranks" "$bin" map "$job" -o "$sums/"
  map_wall=$wall map_rss=$rss_mb
  timed "reduce $ranks ranks" "$bin" reduce --json "$sums"
  reduce_wall=$wall reduce_rss=$rss_mb
  load_after=$(cut -d' ' -f1 /proc/loadavg)

  summary_bytes=$(find "$sums" -name '*.gpuscope.db' -printf '%s\n' | awk '{ s += $1 } END { print s }')
  summary_files=$(find "$sums" -name '*.gpuscope.db' | wc -l)
  awk -v r="$ranks" -v s="$size" -v g="${GZIP:-0}" -v fb="$file_bytes" -v jb="$json_bytes" \
    -v aw="$analyze_wall" -v ar="$analyze_rss" -v ajw="$analyze_json_wall" -v ajr="$analyze_json_rss" \
    -v mw="$map_wall" -v mr="$map_rss" -v rw="$reduce_wall" -v rr="$reduce_rss" \
    -v sb="$summary_bytes" -v sf="$summary_files" -v lb="$load_before" -v la="$load_after" -v c="$commit" \
    'BEGIN { printf "%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.3f%%\t%s\t%s\t%s\n",
             r, s, g, fb, jb, aw, aw / (jb / 1e9), ar, ajw, ajr, mw, mr, rw, rr, sb, sb / sf,
             100 * sb / jb, lb, la, c }' | tee -a "$results"
  rm -rf "$job" "$sums"
done
echo "bench: wrote $results" >&2
