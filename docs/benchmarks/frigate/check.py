#!/usr/bin/env python3
"""Evaluate a Frigate gate list (`frigate prog.wir -i -i_output prog.g`) on random inputs
and compare its outputs with a Python reference of the pgc example.

    python3 check.py PROGRAM prog.g [TRIALS]    # PROGRAM: millionaires, hamming_textbook,
                                                #   hamming, dot_product, edit_distance_textbook, sort

Gate list format: `IN WIRE PARTY` (one line per input bit, least significant first),
`OUT WIRE PARTY` (one per output bit), `copy(...) DST SRC -1`, and `TABLE DST A B` with
output bit (TABLE >> (2*a + b)) & 1 (Frigate's table numbering: 8 = AND, 1 = NOR, 12 = a).
The constant gates (tables 15 and 0) come at the end of the list but are read by earlier
gates, so they are evaluated first. The fork's unpatched compiler gives both constants the
number of another wire (see README.md); use a gate list from a build with that fixed.
"""
import random
import sys

MASK32 = (1 << 32) - 1


def bits(values, width):
    out = []
    for v in values:
        out += [(v >> k) & 1 for k in range(width)]
    return out


def words(bitlist, width):
    return [sum(b << k for k, b in enumerate(bitlist[i:i + width]))
            for i in range(0, len(bitlist), width)]


def signed(v):
    v &= MASK32
    return v - (1 << 32) if v >> 31 else v


def evaluate(gates, inputs):
    """inputs: {party: [bits]}; returns {party: [bits]}."""
    wire = {}
    for g in gates:  # constants first
        if g[0] in (0, 15) and g[2] == 0 and g[3] == 0:
            wire[g[1]] = 1 if g[0] == 15 else 0
    pos = {1: 0, 2: 0}
    out = {1: [], 2: []}
    for g in gates:
        kind = g[0]
        if kind == "IN":
            wire[g[1]] = inputs[g[2]][pos[g[2]]]
            pos[g[2]] += 1
        elif kind == "OUT":
            out[g[2]].append(wire[g[1]])
        elif kind == "copy":
            wire[g[1]] = wire[g[2]]
        elif kind in (0, 15) and g[2] == 0 and g[3] == 0:
            pass
        else:
            wire[g[1]] = (kind >> (2 * wire[g[2]] + wire[g[3]])) & 1
    return out


def load(path):
    gates = []
    with open(path) as f:
        for line in f:
            t = line.split()
            if not t:
                continue
            if t[0] in ("IN", "OUT"):
                gates.append((t[0], int(t[1]), int(t[2])))
            elif t[0].startswith("copy"):
                gates.append(("copy", int(t[1]), int(t[2])))
            else:
                gates.append((int(t[0]), int(t[1]), int(t[2]), int(t[3])))
    return gates


def edit_distance(a, b):
    n = len(a)
    d = [[0] * (n + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
        d[0][i] = i
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d[n][n]


def rand32(rng):
    return rng.choice([rng.getrandbits(32), rng.getrandbits(8), MASK32 - rng.getrandbits(8)])


# Each program: (make inputs, reference) with inputs as two lists of unsigned words and
# their width, and the reference's outputs as a list of unsigned words and their width.
def millionaires(rng, trial):
    x = rand32(rng)
    y = [x, (x - 1) & MASK32, (x + 1) & MASK32, rand32(rng)][trial % 4]
    return [x], [y], 32, [int(signed(x) > signed(y))], 1


def hamming_any(rng, trial):
    a = [rng.getrandbits(32) for _ in range(16)]
    b = [[rng.getrandbits(32) for _ in range(16)], list(a), [~w & MASK32 for w in a]][trial % 3]
    dist = sum(bin(x ^ y).count("1") for x, y in zip(a, b))
    return a, b, 32, [dist], 32


def dot_product(rng, trial):
    a = [rand32(rng) for _ in range(100)]
    b = [rand32(rng) for _ in range(100)]
    return a, b, 32, [sum(signed(x) * signed(y) for x, y in zip(a, b)) & MASK32], 32


def edit_distance_textbook(rng, trial):
    alphabet = [b"ab", b"acgt", bytes(range(256))][trial % 3]
    a = [rng.choice(alphabet) for _ in range(16)]
    b = [rng.choice(alphabet) for _ in range(16)]
    if trial % 5 == 3:
        b = list(a)
    if trial % 5 == 4:
        a, b = [ord("a")] * 16, [ord("b")] * 16
    return a, b, 8, [edit_distance(a, b)], 32


def sort(rng, trial):
    a = [rand32(rng) for _ in range(16)]
    b = [rand32(rng) for _ in range(16)]
    if trial % 4 == 3:
        b = list(a)
    return a, b, 32, [v & MASK32 for v in sorted(signed(v) for v in a + b)], 32


PROGRAMS = {
    "millionaires": millionaires,
    "hamming_textbook": hamming_any,
    "hamming": hamming_any,
    "dot_product": dot_product,
    "edit_distance_textbook": edit_distance_textbook,
    "sort": sort,
}


def main():
    name, path = sys.argv[1], sys.argv[2]
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    gates = load(path)
    rng = random.Random(1)
    for trial in range(trials):
        a, b, win, expect, wout = PROGRAMS[name](rng, trial)
        out = evaluate(gates, {1: bits(a, win), 2: bits(b, win)})
        for party in (1, 2):
            got = words(out[party], wout)
            if got != expect:
                print("%s: trial %d party %d: got %s, expected %s" % (name, trial, party, got, expect))
                sys.exit(1)
    print("%s: %d trials, both parties' outputs match the reference" % (name, trials))


if __name__ == "__main__":
    main()
