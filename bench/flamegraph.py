#!/usr/bin/env python3
"""Static SVG flame graphs from Linux `perf script` output (standard library only).

What it is
    A small, self-contained replacement for Brendan Gregg's FlameGraph scripts
    (stackcollapse-perf.pl + flamegraph.pl): it folds the call stacks printed by
    `perf script` (recorded with `perf record -g` or `--call-graph dwarf`) into
    "frame;frame;frame count" lines and draws them as a classic flame graph: root at
    the bottom, one 16 px row per stack depth, 1200 px wide, each frame's width its
    share of all samples, a tooltip per frame and a label where the frame is wide enough.

Usage
    perf record -e cpu-clock -g -o perf.data -- build/release/gpuscope analyze trace.json
    perf script -i perf.data | python3 bench/flamegraph.py --title "gpuscope analyze" -o out.svg
    python3 bench/flamegraph.py perf.txt -o out.svg --folded-out out.folded
    python3 bench/flamegraph.py --folded-in out.folded -o - > out.svg

    Options: --title TEXT (default "Flame graph"), --min-percent X (default 0.1: frames
    narrower than X % of the total, and everything above them, are not drawn),
    --folded-out FILE (write the folded stacks too), --folded-in (the input is already
    folded), --full-names (keep C++ argument and template lists), --no-comm (no
    process-name frame at the root of each stack), --count-samples (weight every sample
    1 instead of its period). A one-line summary goes to stderr.

    Each sample weighs its period from the perf header (e.g. 250000 for
    `250000 cpu-clock:`, nanoseconds of CPU time), else 1; the tooltips call that
    weight "samples" as flamegraph.pl does. Symbols lose their +0x offset and, unless
    --full-names, their argument lists and template arguments, so that
    `std::vector<int, std::allocator<int> >::push_back(int const&)` folds as
    `std::vector::push_back` (`(anonymous namespace)` is kept). Kernel frames (module
    [kernel.kallsyms], any module path containing "kernel", or a kernel-half address)
    get the suffix `_[k]`, as `stackcollapse-perf.pl --kernel` writes them, and an orange
    colour; other frames get warm colours derived from a hash of the name, so a function
    has the same colour in every graph.

Why it is hand-written
    Debian 12 packages neither FlameGraph nor inferno, and PyPI / crates.io / GitHub are
    unreachable from the machines this project is built and benchmarked on, so this
    script needs nothing beyond Python 3.11's standard library.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import re
import sys
from collections import Counter
from typing import Iterable, TextIO

# ----------------------------------------------------------------------------------------------
# Symbol shortening

_OPERATOR_SYMBOLS = re.compile(r"\(\)|\[\]|\"\"|[-+*/%^&|~!=<>,]+")
_ANON = "(anonymous namespace)"
_QUALIFIERS = re.compile(r"(?:\s*(?:const|volatile|noexcept)(?![\w])|\s*&&|\s*&)*")


def _is_ident(c: str) -> bool:
    return c.isalnum() or c == "_"


def _operator_at(s: str, i: int) -> int:
    """If the C++ keyword `operator` starts at s[i], the index just past its operator token."""
    if not s.startswith("operator", i):
        return -1
    if i > 0 and _is_ident(s[i - 1]):
        return -1
    j = i + len("operator")
    if j < len(s) and _is_ident(s[j]):
        return -1  # e.g. "operator_helper", or a conversion like "operator bool" (handled as text)
    m = _OPERATOR_SYMBOLS.match(s, j)
    return m.end() if m else j


def _match(s: str, i: int) -> int:
    """Index of the bracket closing s[i] ('(' or '<'), or -1 when unbalanced.

    Nested (), <>, [] and {} are skipped; `operator<` and the like inside are skipped
    whole; inside <...> a '>' that is part of '->' does not close."""
    want = {"(": ")", "<": ">", "[": "]", "{": "}"}
    stack = [want[s[i]]]
    j = i + 1
    n = len(s)
    while j < n:
        k = _operator_at(s, j)
        if k >= 0:
            j = k
            continue
        c = s[j]
        if c in want and (c != "<" or stack[-1] != ")"):
            stack.append(want[c])
        elif c == stack[-1] and not (c == ">" and j > 0 and s[j - 1] == "-"):
            stack.pop()
            if not stack:
                return j
        j += 1
    return -1


def _strip_return_type(s: str) -> str:
    """'void ns::f' -> 'ns::f': drop what precedes the last top-level space (not inside
    (), [], {}, not after a top-level `operator`, not before '[')."""
    depth = 0
    cut = -1
    i = 0
    while i < len(s):
        c = s[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            if _operator_at(s, i) >= 0:
                break
            if c == " " and i + 1 < len(s) and s[i + 1] != "[":
                cut = i
        i += 1
    return s[cut + 1 :] if cut >= 0 else s


@functools.lru_cache(maxsize=65536)  # the same symbols recur in every sample
def shorten_symbol(sym: str) -> str:
    """Readable C++ name: no argument lists `( ... )` (but `(anonymous namespace)` stays),
    no template arguments `< ... >`, no trailing const/&/noexcept, no return type.

    std::vector<int, std::allocator<int> >::push_back(int const&) -> std::vector::push_back
    gpuscope::(anonymous namespace)::Foo(int)                      -> gpuscope::(anonymous namespace)::Foo
    Unbalanced brackets are left as they are; names without brackets are returned unchanged."""
    if "(" not in sym and "<" not in sym:
        return sym
    out: list[str] = []
    i = 0
    n = len(sym)
    after_operator = False  # just past an operator token such as "operator<<"
    while i < n:
        k = _operator_at(sym, i)
        if k >= 0:
            out.append(sym[i:k])
            i = k
            after_operator = True
            # Template arguments of an operator template: "operator<< <Traits>", "operator()<T>"
            j = k + 1 if sym.startswith(" <", k) else k
            if j < n and sym[j] == "<":
                close = _match(sym, j)
                if close >= 0:
                    i = close + 1
            continue
        c = sym[i]
        prev = out[-1][-1] if out and out[-1] else ""
        if c == "(":
            if sym.startswith(_ANON, i):
                out.append(_ANON)
                i += len(_ANON)
                after_operator = False
                continue
            # An argument list follows a name, a template, an operator or a lambda's
            # braces; Go's "pkg.(*T).M" and a leading "(" are not argument lists.
            if after_operator or (prev and (_is_ident(prev) or prev in ">)]}")):
                close = _match(sym, i)
                if close >= 0:
                    i = close + 1
                    m = _QUALIFIERS.match(sym, i)
                    i = m.end() if m else i
                    continue
        elif c == "<" and prev and (_is_ident(prev) or prev == ">"):
            close = _match(sym, i)
            if close >= 0:
                i = close + 1
                continue
        out.append(c)
        after_operator = False
        i += 1
    short = "".join(out).strip()
    if "(" in sym:
        short = _strip_return_type(short)
    return short or sym


# ----------------------------------------------------------------------------------------------
# perf script parsing and folding

# "comm pid/tid [cpu] 123.456:  250000 cpu-clock: ..." — the comm may contain spaces, so the
# header is anchored on the timestamp; the period (optional) and event name follow it.
_HEADER = re.compile(r"(?:^|\s)\d+\.\d+:\s+(?:(\d+)\s+)?(\S+?):(?=\s|$)(.*)$")
# "\t    7f12ab34 symbol+0x12 (/path/to/module)"
_FRAME = re.compile(r"^\s*([0-9a-fA-F]+)(?:\s+(.*?))?\s*$")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_KERNEL_ADDR = 0xFFFF800000000000


def _split_module(rest: str) -> tuple[str, str]:
    """'sym+0x12 (/path/mod)' -> ('sym+0x12', '/path/mod'); the module is the balanced
    parenthesised group at the end of the line."""
    if not rest.endswith(")"):
        return rest, ""
    depth = 0
    for j in range(len(rest) - 1, -1, -1):
        if rest[j] == ")":
            depth += 1
        elif rest[j] == "(":
            depth -= 1
            if depth == 0:
                if j == 0 or rest[j - 1] in " \t":
                    return rest[:j].rstrip(), rest[j + 1 : -1]
                return rest, ""
    return rest, ""


def parse_frame(addr: str, rest: str, full_names: bool = False) -> str:
    """One frame's display name from its address and 'symbol+0xoff (module)' text."""
    sym, module = _split_module(rest)
    sym = _OFFSET.sub("", sym.strip())
    # [kernel.kallsyms], a path under .../kernel/..., or a kernel module ("[nvidia]") at a
    # kernel-half address ("[unknown]" and "[vdso]" frames are user space).
    kernel = "kernel" in module
    if not kernel and module.startswith("[") and module not in ("[unknown]", "[vdso]"):
        try:
            kernel = int(addr, 16) >= _KERNEL_ADDR
        except ValueError:
            pass
    if not sym or sym == "[unknown]":
        # As stackcollapse-perf.pl: an unknown symbol in a known module is named after it.
        if module and module != "[unknown]":
            base = os.path.basename(module.strip("[]")) or module
            sym = "[" + base + "]"
        else:
            sym = "[unknown]"
    elif not full_names:
        sym = shorten_symbol(sym)
    name = sym.replace(";", ":").replace("\n", " ")
    if kernel and not name.endswith("_[k]"):
        name += "_[k]"
    return name


