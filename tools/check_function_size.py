#!/usr/bin/env python3
"""House style: functions a reader holds in mind (issue 34). Lists every function of src/ over
150 lines (lizard's length: first line to closing brace) and fails on one that is not in
tools/function_size_baseline.txt or that grew past its length there; the baseline only shrinks
(split a function, then remove its line or lower its number). Functions over 120 lines are listed
as the next to split. Exit 77 (skip) without lizard (tools/setup.sh --test installs it).

usage: check_function_size.py [SOURCE_DIR] [--write-baseline]
"""
import os
import sys

LIMIT = 150  # lines: over it, a function must be in the baseline
AIM = 120    # lines: what the house style aims at


def main(argv):
    root = next((a for a in argv[1:] if not a.startswith("--")),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    try:
        import lizard
    except ImportError:
        print("SKIP: lizard is not installed (tools/setup.sh --test installs it)")
        return 77
    os.chdir(root)
    found = {}  # "file:function" -> length
    aim = []
    for folder, _, files in os.walk("src"):
        for name in sorted(files):
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.join(folder, name)
            for f in lizard.analyze_file(path).function_list:
                if f.length > LIMIT:
                    found[f"{path}:{f.name}"] = f.length
                elif f.length > AIM:
                    aim.append(f"{path}:{f.name} {f.length}")
    baseline_path = os.path.join("tools", "function_size_baseline.txt")
    if "--write-baseline" in argv:
        with open(baseline_path, "w") as out:
            out.write("# Functions of src/ over 150 lines (tools/check_function_size.py): each may\n"
                      "# only shrink. Remove a line when its function is split below the limit.\n")
            for key in sorted(found):
                out.write(f"{key} {found[key]}\n")
        return 0
    baseline = {}
    with open(baseline_path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, length = line.rsplit(" ", 1)
                baseline[key] = int(length)
    bad = []
    for key, length in sorted(found.items()):
        if key not in baseline:
            bad.append(f"{key}: {length} lines (over {LIMIT}, not in the baseline: split it)")
        elif length > baseline[key]:
            bad.append(f"{key}: {length} lines (the baseline allows {baseline[key]}: it grew)")
    gone = sorted(set(baseline) - set(found))
    for key, length in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"over {LIMIT}: {key} {length}")
    for line in aim:
        print(f"over {AIM}: {line}")
    print(f"{len(found)} functions over {LIMIT} lines (baseline {len(baseline)}), "
          f"{len(aim)} over {AIM}")
    for key in gone:
        bad.append(f"{key}: no longer over {LIMIT} lines: remove it from {baseline_path}")
    if bad:
        print(f"fix: split the function, or after a split: {sys.argv[0]} --write-baseline",
              file=sys.stderr)
        print("\n".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
