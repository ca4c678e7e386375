#!/bin/sh
# The JSON contract for the monitor's documents: every `gpuscope run --json` / `--report-json`
# output, `analyze --json` of each recording format and of an nvidia-smi log, and an analyze report
# with the monitor section beside the trace (lined up, and not) validate against
# docs/schema/document.schema.json (tests/json_contract.py validate: schema, integers within 2^53,
# key suffixes naming units). Then a few values are read back, so the files are not empty shells.
#   json_contract_run.sh GPUSCOPE FAKE_NVML SOURCE_DIR PYTHON
# Exit 77 (skipped) when jsonschema is missing, as json_contract.py says.
set -u
g="$1"
fake="$2"
src="$3"
python="$4"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir "$d/rec"  # recordings and inputs; the documents to validate are $d/*.json
fail() { echo "FAIL: $*"; exit 1; }

# A run with two scripted GPUs (GPU 1 loses its power reading after 2 reads: a note), recorded in
# all three formats; and a run without NVML.
printf 'gpus 2\nname 0 NVIDIA H100\nutil 0 43 10\nmemory 0 22000000000 80000000000\npower 0 120000 700000\nclock 0 1410\ntemperature 0 65\nthrottle 0 4\nprocmem 0 1073741824\nname 1 NVIDIA H100\nutil 1 97 50\npower 1 300000 700000\nfail 1 power 2 15\n' >"$d/rec/nvml"
for ext in jsonl csv json; do
  GPUSCOPE_NVML_LIBRARY="$fake" GPUSCOPE_FAKE_NVML_SCRIPT="$d/rec/nvml" "$g" run --interval 50ms \
    --record "$d/rec/run.$ext" --report-json "$d/report_$ext.json" --json -- sleep 0.4 \
    >"$d/run_$ext.json" 2>"$d/rec/run_$ext.err" || fail "run --record run.$ext"
  "$g" analyze --json "$d/rec/run.$ext" >"$d/analyze_$ext.json" || fail "analyze run.$ext"
done
GPUSCOPE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$g" run --interval 50ms --json -- sleep 0.3 \
  >"$d/run_no_gpu.json" 2>/dev/null || fail "run without NVML"

# An nvidia-smi query log with a malformed line (exit code 2, counted in the document).
printf 'timestamp, index, name, utilization.gpu [%%], memory.used [MiB], memory.total [MiB], power.draw [W]\n2024/01/15 10:23:45.123, 0, NVIDIA A100, 43 %%, 22000 MiB, 81920 MiB, 120.50 W\n2024/01/15 10:23:46.123, 0, NVIDIA A100, 45 %%, 22100 MiB, 81920 MiB, 125.00 W\nnot a row\n' >"$d/rec/smi.csv"
"$g" analyze --json "$d/rec/smi.csv" >"$d/analyze_smi.json"
[ $? -eq 2 ] || fail "analyze smi.csv: exit code 2 expected (a malformed line)"

# The DCGM logs and a headerless nvidia-smi log of 2 GPUs (98 % and 40 %: the balance row and the
# gpu_imbalance finding; power: the energy rows).
printf '#Entity   SMACT  SMOCC  TENSO  DRAMA  GPUTL  POWER  TOTEC\nID\nGPU 0  0.512  0.301  0.250  0.400  98  300.5  1000000\nGPU 1  0.210  0.120  N/A  0.150  40  150.0  2000000\nGPU 0  0.520  0.310  0.260  0.410  98  301.5  1300000\nGPU 1  0.200  0.110  0.010  0.140  40  151.0  2150000\n' >"$d/rec/dcgmi.log"
"$g" analyze --json "$d/rec/dcgmi.log" >"$d/analyze_dcgmi.json" || fail "analyze dcgmi.log"
printf '# timestamp 1705314225\nDCGM_FI_DEV_GPU_UTIL{gpu="0",modelName="NVIDIA H100"} 98\nDCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.5\nDCGM_FI_DEV_POWER_USAGE{gpu="0"} 500\n# timestamp 1705314226\nDCGM_FI_DEV_GPU_UTIL{gpu="0",modelName="NVIDIA H100"} 96\nDCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.52\nDCGM_FI_DEV_POWER_USAGE{gpu="0"} 510\n' >"$d/rec/dcgm.prom"
"$g" analyze --json "$d/rec/dcgm.prom" >"$d/analyze_dcgm_exporter.json" || fail "analyze dcgm.prom"
printf '2024/01/15 10:23:45.000, 0, NVIDIA A100, 98 %%, 300.00 W\n2024/01/15 10:23:45.000, 1, NVIDIA A100, 40 %%, 150.00 W\n2024/01/15 10:23:46.000, 0, NVIDIA A100, 98 %%, 300.00 W\n2024/01/15 10:23:46.000, 1, NVIDIA A100, 40 %%, 150.00 W\n' >"$d/rec/noheader.csv"
"$g" analyze --json "$d/rec/noheader.csv" >"$d/analyze_noheader.json" || fail "analyze noheader.csv"