class PerfFolder:
    """Accumulates perf script samples into folded stacks (root first)."""

    def __init__(self, include_comm: bool = True, full_names: bool = False,
                 count_samples: bool = False) -> None:
        self.include_comm = include_comm
        self.full_names = full_names
        self.count_samples = count_samples
        self.stacks: Counter[str] = Counter()
        self.samples = 0
        self._comm: str | None = None
        self._weight = 1
        self._frames: list[str] = []
        self._header_frame: str | None = None

    def _flush(self) -> None:
        if self._comm is None:
            return
        frames = self._frames or ([self._header_frame] if self._header_frame else [])
        stack = list(reversed(frames))
        if self.include_comm:
            stack.insert(0, self._comm.replace(";", ":") or "[unknown]")
        if not stack:
            stack = ["[unknown]"]
        self.stacks[";".join(stack)] += self._weight
        self.samples += 1
        self._comm = None
        self._frames = []
        self._header_frame = None

    def _header(self, line: str) -> None:
        self._flush()
        m = _HEADER.search(line)
        if m:
            head = line[: m.start()].strip()
            self._weight = 1 if self.count_samples or not m.group(1) else int(m.group(1))
            # Without a call graph perf prints "ip sym (dso)" on the header line itself.
            tail = m.group(3).strip()
            fm = _FRAME.match(tail) if tail.endswith(")") else None
            if fm:
                self._header_frame = parse_frame(fm.group(1), fm.group(2) or "",
                                                 self.full_names)
        else:
            head = line.strip()
            self._weight = 1
        # head is "comm pid[/tid] [cpu]"; the comm is everything before the pid.
        hm = re.match(r"^(.*?)\s+\d+(?:/\d+)?(?:\s+\[\d+\])?\s*$", head)
        self._comm = (hm.group(1) if hm else head).strip()

    def feed(self, lines: Iterable[str]) -> None:
        for raw in lines:
            line = raw.rstrip("\r\n")
            if not line.strip():
                self._flush()
            elif line[0] == " " and _HEADER.search(line):
                # Without a call graph perf right-aligns the comm: an indented header.
                # (Call-graph lines are indented with a tab.)
                self._header(line)
            elif line[0] in " \t":
                if self._comm is None:
                    continue
                m = _FRAME.match(line)
                if m:
                    self._frames.append(parse_frame(m.group(1), m.group(2) or "",
                                                    self.full_names))
            elif line.startswith("#"):
                continue
            else:
                self._header(line)
        self._flush()


