#!/usr/bin/env python3
"""Count the gates of a Frigate gate list (`frigate prog.wir -i -i_output prog.g`).

Each gate line is `TABLE DST A B` with TABLE the gate's 4-bit truth table in decimal
(6 = XOR, 8 = AND, 0 and 15 the constant gates); `copy(...) DST SRC -1` lines are wire
copies, `IN WIRE PARTY` and `OUT WIRE PARTY` the inputs and outputs. A two-input gate is
AND-type (costs a garbled table under free-XOR) when its truth table is not affine, that is
when it has an odd number of ones; XOR, XNOR, NOT, the copies of an input and the constants
are free.

    python3 count.py prog.g     # prints: and_type=N all_gates=M (by table: ...)
"""
import collections
import sys


def count(path):
    tables = collections.Counter()
    with open(path) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0] in ("IN", "OUT") or fields[0].startswith("copy"):
                continue
            tables[int(fields[0])] += 1
    and_type = sum(n for t, n in tables.items() if bin(t).count("1") % 2 == 1)
    return and_type, sum(tables.values()), tables


if __name__ == "__main__":
    for path in sys.argv[1:]:
        and_type, total, tables = count(path)
        by_table = " ".join("%d:%d" % (t, n) for t, n in sorted(tables.items()))
        print("%s: and_type=%d all_gates=%d (by table: %s)" % (path, and_type, total, by_table))
