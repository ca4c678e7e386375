"""gpuscope: why your GPU training job under-uses the GPU, and what to change.

    import gpuscope
    report = gpuscope.analyze("trace.pt.trace.json.gz")   # a file, or a folder of rank traces
    report.verdict, report.findings, report.steps          # a notebook cell shows the HTML report

The analysis is the C++ library's (the same as `gpuscope analyze`); a Report wraps its document and
renders it with the same views: `.to_dict()` is the `--json` contract, `.text()` the terminal
report, `.to_html()` the `--html` page. Reference: docs/python.md.
"""

from __future__ import annotations

import html as _html
import json as _json
import os as _os
import warnings as _warnings
from typing import Any, Dict, List, Optional

from . import _gpuscope

__all__ = ["Error", "Report", "analyze", "plan", "plan_options", "diff", "__version__"]
__version__ = _gpuscope.__version__

#: Raised when an input cannot be read or an option is bad; the message is the one the CLI prints
#: after "gpuscope: error: ". A ValueError.
Error = _gpuscope.Error
Error.__module__ = "gpuscope"

try:  # pandas is optional: tables are DataFrames with it, lists of dicts without.
    import pandas as _pd
except ImportError:  # pragma: no cover - depends on the environment
    _pd = None


def _value(field: Any) -> Any:
    """A JSON field {"label", "value", "unit"} → its value; anything else as is."""
    if isinstance(field, dict) and "value" in field and "unit" in field:
        return field["value"]
    return field


def _walk(section: dict, path: tuple):
    """Yields (path of section keys, item key, item) depth-first, items before subsections."""
    for key, item in section.get("items", {}).items():
        yield path, key, item
    for key, sub in section.get("sections", {}).items():
        yield from _walk(sub, path + (key,))


def _identity(section: dict) -> Optional[dict]:
    item = section.get("items", {}).get("identity")
    if not item:
        return None
    return {k: _value(v) for k, v in item.get("fields", {}).items()}


def _verdict_in(section: dict) -> Optional[str]:
    """The `verdict` field of the first row keyed "verdict" under `section`, or None."""
    for _, key, item in _walk(section, ()):
        if key == "verdict" and item.get("type") == "row":
            return _value(item.get("fields", {}).get("verdict"))
    return None


def _findings_in(section: dict, origin: dict) -> List[Dict[str, Any]]:
    """The findings under `section`, each a dict: `origin`'s keys, then key (the rule id) and
    the finding's own fields, evidence as {key: value}."""
    out = []
    for _, key, item in _walk(section, ()):
        if item.get("type") != "finding":
            continue
        f = dict(origin, key=key)
        for k, v in item.items():
            if k == "evidence":
                f[k] = {ek: _value(ev) for ek, ev in v.items()}
            elif k != "type":
                f[k] = _value(v)
        out.append(f)
    return out


