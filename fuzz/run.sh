#!/bin/sh
# Builds the fuzz flavour, seeds a corpus from ../shared/traces (first 64 KiB of each, decompressed,
# plus the whole small ones) and runs the reader fuzzer for $1 seconds (default 60).
set -eu
cd "$(dirname "$0")/.."
seconds="${1:-60}"
tools/setup.sh --dev
tools/build.sh fuzz
corpus=build/fuzz/corpus
mkdir -p "$corpus"
shared="${GPUSCOPE_SHARED_DIR:-../shared}"
if [ -d "$shared/traces" ]; then
  for f in "$shared"/traces/*/*.json.gz; do
    name=$(basename "$f" .json.gz)
    # byte 0 of a fuzz input selects threads/batch; the rest is the trace.
    { printf 'a'; zcat "$f" | head -c 65536; } >"$corpus/$name.head" || true
    [ "$(stat -c %s "$f")" -lt 50000 ] && { printf 'b'; cat "$f"; } >"$corpus/$name.gz"
  done
else
  echo "fuzz: $shared/traces not found; starting from the examples only" >&2
fi
for f in examples/*.json.gz; do { printf 'c'; cat "$f"; } >"$corpus/$(basename "$f")"; done
ASAN_OPTIONS=detect_leaks=1 build/fuzz/fuzz/kineto_reader_fuzz "$corpus" -max_total_time="$seconds" \
  -max_len=262144 -timeout=10 -print_final_stats=1
