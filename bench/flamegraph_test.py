"""Tests for bench/flamegraph.py. Run from the repository root:

    python3 -m unittest bench/flamegraph_test.py
"""

import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import unittest
import xml.dom.minidom
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout

_HERE = os.path.dirname(os.path.abspath(__file__))
_SCRIPT = os.path.join(_HERE, "flamegraph.py")
_spec = importlib.util.spec_from_file_location("flamegraph", _SCRIPT)
fg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fg)

# Four samples as `perf script` prints them (innermost frame first): a kernel frame, a
# template-heavy C++ name, an anonymous namespace, a comm with a space, an [unknown]
# frame, and a header without a period (weight 1).
PERF_SCRIPT = (
    "gpuscope 4242 [000] 100.000001:     250000 cpu-clock: \n"
    "\tffffffff81000130 entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])\n"
    "\t    55d0c0de1000 std::vector<int, std::allocator<int> >::push_back(int const&)+0x12 (/opt/gpuscope/bin/gpuscope)\n"
    "\t    55d0c0de2000 gpuscope::(anonymous namespace)::Foo(int)+0x5 (/opt/gpuscope/bin/gpuscope)\n"
    "\t    55d0c0de3000 main+0x10 (/opt/gpuscope/bin/gpuscope)\n"
    "\n"
    "gpuscope 4242 [000] 100.000251:     250000 cpu-clock: \n"
    "\t    55d0c0de1000 std::vector<int, std::allocator<int> >::push_back(int const&)+0x20 (/opt/gpuscope/bin/gpuscope)\n"
    "\t    55d0c0de2000 gpuscope::(anonymous namespace)::Foo(int)+0x9 (/opt/gpuscope/bin/gpuscope)\n"
    "\t    55d0c0de3000 main+0x10 (/opt/gpuscope/bin/gpuscope)\n"
    "\n"
    "gpu worker 4242/4243 [001] 100.000500:     500000 cpu-clock: \n"
    "\t    7f0000001234 [unknown] ([unknown])\n"
    "\t    55d0c0de4000 gpuscope::ingest::ReadEvent(char const*, unsigned long)+0x44 (/opt/gpuscope/bin/gpuscope)\n"
    "\t    55d0c0de3000 main+0x10 (/opt/gpuscope/bin/gpuscope)\n"
    "\n"
    "gpuscope 4242 [000] 100.000750: cpu-clock: \n"
    "\t    55d0c0de3000 main+0x22 (/opt/gpuscope/bin/gpuscope)\n"
    "\n"
)

EXPECTED_FOLDED = Counter({
    "gpuscope;main;gpuscope::(anonymous namespace)::Foo;std::vector::push_back;"
    "entry_SYSCALL_64_after_hwframe_[k]": 250000,
    "gpuscope;main;gpuscope::(anonymous namespace)::Foo;std::vector::push_back": 250000,
    "gpu worker;main;gpuscope::ingest::ReadEvent;[unknown]": 500000,
    "gpuscope;main": 1,
})


def _frames_in(svg_text):
    """(number of <rect>, titles) of an SVG document, which must parse as XML."""
    doc = xml.dom.minidom.parseString(svg_text.encode("utf-8"))
    rects = doc.getElementsByTagName("rect")
    titles = [t.firstChild.data for t in doc.getElementsByTagName("title")]
    return len(rects), titles


