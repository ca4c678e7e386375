#!/usr/bin/env python3
"""HTA live: Holistic Trace Analysis from PyPI and gpuscope on the same real traces.

Usage: hta_live_test.py GPUSCOPE_BINARY SOURCE_DIR SHARED_DIR

Runs HTA (PyPI `holistictraceanalysis` 0.5.0, imported as `hta`) and `gpuscope analyze --json` on
ten small real traces (looked up in SOURCE_DIR/tests/data/traces first, then SHARED_DIR/traces; a
missing one is skipped) and compares, per rank:

* temporal breakdown (`get_temporal_breakdown`): span, idle, compute, non-compute, to the µs;
* idle-time attribution per stream (`get_idle_time_breakdown`, consecutive_kernel_delay 30):
  host wait, kernel wait and other, to the µs;
* kernel-type shares (`get_gpu_kernel_breakdown`, include_memory_kernels=True), through the µs
  behind them: HTA's labels containing COMPUTATION against gpuscope's compute time, the
  COMMUNICATION-only labels (alone or overlapping MEMORY) against its exposed communication,
  MEMORY against its exposed memory; then the three shares, and HTA's MEMORY percentage;
* communication-computation overlap (`get_comm_comp_overlap`, a percentage rounded to 0.01);
* CUDA kernel launch statistics (`get_cuda_kernel_launch_stats`), summarised as gpuscope's
  `launches_hta` row: count, short kernels (call ≤ 50 µs and GPU time shorter than the call),
  runtime outliers (call > 50 µs), launch-delay outliers (> 100 µs), the medians (to the µs) and
  the p95 delay (±0.0005 µs: pandas interpolates in float64, gpuscope rounds to whole ns);
* HTA's critical path (`critical_path_analysis`) on three traces (see "Critical path").

The stored HTA outputs that the C++ tests use (shared/reference/hta, tests/hta_agreement_test.cc,
tests/launch_copy_sync_memory_test.cc) were made with HTA's git version (`traceinsight` 0.6.1,
commit f4d0062), which gpuscope reproduces; this script runs the PyPI release, so it also shows
where the two HTA versions differ. Exit status 0: all passed; 1: a comparison failed; 77 (skip):
`hta` cannot be imported, or no trace was found. One line per comparison ("ok    ..." or
"FAIL  ..." with both numbers); lines starting with spaces are information; the last line is
"N passed, M failed". Runtime: about 15-20 s on 2 cores (HTA's loading is most of it).

Agreement: wherever the definitions agree, every number above equals HTA's, to the µs, on all
ten traces (ns-timestamp, NCCL, 2-rank, ROCm, CUDA-graph and multi-stream traces included).

Where definitions differ, and why
---------------------------------
Each difference is asserted explicitly: the script recomputes HTA's number from HTA's own event
table (after HTA's loading and step filter) under HTA's definition, checks that this reproduces
HTA's output exactly, then recomputes it under gpuscope's definition and compares that with
gpuscope to the µs. HTA's unchanged number is printed beside it.

1. Compute kernels: HTA 0.5.0's name rule counts `Stream Wait Event` as COMPUTATION. Its rule
   (hta/utils/utils.py) excludes from COMPUTATION only names matching `^nccl.*Kernel`,
   `.*Memcpy`, `^Memset` and `.*Sync`; HTA 0.6.1, whose rule gpuscope follows (docs/kernel-
   classes.md), also excludes `^Stream Wait Event`, `.*dma`, `^nccl`, `cuda.*LaunchKernel`,
   `^hip`, `^hccl`, `^runFunction` and the MTIA names. A `Stream Wait Event` is a `cuda_sync` row
   (a stream waiting on a CUDA event), not GPU work, so 0.6.1 and gpuscope put it with the
   synchronisation (OTHER, gpuscope's exclusive `other`). HTA 0.5.0 then reports 2 µs more compute
   and 2 µs less non-compute on `cuda_event_sync_multi_stream` (371 against 369 µs) and 7 µs on
   `critical_path_alexnet_A100_cuda_sync` (10,637 against 10,630 µs; 20 such rows), and puts
   those µs under COMPUTATION in its kernel-type breakdown. Span and idle are unaffected. (0.6.1
   also calls names starting with `hip`/`hccl` COMMUNICATION and `hipMemcpy`/`hipMemset` MEMORY;
   none of these traces has such a GPU row.)
2. Overlapping events on one stream (`trace_diff_test_V100_rank1of2`, stream 7: 30 events,
   114 µs overlapped; a shared trace). HTA measures each gap from the previous row's end and sums
   negative gaps as they are; gpuscope measures from the running maximum end of the earlier
   events on the stream, so an event that starts inside earlier work has no gap and the stream's
   idle time is its span minus the union of its events, never negative (docs/metrics.md,
   "Overlapping events on one stream"). Kernel wait there: 42,486 µs in gpuscope, 42,372 µs in
   HTA, equal under gpuscope's rule on HTA's table; host wait and other are equal as they are.
3. GPU events whose launch is not in the trace, on a trace with fewer than two ProfilerSteps
   (so HTA's step filter keeps them): HTA looks the missing launch up as row 0 of its table, so
   their gaps count as host wait; gpuscope never counts such a gap as host wait (docs/metrics.md).
   Handled like item 2 wherever it occurs; none of these traces has such an event on a stream
   with gaps (tests/hta_selection_test.cc shows it on a made trace).
4. Medians and p95 of an empty launch table (ROCm and Triton traces: HTA's launch APIs are
   cudaLaunchKernel(ExC), cudaMemcpyAsync and cudaMemsetAsync only): HTA's pandas statistics are
   NaN; gpuscope must then report null ("not available is null, never 0", docs/json-schema.md).
5. CPU ops that carry a `stream` arg. HTA (0.5.0, and 0.6.1 per shared/docs/metrics-reference.md
   §2.1) takes every row with a `stream` arg as a GPU row. torch.compile's CPU-side op for a Triton
   kernel carries one (`triton_example`: cpu_op `triton_poi_fused_add_cos_sin_0`, 94 µs on the
   host, stream 0), so HTA counts the host op as GPU compute: span and compute 94 µs, against
   1 µs (the kernel itself) in gpuscope, which takes only kernel, memcpy, memset and cuda_sync
   events as GPU events (docs/metrics.md, "Event selection"). Idle attribution and launch stats
   are unaffected (HTA filters those by category or correlation).

Critical path
-------------
HTA's critical path is the longest path through a graph of the CPU ops, runtime calls and GPU
kernels that start inside one annotation instance (here a `ProfilerStep#N`, or the alexnet
trace's second `measure|forward` range), and the kernels those launch. gpuscope computes no
critical path, so no number equals it; what is comparable is the window it lies in. gpuscope's
step (tb_plugin's definition: the ProfilerStep's host range, moved to start no earlier than the
previous step's device work ended, and extended to the end of the device work launched inside
it) ends when the last event HTA may put on that path ends. Asserted, for `ProfilerStep#N`:

* the path's last node ≤ gpuscope's step end;
* its length (the sum of its edge weights) ≤ gpuscope's step end − the step's host start;
* when HTA finds the path mostly GPU-bound, it ends on the last kernel the step launched, which
  is where gpuscope's step ends: equal to the µs (HTA floors ends to the µs); and on a one-stream
  trace it then fits inside gpuscope's step (length ≤ gpuscope's step duration).

Measured: `ns_resolution_V100_rank0` ProfilerStep#103: length 95,569 µs (93,524 µs
gpu_compute_bound, 2,045 µs kernel-kernel overhead), ending at gpuscope's step end
(…794,553 µs); gpuscope's step is 95,570.619 µs. `nccl_parser_config_A100_rank0of2`
ProfilerStep#5: length 101,398 µs, all cpu_bound (no cuda_sync rows in that trace, so HTA warns
that the path may be inaccurate), ending 223 µs before gpuscope's step end (the step's host end).
Where SHARED_DIR/reference/hta_critical_path has HTA 0.6.1's path for the same step, it is
printed beside the live one: ns_resolution #103 is identical (95,569 µs, same first and last
node); on nccl_parser_config #5 0.6.1's path has the same first and last node but is 188,910 µs
long (a version difference; HTA 0.5.0 gives 101,398 µs under pandas 2.3.3 too). On the alexnet
trace (no ProfilerStep, so no gpuscope step) the path is only checked against HTA's own unit test
(tests/test_critical_path_analysis.py: 149 nodes and a GPU→GPU sync edge from kernel row 1109
to kernel row 1161), which validates the pandas shim below, and its numbers are printed: 35,834
µs, 89 % cpu_bound.

HTA 0.5.0 and pandas 3
----------------------
HTA 0.5.0 predates pandas 3. Its temporal, idle, kernel, overlap and launch analyses give the
same output under pandas 3.1.1 as under pandas 2.3.3 (checked: identical script output), but its
critical path (a) calls `DataFrame.drop(axis=1, columns=...)`, which pandas 3 rejects, and (b)
fills NaNs with `df.col.fillna(x, inplace=True)`, which under pandas 3's copy-on-write silently
does nothing: the cudaEventRecord → cudaStreamWaitEvent links are then lost (alexnet: 141 nodes
and no GPU→GPU sync edge). `_pandas3_shim()` restores pandas 1/2 behaviour for exactly these two
calls while the critical path is computed; with it, all three paths equal HTA 0.5.0's under
pandas 2.3.3 (length, nodes, graph size and bound-by breakdown).

Note: absolute times beyond 2^53 ns (epoch-based traces) currently reach gpuscope's JSON through
a double (the report document is re-read), so the trace's start (the inputs' span, to which
`per_step[].start_offset_ns` counts) can be off by up to 128 ns
(durations are exact). The µs comparisons of step ends on ns_resolution are 275 ns clear of a µs
boundary; nccl_parser_config's times are below 2^53.
"""

