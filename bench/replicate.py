#!/usr/bin/env python3
"""A real trace replicated to a target size: issue 17's "real-derived" benchmark input.

    bench/replicate.py TRACE OUT --target-mb N

Reads a Kineto trace (plain or gzip) and writes its traceEvents again and again, copy k shifted in
time by k × (the trace's span + 1 ms) and with its correlation ids, External ids and flow ids moved
just past the ids of the copy before it (as dense as the trace's own), so that launches still link
one to one and ProfilerStep
numbers keep increasing, until the output reaches N MB (10^6 bytes). The header members are kept
once. The events themselves — names, durations, kernel arguments, the mix of a real GPU's trace —
are the real trace's; only their number grows. Timestamps are written as the trace wrote them
(integer or fractional µs).
"""
import argparse
import gzip
import json
import re
import sys

ID_KEYS = ("correlation", "External id", "external id")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def load(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--target-mb", type=float, required=True)
    a = ap.parse_args()
    doc = load(a.trace)
    events = doc["traceEvents"]
    header = {k: v for k, v in doc.items() if k != "traceEvents"}

    timed = [e for e in events if isinstance(e, dict) and "ts" in e and e.get("ph") != "M"]
    start = min(float(e["ts"]) for e in timed)
    end = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed)
    shift_us = (end - start) + 1000.0  # the span and 1 ms between copies
    # Per kind of id (correlation, External id, flow id: each numbered on its own), its range.
    lo, hi = {}, {}
    max_step = 0
    for e in timed:
        args = e.get("args") or {}
        ids = [(k, args[k]) for k in ID_KEYS if isinstance(args.get(k), int) and args[k] >= 0]
        if isinstance(e.get("id"), int) and e["id"] >= 0:
            ids.append(("id", e["id"]))
        for k, i in ids:
            lo[k] = min(lo.get(k, i), i)
            hi[k] = max(hi.get(k, i), i)
        m = STEP.match(str(e.get("name", "")))
        if m:
            max_step = max(max_step, int(m.group(1)))
    # Copy k's ids follow copy k−1's: as dense as the trace's own (profilers number them in turn).
    id_step = {k: hi[k] - lo[k] + 1 for k in lo}
    fractional = any(isinstance(e["ts"], float) or isinstance(e["ts"], str) for e in timed)

    def shifted(e, k):
        if k == 0 or e.get("ph") == "M" or "ts" not in e:
            return e
        e = dict(e)
        ts = float(e["ts"]) + k * shift_us
        e["ts"] = round(ts, 3) if fractional else int(round(ts))
        if isinstance(e.get("id"), int) and e["id"] >= 0:
            e["id"] = e["id"] + k * id_step["id"]
        if isinstance(e.get("args"), dict):
            args = dict(e["args"])
            for key in ID_KEYS:
                if isinstance(args.get(key), int) and args[key] >= 0:
                    args[key] = args[key] + k * id_step[key]
            e["args"] = args
        m = STEP.match(str(e.get("name", "")))
        if m:
            e["name"] = "ProfilerStep#%d" % (int(m.group(1)) + k * (max_step + 1))
        return e

    target = int(a.target_mb * 1e6)
    written = 0
    copies = 0
    with open(a.out, "w", encoding="utf-8") as out:
        head = json.dumps(header)[:-1]
        out.write(head + (", " if header else "") + '"traceEvents": [\n')
        written += len(head) + 20
        first = True
        k = 0
        while written < target:
            for e in events:
                if k > 0 and isinstance(e, dict) and e.get("ph") == "M":
                    continue  # metadata once
                text = json.dumps(shifted(e, k), separators=(", ", ": "))
                out.write(("" if first else ",\n") + text)
                written += len(text) + 2
                first = False
            k += 1
        copies = k
        out.write("\n]}\n")
    print("replicate: %s × %d copies → %s (%.1f MB, %d events per copy, shift %.3f ms)"
          % (a.trace, copies, a.out, written / 1e6, len(events), shift_us / 1e3), file=sys.stderr)


if __name__ == "__main__":
    main()
