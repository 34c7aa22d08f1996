#!/usr/bin/env python3
"""callgrind_diff.py: where two binaries' user-space cost per request differs, by function.

  tests/bench/callgrind_diff.py REQS_A 'GLOB_A' REQS_B 'GLOB_B' [--top N]

Reads the callgrind dumps instr_cost.py leaves (for one binary, the glob of its
measured parts, e.g. 'DIR/callgrind.0.*.1'), sums each function's exclusive
events over them, divides by the request count instr_cost.py printed, and lists
the functions whose cycle estimate per request (Ir + 10 x L1 misses + 100 x LL
misses, as instr_cost.py --cache-sim) differs most between A and B.

Why not callgrind_annotate: callgrind compresses names across the dumps of one
process, so a later part names a function only by a number defined in an
earlier part, and callgrind_annotate on that part alone puts nearly everything
under one unnamed function. Here the names come from every file of the process.
A renamed or inlined function shows as one row gone and one row new.
"""
import argparse
import collections
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from instr_cost import cycle_estimate  # noqa: E402

EVENTS = "Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw".split()
L1 = [EVENTS.index(e) for e in ("I1mr", "D1mr", "D1mw")]


def names(files):
    """Compressed function ids -> names, from every dump of a process."""
    found = {}
    for f in files:
        with open(f, errors="replace") as fh:
            for line in fh:
                m = re.match(r"^c?fn=\((\d+)\) (.+)$", line)
                if m:
                    found[m.group(1)] = m.group(2)
    return found


def exclusive_costs(part, by_id, totals):
    """Adds each function's own cost lines in one dump to totals (the cost line
    after a calls= line is the call's inclusive cost, not the caller's own)."""
    current, after_call = None, False
    with open(part, errors="replace") as fh:
        for line in fh:
            if line.startswith("fn="):
                fid = re.match(r"^fn=\((\d+)\)", line).group(1)
                current = by_id.get(fid, fid)
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_call:
                    after_call = False
                    continue
                for i, v in enumerate(line.split()[1:]):
                    totals[current][i] += int(v)


def load(pattern):
    totals = collections.defaultdict(lambda: [0] * len(EVENTS))
    for part in glob.glob(pattern):
        process = part.rsplit(".", 1)[0]
        exclusive_costs(part, names(glob.glob(process + "*")), totals)
    return totals


def cycles(v):
    return cycle_estimate(dict(zip(EVENTS, v)))


def per_request(totals, reqs):
    return {k: [x / reqs for x in v] for k, v in totals.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reqs_a", type=float)
    ap.add_argument("glob_a")
    ap.add_argument("reqs_b", type=float)
    ap.add_argument("glob_b")
    ap.add_argument("--top", type=int, default=40)
    a_ = ap.parse_args()
    a = per_request(load(a_.glob_a), a_.reqs_a)
    b = per_request(load(a_.glob_b), a_.reqs_b)
    zero = [0.0] * len(EVENTS)
    rows = sorted(((cycles(b.get(k, zero)) - cycles(a.get(k, zero)), k) for k in set(a) | set(b)),
                  key=lambda r: -abs(r[0]))
    print("| B-A cycles | A cycles | B cycles | A Ir | B Ir | A L1 misses | B L1 misses | function |")
    print("|---|---|---|---|---|---|---|---|")
    for d, k in rows[:a_.top]:
        va, vb = a.get(k, zero), b.get(k, zero)
        print(f"| {d:+.0f} | {cycles(va):.0f} | {cycles(vb):.0f} | {va[0]:.0f} | {vb[0]:.0f} | "
              f"{sum(va[i] for i in L1):.1f} | {sum(vb[i] for i in L1):.1f} | `{k[:90]}` |")
    ta = [sum(v[i] for v in a.values()) for i in range(len(EVENTS))]
    tb = [sum(v[i] for v in b.values()) for i in range(len(EVENTS))]
    print(f"\nper request: A {ta[0]:,.0f} Ir, {cycles(ta):,.0f} cycles; B {tb[0]:,.0f} Ir, "
          f"{cycles(tb):,.0f} cycles; B/A cycles {cycles(tb) / cycles(ta):.3f}")


if __name__ == "__main__":
    main()