import contextlib
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
import weakref
from decimal import Decimal

# ------------------------------------------------------------------------------------------------
# The traces. Paths are relative to tests/data/traces (SOURCE_DIR) or traces/ (SHARED_DIR).

ALEXNET_ANNOTATION = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"

TRACES = [
    # name, files (loaded together as one run), critical path (annotation, instance) or None
    ("resnet50_nw0",
     ["kineto_tb_plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz"], None),
    ("nccl_parser_config", ["hta/nccl_parser_config_A100_rank0of2.json.gz"],
     ("ProfilerStep", 1)),
    ("ns_resolution", ["hta/ns_resolution_V100_rank0.pt.trace.json.gz"], ("ProfilerStep", 2)),
    ("sampled_rank_0_1", ["hta/sampled_rank-0.json.gz", "hta/sampled_rank-1.json.gz"], None),
    ("mi250_rocm", ["hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz"], None),
    ("cuda_event_sync_multi_stream", ["hta/cuda_event_sync_multi_stream.json.gz"], None),
    ("alexnet_cuda_sync", ["hta/critical_path_alexnet_A100_cuda_sync.json.gz"],
     (ALEXNET_ANNOTATION, 1)),
    ("step_based_gpu_user_annotation",
     ["hta/step_based_trace_GP100_gpu_user_annotation_hist9e27c16.json.gz"], None),
    ("triton_example", ["hta/triton_example.json.gz"], None),
    # Shared only (1.6 MB): CUDA graphs and overlapping events on one stream.
    ("trace_diff_test_V100", ["hta/trace_diff_test_V100_rank1of2.json.gz"], None),
]

