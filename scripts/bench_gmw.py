#!/usr/bin/env python3
"""GMW against Yao, side by side in one run (issue 13; the seed paper's §5 setup/online split).

Both parties run on this machine (`pgc local`, TLS, one thread each), on circuits compiled with
`--optimize depth`, at one-way latencies of 0, 10 and 50 ms (`--latency`, pgc's own shaping).
For each circuit and latency the protocols alternate, N runs each; the table gives medians of
party B's figures: Yao end to end, GMW setup, GMW online, GMW end to end.

Usage: PGC=target/release/pgc N=3 python3 scripts/bench_gmw.py [--latency 0,10,50] [--only NAME]
       PGC=target/release/pgc N=3 python3 scripts/bench_gmw.py --seed   (the seed's Tables 2, 4)
A GMW run whose rounds alone would take longer than --max-seconds (AND depth x latency) is
not run; the table says so.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile


def inputs(tmp):
    rng = random.Random(13)
    files = {
        "biomatch": {"db": [[rng.randrange(-1000, 1000) for _ in range(4)] for _ in range(512)],
                     "sample": [rng.randrange(-1000, 1000) for _ in range(4)]},
        "mvmul": {"matrix": [[rng.randrange(-1000, 1000) for _ in range(16)] for _ in range(16)],
                  "vector": [rng.randrange(-1000, 1000) for _ in range(16)]},
        "mexp": {"base": [rng.randrange(1, 65521) for _ in range(32)],
                 "exponent": [rng.randrange(0, 1 << 32) for _ in range(32)]},
    }
    paths = {}
    for name, obj in files.items():
        paths[name] = os.path.join(tmp, name + ".json")
        with open(paths[name], "w") as f:
            json.dump(obj, f)
    return paths


def cases(shared, paths):
    return [
        ("AES-128 (Bristol)", [os.path.join(shared, "bristol_fashion/aes_128.txt"),
                               "--a", "0x000102030405060708090a0b0c0d0e0f",
                               "--b", "0x00112233445566778899aabbccddeeff"]),
        ("MVMul 16x16", ["examples/mvmul.c", "--optimize", "depth", "--inputs", paths["mvmul"]]),
        ("BioMatch n=512", ["examples/biomatch.c", "--optimize", "depth",
                            "--inputs", paths["biomatch"]]),
        ("Edit distance 16x16", ["examples/edit_distance.c", "--optimize", "depth",
                                 "--a", "text=[" + ",".join(str(i % 4) for i in range(16)) + "]",
                                 "--b", "text=[" + ",".join(str(i % 3) for i in range(16)) + "]"]),
        ("MExp k=32", ["examples/mexp.c", "--optimize", "depth", "--inputs", paths["mexp"]]),
    ]


# The seed paper's Tables 2 and 4 (ABY on two Core i7 desktops over Gigabit LAN, ms per single
# operation, setup + online): AND gates, AND depth, GMW and Yao.
SEED = {
    "32-bit division": (7079, 207, "3.5 + 58.2", "5.2 + 2.1"),
    "64-bit division": (28364, 512, "16.9 + 90.3", "27.5 + 5.6"),
    "binary32 add": (1820, 59, "3.0 + 46.1", "—"),
    "binary32 multiply": (3016, 47, "1.8 + 42.9", "—"),
}

SEED_PROGRAMS = {
    "32-bit division": ("#include <stdint.h>\nvoid mpc_main(uint32_t INPUT_A_x, uint32_t INPUT_B_y,"
                        " uint32_t *OUTPUT_q) { *OUTPUT_q = INPUT_A_x / INPUT_B_y; }\n",
                        ["--a", "x=4000000000", "--b", "y=7"]),
    "64-bit division": ("#include <stdint.h>\nvoid mpc_main(uint64_t INPUT_A_x, uint64_t INPUT_B_y,"
                        " uint64_t *OUTPUT_q) { *OUTPUT_q = INPUT_A_x / INPUT_B_y; }\n",
                        ["--a", "x=18000000000000000000", "--b", "y=7"]),
    "binary32 add": ("void mpc_main(float INPUT_A_x, float INPUT_B_y, float *OUTPUT_s)"
                     " { *OUTPUT_s = INPUT_A_x + INPUT_B_y; }\n", ["--a", "x=1.5", "--b", "y=-0.25"]),
    "binary32 multiply": ("void mpc_main(float INPUT_A_x, float INPUT_B_y, float *OUTPUT_p)"
                          " { *OUTPUT_p = INPUT_A_x * INPUT_B_y; }\n",
                          ["--a", "x=1.5", "--b", "y=-0.25"]),
}


def seed_table(pgc, n, tmp):
    print("| operation | seed: AND gates / depth | seed GMW (ms) | seed Yao (ms) | pgc: AND gates / depth "
          "| pgc GMW setup + online (ms) | pgc Yao (ms) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (src, args) in SEED_PROGRAMS.items():
        path = os.path.join(tmp, name.replace(" ", "_").replace("-", "") + ".c")
        with open(path, "w") as f:
            f.write(src)
        full = [path, "--optimize", "depth", *args]
        ands, depth = info(pgc, full)
        yao, setup, online = [], [], []
        for _ in range(n):
            oy, sy = run(pgc, full, "yao", 0)
            og, sg = run(pgc, full, "gmw", 0)
            if og != oy:
                sys.exit(f"{name}: GMW and Yao outputs differ")
            yao.append(sy["seconds"] * 1e3)
            setup.append(sg["gmw"]["setup_seconds"] * 1e3)
            online.append(sg["gmw"]["online_seconds"] * 1e3)
        s_ands, s_depth, s_gmw, s_yao = SEED[name]
        med = statistics.median
        print(f"| {name} | {s_ands:,} / {s_depth} | {s_gmw} | {s_yao} | {ands:,} / {depth} | "
              f"{med(setup):.1f} + {med(online):.1f} | {med(yao):.1f} |")
        sys.stdout.flush()


def info(pgc, args):
    prog = args[0]
    flags = [a for a in args[1:3] if a in ("--optimize", "depth")]
    out = subprocess.run([pgc, "info", prog, *flags, "--json"], capture_output=True, text=True,
                         check=True)
    v = json.loads(out.stdout)
    return v["and_gates"], v["and_levels"]


RATE = None


def run(pgc, args, protocol, latency):
    cmd = [pgc, "local", *args, "--protocol", protocol, "--json", "--quiet"]
    if latency > 0:
        cmd += ["--latency", str(latency)]
    if RATE:
        cmd += ["--rate-limit", str(RATE)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    v = json.loads(out.stdout)
    return v["outputs"], v["stats"]["b"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", default="0,10,50")
    ap.add_argument("--only", default=None)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=None,
                    help="also limit each party's sends to this many Mbit/s")
    ap.add_argument("--seed", action="store_true",
                    help="the seed paper's single operations (Tables 2 and 4) on a LAN instead")
    a = ap.parse_args()
    global RATE
    RATE = a.rate
    pgc = os.environ.get("PGC", "target/release/pgc")
    n = int(os.environ.get("N", "3"))
    shared = os.environ.get("PGC_SHARED_CIRCUITS", os.path.join("..", "shared", "circuits"))
    latencies = [float(x) for x in a.latency.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        if a.seed:
            seed_table(pgc, n, tmp)
            return
        paths = inputs(tmp)
        print("| circuit | AND gates | AND depth | one-way latency | Yao (s) | GMW setup (s) "
              "| GMW online (s) | GMW total (s) | GMW rounds | online / Yao |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, args in cases(shared, paths):
            if a.only and a.only.lower() not in name.lower():
                continue
            ands, depth = info(pgc, args)
            for lat in latencies:
                yao, setup, online, total, rounds = [], [], [], [], None
                skip_gmw = depth * lat / 1000 > a.max_seconds
                for _ in range(n):
                    oy, sy = run(pgc, args, "yao", lat)
                    yao.append(sy["seconds"])
                    if skip_gmw:
                        continue
                    og, sg = run(pgc, args, "gmw", lat)
                    if og != oy:
                        sys.exit(f"{name}: GMW and Yao outputs differ")
                    setup.append(sg["gmw"]["setup_seconds"])
                    online.append(sg["gmw"]["online_seconds"])
                    total.append(sg["seconds"])
                    rounds = sg["gmw"]["rounds"]
                med = statistics.median
                if skip_gmw:
                    gmw = f"not run (≥ {depth * lat / 1000:.0f} s of rounds) | | | | "
                    print(f"| {name} | {ands:,} | {depth:,} | {lat:g} ms | {med(yao):.3f} | "
                          f"{gmw}|")
                else:
                    print(f"| {name} | {ands:,} | {depth:,} | {lat:g} ms | {med(yao):.3f} | "
                          f"{med(setup):.3f} | {med(online):.3f} | {med(total):.3f} | "
                          f"{rounds:,} | {med(online) / med(yao):.2f} |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
