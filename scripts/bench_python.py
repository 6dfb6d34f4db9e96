#!/usr/bin/env python3
"""What calling pgc from Python costs next to the `pgc` command: the same computation run
with `pgc local` (a process per run, as a shell script would) and with `pgc.local` in one
Python process, alternating, medians of N. Both use the compile cache (warmed first).
`pgc.local` is timed on a circuit compiled once (as a script does), and again with
`pgc.compile` in the timing (what one shell command does).

    PGC=target/release/pgc N=7 python scripts/bench_python.py     # with the release wheel
                                                                    # installed in this python
"""

import json
import os
import re
import statistics
import subprocess
import time

import pgc

EXE = os.environ.get("PGC", "target/release/pgc")
N = int(os.environ.get("N", "7"))

# (label, circuit, CLI arguments for A and B, Python inputs for A and B, compile options)
CASES = [
    ("millionaires (32 AND)", "examples/millionaires.c", ["--a", "income=5", "--b", "income=7"],
     {"income": 5}, {"income": 7}, {}),
    ("AES-128 builtin (6,800 AND)", "builtin:aes128", ["--a", "0x0", "--b", "0x0"], [0], [0], {}),
    ("MVMul 16×16 (≈1.6 M AND)", "examples/mvmul.c", None, None, None, {}),
]


def cli(spec, args, extra):
    start = time.perf_counter()
    subprocess.run([EXE, "local", spec, "--quiet", *extra, *args], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def py(circuit, a, b):
    start = time.perf_counter()
    pgc.local(circuit, a=a, b=b)
    return time.perf_counter() - start


def main():
    print(f"pgc {pgc.__version__}, {EXE}, N={N} (medians, alternating)")
    for label, spec, args, a, b, options in CASES:
        if args is None:
            c = pgc.compile(spec)
            # Zero inputs of the right shape, by name.
            zeros = {}
            for p in c.inputs:
                value = 0
                for dim in reversed(re.findall(r"\[(\d+)\]", p.type)):
                    value = [value] * int(dim)
                zeros[p.name] = value
            a = {k: v for k, v in zeros.items() if k.startswith("INPUT_A_")}
            b = {k: v for k, v in zeros.items() if k.startswith("INPUT_B_")}
            args = []
            for k, v in zeros.items():
                flag = "--a" if k.startswith("INPUT_A_") else "--b"
                args += [flag, f"{k}={json.dumps(v, separators=(',', ':'))}"]
        cli(spec, args, [])
        circuit = pgc.compile(spec, **options)  # as a script does: once, then runs
        py(circuit, a, b)  # warm the cache and the page cache
        t_cli, t_py, t_both = [], [], []
        for _ in range(N):
            t_cli.append(cli(spec, args, []))
            t_py.append(py(circuit, a, b))
            start = time.perf_counter()
            py(pgc.compile(spec, **options), a, b)
            t_both.append(time.perf_counter() - start)
        mc, mp, mb = (statistics.median(t) for t in (t_cli, t_py, t_both))
        print(f"{label:28s} pgc local {mc * 1e3:8.2f} ms | pgc.local {mp * 1e3:8.2f} ms "
              f"({1e3 * (mp - mc):+7.2f} ms, {mp / mc:.3f}×) | compile+local {mb * 1e3:8.2f} ms "
              f"({1e3 * (mb - mc):+7.2f} ms, {mb / mc:.3f}×)")


if __name__ == "__main__":
    main()