# The bundled example trace spans 1734973733.079–1734973733.369 s (unix): a recording with samples
# inside it lines up; the run recorded above (today) does not.
example="$src/examples/train_input_bound.pt.trace.json.gz"
{
  printf '{"type":"header","format":"gpuscope-monitor","version":1,"command":["python","train.py"],"interval_ns":100000000,"start_ns":1734973733000000000,"root_pid":10,"gpus":[{"index":0,"name":"NVIDIA A100-SXM4-80GB","mem_total_bytes":80000000000,"power_limit_w":400}]}\n'
  for t in 1734973733100000000 1734973733200000000 1734973733300000000; do
    printf '{"type":"sample","t_ns":%s,"gpus":[{"index":0,"sm_util_pct":60,"mem_used_bytes":30000000000,"power_w":250}],"procs":[{"pid":10,"ppid":1,"name":"python","cpu_pct":99,"cpu_time_ns":%s,"rss_bytes":1000000}],"cores_busy_pct":[50,60]}\n' "$t" "${t#17349737}"
  done
  printf '{"type":"end","end_ns":1734973733400000000,"exit_code":0}\n'
} >"$d/rec/aligned.jsonl"
"$g" analyze --json "$example" --monitor "$d/rec/aligned.jsonl" >"$d/beside_aligned.json" \
  || fail "analyze --monitor aligned"
"$g" analyze --json "$example" --monitor "$d/rec/run.jsonl" >"$d/beside_no_overlap.json" \
  || fail "analyze --monitor no overlap"

"$python" "$src/tests/json_contract.py" validate "$src/docs/schema/document.schema.json" "$d"/*.json
rc=$?
[ $rc -eq 0 ] || exit $rc

# Values, read back through Python's json module.
"$python" - "$d" <<'EOF' || exit 1
import json, sys
d = sys.argv[1]
def load(name):
    with open(f"{d}/{name}", encoding="utf-8") as f:
        return json.load(f)
def items(doc):
    return doc["sections"]["monitor"]["items"]
def field(its, item, key):
    return its[item]["fields"][key]["value"]
problems = []
def check(what, got, want):
    if got != want:
        problems.append(f"{what}: {got!r}, expected {want!r}")
for ext in ("jsonl", "csv", "json"):
    run, report, back = load(f"run_{ext}.json"), load(f"report_{ext}.json"), load(f"analyze_{ext}.json")
    check(f"{ext}: schema", run["schema"], "gpuscope.run")
    check(f"{ext}: --json = --report-json", run, report)
    check(f"{ext}: GPU 0 util", field(items(run), "gpu_0", "util_mean_pct"), 43.0)
    check(f"{ext}: GPU 0 memory peak", field(items(run), "gpu_0", "mem_used_peak_bytes"), 22000000000)
    check(f"{ext}: GPU 0 power", field(items(run), "gpu_0", "power_mean_w"), 120.0)
    check(f"{ext}: read back: verdict", field(items(back), "verdict", "verdict"), field(items(run), "verdict", "verdict"))
    check(f"{ext}: read back: title", back["title"].startswith("gpuscope monitor · recording "), True)
    check(f"{ext}: memory_headroom finding", items(run)["memory_headroom_gpu_0"]["type"], "finding")
    check(f"{ext}: throttled finding", items(run)["throttled_gpu_0"]["evidence"]["throttled_share"]["value"], 1.0)
check("no GPU: gpu_none", "gpu_none" in items(load("run_no_gpu.json")), True)
smi = items(load("analyze_smi.json"))
check("smi: source", field(smi, "source", "source"), "nvidia_smi_csv")
check("smi: skipped", field(smi, "skipped", "malformed_lines"), 1)
check("smi: util", field(smi, "gpu_0", "util_mean_pct"), 44.0)
dcgmi = items(load("analyze_dcgmi.json"))
check("dcgmi: source", field(dcgmi, "source", "source"), "dcgmi_dmon")
check("dcgmi: SM active", round(field(dcgmi, "gpu_0", "sm_active_mean_pct"), 6), 51.6)
check("dcgmi: energy per hour", round(field(dcgmi, "energy", "energy_per_hour_wh"), 6), 450.0)
check("dcgmi: balance", field(dcgmi, "balance", "least_gpu"), 1)
check("dcgmi: imbalance", dcgmi["gpu_imbalance"]["evidence"]["lagging_gpu"]["value"], 1)
exporter = items(load("analyze_dcgm_exporter.json"))
check("dcgm-exporter: source", field(exporter, "source", "source"), "dcgm_exporter")
check("dcgm-exporter: SM active", round(field(exporter, "gpu_0", "sm_active_mean_pct"), 6), 51.0)
noheader = items(load("analyze_noheader.json"))
check("noheader: GPU 1 util", field(noheader, "gpu_1", "util_mean_pct"), 40.0)
check("noheader: spread", field(noheader, "balance", "spread_pct"), 58.0)
aligned = load("beside_aligned.json")["sections"]
monitor = next(v for k, v in aligned.items() if k.startswith(("rank_", "input_")))["sections"]["monitor"]["items"]
check("aligned: alignment", field(monitor, "alignment", "alignment"), "aligned")
check("aligned: samples", field(monitor, "span", "samples"), 3)
check("aligned: util", field(monitor, "gpu_0", "util_mean_pct"), 60.0)
check("aligned: main", field(monitor, "cpu", "main_process"), "python (pid 10)")
other = load("beside_no_overlap.json")["sections"]
monitor = next(v for k, v in other.items() if k.startswith(("rank_", "input_")))["sections"]["monitor"]["items"]
check("no overlap: alignment", field(monitor, "alignment", "alignment"), "no_overlap")
check("no overlap: text", monitor["no_overlap"]["text"].startswith("no monitor sample within the trace's span (trace 1734973733.0"), True)
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
EOF
