#!/usr/bin/python3
"""The JSON contract, checked with jsonschema (the project's venv, requirements-test.txt).

  json_contract.py validate SCHEMA FILE...   every file validates against docs/schema; integer
                                             literals stay within ±2^53; a field's key suffix
                                             names its unit (_ns, _bytes, _share, ...)
  json_contract.py mapping V1 V2             every number of a schema_version 1 analyze report
                                             (tests/golden/v1) is present, with its value, in the
                                             version 2 document of the same trace
"""
import json
import math
import re
import sys

SUFFIX = {"ns": "_ns", "bytes": "_bytes", "share": "_share", "bytes_per_s": "_bytes_per_s",
          "per_s": "_per_s", "percent": "_pct", "watts": "_w", "mhz": "_mhz", "celsius": "_c"}
LIMIT = 2 ** 53


def load(path):
    big = []

    def parse_int(text):
        if abs(int(text)) > LIMIT:
            big.append(text)
        return int(text)

    with open(path, encoding="utf-8") as f:
        doc = json.load(f, parse_int=parse_int)
    return doc, big


def check_keys(node, path, errors):
    if isinstance(node, dict):
        if node.get("type") in ("row", "finding"):
            fields = node.get("fields") or node.get("evidence") or {}
            for key, field in fields.items():
                want = SUFFIX.get(field.get("unit"))
                if want and not key.endswith(want):
                    errors.append(f"{path}.{key}: unit {field['unit']} but the key does not end in {want}")
        if node.get("type") == "table":
            for col in node.get("columns", []):
                want = SUFFIX.get(col.get("unit"))
                if want and not col["key"].endswith(want):
                    errors.append(f"{path}: column {col['key']}: unit {col['unit']} needs suffix {want}")
        for k, v in node.items():
            check_keys(v, f"{path}.{k}", errors)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            check_keys(v, f"{path}[{i}]", errors)


def validate(schema_path, files):
    try:
        import jsonschema
    except ImportError:
        print("jsonschema is not installed (tools/setup.sh --test installs it): skipped")
        sys.exit(77)
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    failures = 0
    for path in files:
        doc, big = load(path)
        errors = [f"{e.json_path}: {e.message[:300]}" for e in validator.iter_errors(doc)]
        errors += [f"integer literal beyond 2^53: {b}" for b in big]
        check_keys(doc, "$", errors)
        for e in errors[:20]:
            print(f"{path}: {e}")
        failures += bool(errors)
        print(f"{path}: {'FAIL' if errors else 'ok'} ({len(errors)} problems)")
    return 1 if failures else 0


# ---- v1 → v2 ------------------------------------------------------------------------------------

STEP_CATS = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other"]


def numeric_leaves(node, path=()):
    if isinstance(node, bool) or node is None or isinstance(node, str):
        return
    if isinstance(node, (int, float)):
        yield path, node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from numeric_leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from numeric_leaves(v, path + (i,))


class V2:
    def __init__(self, doc):
        self.doc = doc
        self.ranks = [v for k, v in doc["sections"].items() if k.startswith(("rank_", "input_"))]

    def item(self, r, group, key):
        return self.ranks[r]["sections"][group]["items"][key]

    def field(self, r, group, item, key):
        return self.item(r, group, item)["fields"][key]["value"]

    def cell(self, r, group, table, i, col):
        return self.item(r, group, table)["rows"][i][col]