class Report:
    """A gpuscope document (analyze, plan, diff or a `run` recording) with Python accessors.

    Attributes: ``schema`` ("gpuscope.report", "gpuscope.plan", "gpuscope.diff", "gpuscope.run"),
    ``title``, ``failures`` (messages of the inputs that could not be read; the CLI prints them
    after the report and exits 2).
    """

    def __init__(self, document, failures=(), monitor_input=False):
        self._doc = document
        self.failures: List[str] = list(failures)
        self.monitor_input = monitor_input
        self._dict: Optional[dict] = None

    # ---- the views -------------------------------------------------------------------------
    @property
    def schema(self) -> str:
        return self._doc.schema

    @property
    def title(self) -> str:
        return self._doc.title

    def to_json(self) -> str:
        """The JSON view, byte for byte what `--json` prints (docs/json-schema.md)."""
        return self._doc.json()

    def to_dict(self) -> dict:
        """The JSON contract as Python objects (a fresh copy each call)."""
        return _json.loads(self._doc.json())

    def text(self, verbose: bool = False, width: int = 0, color: bool = False) -> str:
        """The text report, as the CLI prints it to a pipe (width 0: lines not wrapped)."""
        return self._doc.text(verbose, width, color)

    def to_html(self, verbose: bool = False) -> str:
        """The self-contained HTML page, as `--html FILE` writes it."""
        return self._doc.html(verbose)

    def save_html(self, path: str, verbose: bool = False) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_html(verbose))

    def to_csv(self, directory: "str | os.PathLike[str]") -> List[str]:
        """Every table as directory/<table>.csv, as `--csv DIR` writes them (the folder is made
        if missing): a `section` column, then `run`, `rank` and `path` of the rank the row is
        from, then the table's columns, units in their names. Returns the paths written."""
        # The CLI's writer (base/output_file.h): a FIFO or a device named like a table is refused
        # (gpuscope.Error), never written through.
        return self._doc.write_csv(_os.fspath(directory))

    def _repr_html_(self) -> str:
        # The page in an iframe: its styles and scripts stay out of the notebook's.
        page = _html.escape(self.to_html(), quote=True)
        return ('<iframe srcdoc="%s" style="width:100%%;height:640px;border:1px solid #ddd" '
                'sandbox="allow-scripts"></iframe>' % page)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        v = self.verdict
        return "<gpuscope.Report %s%s, %d findings>" % (
            self.schema, "" if v is None else ": " + str(v), len(self.findings))

    # ---- accessors -------------------------------------------------------------------------
    def _data(self) -> dict:
        if self._dict is None:
            self._dict = _json.loads(self._doc.json())
        return self._dict

    def _rank_sections(self):
        for key, section in self._data().get("sections", {}).items():
            ident = _identity(section)
            if ident is not None:
                yield key, section, ident

    @property
    def verdict(self) -> Optional[str]:
        """The verdict ("input-bound", …): the job's when the document has one, else the first
        rank's (or the recording's); "before → after" for a diff (its first rank pair); None
        when the document has none (plan)."""
        data = self._data()
        jobs = data.get("sections", {}).get("jobs")
        for section in ([jobs] if jobs else []) + [data]:
            for _, key, item in _walk(section, ()):
                if key == "verdict" and item.get("type") == "row":
                    fields = item.get("fields", {})
                    if "verdict" in fields:
                        return _value(fields["verdict"])
                    if "before" in fields and "after" in fields:  # a diff: "before → after"
                        return "%s → %s" % (_value(fields["before"]), _value(fields["after"]))
                    for f in fields.values():
                        return _value(f)
        return None

    @property
    def findings(self) -> List[Dict[str, Any]]:
        """Every finding in the document, ranked as in the report: key (the rule id), title,
        severity, saving_ns and saving_share (per step), confidence, evidence {key: value}, fix,
        and the section, run, rank and trace path it is from (rank and path None outside a rank's
        section; run None outside a run: "job_1", a job's key under `jobs`)."""
        out = []
        for top_key, top in self._data().get("sections", {}).items():
            ident = _identity(top) or {}
            origin = {"section": top_key, "run": ident.get("run"), "rank": ident.get("rank"),
                      "path": ident.get("path")}
            if top_key == "jobs":  # a job's own findings (a straggler): their run is the job
                out += _findings_in({"items": top.get("items", {})}, origin)
                for job_key, job in top.get("sections", {}).items():
                    out += _findings_in(job, dict(origin, run=job_key))
            else:
                out += _findings_in(top, origin)
        return out

    @property
    def ranks(self) -> List[Dict[str, Any]]:
        """One dict per rank: section, run (its job's key under `jobs`, "job_1"), rank, path,
        verdict, findings (and the identity fields: world_size, rank_source …). Two runs' rank 0
        are two entries, each with its own findings."""
        return self._ranks(self.findings)

    def _ranks(self, findings: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        out = []
        for key, section, ident in self._rank_sections():
            r = dict(ident)
            r["section"] = key
            r["verdict"] = _verdict_in(section)
            r["findings"] = [f for f in findings if f["section"] == key]
            out.append(r)
        return out

    @property
    def runs(self) -> List[Dict[str, Any]]:
        """One dict per run (a job: the ranks of one training run) of an analyze document: run
        (its key, "job_1"), title, verdict (the job's), ranks (the `ranks` entries of its ranks)
        and findings (the job's own, then its ranks'). Empty for other documents."""
        jobs = self._data().get("sections", {}).get("jobs", {}).get("sections", {})
        findings = self.findings  # walked once: the ranks' entries take theirs from it
        ranks = self._ranks(findings)
        out = []
        for key, job in jobs.items():
            r = {"run": key, "title": job.get("title"), "verdict": _verdict_in(job)}
            r["ranks"] = [x for x in ranks if x.get("run") == key]
            own = [f for f in findings if f["section"] == "jobs" and f["run"] == key]
            r["findings"] = own + [f for x in r["ranks"] for f in x["findings"]]
            out.append(r)
        return out

    @property
    def tables(self) -> Dict[str, Any]:
        """Every table of the document by its path ("rank_0/steps/per_step"), each a DataFrame
        (a list of dicts without pandas); values in the units their column keys name (_ns,
        _bytes, _share …)."""
        out = {}
        for path, key, item in _walk(self._data(), ()):
            if item.get("type") == "table":
                out["/".join(path + (key,))] = self._frame([item], None)
        return out

    def table(self, key: str, extra: Optional[Dict[str, str]] = None):
        """The table(s) with this item key, over every rank shown: one row per row, with the
        `section` it is from and, in a rank's section, its `run`, `rank` and trace `path` (as
        `to_csv` writes them)."""
        return self._tables({key: None}, extra)

    def _tables(self, keys: Dict[str, Optional[Dict[str, Any]]], extra=None):
        rows, columns = [], []
        for top_key, top in self._data().get("sections", {}).items():
            ident = _identity(top)
            for _, key, item in _walk(top, (top_key,)):
                if key not in keys or item.get("type") != "table":
                    continue
                prefix = {"section": top_key}
                if ident is not None:
                    prefix["run"] = ident.get("run")
                    prefix["rank"] = ident.get("rank")
                    prefix["path"] = ident.get("path")
                prefix.update(keys[key] or {})
                for c in list(prefix) + [c["key"] for c in item["columns"]]:
                    if c not in columns:
                        columns.append(c)
                for row in item["rows"]:
                    rows.append({**prefix, **row})
        if _pd is not None:
            return _pd.DataFrame(rows, columns=columns)
        return rows

    def _frame(self, items, prefix):
        rows = []
        columns = [c["key"] for c in items[0]["columns"]]
        for item in items:
            rows.extend(dict(r) for r in item["rows"])
        if _pd is not None:
            return _pd.DataFrame(rows, columns=columns)
        return rows

    @property
    def kernels(self):
        """Every kernel of every rank (grouped by short name; copies and sets in class memory):
        class, name, count, total_ns, mean_ns, min_ns, max_ns, class_share, precision — the
        table `--csv` writes as kernels.csv."""
        return self._tables({"kernels": None})

    @property
    def top_kernels(self):
        """The top kernels per class (compute, communication, memory) per rank, as the report
        shows them."""
        return self._tables({"top_kernels_compute": {"class": "compute"},
                             "top_kernels_communication": {"class": "communication"},
                             "top_kernels_memory": {"class": "memory"}})

    @property
    def ops(self):
        """Every op priced, per rank: one row per op and input shapes (as TraceLens groups them)
        with calls, GPU time (ns), FLOPs and bytes per call, achieved TFLOP/s and GB/s, bound,
        math path, roofline time and efficiency (docs/cost-model.md). Empty without
        record_shapes=True."""
        return self._tables({"ops": None})

    @property
    def critical_path(self):
        """The steady steps' critical path per rank: one row per ProfilerStep with its duration
        and what bounds it (ns per category: host_compute, launch_overhead, data_wait, sync,
        gpu_compute, communication, copy, gpu_idle; each row sums to the step; docs/metrics.md)."""
        return self._tables({"critical_path_steps": None})

    @property
    def whatif(self):
        """Each fix replayed on the step's dependency graph, per rank: saving alone, its place and
        increment in the plan of fixes, the step after it, the finding it prices and its
        assumption (docs/advice.md)."""
        return self._tables({"whatif": None})

    @property
    def steps(self):
        """One row per ProfilerStep per rank: duration and its breakdown (ns)."""
        return self._tables({"per_step": None})

    @property
    def idle_gaps(self):
        """The longest GPU idle gaps per rank, with what the host was doing (claim)."""
        return self._tables({"longest_idle_gaps": None})

    @property
    def memory(self):
        """Peak allocated / reserved memory per device per rank."""
        return self._tables({"memory_devices": None})

    @property
    def collectives(self):
        """Collectives matched across ranks: skew and the last rank to arrive (job level)."""
        return self._tables({"collective_skew": None})


def _check_failures(report: Report) -> Report:
    for message in report.failures:
        _warnings.warn("gpuscope: " + message, stacklevel=3)
    return report


def analyze(path: "str | os.PathLike[str]", *, threads: int = 0, monitor: Optional[str] = None,
            ranks: "str | list[int] | None" = None, ranks_in_memory: int = 0,
            batch_mb: float = 2, inflater: str = "auto", smi_fields: Optional[str] = None) -> Report:
    """Analyzes a trace file, a folder of rank traces or summaries, a `gpuscope map` summary, or a
    `gpuscope run --record` file / nvidia-smi log, as `gpuscope analyze PATH` does.

    Options are the CLI's flags: threads (-j), monitor (--monitor FILE), ranks ("all" or rank ids:
    the ranks shown in full), ranks_in_memory, batch_mb, inflater, smi_fields (the --query-gpu
    list of a headerless nvidia-smi log). Raises gpuscope.Error when
    nothing can be read; inputs that could not be read beside others are in ``.failures`` (and
    warned about).
    """
    options: Dict[str, Any] = {"threads": threads, "ranks_in_memory": ranks_in_memory,
                               "batch_mb": batch_mb, "inflater": inflater}
    if monitor is not None:
        options["monitor"] = _os.fspath(monitor)
    if smi_fields is not None:
        options["smi_fields"] = smi_fields
    if ranks is not None:
        options["ranks"] = ranks if isinstance(ranks, str) else ",".join(str(int(r)) for r in ranks)
    doc, failures, monitor_input = _gpuscope.analyze(_os.fspath(path), options)
    return _check_failures(Report(doc, failures, monitor_input))


def plan(*, model: str, gpu: Optional[str] = None, gpus: int, global_batch: int, seq_len: int,
         **options: Any) -> Report:
    """Plans memory, step time and the parallel layout before a run, as `gpuscope plan` does.

    model: a bundled name ("llama-3-8b") or a Hugging Face config.json; gpu: a GPU name or alias
    (or gpu_spec="NAME:MEM_GIB:BF16_TFLOPS:HBM_GBPS"). Further options are the CLI's flags with
    underscores (precision="fp32", grad_reduce_in_bf16=True, ...): ``plan_options()`` lists them
    with their help, allowed values and defaults, from the table the CLI's flags are made of. ``exact=True`` measures the step in
    this process (gpuscope.exact: the model's own code on fake tensors; needs torch >= 2 and
    transformers) and plans from it, as `gpuscope plan --exact`; by default a config.json file
    planned for Hugging Face code is measured by $GPUSCOPE_PYTHON or python3 when it has them, as
    the CLI does (``no_exact=True``: formulas only). When nothing fits, raises
    gpuscope.Error with the CLI's message; the plan document (with the suggestions) is the
    exception's ``report``.
    """
    table = {o["name"]: o for o in _gpuscope.plan_options()}
    unknown = sorted(set(options) - set(table))
    if unknown:
        raise TypeError("plan() got unexpected option(s): " + ", ".join(unknown))
    # Before exact mode measures anything: the table's exclusions, in the CLI's words.
    given = {k for k, v in options.items() if v is not None and v is not False and v != ""}
    for name in sorted(given):
        for other in table[name]["excludes"]:
            if other in given:
                raise Error(f"--{name.replace('_', '-')} excludes --{other.replace('_', '-')}")
    opts = dict(options)
    if "zero" in opts and opts["zero"] is not None:
        opts["zero"] = str(opts["zero"])
    if "from_trace" in opts and opts["from_trace"] is not None:
        opts["from_trace"] = _os.fspath(opts["from_trace"])
    opts.update(model=_os.fspath(model), gpus=gpus, global_batch=global_batch, seq_len=seq_len)
    if gpu is not None:
        opts["gpu"] = gpu
    if opts.get("exact_from") is not None:
        opts["exact_from"] = _os.fspath(opts["exact_from"])
    if opts.pop("exact", False):
        opts["exact_from"] = _measure_exact(opts)
        try:
            doc, does_not_fit = _gpuscope.plan(opts)
        finally:
            _os.unlink(opts["exact_from"])
    else:
        doc, does_not_fit = _gpuscope.plan(opts)
    report = Report(doc)
    if does_not_fit is not None:
        error = Error(does_not_fit)
        error.report = report
        raise error
    return report


def plan_options() -> List[Dict[str, Any]]:
    """plan()'s options, from the table the CLI's flags are made of: for each, its keyword name,
    help, allowed values (empty: any), default (None: none or chosen by the plan) and the options
    it excludes."""
    return _gpuscope.plan_options()


def _measure_exact(opts: Dict[str, Any]) -> str:
    """Runs exact mode in this process; returns the path of a temporary file with its JSON."""
    import tempfile
    from . import exact as _exact
    model = opts["model"]
    if not _os.path.isfile(model):
        raise Error(f"exact mode needs model to be a Hugging Face config.json file ({model} is not "
                    "a file)")
    per_gpu = max(1, opts["global_batch"] // max(1, opts["gpus"]))
    precision = opts.get("precision") or "bf16"
    recompute = opts.get("recompute") or "none"
    if recompute not in ("none", "full"):
        raise Error("exact mode measures recompute none or full (Hugging Face gradient "
                    "checkpointing)")
    try:
        result = _exact.measure(model, int(opts.get("mbs") or per_gpu), int(opts["seq_len"]),
                                precision, recompute,
                                "sgd" if opts.get("optimizer") == "sgd" else "adam")
    except _exact.ExactError as e:
        raise Error(f"exact mode: {e}") from None
    fd, path = tempfile.mkstemp(prefix="gpuscope-exact-", suffix=".json")
    with _os.fdopen(fd, "w") as f:
        _json.dump(result, f)
    return path


def diff(before: str, after: str, *, threads: int = 0, names: Optional[str] = None,
         hta: bool = False) -> Report:
    """Compares two runs (trace files or folders of rank traces), as `gpuscope diff` does."""
    options: Dict[str, Any] = {"threads": threads, "hta": hta}
    if names is not None:
        options["names"] = names
    doc, failures = _gpuscope.diff(_os.fspath(before), _os.fspath(after), options)
    return _check_failures(Report(doc, failures))