CONSECUTIVE_KERNEL_DELAY_US = 30  # HTA's default; gpuscope's kConsecutiveKernelDelayNs = 30 µs
RUNTIME_CUTOFF_US = 50
LAUNCH_DELAY_CUTOFF_US = 100
KERNEL_TYPES = ["COMPUTATION", "COMMUNICATION", "MEMORY"]  # HTA's order (bit 1, 2, 4)

# ------------------------------------------------------------------------------------------------
# Reporting.

PASSED = 0
FAILED = 0
SHARED_DIR = ""


def check(ok, what, detail):
    global PASSED, FAILED
    if ok:
        PASSED += 1
    else:
        FAILED += 1
    print(("ok    " if ok else "FAIL  ") + what + ": " + detail, flush=True)


def fmt(x):
    if x is None:
        return "null"
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if x == int(x):
            return str(int(x))
        return repr(x)
    return str(x)


def check_eq(what, ours, theirs, note="", theirs_label="HTA"):
    detail = f"gpuscope {fmt(ours)} {'==' if ours == theirs else '!='} {theirs_label} {fmt(theirs)}"
    check(ours == theirs, what, detail + (f" ({note})" if note else ""))


# ------------------------------------------------------------------------------------------------
# gpuscope.


def parse_float(text):
    # gpuscope writes integers beyond 2^53 with an exponent and every digit (1.623e+18): keep them
    # exact instead of rounding them to a double.
    d = Decimal(text)
    if ("e" in text or "E" in text) and d == d.to_integral_value():
        return int(d)
    return float(text)