def v2_value(v2, p, v1_ids={}):
    """The v2 value for v1 path p, with the factor v1 = factor * v2 (units changed), or KeyError."""
    if p[0] == "schema_version":
        return 2, None  # compared separately: the version moved on
    if p[0] == "across_ranks":
        # v1's across-ranks section is retired: its straggler (step > median + 10 %) named the ranks
        # that wait, and its k-th-kernel arrival order is replaced by collectives matched across
        # ranks (the `jobs` section, docs/json-schema.md). Its per-rank numbers are each rank's own;
        # the rule's threshold and its arrival counts have no v2 counterpart.
        if p[1] in ("straggler_threshold", "collectives_compared"):
            return None, None
        steps = [v2.field(r, "steps", "step_time", "mean_step_ns") for r in range(len(v2.ranks))]
        srt = sorted(steps)
        n = len(srt)
        median = srt[n // 2] if n % 2 else (srt[n // 2 - 1] + srt[n // 2]) / 2
        if p[1] == "median_step_ns": return median, 1
        r, k = p[2], p[3]
        if k in ("collectives", "last_arrivals"): return None, None
        if k == "rank": return v2.ranks[r]["items"]["identity"]["fields"]["rank"]["value"], 1
        if k == "step_ns": return steps[r], 1
        if k == "slowdown": return steps[r] / median - 1, 1
        if k == "span_ns": return v2.field(r, "gpu_time", "gpu_time", "analysed_ns"), 1
        return v2.field(r, "gpu_time", "exclusive", k), 1
    assert p[0] == "ranks"
    r, rest = p[1], p[2:]
    k = rest[0]
    F = lambda g, i, f: (v2.field(r, g, i, f), 1)
    simple = {
        "base_time_ns": ("inputs", "input", "base_time_ns"), "file_bytes": ("inputs", "input", "file_bytes"),
        "json_bytes": ("inputs", "input", "json_bytes"), "events_total": ("inputs", "input", "events"),
        "rank": None, "world_size": None,
        "gpu_start_ns": ("inputs", "gpu_span", "start_ns"), "gpu_end_ns": ("inputs", "gpu_span", "end_ns"),
        "gpu_span_ns": ("inputs", "gpu_span", "span_ns"), "cpu_start_ns": ("inputs", "cpu_span", "start_ns"),
        "cpu_end_ns": ("inputs", "cpu_span", "end_ns"),
        "comm_compute_overlap_ratio": ("gpu_time", "overlap", "comm_compute_overlap_share"),
    }
    if k in ("rank", "world_size"):
        return v2.ranks[r]["items"]["identity"]["fields"][k]["value"], 1
    if k in simple:
        return F(*simple[k])
    if k == "device":
        m = {"devices_listed": "devices_listed", "memory_bytes": "memory_bytes", "sms": "sms"}
        return F("inputs", "device", m[rest[1]])
    if k == "counts":
        for item in ("gpu_events", "cpu_events", "cpu_events_more", "other_events"):
            fields = v2.item(r, "inputs", item)["fields"]
            if rest[1] in fields: return fields[rest[1]]["value"], 1
        raise KeyError(rest[1])
    if k == "links":
        for item in ("links", "link_methods"):
            fields = v2.item(r, "inputs", item)["fields"]
            if rest[1] in fields: return fields[rest[1]]["value"], 1
        raise KeyError(rest[1])
    if k == "step_numbers":
        return v2.cell(r, "steps", "per_step", rest[1], "step"), 1
    if k == "selection":
        return F("gpu_time", "gpu_time", "selected_gpu_events")
    if k == "temporal_breakdown":
        return F("gpu_time", "temporal", rest[1])
    if k == "exclusive_breakdown":
        if rest[1] == "span_ns": return F("gpu_time", "gpu_time", "analysed_ns")
        return F("gpu_time", "exclusive", rest[1])
    if k == "idle_attribution":
        return v2.cell(r, "gpu_time", "idle_by_stream", rest[1], rest[2]), 1
    if k == "step_summary":
        f = rest[1]
        if f == "steady_steps": return F("steps", "step_time", "steady_steps")
        if f == "mean_step_ns": return F("steps", "step_time", "mean_step_ns")
        if f == "mean_breakdown_ns": return F("steps", "step_breakdown", rest[2] + "_ns")
        if f == "complete_steps": return F("steps", "tb_plugin_steps", "complete_steps")
        if f == "tb_plugin_mean_step_ns": return F("steps", "tb_plugin_steps", "mean_step_ns")
        if f == "tb_plugin_mean_breakdown_ns": return F("steps", "tb_plugin_steps", rest[2] + "_ns")
    # v2 tables count times from the trace's start (its first CPU or GPU event); v1 gave the clock.
    def trace_start():
        g = v2.field(r, "inputs", "gpu_span", "start_ns") or 0
        c = v2.field(r, "inputs", "cpu_span", "start_ns") or 0
        return min(g, c) if g > 0 and c > 0 else max(g, c)
    if k == "steps":
        if rest[2] == "start_ns":
            return v2.cell(r, "steps", "per_step", rest[1], "start_offset_ns") + trace_start(), 1
        col = rest[3] + "_ns" if rest[2] == "breakdown_ns" else rest[2]
        return v2.cell(r, "steps", "per_step", rest[1], col), 1
    if k == "kernels":
        if rest[1] == "classes":
            classes = v2.item(r, "kernels", "kernel_classes")["rows"]
            cls = classes[rest[2]]["class"]
            if rest[3] == "top":
                col = "time_share" if rest[5] == "share" else rest[5]
                return v2.cell(r, "kernels", "top_kernels_" + cls, rest[4], col), 1
            return classes[rest[2]][rest[3]], 1
        if rest[1] == "math_ns_by_precision": return F("kernels", "precision", rest[2] + "_ns")
        return F("kernels", "precision", rest[1])
    if k == "launches":
        if rest[1] in ("all", "hta_apis"):
            item = "launches" if rest[1] == "all" else "launches_hta"
            key = "launched" if rest[2] == "n" else rest[2]
            return F("launches", item, key)
        if rest[1] == "apis": return v2.cell(r, "launches", "launch_apis", rest[2], rest[3]), 1
        if rest[1] in ("graphs", "gpu_activities_without_launch"):
            return F("launches", "cuda_graphs", rest[-1] if rest[1] == "graphs" else rest[1])
    if k == "copies":
        if rest[1] == "groups":
            col = rest[3]
            if col == "size_histogram": col = f"size_bucket_{rest[4]}"
            if col == "bytes": col = "total_bytes"
            if col == "achieved_gbps": return v2.cell(r, "copies", "copy_groups", rest[2], "achieved_bytes_per_s"), 1e-9
            return v2.cell(r, "copies", "copy_groups", rest[2], col), 1
        return F("copies", "copy_sync", rest[1])
    if k == "sync":
        tables = {"apis": "sync_apis", "causes": "sync_causes", "per_step": "sync_per_step"}
        if rest[1] in tables: return v2.cell(r, "sync", tables[rest[1]], rest[2], rest[3]), 1
        if rest[1] == "gpu_idle_after_sync_ns": return F("sync", "sync_idle", rest[1])
        return F("sync", "sync", rest[1])
    if k == "memory":
        if rest[1] == "devices":
            dev = v2.cell(r, "memory", "memory_devices", rest[2], "device")
            if rest[3] == "timeline":
                chart = v2.item(r, "memory", f"memory_timeline_device_{dev}")
                i, j = rest[4], rest[5]
                if j == 0: return chart["x"][i] + chart["reference_lines"]["start_ns"]["value"], 1
                series = {s["key"]: s["values"] for s in chart["series"]}
                v = series["allocated" if j == 1 else "reserved"][i] if (j == 1 or "reserved" in series) else None
                return (-1 if v is None else v), 1
            return v2.cell(r, "memory", "memory_devices", rest[2], rest[3]), 1
        return F("memory", "memory", rest[1])
    if k == "occupancy":
        if rest[1] == "tiny": return v2.cell(r, "occupancy", "tiny_grid_kernels", rest[2], rest[3]), 1
        for item in ("occupancy", "tiny_grids"):
            fields = v2.item(r, "occupancy", item)["fields"]
            if rest[1] in fields: return fields[rest[1]]["value"], 1
    if k == "idle_gaps":
        tables = {"histogram": "idle_gap_histogram", "host_ops": "idle_gap_host_ops", "per_step": "idle_gaps_per_step"}
        if rest[1] in tables: return v2.cell(r, "idle_gaps", tables[rest[1]], rest[2], rest[3]), 1
        if rest[1] == "longest":
            if rest[3] == "host_ops":
                ops = [row for row in v2.item(r, "idle_gaps", "longest_idle_gap_ops")["rows"] if row["gap"] == rest[2]]
                return ops[rest[4]][rest[5]], 1
            if rest[3] == "start_ns":
                return (v2.cell(r, "idle_gaps", "longest_idle_gaps", rest[2], "start_offset_ns")
                        + trace_start(), 1)
            return v2.cell(r, "idle_gaps", "longest_idle_gaps", rest[2], rest[3]), 1
        key = "unexplained_per_steady_step_ns" if rest[1] == "unexplained_ns_per_steady_step" else rest[1]
        for item in ("idle_gaps", "idle_gap_causes", "nsight_gaps"):
            fields = v2.item(r, "idle_gaps", item)["fields"]
            if key in fields: return fields[key]["value"], 1
    if k == "findings":
        fid = None
        findings = [(key, it) for key, it in v2.ranks[r]["sections"]["findings"]["items"].items() if it["type"] == "finding"]
        # By the v1 finding's rule id where it has one: rules added since (the cost model's)
        # rank between the old ones.
        v1_id = v1_ids.get((r, rest[1]))
        if v1_id is not None:
            key, it = next((key, it) for key, it in findings if key == v1_id)
        else:
            key, it = findings[rest[1]]
        if rest[2] == "confidence": return it["confidence"], 1
        # A finding's saving is a prediction: since issue 31 the replay on the step graph prices
        # it (docs/advice.md), so v2 keeps the key, not v1's number.
        if rest[2] == "estimated_saving_ns_per_step": return (it["saving_ns"] or 0), "text"
        if rest[2] == "estimated_saving_pct": return (it["saving_share"] or 0), "text"
    raise KeyError("/".join(map(str, p)))


def mapping(v1_path, v2_path):
    v1, _ = load(v1_path)
    v2 = V2(load(v2_path)[0])
    problems, checked = [], 0
    v1_ids = {(r, i): f.get("id") for r, rank in enumerate(v1.get("ranks", []))
              for i, f in enumerate(rank.get("findings", []))}
    for p, a in numeric_leaves(v1):
        try:
            b, factor = v2_value(v2, p, v1_ids)
        except (KeyError, IndexError, TypeError, StopIteration) as e:
            problems.append(f"{'/'.join(map(str, p))}: no v2 key ({e!r})")
            continue
        if factor is None or factor == "text":
            continue
        if b is None:
            b = -1 if a == -1 else 0 if a == 0 else None
        # v1 wrote doubles with fixed decimals: equal means equal to v1's last printed digit.
        tol = 0.0
        if isinstance(a, float):
            text = repr(a)
            decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
            tol = 0.5 * 10 ** -decimals * (1 + 1e-9)
        if b is None or not (abs(a - b * factor) <= tol or math.isclose(a, b * factor, rel_tol=1e-12)):
            problems.append(f"{'/'.join(map(str, p))}: v1 {a} v2 {b} (×{factor})")
        checked += 1
    for x in problems[:30]:
        print(f"{v1_path}: {x}")
    print(f"{v1_path} → {v2_path}: {checked} numbers equal, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "validate":
        sys.exit(validate(sys.argv[2], sys.argv[3:]))
    if len(sys.argv) == 4 and sys.argv[1] == "mapping":
        sys.exit(mapping(sys.argv[2], sys.argv[3]))
    print(__doc__)
    sys.exit(2)