class ShortenTest(unittest.TestCase):
    def test_templates_and_arguments(self):
        self.assertEqual(
            fg.shorten_symbol("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector::push_back")

    def test_anonymous_namespace_kept(self):
        self.assertEqual(fg.shorten_symbol("gpuscope::(anonymous namespace)::Foo(int)"),
                         "gpuscope::(anonymous namespace)::Foo")

    def test_operators_qualifiers_and_return_types(self):
        cases = {
            "Foo::operator()(int) const": "Foo::operator()",
            "std::map<int, int>::operator[](int const&)": "std::map::operator[]",
            "bool operator< <Foo>(Foo const&, Foo const&)": "operator<",
            "operator new(unsigned long)": "operator new",
            "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>"
            "(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, "
            "int const&)": "std::vector::_M_realloc_insert",
            "gpuscope::Run()::{lambda(int)#1}::operator()(int) const":
                "gpuscope::Run::{lambda#1}::operator()",
            "_PyEval_EvalFrameDefault": "_PyEval_EvalFrameDefault",
            "main.(*Server).handle": "main.(*Server).handle",
        }
        for full, short in cases.items():
            with self.subTest(full=full):
                self.assertEqual(fg.shorten_symbol(full), short)


class FoldTest(unittest.TestCase):
    def test_folded_counts_are_exact(self):
        stacks, samples = fg.fold_perf(io.StringIO(PERF_SCRIPT))
        self.assertEqual(samples, 4)
        self.assertEqual(stacks, EXPECTED_FOLDED)

    def test_count_samples_and_no_comm(self):
        stacks, _ = fg.fold_perf(io.StringIO(PERF_SCRIPT), include_comm=False,
                                 count_samples=True)
        self.assertEqual(stacks["main;gpuscope::(anonymous namespace)::Foo;std::vector::push_back"], 1)
        self.assertEqual(stacks["main;gpuscope::ingest::ReadEvent;[unknown]"], 1)
        self.assertEqual(sum(stacks.values()), 4)

    def test_samples_without_call_graph(self):
        # `perf record` without -g: right-aligned comm, the one frame on the header line,
        # no blank lines between samples.
        text = (
            "        gpuscope 4242 [000]   100.000001:     250000 cpu-clock:      55d0c0de3000 main+0x22 (/opt/gpuscope/bin/gpuscope)\n"
            "      gpu worker 4242/4243 [001]   100.000251:     250000 cpu-clock:  ffffffff81000130 entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])\n"
        )
        stacks, samples = fg.fold_perf(io.StringIO(text))
        self.assertEqual(samples, 2)
        self.assertEqual(stacks, Counter({
            "gpuscope;main": 250000,
            "gpu worker;entry_SYSCALL_64_after_hwframe_[k]": 250000,
        }))

    def test_folded_round_trip(self):
        text = fg.format_folded(EXPECTED_FOLDED)
        stacks, lines = fg.read_folded(io.StringIO(text))
        self.assertEqual(stacks, EXPECTED_FOLDED)
        self.assertEqual(lines, 4)


class RenderTest(unittest.TestCase):
    def test_svg_is_xml_with_one_rect_per_frame(self):
        svg, drawn = fg.render_svg(EXPECTED_FOLDED, title="a <b> & 'c'", min_percent=0)
        nrect, titles = _frames_in(svg)
        # all, gpuscope, gpu worker, main x2, Foo, push_back, entry_SYSCALL.., ReadEvent,
        # [unknown]
        self.assertEqual(drawn, 10)
        self.assertEqual(nrect, drawn)
        self.assertEqual(len(titles), drawn)
        self.assertIn("a <b> & 'c'", svg.replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&apos;", "'").replace("&amp;", "&"))
        self.assertIn("all (1,000,001 samples, 100.00 %)", titles)
        self.assertIn("gpu worker (500,000 samples, 50.00 %)", titles)

    def test_kernel_frames_get_their_own_colour(self):
        k = fg.frame_color("entry_SYSCALL_64_after_hwframe_[k]")
        self.assertEqual(k, fg.frame_color("entry_SYSCALL_64_after_hwframe_[k]"))
        g = int(k.split(",")[1])
        self.assertTrue(125 <= g <= 160, k)
        for name in ("main", "std::vector::push_back", "gpuscope", "all", "x" * 40):
            g = int(fg.frame_color(name).split(",")[1])
            self.assertFalse(110 <= g < 180, name)

    def test_min_percent_prunes_frames_and_children(self):
        stacks = Counter({"a;b": 990, "a;c;d": 5, "a;c;e": 5})
        _, all_frames = fg.render_svg(stacks, min_percent=0)
        self.assertEqual(all_frames, 6)  # all, a, b, c, d, e
        svg, drawn = fg.render_svg(stacks, min_percent=0.9)  # c is 1 %, d and e 0.5 %
        self.assertEqual(drawn, 4)
        self.assertEqual(_frames_in(svg)[0], 4)
        svg, drawn = fg.render_svg(stacks, min_percent=2)  # c goes, and d and e with it
        self.assertEqual(drawn, 3)
        self.assertEqual(_frames_in(svg)[0], 3)
        self.assertNotIn(">d (", svg)


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="flamegraph_test_")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.perf = os.path.join(self.dir, "perf.txt")
        with open(self.perf, "w", encoding="utf-8") as f:
            f.write(PERF_SCRIPT)

    def test_perf_to_svg_and_folded(self):
        svg_path = os.path.join(self.dir, "out.svg")
        folded_path = os.path.join(self.dir, "out.folded")
        with open(self.perf, "rb") as stdin:
            proc = subprocess.run(
                [sys.executable, _SCRIPT, "--title", "T", "-o", svg_path,
                 "--folded-out", folded_path, "--min-percent", "0"],
                stdin=stdin, capture_output=True, text=True, check=True)
        summary = proc.stderr.strip().splitlines()
        self.assertEqual(len(summary), 1)
        self.assertIn("4 samples", summary[0])
        self.assertIn("4 distinct stacks", summary[0])
        self.assertIn("10 frames drawn", summary[0])
        xml.dom.minidom.parse(svg_path)
        with open(folded_path, encoding="utf-8") as f:
            stacks, _ = fg.read_folded(f)
        self.assertEqual(stacks, EXPECTED_FOLDED)

        # The folded file read back draws the same graph, here to stdout.
        proc2 = subprocess.run([sys.executable, _SCRIPT, "--folded-in", folded_path,
                                "--title", "T", "-o", "-", "--min-percent", "0"],
                               capture_output=True, text=True, check=True)
        self.assertEqual(_frames_in(proc2.stdout)[0], 10)

    def test_output_is_required(self):
        with redirect_stderr(io.StringIO()), redirect_stdout(io.StringIO()):
            with self.assertRaises(SystemExit):
                fg.main([self.perf])


if __name__ == "__main__":
    unittest.main()