def fold_perf(lines: Iterable[str], **kwargs) -> tuple[Counter[str], int]:
    """Folded stacks {'root;...;leaf': weight} and the number of samples."""
    folder = PerfFolder(**kwargs)
    folder.feed(lines)
    return folder.stacks, folder.samples


def read_folded(lines: Iterable[str]) -> tuple[Counter[str], int]:
    """Already-folded input: 'frame;frame;frame count' per line. Returns the stacks and
    the number of lines read (duplicate stacks are summed)."""
    stacks: Counter[str] = Counter()
    nlines = 0
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        stack, _, count = line.rpartition(" ")
        try:
            value = int(count)
        except ValueError:
            try:
                value = float(count)
            except ValueError:
                continue
        if not stack or value <= 0:
            continue
        stacks[stack] += value
        nlines += 1
    return stacks, nlines


def format_folded(stacks: Counter[str]) -> str:
    return "".join(f"{s} {stacks[s]}\n" for s in sorted(stacks))


# ----------------------------------------------------------------------------------------------
# Rendering

WIDTH = 1200
ROW = 16
XPAD = 10
TITLE_PAD = 58  # title and subtitle above the frames
BOTTOM_PAD = 12
FONT_SIZE = 12
CHAR_W = FONT_SIZE * 0.61  # monospace advance, rounded up so labels never overflow

