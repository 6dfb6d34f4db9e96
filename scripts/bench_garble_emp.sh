#!/usr/bin/env bash
# Side by side, one thread, in memory: pgc's half-gates garbler and evaluator against EMP-toolkit
# 0.3.0's (HalfGateGen / HalfGateEva into and out of a MemIO buffer), on the Bristol AES-128 and
# SHA-256 circuits, plus pgc on its random layered circuit, and this CPU's AES bound (the
# aes_bound example). N rounds, each running every command once in turn (so drifts in machine
# load hit all alike); medians at the end, in M AND/s per second of the benchmark thread's CPU
# time (on a shared machine wall time also counts the time other processes held the core).
#
# Usage: PGC=target/release/pgc AES_BOUND=target/release/examples/aes_bound scripts/bench_garble_emp.sh
# Environment: PEERS [/work/peers] (EMP install prefix under $PEERS/install, see
# bench_emp_ag2pc.sh for the build), CIRCUITS [/work/shared/circuits/bristol_fashion],
# N [3], ANDS [20000000], EMP_BIN [built here from scripts/emp-garble/bench_garble_mem.cpp].
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PEERS=${PEERS:-/work/peers}
CIRCUITS=${CIRCUITS:-/work/shared/circuits/bristol_fashion}
N=${N:-3}
ANDS=${ANDS:-20000000}
PGC=${PGC:?set PGC to the pgc binary}
AES_BOUND=${AES_BOUND:-}
EMP_BIN=${EMP_BIN:-$(mktemp -d)/bench_garble_mem}
if [ ! -x "$EMP_BIN" ]; then
    g++ -O3 -march=native -maes -mrdseed -funroll-loops -std=c++11 -pthread -w \
        -I"$PEERS/install/include" "$here/emp-garble/bench_garble_mem.cpp" \
        -L"$PEERS/install/lib" -lemp-tool -lssl -lcrypto -Wl,-rpath,"$PEERS/install/lib" -o "$EMP_BIN"
fi
lscpu | grep 'Model name'
out=$(mktemp)
for round in $(seq "$N"); do
    if [ -n "$AES_BOUND" ]; then
        "$AES_BOUND" | sed -n 's/^VAES-512.*: \([0-9.]*\) G blocks.*/bound vaes512 \1/p' >>"$out"
    fi
    "$PGC" bench garble --json --ands "$ANDS" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print("pgc random", d["garble_and_per_cpu_sec"]/1e6, d["eval_and_per_cpu_sec"]/1e6)' >>"$out"
    for c in aes_128 sha256; do
        "$PGC" bench garble --json --ands "$ANDS" --circuit "$CIRCUITS/$c.txt" |
            python3 -c 'import json,sys; d=json.load(sys.stdin); print("pgc '$c'", d["garble_and_per_cpu_sec"]/1e6, d["eval_and_per_cpu_sec"]/1e6)' >>"$out"
        "$EMP_BIN" "$CIRCUITS/$c.txt" "$ANDS" |
            sed -n 's/.*garble_cpu_mands=\([0-9.]*\) eval_cpu_mands=\([0-9.]*\).*/emp '$c' \1 \2/p' >>"$out"
    done
done
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    *key, g = line.split()[:3] if line.startswith("bound") else line.split()[:2] + [" ".join(line.split()[2:])]
    rows.setdefault(" ".join(key), []).append(g)
med = lambda xs: statistics.median(float(x) for x in xs)
bound = None
if "bound vaes512" in rows:
    bound = med(rows["bound vaes512"])
    print(f"AES bound: {bound:.2f} G blocks/s (median of {len(rows['bound vaes512'])}) -> "
          f"{bound*1e3/8:.0f} M AND/s garbling, {bound*1e3/4:.0f} M AND/s evaluating")
for key, vals in rows.items():
    if key.startswith("bound"):
        continue
    g = med(v.split()[0] for v in vals); e = med(v.split()[1] for v in vals)
    extra = ""
    if bound and key == "pgc random":
        extra = f"   ({100*g/(bound*1e3/8):.0f} % / {100*e/(bound*1e3/4):.0f} % of the AES bound)"
    print(f"{key:12s} garble {g:7.1f}  evaluate {e:7.1f} M AND/s  (median of {len(vals)}){extra}")
for c in ["aes_128", "sha256"]:
    p, q = rows.get("pgc " + c), rows.get("emp " + c)
    if p and q:
        print(f"{c}: pgc/EMP garble {med(v.split()[0] for v in p)/med(v.split()[0] for v in q):.2f}x, "
              f"evaluate {med(v.split()[1] for v in p)/med(v.split()[1] for v in q):.2f}x")
PY
rm -f "$out"