def run_gpuscope(binary, path):
    out = subprocess.run([binary, "analyze", "-j", "1", "--json", path], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    doc = json.loads(out.stdout, parse_float=parse_float)
    ranks = {}
    for key, section in doc["sections"].items():
        if key in ("jobs", "failures"):
            continue
        rank = section["items"]["identity"]["fields"]["rank"]["value"]
        rank = 0 if rank is None or rank < 0 else rank  # HTA numbers a trace without a rank 0
        if rank in ranks:
            raise RuntimeError(f"{path}: two sections for rank {rank}")
        ranks[rank] = section
    return ranks


def fields(section, sub, item):
    return {k: v["value"] for k, v in section["sections"][sub]["items"][item]["fields"].items()}


def rows(section, sub, item):
    return section["sections"][sub]["items"][item]["rows"]


def us(ns):
    # gpuscope's ns → HTA's µs. Every duration compared here is a whole number of µs on both
    # sides (HTA rounds sub-µs timestamps and so does gpuscope's HTA selection): exact.
    return None if ns is None else ns / 1000


# ------------------------------------------------------------------------------------------------
# HTA helpers.


@contextlib.contextmanager
def _pandas3_shim():
    """pandas 1/2 behaviour for the two calls of HTA 0.5.0's critical path that pandas 3 breaks.

    (a) `DataFrame.drop(axis=1, columns=...)` raises in pandas 3: drop `axis` when `columns` or
    `index` is given (as pandas 1/2 did). (b) `df.col.fillna(x, inplace=True)`: under copy-on-write
    the Series got by attribute access is a copy and the fill is lost; write it back into the
    frame it came from. Only while the block runs.
    """
    import pandas as pd

    drop, getattr_, fillna = pd.DataFrame.drop, pd.DataFrame.__getattr__, pd.Series.fillna

    def compat_drop(self, labels=None, *, axis=0, index=None, columns=None, **kw):
        if columns is not None or index is not None:
            return drop(self, labels, index=index, columns=columns, **kw)
        return drop(self, labels, axis=axis, **kw)

    def tagging_getattr(self, name):
        value = getattr_(self, name)
        if isinstance(value, pd.Series):
            object.__setattr__(value, "_hta_live_parent", (weakref.ref(self), name))
        return value

    def writing_back_fillna(self, *args, inplace=False, **kw):
        parent = self.__dict__.get("_hta_live_parent")
        if inplace and parent is not None and parent[0]() is not None:
            parent[0]()[parent[1]] = fillna(self, *args, **kw)
            return None
        return fillna(self, *args, inplace=inplace, **kw)

    pd.DataFrame.drop, pd.DataFrame.__getattr__, pd.Series.fillna = (
        compat_drop, tagging_getattr, writing_back_fillna)
    try:
        yield
    finally:
        pd.DataFrame.drop, pd.DataFrame.__getattr__, pd.Series.fillna = drop, getattr_, fillna


def kernel_type_061(name):
    """HTA 0.6.1's get_kernel_type (commit f4d0062, hta/common/types.py), as gpuscope reproduces it
    (src/analyze/kernel_class.cc HtaKernelTypeOf): re.match semantics, so `.*` stops at the first
    newline."""
    first = name.split("\n", 1)[0]
    if name.startswith(("nccl", "hip", "hccl")) or "ncclKernel" in first:
        return "COMMUNICATION"
    if name.startswith(("Memcpy", "hipMemcpy", "Memset", "hipMemset", "dma")):
        return "MEMORY"
    excluded = (name.startswith(("nccl", "Stream Wait Event", "runFunction", "hip", "job_exe",
                                 "packet", "pe_exe", "cpum_exe_subgraph", "hccl",
                                 "collective_subgraph_execution"))
                or any(s in first for s in ("Memcpy", "Memset", "dma", "Sync"))
                or (name.startswith("cuda") and "LaunchKernel" in first[4:]))
    return "OTHER" if excluded else "COMPUTATION"


GPU_CATEGORIES = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset", "cuda_sync"}


class HtaRank:
    """HTA's event table for one rank, read under two definitions.

    "hta": HTA 0.5.0's own: every row with a stream (`stream != -1`) is a GPU row, typed by
    0.5.0's get_kernel_type. "gpuscope": only kernel, memcpy, memset and cuda_sync rows are GPU
    rows (a CPU op that carries a `stream` arg is not), typed by HTA 0.6.1's rule.
    """

    def __init__(self, analyzer, rank):
        from hta.utils.utils import get_kernel_type

        self.analyzer = analyzer
        self.rank = rank
        self.df = analyzer.t.get_trace(rank)
        sym = analyzer.t.symbol_table.get_sym_table()
        gpu = self.df[self.df["stream"].ne(-1)].copy()  # HTA 0.5.0's "GPU kernels" (all analyses)
        names = {i: sym[i] for i in gpu["name"].unique()}
        self.type_050 = {i: get_kernel_type(n) for i, n in names.items()}
        self.type_061 = {i: kernel_type_061(n) for i, n in names.items()}
        is_gpu_cat = gpu["cat"].map(lambda c: sym[c].lower() in GPU_CATEGORIES)
        self.gpu = gpu
        self.gpu_cat = gpu[is_gpu_cat]
        # Item 1 of the docstring: names the two name rules type differently (on GPU rows).
        kept = set(self.gpu_cat["name"].unique())
        self.differ = sorted({names[i] for i in kept if self.type_050[i] != self.type_061[i]})
        self.differ_rows = int(self.gpu_cat["name"].map(
            lambda i: self.type_050[i] != self.type_061[i]).sum())
        # Item 5: rows with a stream that are not GPU activities.
        extra = gpu[~is_gpu_cat]
        self.extra = sorted({f"{sym[c]} {names[n]}" for c, n in zip(extra["cat"], extra["name"])})
        self.extra_rows = len(extra)

    def definitions_differ(self):
        return bool(self.differ or self.extra)

    def note(self):
        parts = []
        if self.differ:
            parts.append(f"{self.differ_rows} rows named {self.differ} are COMPUTATION in HTA "
                         "0.5.0, not in 0.6.1")
        if self.extra:
            parts.append(f"{self.extra_rows} non-GPU rows with a stream arg ({self.extra}) are "
                         "GPU rows in HTA")
        return "; ".join(parts)

    def typed(self, definition):
        if definition == "hta":
            g, table = self.gpu.copy(), self.type_050
        else:
            g, table = self.gpu_cat.copy(), self.type_061
        g["kernel_type"] = g["name"].map(table)
        return g

    def temporal(self, definition):
        """HTA's get_temporal_breakdown for this rank under the given definition."""
        from hta.analyzers.breakdown_analysis import BreakdownAnalysis
        from hta.utils.utils import merge_kernel_intervals

        g = self.typed(definition)
        idle, span = BreakdownAnalysis._get_idle_time_for_kernels(g.copy())
        comp = merge_kernel_intervals(g[g["kernel_type"].eq("COMPUTATION")].copy())
        compute = comp.end.sum() - comp.ts.sum()
        return {"span": float(span), "idle": float(idle), "compute": float(compute),
                "non_compute": float(span - compute - idle)}

    def kernel_types(self, definition):
        """HTA's kernel-type time (the labels of get_gpu_kernel_breakdown) for this rank."""
        from hta.analyzers.breakdown_analysis import BreakdownAnalysis

        df = BreakdownAnalysis._get_gpu_kernel_type_time(self.typed(definition), KERNEL_TYPES)
        return {r["kernel_type"]: int(r["sum"]) for _, r in df.iterrows()}

    def idle_by_stream(self, rule):
        """HTA's get_idle_time_breakdown for this rank, recomputed.

        rule "hta": HTA's own arithmetic (gap from the previous row's end, negative gaps summed,
        a launch missing from the trace looked up as row 0). rule "gpuscope": gap from the running
        maximum end of the earlier events (none when an event starts inside earlier work), and an
        event whose launch is not in the trace is never host wait (docs/metrics.md).
        Returns {stream: {category: µs}} and {stream: events whose launch is not in the trace}.
        """
        t = self.analyzer.t
        ids = t.symbol_table.get_sym_id_map()
        cats = [ids.get(c, -1000) for c in ("kernel", "Kernel", "gpu_memset", "Memset",
                                            "gpu_memcpy", "Memcpy", "mtia_ccp_events")]
        df = self.df
        pre = df[df["stream"].ne(-1) & df["cat"].isin(cats)].copy().set_index("index_correlation")
        k = pre.join(df[["ts", "index"]], on="index_correlation", rsuffix="_runtime")
        k = k.reset_index()
        out, unlinked = {}, {}
        for stream in k["stream"].unique():
            s = k[k["stream"] == stream].copy().sort_values(by="ts")  # as HTA sorts
            end = s["ts"] + s["dur"]
            if rule == "hta":
                prev_end = end.shift(1)
                host = s["ts_runtime"] > prev_end
                gap = s["ts"] - prev_end
            else:
                prev_end = end.cummax().shift(1)
                gap = (s["ts"] - prev_end).clip(lower=0)
                host = (s["index_correlation"] > 0) & (s["ts_runtime"] > prev_end)
            kernel = ~host & (gap < CONSECUTIVE_KERNEL_DELAY_US)
            other = ~host & ~kernel
            out[int(stream)] = {"host_wait": float(gap[host].sum()),
                                "kernel_wait": float(gap[kernel].sum()),
                                "other": float(gap[other].sum())}
            unlinked[int(stream)] = int((s["index_correlation"] <= 0).sum())
        return out, unlinked


# ------------------------------------------------------------------------------------------------
# Comparisons.


def compare_temporal(name, analyzer, hta_ranks, ours):
    temporal = analyzer.get_temporal_breakdown(visualize=False)
    for _, row in temporal.iterrows():
        rank = int(row["rank"])
        what = f"{name} rank {rank} temporal"
        if rank not in ours:
            check(False, what, f"gpuscope has no rank {rank}")
            continue
        g = fields(ours[rank], "gpu_time", "temporal")
        h = {"span": row["kernel_time(us)"], "idle": row["idle_time(us)"],
             "compute": row["compute_time(us)"], "non_compute": row["non_compute_time(us)"]}
        hr = hta_ranks[rank]
        if not hr.definitions_differ():
            for key in ("span", "idle", "compute", "non_compute"):
                check_eq(f"{what} {key}_us", us(g[key + "_ns"]), float(h[key]))
            continue
        # Items 1 and 5 of the docstring: HTA's own numbers, recomputed under HTA's definition,
        # must be HTA's output; gpuscope must equal them recomputed under gpuscope's.
        as_hta, as_ours = hr.temporal("hta"), hr.temporal("gpuscope")
        check(all(as_hta[k] == float(h[k]) for k in h), f"{what} recomputation (HTA's definition)",
              f"{as_hta} == HTA's output {dict((k, float(v)) for k, v in h.items())}")
        for key in ("span", "idle", "compute", "non_compute"):
            note = ""
            if as_ours[key] != float(h[key]):
                note = f"HTA as is: {fmt(float(h[key]))}; {hr.note()}"
            check_eq(f"{what} {key}_us", us(g[key + "_ns"]), as_ours[key], note,
                     "HTA's table, gpuscope's definition")


def compare_idle(name, analyzer, hta_ranks, ours):
    for rank in sorted(hta_ranks):
        what = f"{name} rank {rank} idle"
        result, _ = analyzer.get_idle_time_breakdown(
            ranks=[rank], visualize=False, consecutive_kernel_delay=CONSECUTIVE_KERNEL_DELAY_US)
        hta = {}
        for _, r in result.iterrows():
            hta.setdefault(int(r["stream"]), {})[r["idle_category"]] = float(r["idle_time"])
        recomputed_hta, unlinked = hta_ranks[rank].idle_by_stream("hta")
        ours_rule, _ = hta_ranks[rank].idle_by_stream("gpuscope")
        gs = {int(r["stream"]): r for r in rows(ours[rank], "gpu_time", "idle_by_stream")}
        for stream in sorted(set(hta) | set(gs)):
            w = f"{what} stream {stream}"
            if stream not in gs or stream not in hta:
                check(False, w, f"stream only in {'HTA' if stream in hta else 'gpuscope'}")
                continue
            g, h = gs[stream], hta[stream]
            h = {c: h.get(c, 0.0) for c in ("host_wait", "kernel_wait", "other")}
            if g["overlapping_events"] == 0 and unlinked.get(stream, 0) == 0:
                for c in h:
                    check_eq(f"{w} {c}_us", us(g[c + "_ns"]), h[c])
                continue
            # Items 2 and 3 of the docstring.
            why = []
            if g["overlapping_events"]:
                why.append(f"{g['overlapping_events']} overlapping events, "
                           f"{fmt(us(g['overlap_ns']))} µs overlapped")
            if unlinked.get(stream, 0):
                why.append(f"{unlinked[stream]} events whose launch is not in the trace")
            check(recomputed_hta[stream] == h, f"{w} recomputation with HTA's gap rule",
                  f"{recomputed_hta[stream]} == HTA's output {h}")
            for c in h:
                check_eq(f"{w} {c}_us", us(g[c + "_ns"]), ours_rule[stream][c],
                         f"HTA as is: {fmt(h[c])}; " + ", ".join(why),
                         "HTA's table under gpuscope's gap rule")


def compare_kernel_types(name, analyzer, hta_ranks, ours):
    kt, _ = analyzer.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    hta = {r["kernel_type"]: int(r["sum"]) for _, r in kt.iterrows()}
    pct = {r["kernel_type"]: float(r["percentage"]) for _, r in kt.iterrows()}
    what = f"{name} kernel types (all ranks)"
    differ = any(hr.definitions_differ() for hr in hta_ranks.values())
    label = "HTA"
    if differ:
        # Items 1 and 5: recompute HTA's labels per rank under both definitions, as above.
        as_hta, as_ours = {}, {}
        for hr in hta_ranks.values():
            for table, definition in ((as_hta, "hta"), (as_ours, "gpuscope")):
                for k, v in hr.kernel_types(definition).items():
                    table[k] = table.get(k, 0) + v
        check({k: v for k, v in as_hta.items() if v} == {k: v for k, v in hta.items() if v},
              f"{what} recomputation (HTA's definition)", f"{as_hta} == HTA's output {hta}")
        notes = "; ".join(hr.note() for hr in hta_ranks.values() if hr.definitions_differ())
        hta_as_is, hta, label = hta, as_ours, "HTA's table, gpuscope's definition"

    def group(labels, pred):
        return sum(v for k, v in labels.items() if pred(k))

    groups = {  # gpuscope's exclusive breakdown ↔ HTA's overlap labels
        "compute": (lambda k: "COMPUTATION" in k, "compute_ns"),
        "exposed_communication": (lambda k: "COMMUNICATION" in k and "COMPUTATION" not in k,
                                  "exposed_communication_ns"),
        "exposed_memory": (lambda k: k == "MEMORY", "exposed_memory_ns"),
    }
    ex = {r: fields(s, "gpu_time", "exclusive") for r, s in ours.items()}
    tb = {r: fields(s, "gpu_time", "temporal") for r, s in ours.items()}
    ours_us, theirs_us = {}, {}
    for key, (pred, field) in groups.items():
        ours_us[key] = sum(us(e[field]) for e in ex.values())
        theirs_us[key] = float(group(hta, pred))
        note = ""
        if differ and float(group(hta_as_is, pred)) != theirs_us[key]:
            note = f"HTA as is: {fmt(float(group(hta_as_is, pred)))}; {notes}"
        check_eq(f"{what} {key}_us", ours_us[key], theirs_us[key], note, label)
    # gpuscope's exclusive compute uses its own classes, HTA's temporal compute HTA's; equal here.
    check_eq(f"{what} compute_us (temporal)", sum(us(t["compute_ns"]) for t in tb.values()),
             theirs_us["compute"], "", label)
    total_ours, total_theirs = sum(ours_us.values()), sum(theirs_us.values())
    for key in groups:
        a = ours_us[key] / total_ours if total_ours else None
        b = theirs_us[key] / total_theirs if total_theirs else None
        check_eq(f"{what} {key}_share", a, b, "", label)
    if not differ and total_ours:
        # HTA's own percentage column (rounded to 0.1 with numpy's rounding), where one label is
        # one gpuscope part.
        import numpy as np
        for key, lab in (("exposed_memory", "MEMORY"),):
            if lab in pct:
                check_eq(f"{what} {lab} percentage", float(np.round(
                    100 * ours_us[key] / total_ours, 1)), pct[lab])


def compare_overlap(name, analyzer, hta_ranks, ours):
    import numpy as np

    df = analyzer.get_comm_comp_overlap(visualize=False)
    for _, row in df.iterrows():
        rank = int(row["rank"])
        h = float(row["comp_comm_overlap_pctg"])
        g = fields(ours[rank], "gpu_time", "overlap")["comm_compute_overlap_share"]
        what = f"{name} rank {rank} comm_compute_overlap_pct"
        if math.isnan(h):
            check(g is None, what, f"gpuscope {fmt(g)}, HTA NaN (no communication kernel)")
        elif hta_ranks[rank].definitions_differ():
            print(f"      {what}: not compared ({hta_ranks[rank].note()}): gpuscope {fmt(g)}, "
                  f"HTA {fmt(h)} %", flush=True)
        else:
            # Both are |∪comp ∩ ∪comm| / |∪comm| of whole µs; HTA returns it as a
            # percentage rounded to 0.01 (numpy's rounding), so round ours the same way.
            check_eq(what, None if g is None else float(np.round(100 * g, 2)), h)


def compare_launches(name, analyzer, hta_ranks, ours):
    stats = analyzer.get_cuda_kernel_launch_stats(
        ranks=sorted(hta_ranks), runtime_cutoff=RUNTIME_CUTOFF_US,
        launch_delay_cutoff=LAUNCH_DELAY_CUTOFF_US, include_memory_events=True, visualize=False)
    for rank, df in sorted(stats.items()):
        what = f"{name} rank {rank} launches"
        g = fields(ours[rank], "launches", "launches_hta")
        cpu, gpu, delay = df["cpu_duration"], df["gpu_duration"], df["launch_delay"]
        check_eq(f"{what} n", g["launched"], len(df))
        check_eq(f"{what} short_kernels", g["short_kernels"],
                 int(((cpu <= RUNTIME_CUTOFF_US) & (gpu < cpu)).sum()))
        check_eq(f"{what} runtime_outliers", g["runtime_outliers"],
                 int((cpu > RUNTIME_CUTOFF_US).sum()))
        check_eq(f"{what} launch_delay_outliers", g["launch_delay_outliers"],
                 int((delay > LAUNCH_DELAY_CUTOFF_US).sum()))
        for key, col in (("median_cpu_duration", cpu), ("median_gpu_duration", gpu),
                         ("median_launch_delay", delay)):
            h = float(col.median()) if len(col) else float("nan")
            if math.isnan(h):  # item 4 of the docstring
                check(g[key + "_ns"] is None, f"{what} {key}_us",
                      f"gpuscope {fmt(us(g[key + '_ns']))}, HTA NaN (no launches): "
                      "expected null")
            else:
                check_eq(f"{what} {key}_us", us(g[key + "_ns"]), h)
        # pandas' linear interpolation of whole µs gives multiples of 10 ns (plus float64 residue:
        # 27740.149999999998); gpuscope rounds it to whole ns, so ±0.0005 µs.
        h = float(delay.quantile(0.95)) if len(delay) else float("nan")
        o = us(g["p95_launch_delay_ns"])
        if math.isnan(h):  # item 4 of the docstring
            check(o is None, f"{what} p95_launch_delay_us",
                  f"gpuscope {fmt(o)}, HTA NaN (no launches): expected null")
        else:
            check(o is not None and abs(o - h) <= 0.0005, f"{what} p95_launch_delay_us",
                  f"gpuscope {fmt(o)} vs HTA {h!r} (±0.0005)")


def compare_critical_path(name, analyzer, annotation, instance, ours):
    from hta.analyzers.critical_path_analysis import CPEdgeType

    rank = min(analyzer.t.get_ranks())
    what = f"{name} rank {rank} critical path ({annotation}, instance {instance})"
    t0 = time.perf_counter()
    with _pandas3_shim():
        result = analyzer.critical_path_analysis(rank=rank, annotation=annotation,
                                                 instance_id=instance)
    seconds = time.perf_counter() - t0
    ok = result is not None and result[1]
    check(bool(ok), f"{what} runs", f"success {ok} in {seconds:.2f} s")
    if not ok:
        return
    g = result[0]
    path = g.critical_path_nodes
    nodes = [g.node_list[n] for n in path]
    length = float(sum(g.edges[u, v]["weight"] for u, v in zip(path, path[1:])))
    breakdown = g.get_critical_path_breakdown()
    bound = breakdown.groupby("bound_by").duration.sum()
    bound = {k or "(none)": float(v) for k, v in bound.items() if v}
    gpu_share = sum(v for k, v in bound.items() if k.startswith("gpu")) / length if length else 0
    min_ts = int(analyzer.t.min_ts)  # HTA shifts the trace to start at 0; whole µs
    first, last = int(nodes[0].ts) + min_ts, int(nodes[-1].ts) + min_ts  # whole µs
    print(f"      {what}: {len(path)} nodes, length {fmt(length)} µs, from {first} to {last} µs, "
          f"bound by {bound}", flush=True)

    if annotation == ALEXNET_ANNOTATION:
        # HTA's own unit test (tests/test_critical_path_analysis.py, same trace and window): 149
        # nodes and a GPU→GPU sync edge from the fft kernel (row 1109) to the elementwise kernel
        # on the other stream (row 1161). Without the shim's fillna fix, pandas 3 gives 141 nodes
        # and no edge. (An HTA-only check: it validates the shim, not gpuscope.)
        check(len(path) == 149, f"{what} nodes (HTA's unit test)", f"{len(path)} == 149")
        _, src_end = g.get_nodes_for_event(1109)
        dst_start, _ = g.get_nodes_for_event(1161)
        edge = g.edges[src_end.idx, dst_start.idx]["object"] if g.has_edge(
            src_end.idx, dst_start.idx) else None
        check(edge is not None and edge.type == CPEdgeType.SYNC_DEPENDENCY and edge.weight == 0,
              f"{what} GPU->GPU sync edge 1109->1161 (HTA's unit test)", f"{edge}")
        return

    # ProfilerStep#N: the instance-th ProfilerStep row of HTA's table (in start order).
    df = analyzer.t.get_trace(rank)
    sym = analyzer.t.symbol_table.get_sym_id_map()
    ids = [v for k, v in sym.items() if annotation in k]
    ann = df[df["name"].isin(ids)]
    host_start = int(ann["ts"].iloc[instance]) + min_ts  # µs (HTA rounds a float start up)
    step_name = analyzer.t.symbol_table.get_sym_table()[ann["name"].iloc[instance]]
    step = [r for r in rows(ours[rank], "steps", "per_step") if r["name"] == step_name]
    if len(step) != 1:
        check(False, what, f"gpuscope has {len(step)} steps named {step_name}")
        return
    # gpuscope's step end on the trace clock: the table counts from the trace's start (its first
    # CPU or GPU event, the inputs' spans).
    g = fields(ours[rank], "inputs", "gpu_span")["start_ns"] or 0
    c = fields(ours[rank], "inputs", "cpu_span")["start_ns"] or 0
    trace_start = min(g, c) if g > 0 and c > 0 else max(g, c)
    end_ns = trace_start + step[0]["start_offset_ns"] + step[0]["duration_ns"]
    check(last * 1000 <= end_ns, f"{what} ends inside gpuscope's {step_name}",
          f"HTA's last node {last} µs <= gpuscope's step end {end_ns} ns")
    check(length * 1000 <= end_ns - host_start * 1000, f"{what} length",
          f"HTA {fmt(length)} µs <= gpuscope's step end - host start "
          f"{end_ns - host_start * 1000} ns (gpuscope's step: {step[0]['duration_ns']} ns)")
    if gpu_share > 0.5:
        # GPU-bound: the path runs along the step's kernels to the last one, which is where
        # gpuscope's step ends (HTA floors ends to the µs).
        check_eq(f"{what} end, µs (GPU-bound: {100 * gpu_share:.1f} %)", end_ns // 1000, last)
        if len(rows(ours[rank], "gpu_time", "idle_by_stream")) == 1:
            # On one stream the step's first kernel starts after the previous step's last one
            # ended, which is where gpuscope's step starts: a GPU-bound path fits in the step.
            check(length * 1000 <= step[0]["duration_ns"], f"{what} length (GPU-bound)",
                  f"HTA {fmt(length)} µs <= gpuscope's step {step[0]['duration_ns']} ns")
    stored_reference(what, analyzer, rank, step_name, length, first, last)


def stored_reference(what, analyzer, rank, step_name, length, first, last):
    """Beside HTA 0.6.1's stored critical path of the same step, if SHARED_DIR has it (info)."""
    folder = os.path.join(SHARED_DIR, "reference", "hta_critical_path",
                          os.path.basename(analyzer.t.trace_files[rank])[:-len(".json.gz")])
    try:
        with open(os.path.join(folder, "meta.json")) as f:
            meta = json.load(f)
    except OSError:
        return
    if meta.get("instance_annotation_name") != step_name:
        return
    import csv
    import gzip
    with gzip.open(os.path.join(folder, "path_edges.csv.gz"), "rt") as f:
        edges = list(csv.DictReader(f))
    print(f"      {what}: HTA 0.5.0 (live) length {fmt(length)} µs, {first} to {last}; HTA 0.6.1 "
          f"(shared/reference/hta_critical_path) length {meta['critical_path_length_us']} µs, "
          f"{int(float(edges[0]['begin_ts_trace']))} to {int(float(edges[-1]['end_ts_trace']))}",
          flush=True)


# ------------------------------------------------------------------------------------------------


def find(rel, source_dir, shared_dir):
    for base in (os.path.join(source_dir, "tests", "data", "traces"),
                 os.path.join(shared_dir, "traces")):
        p = os.path.join(base, rel)
        if os.path.isfile(p):
            return p
    return None


def main(argv):
    if len(argv) != 4:
        print(__doc__.splitlines()[2])
        return 2
    global SHARED_DIR
    binary, source_dir, shared_dir = argv[1:]
    SHARED_DIR = shared_dir
    try:
        logging.getLogger("hta").setLevel(logging.ERROR)
        warnings.simplefilter("ignore")
        from hta.trace_analysis import TraceAnalysis
        logging.getLogger("hta").setLevel(logging.ERROR)
    except Exception as e:  # noqa: BLE001 - any import failure means "no HTA here"
        print(f"SKIP: cannot import hta (pip install holistictraceanalysis): {e}")
        return 77
    import hta
    import pandas
    print(f"HTA {getattr(hta, '__version__', '?')} ({os.path.dirname(hta.__file__)}), pandas "
          f"{pandas.__version__}, gpuscope {binary}", flush=True)

    ran = 0
    start = time.perf_counter()
    for name, files, cp in TRACES:
        paths = [find(f, source_dir, shared_dir) for f in files]
        if not all(paths):
            print(f"skip  {name}: {', '.join(f for f, p in zip(files, paths) if not p)} "
                  "not found", flush=True)
            continue
        ran += 1
        tmp = tempfile.mkdtemp(prefix="hta_live_")
        try:
            for p in paths:  # HTA reads a directory of traces: one directory per run
                os.symlink(os.path.abspath(p), os.path.join(tmp, os.path.basename(p)))
            t0 = time.perf_counter()
            ours = run_gpuscope(binary, tmp)
            t1 = time.perf_counter()
            analyzer = TraceAnalysis(trace_dir=tmp)
            t2 = time.perf_counter()
            print(f"--    {name}: gpuscope {t1 - t0:.2f} s, HTA load {t2 - t1:.2f} s, ranks "
                  f"{analyzer.t.get_ranks()}", flush=True)
            hta_ranks = {r: HtaRank(analyzer, r) for r in analyzer.t.get_ranks()}
            missing = sorted(set(hta_ranks) - set(ours))
            if missing:
                check(False, f"{name} ranks", f"gpuscope {sorted(ours)}, HTA {sorted(hta_ranks)}")
                continue
            compare_temporal(name, analyzer, hta_ranks, ours)
            compare_idle(name, analyzer, hta_ranks, ours)
            compare_kernel_types(name, analyzer, hta_ranks, ours)
            compare_overlap(name, analyzer, hta_ranks, ours)
            compare_launches(name, analyzer, hta_ranks, ours)
            if cp:
                compare_critical_path(name, analyzer, cp[0], cp[1], ours)
        except Exception as e:  # noqa: BLE001 - report and go on with the next trace
            import traceback
            traceback.print_exc()
            check(False, name, f"{type(e).__name__}: {e}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if ran == 0:
        print("SKIP: none of the traces was found")
        return 77
    print(f"({time.perf_counter() - start:.1f} s)")
    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