_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_escape(s: str) -> str:
    s = _BAD_XML.sub("?", s)
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))


def is_kernel(name: str) -> bool:
    return name.endswith("_[k]")


def frame_color(name: str) -> str:
    """Deterministic colour from the name (md5, not Python's salted hash())."""
    if name == "[unknown]":
        return "rgb(190,190,190)"
    d = hashlib.md5(name.encode("utf-8", "replace")).digest()
    v1, v2, v3 = d[0] / 255, d[1] / 255, d[2] / 255
    if is_kernel(name):  # orange, a narrow band of its own
        return f"rgb({235 + int(20 * v1)},{125 + int(35 * v2)},{int(30 * v3)})"
    # flamegraph.pl's "hot" palette (reds through yellows), less the kernel's orange band
    g = int(160 * v2)
    g = g + 70 if g >= 110 else g
    return f"rgb({205 + int(50 * v1)},{g},{int(55 * v3)})"


class Node:
    __slots__ = ("name", "value", "children")

    def __init__(self, name: str) -> None:
        self.name = name
        self.value = 0
        self.children: dict[str, Node] = {}


def build_tree(stacks: Counter[str]) -> Node:
    root = Node("all")
    for stack, value in stacks.items():
        root.value += value
        node = root
        for name in stack.split(";"):
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = Node(name)
            child.value += value
            node = child
    return root


def _fmt_count(v: float) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,.6g}"


def render_svg(stacks: Counter[str], title: str = "Flame graph", min_percent: float = 0.1,
               subtitle: str | None = None) -> tuple[str, int]:
    """The SVG document and the number of frames drawn (one <rect> each)."""
    root = build_tree(stacks)
    total = root.value
    area = WIDTH - 2 * XPAD
    threshold = total * min_percent / 100.0

    # Lay out first (iteratively: deep recursion must not hit Python's limit).
    drawn: list[tuple[Node, int, float]] = []  # node, depth, x offset in samples
    if total > 0:
        todo = [(root, 0, 0.0)]
        while todo:
            node, depth, off = todo.pop()
            if node.value < threshold:
                continue
            drawn.append((node, depth, off))
            x = off
            for name in sorted(node.children):
                child = node.children[name]
                todo.append((child, depth + 1, x))
                x += child.value
    max_depth = max((d for _, d, _ in drawn), default=0)
    height = TITLE_PAD + (max_depth + 1) * ROW + BOTTOM_PAD

    if subtitle is None:
        subtitle = f"{_fmt_count(total)} samples"
    out: list[str] = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n',
        f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" '
        'style="background-color:#f6f6ee">\n',
        "<style>\n"
        f"text {{ font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; "
        f"font-size: {FONT_SIZE}px; fill: #000; }}\n"
        "text.title { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 17px; }\n"
        "text.sub { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; fill: #555; }\n"
        "g.f text { pointer-events: none; }\n"
        "g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
        "</style>\n",
        f'<text class="title" x="{WIDTH / 2:.0f}" y="24" text-anchor="middle">'
        f"{xml_escape(title)}</text>\n",
        f'<text class="sub" x="{WIDTH / 2:.0f}" y="44" text-anchor="middle">'
        f"{xml_escape(subtitle)}</text>\n",
    ]
    scale = area / total if total else 0.0
    for node, depth, off in sorted(drawn, key=lambda t: (t[1], t[2])):
        x = XPAD + off * scale
        w = node.value * scale
        y = height - BOTTOM_PAD - (depth + 1) * ROW
        pct = 100.0 * node.value / total
        name = node.name if depth else "all"
        label = ""
        fit = int((w - 6) / CHAR_W)
        if fit >= 3:
            label = name if len(name) <= fit else name[: fit - 2] + ".."
        out.append(
            f'<g class="f"><title>{xml_escape(name)} ({_fmt_count(node.value)} samples, '
            f"{pct:.2f} %)</title>"
            f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW - 1}" '
            f'fill="{frame_color(name)}" rx="2" ry="2"/>'
        )
        if label:
            out.append(f'<text x="{x + 3:.2f}" y="{y + 11.5}">{xml_escape(label)}</text>')
        out.append("</g>\n")
    out.append("</svg>\n")
    return "".join(out), len(drawn)


