#!/usr/bin/env python3
"""Write a random layered Boolean circuit in Bristol Fashion and in the old Bristol format.

For side-by-side benchmarks with peers that read only the old format (emp-ag2pc's
BristolFormat). Both files hold the same gates in the same order; only the header differs.

Shape (like pgc's builtin:random:WIDTHxDEPTH, but single-assignment, which emp-ag2pc needs:
it assigns every AND output before walking the XORs, so no wire may be written twice):
two inputs of IN_BITS bits (party A's, then party B's). Each of DEPTH layers reads the
previous layer (the first layer reads the inputs) and makes WIDTH slots: slot i is
AND(two random wires of the previous layer) XOR (a third random wire of it), and every 16th
slot is then inverted. After the last layer, OUT_BITS XOR gates fold its slots into the
outputs, which are therefore the last OUT_BITS wires, as both formats require.
Gates: WIDTH*DEPTH ANDs, WIDTH*DEPTH + OUT_BITS XORs, WIDTH/16*DEPTH INVs.

The output is deterministic in --seed (Python's random.Random, not a secret: test data).

Usage: scripts/random_layered_circuit.py --width 4096 --depth 250 --out-dir /work/peers/circuits
writes random_4096x250.bf.txt (Bristol Fashion, for pgc) and random_4096x250.old.txt
(old Bristol format, for emp-ag2pc). Keep them out of git (about 64 MB each at this size).
"""

import argparse
import os
import random
import sys

INV_STRIDE = 16


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=4096, help="ANDs per layer (default 4096)")
    ap.add_argument("--depth", type=int, default=250, help="layers (default 250)")
    ap.add_argument("--in-bits", type=int, default=128, help="bits of each party's input")
    ap.add_argument("--out-bits", type=int, default=128, help="output bits")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-dir", default=".", help="where the two files go")
    args = ap.parse_args()
    w, d, n_in, n_out = args.width, args.depth, args.in_bits, args.out_bits
    if w < 1 or d < 1 or n_in < 1 or n_out < 1:
        ap.error("width, depth, in-bits and out-bits must be positive")
    if n_out > w:
        ap.error("out-bits must be at most width")

    invs_per_layer = len(range(0, w, INV_STRIDE))
    num_gates = d * (2 * w + invs_per_layer) + n_out
    num_wires = 2 * n_in + num_gates

    os.makedirs(args.out_dir, exist_ok=True)
    stem = os.path.join(args.out_dir, f"random_{w}x{d}")
    bf_path, old_path = stem + ".bf.txt", stem + ".old.txt"
    rng = random.Random(args.seed)
    next_wire = 2 * n_in
    prev = list(range(2 * n_in))
    lines = []
    with open(bf_path, "w") as bf, open(old_path, "w") as old:
        bf.write(f"{num_gates} {num_wires}\n2 {n_in} {n_in}\n1 {n_out}\n\n")
        old.write(f"{num_gates} {num_wires}\n{n_in} {n_in} {n_out}\n\n")

        def flush():
            text = "".join(lines)
            bf.write(text)
            old.write(text)
            lines.clear()

        for _ in range(d):
            n = len(prev)
            cur = []
            for i in range(w):
                a, b, c = prev[rng.randrange(n)], prev[rng.randrange(n)], prev[rng.randrange(n)]
                t, x = next_wire, next_wire + 1
                next_wire += 2
                lines.append(f"2 1 {a} {b} {t} AND\n2 1 {t} {c} {x} XOR\n")
                if i % INV_STRIDE == 0:
                    lines.append(f"1 1 {x} {next_wire} INV\n")
                    x = next_wire
                    next_wire += 1
                cur.append(x)
            prev = cur
            flush()
        for j in range(n_out):
            # Fold the last layer into the outputs: slot j XOR the slot half a layer on.
            lines.append(f"2 1 {prev[j]} {prev[(j + max(1, w // 2)) % w]} {next_wire} XOR\n")
            next_wire += 1
        flush()
    if next_wire != num_wires:
        print(f"internal error: wrote {next_wire} wires, header says {num_wires}", file=sys.stderr)
        return 1
    print(f"{bf_path}\n{old_path}\n{d * w} AND, {d * w + n_out} XOR, {d * invs_per_layer} INV, "
          f"{num_wires} wires")
    return 0


if __name__ == "__main__":
    sys.exit(main())
