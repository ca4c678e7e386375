#!/bin/sh
# MPI scale-out benchmark (issue 13): one synthetic job through `analyze FOLDER` without MPI, and
# `mpirun -n P gpuscope analyze --mpi FOLDER` for each P, the threads of the machine's cores split
# over the processes. Per run: wall time (median of ROUNDS, alternating), s/GB of JSON, peak RSS
# of the largest process (GNU time's maximum over mpirun's children), and whether the JSON equals
# the single-process run's. Appends to bench/out/job_mpi.tsv; the traces are deleted at the end.
#   bench/job_mpi.sh [PROCESSES...]     default: 1 2
# Environment: RANKS=40, RANK_SIZE=20M, ROUNDS=3, NICE=19, GPUSCOPE_BENCH_DIR (/tmp/gpuscope-bench-mpi)
set -eu
cd "$(dirname "$0")/.."
tools/build.sh release gpuscope >/dev/null
bin="$(pwd)/build/release/gpuscope"
if "$bin" analyze --help | grep -q "this build has no MPI"; then
  echo "bench: this build has no MPI (install libopenmpi-dev, rebuild)" >&2
  exit 2
fi
ranks="${RANKS:-40}"
size="${RANK_SIZE:-20M}"
rounds="${ROUNDS:-3}"
nice_level="${NICE:-19}"
gen="${GPUSCOPE_BENCH_DIR:-/tmp/gpuscope-bench-mpi}"
cores=$(nproc)
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
out=bench/out
mkdir -p "$out" "$gen"
trap 'rm -rf "$gen/job"' EXIT
results="$out/job_mpi.tsv"
[ -f "$results" ] || printf 'ranks\trank_size\tjson_bytes\tprocesses\tthreads_each\tround_walls_s\tmedian_wall_s\ts_per_GB\tpeak_rss_MB\tsame_json\tcommit\n' >"$results"

rm -rf "$gen/job"
nice -n "$nice_level" "$bin" synth --ranks "$ranks" --target-size "$size" -o "$gen/job" >/dev/null
"$bin" analyze --stats --json "$gen/job" >"$gen/one.json" 2>"$gen/stderr.txt"
json_bytes=$(sed -n 's/.* json_bytes=\([0-9]*\).*/\1/p' "$gen/stderr.txt")
commit=$(git rev-parse --short HEAD)

# run LABEL CMD...: one timed run; appends "wall rss" to $gen/LABEL.times.
run() {
  label="$1"
  shift
  /usr/bin/time -f '%e %M' -o "$gen/time.txt" nice -n "$nice_level" "$@" >"$gen/$label.json" 2>/dev/null
  tail -n 1 "$gen/time.txt" >>"$gen/$label.times"
}

labels="single"
for p in ${*:-1 2}; do labels="$labels mpi$p"; done
for label in $labels; do rm -f "$gen/$label.times"; done
i=0
while [ "$i" -lt "$rounds" ]; do
  for label in $labels; do
    case "$label" in
      single) run single "$bin" analyze --json "$gen/job" ;;
      mpi*)
        p=${label#mpi}
        threads=$(( cores / p > 0 ? cores / p : 1 ))
        over=""
        [ "$p" -gt "$cores" ] && over="--oversubscribe"
        # OpenMPI binds each process to one core by default (up to 2 processes): with threads,
        # every process must see its share of the cores.
        run "$label" mpirun -n "$p" --bind-to none $over "$bin" analyze --mpi -j "$threads" --json "$gen/job" ;;
    esac
  done
  i=$((i + 1))
done

for label in $labels; do
  walls=$(cut -d' ' -f1 "$gen/$label.times" | tr '\n' ' ')
  median=$(cut -d' ' -f1 "$gen/$label.times" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  rss=$(cut -d' ' -f2 "$gen/$label.times" | sort -n | tail -n 1 | awk '{ printf "%.1f", $1 / 1024 }')
  same=no
  cmp -s "$gen/one.json" "$gen/$label.json" && same=yes
  p=1 threads=$cores
  case "$label" in mpi*) p=${label#mpi} threads=$(( cores / p > 0 ? cores / p : 1 )) ;; esac
  [ "$label" = single ] && p=0
  spg=$(awk -v w="$median" -v b="$json_bytes" 'BEGIN { printf "%.2f", w / (b / 1e9) }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ranks" "$size" "$json_bytes" "$p" "$threads" \
    "$walls" "$median" "$spg" "$rss" "$same" "$commit" >>"$results"
  echo "bench: $label (processes $p, threads each $threads): median ${median} s ($walls), ${spg} s/GB, peak RSS ${rss} MB, same JSON: $same" >&2
done
