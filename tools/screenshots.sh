#!/bin/sh
# Screenshots of every HTML page gpuscope writes, for docs/screenshots/ (issue 35): the analyze
# page of the bundled example (table of contents, findings), its step timeline, a run recording,
# an nvidia-smi log and its charts over time, a plan, a CUDA memory snapshot and a diff — each page made
# from inputs in this repository and taken by headless Chromium, so they stay current.
# usage: tools/screenshots.sh [GPUSCOPE_BINARY] [OUT_DIR]   (defaults: build/release/gpuscope,
# docs/screenshots). Needs chromium (tools/setup.sh --test installs it).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$src/build/release/gpuscope}
out=${2:-$src/docs/screenshots}
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromium" ] || { echo "tools/screenshots.sh: no chromium (tools/setup.sh --test installs it)" >&2; exit 2; }
[ -x "$bin" ] || { echo "tools/screenshots.sh: no gpuscope at $bin (tools/build.sh release gpuscope)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-shots.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

page() {  # NAME GPUSCOPE-ARGS...: the page as $tmp/NAME.html (a plan that does not fit is a page too)
  name=$1
  shift
  "$bin" "$@" --html "$tmp/$name.html" >/dev/null 2>"$tmp/$name.err" || [ -s "$tmp/$name.html" ] ||
    { cat "$tmp/$name.err" >&2; exit 1; }
}
shot() {  # NAME WIDTH HEIGHT [FRAGMENT]: $out/NAME.png of $tmp/NAME.html
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --disable-extensions \
    --user-data-dir="$tmp/profile" --window-size="$2,$3" --screenshot="$out/$1.png" \
    "file://$tmp/$1.html${4:-}" >/dev/null 2>&1
  echo "wrote $out/$1.png"
}
# The step timeline on a page of its own (the section and the page's style), for a screenshot that
# starts at it.
section_page() {  # FROM TO SECTION_ID
  python3 - "$tmp/$1.html" "$tmp/$2.html" "$3" <<'PY'
import sys
page, out, sid = sys.argv[1:4]
s = open(page, encoding="utf-8").read()
head = s[: s.index("<body>") + 6]
i = s.index('<section id="%s">' % sid)
j = s.index("</section>", i) + len("</section>")
open(out, "w", encoding="utf-8").write(head + s[i:j] + "</body></html>")
PY
}

# Inputs by paths relative to the repository (the pages print them), the diff's in $tmp.
cd "$src"
page analyze analyze examples/train_input_bound.pt.trace.json.gz
section_page analyze timeline rank_0-timeline
page run analyze tests/data/monitor/run_cpu_busy_workers.jsonl
page smi analyze tests/data/monitor/nvidia_smi_2gpu.csv
section_page smi smi_charts monitor-over_time
page plan plan --model llama-3-8b --gpu h100-sxm --gpus 8 --global-batch 64 --seq-len 4096
page snapshot analyze fuzz/seeds/snapshot/snapshot_p4.pickle
cd "$tmp"
"$bin" synth -o before.pt.trace.json --steps 6 --dataloader-stall 0.3 >/dev/null
"$bin" synth -o after.pt.trace.json --steps 6 >/dev/null
page diff diff before.pt.trace.json after.pt.trace.json
cd "$src"

shot analyze 1000 900
shot timeline 1000 360
shot run 1000 900
shot smi 1000 900
shot smi_charts 1000 900
shot plan 1000 900
shot snapshot 1000 900
shot diff 1000 900