# ----------------------------------------------------------------------------------------------
# Command line

def _open_in(path: str) -> TextIO:
    if path == "-":
        return open(sys.stdin.fileno(), "r", encoding="utf-8", errors="replace", closefd=False)
    return open(path, "r", encoding="utf-8", errors="replace")


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description="Fold `perf script` output and draw it as a static SVG flame graph.")
    p.add_argument("input", nargs="?", default="-",
                   help="perf script text (or folded stacks with --folded-in); default stdin")
    p.add_argument("-o", "--output", required=True, help="SVG file to write, '-' for stdout")
    p.add_argument("--title", default="Flame graph", help='title (default "Flame graph")')
    p.add_argument("--min-percent", type=float, default=0.1, metavar="X",
                   help="omit frames narrower than X %% of the total, with their children "
                        "(default 0.1)")
    p.add_argument("--folded-out", metavar="FILE", help="also write the folded stacks here")
    p.add_argument("--folded-in", action="store_true",
                   help="the input is folded stacks ('a;b;c count' lines), not perf script")
    p.add_argument("--full-names", action="store_true",
                   help="keep C++ argument lists and template arguments")
    p.add_argument("--no-comm", action="store_true",
                   help="do not put the process name at the root of each stack")
    p.add_argument("--count-samples", action="store_true",
                   help="weight each sample 1 instead of the period in its header")
    args = p.parse_args(argv)
    if args.min_percent < 0:
        p.error("--min-percent must be >= 0")

    with _open_in(args.input) as f:
        if args.folded_in:
            stacks, nsamples = read_folded(f)
            samples_word = "folded lines"
        else:
            stacks, nsamples = fold_perf(f, include_comm=not args.no_comm,
                                         full_names=args.full_names,
                                         count_samples=args.count_samples)
            samples_word = "samples"

    if args.folded_out:
        _write(args.folded_out, format_folded(stacks))

    total = sum(stacks.values())
    if args.folded_in or total == nsamples:
        subtitle = f"{_fmt_count(total)} samples"
    else:
        subtitle = f"{nsamples:,} samples, weighted by period: {_fmt_count(total)}"
    svg, nframes = render_svg(stacks, title=args.title, min_percent=args.min_percent,
                              subtitle=subtitle)
    _write(args.output, svg)
    print(f"flamegraph: {nsamples:,} {samples_word} (total weight {_fmt_count(total)}), "
          f"{len(stacks):,} distinct stacks, {nframes:,} frames drawn "
          f"(min {args.min_percent:g} %) -> {args.output}", file=sys.stderr)
    if not stacks:
        print("flamegraph: warning: no samples in the input", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
