#!/usr/bin/env bash
# Side by side: EMP's maliciously secure 2PC (authenticated garbling, emp-ag2pc; Wang, Ranellucci
# and Katz, CCS 2017, ePrint 2017/030) against pgc, on the same circuits over loopback TCP.
#
# Circuits (both parties' inputs all zero, so every system must print the same output):
#   aes     AES-128 with the key schedule in the circuit (AES-non-expanded, 6,800 AND): emp-tool's
#           old-Bristol file for emp-ag2pc, the same gates under a Bristol Fashion header for pgc.
#   random  a single-assignment random layered circuit, WIDTH x DEPTH ANDs (default 4096 x 250 =
#           1,024,000 AND, 1,024,128 XOR, 64,000 INV; 2 x 128 input bits, 128 output bits),
#           written by scripts/random_layered_circuit.py in both formats under $PEERS/circuits.
# Each repetition runs emp-ag2pc on both circuits, then (if PGC is set) pgc on the same circuits
# once per security level. At the end it prints medians over the N repetitions: per party the
# protocol time (emp-ag2pc: its four phases summed, from the connection to the output, circuit
# file parsing excluded; pgc: stats.seconds, handshake to outputs), the process wall time (start,
# file parsing and waiting for the peer included), peak RSS (/usr/bin/time), bytes sent
# (emp-ag2pc: counted on all three of its TCP channels; B/AND = both parties' bytes over the
# ANDs, setup included), and whether the output matches emp-ag2pc's. Party 1 / A garbles,
# party 2 / B evaluates. pgc uses its default threads; PGC_ARGS='--insecure-plaintext
# --parallel none' pins it to one thread.
#
# Usage:
#   scripts/bench_emp_ag2pc.sh                                   # emp-ag2pc only
#   PGC=target/release/pgc scripts/bench_emp_ag2pc.sh            # and pgc, side by side
# Environment (defaults in brackets):
#   PEERS [/work/peers]    where the peer checkouts, install prefix and circuits live
#   N [3]                  repetitions (medians are taken over them)
#   PGC []                 pgc binary; empty = emp-ag2pc only
#   SECURITY [semi-honest malicious dual-execution]   pgc levels, passed as --security LEVEL;
#                          a pgc whose `run --help` has no --security runs semi-honest only
#   PGC_ARGS [--insecure-plaintext]   extra pgc run flags (emp-ag2pc has no TLS either)
#   CIRCUITS [aes random]  WIDTH [4096]  DEPTH [250]  PORT [23000]  RUN_TIMEOUT [600]
#   JSON_OUT []            also write the median table to this file as JSON lines
#
# Building the peer (the commands used on the benchmark machine; the peer's code stays out of
# this repository). Sources are tags emp-tool 0.3.0, emp-ot 0.3.0, emp-ag2pc v0.3.0 from
# github.com/emp-toolkit; packages: cmake g++ libssl-dev (Debian 12: OpenSSL 3.0, GCC 12).
#   mkdir -p /work/peers && cd /work/peers
#   git clone https://github.com/emp-toolkit/emp-tool  && git -C emp-tool  checkout 0.3.0
#   git clone https://github.com/emp-toolkit/emp-ot    && git -C emp-ot    checkout 0.3.0
#   git clone https://github.com/emp-toolkit/emp-ag2pc && git -C emp-ag2pc checkout v0.3.0
#   I=/work/peers/install
#   (cd emp-tool && mkdir -p build && cd build && cmake .. -DCMAKE_INSTALL_PREFIX=$I \
#       -DCMAKE_BUILD_TYPE=Release && make -j2 emp-tool && cmake --install .)
#   (cd emp-ot && mkdir -p build && cd build && cmake .. -DCMAKE_INSTALL_PREFIX=$I \
#       -DCMAKE_PREFIX_PATH=$I -DCMAKE_BUILD_TYPE=Release && cmake --install .)   # headers only
#   # emp-ag2pc: add this repository's driver scripts/emp-ag2pc/bench_circuit.cpp and register it
#   cp <pgc>/scripts/emp-ag2pc/bench_circuit.cpp emp-ag2pc/test/
#   echo 'add_test_executable_with_lib(bench_circuit "")' >> emp-ag2pc/test/CMakeLists.txt
#   (cd emp-ag2pc && mkdir -p build && cd build && cmake .. -DCMAKE_INSTALL_PREFIX=$I \
#       -DCMAKE_PREFIX_PATH=$I -DCMAKE_BUILD_TYPE=Release && make test_bench_circuit test_aes)
# EMP's own flags apply (emp-tool cmake/emp-base.cmake): -O3 -march=native -maes -mrdseed
# -funroll-loops -std=c++11. No source change was needed to build; the driver is the only
# addition. It runs the phases of emp-ag2pc's test/single_execution.h on the file given as its
# third argument and prints one line
#   EMP_BENCH party=P load_us= setup_us= indep_us= dep_us= online_us= total_us= bytes_sent= ands= out=0x..
# (bytes_sent sums IOChannel::counter over the main NetIO and Fpre's io[0] and io2[0]; out is the
# output with output wire i as bit i). `./run ./build/bin/test_aes` is EMP's unmodified AES test.
set -euo pipefail

PEERS=${PEERS:-/work/peers}
N=${N:-3}
PGC=${PGC:-}
SECURITY=${SECURITY:-semi-honest malicious dual-execution}
PGC_ARGS=${PGC_ARGS:---insecure-plaintext}
CIRCUITS=${CIRCUITS:-aes random}
WIDTH=${WIDTH:-4096}
DEPTH=${DEPTH:-250}
PORT=${PORT:-23000}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
JSON_OUT=${JSON_OUT:-}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EMP=$PEERS/emp-ag2pc/build/bin/test_bench_circuit
EMP_AES=$PEERS/install/include/emp-tool/circuits/files/bristol_format/AES-non-expanded.txt
CIRC=$PEERS/circuits

die() { echo "bench_emp_ag2pc: $*" >&2; exit 1; }
[ -x "$EMP" ] || die "no $EMP; build emp-ag2pc first (see the top of this script)"
[ -x /usr/bin/time ] || die "needs /usr/bin/time (apt-get install time)"
if [ -n "$PGC" ]; then
    [ -x "$PGC" ] || die "PGC=$PGC is not an executable"
    PGC=$(cd "$(dirname "$PGC")" && pwd)/$(basename "$PGC")
fi
mkdir -p "$CIRC"

# circuit name -> "old-format file|Bristol Fashion file"
declare -A FILES
for c in $CIRCUITS; do
    case $c in
    aes)
        [ -f "$EMP_AES" ] || die "no $EMP_AES (install emp-tool first)"
        bf=$CIRC/AES-non-expanded.bf.txt
        if [ ! -s "$bf" ]; then
            # Old header "n1 n2 n3" -> Bristol Fashion "2 n1 n2" / "1 n3"; gate lines are the same.
            awk 'NR == 2 { print "2", $1, $2; print "1", $3; next } { print }' "$EMP_AES" > "$bf.tmp"
            mv "$bf.tmp" "$bf"
        fi
        FILES[aes]="$EMP_AES|$bf"
        ;;
    random)
        stem=$CIRC/random_${WIDTH}x${DEPTH}
        if [ ! -s "$stem.old.txt" ] || [ ! -s "$stem.bf.txt" ]; then
            python3 "$HERE/random_layered_circuit.py" --width "$WIDTH" --depth "$DEPTH" \
                --out-dir "$CIRC" >&2
        fi
        FILES[random]="$stem.old.txt|$stem.bf.txt"
        ;;
    *) die "unknown circuit '$c' (aes, random)" ;;
    esac
done

PGC_HAS_SECURITY=0
if [ -n "$PGC" ]; then
    # Not `| grep -q`: with pipefail, pgc's write into the closed pipe would fail the test.
    case $("$PGC" run --help 2>/dev/null || true) in
    *--security*) PGC_HAS_SECURITY=1 ;;
    esac
fi

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ROWS=$T/rows.jsonl
: > "$ROWS"
next_port=$PORT

# $ROWS: one JSON line per party and run (system security circuit run party status seconds wall
# rss_kib bytes_sent ands out, and emp-ag2pc's phases).

run_emp() { # circuit file rep
    local circuit=$1 file=$2 rep=$3 port=$next_port p
    next_port=$((next_port + 1))
    timeout "$RUN_TIMEOUT" /usr/bin/time -f '%e %M' -o "$T/time1" "$EMP" 1 "$port" "$file" \
        > "$T/out1" 2>&1 &
    local pid=$!
    local st2=0 st1=0
    timeout "$RUN_TIMEOUT" /usr/bin/time -f '%e %M' -o "$T/time2" "$EMP" 2 "$port" "$file" \
        > "$T/out2" 2>&1 || st2=$?
    wait "$pid" || st1=$?
    for p in 1 2; do
        local st=$st1
        [ "$p" = 2 ] && st=$st2
        python3 - "$circuit" "$rep" "$p" "$st" "$T/out$p" "$T/time$p" >> "$ROWS" <<'PY'
import json, sys
circuit, rep, party, status, out, tfile = sys.argv[1:]
row = {"system": "emp-ag2pc", "security": "malicious (ag2pc)", "circuit": circuit,
       "run": int(rep), "party": "A" if party == "1" else "B", "status": "ok"}
line = [l for l in open(out, errors="replace") if l.startswith("EMP_BENCH")]
if status != "0" or not line:
    row["status"] = f"failed (exit {status})"
else:
    kv = dict(f.split("=", 1) for f in line[-1].split()[1:])
    row.update(seconds=int(kv["total_us"]) / 1e6, bytes_sent=int(kv["bytes_sent"]),
               ands=int(kv["ands"]), out=kv["out"],
               phases={k[:-3]: int(kv[k]) / 1e6 for k in
                       ("load_us", "setup_us", "indep_us", "dep_us", "online_us")})
try:
    wall, rss = open(tfile).read().split()[-2:]
    row.update(wall=float(wall), rss_kib=int(rss))
except (OSError, ValueError):
    pass
print(json.dumps(row))
PY
    done
}

run_pgc() { # security circuit file rep
    local security=$1 circuit=$2 file=$3 rep=$4 port=$next_port p
    next_port=$((next_port + 1))
    local sec_args=()
    if [ "$PGC_HAS_SECURITY" = 1 ]; then
        sec_args=(--security "$security")
    elif [ "$security" != semi-honest ]; then
        printf '{"system": "pgc", "security": "%s", "circuit": "%s", "run": %d, "party": "A", %s}\n' \
            "$security" "$circuit" "$rep" '"status": "unsupported (no --security)"' >> "$ROWS"
        return
    fi
    # shellcheck disable=SC2086 # PGC_ARGS is a list of flags
    timeout "$RUN_TIMEOUT" /usr/bin/time -f '%e %M' -o "$T/timeA" "$PGC" run "$file" --party a \
        --listen "127.0.0.1:$port" --input 0 --json -q $PGC_ARGS "${sec_args[@]}" \
        > "$T/outA" 2> "$T/errA" &
    local pid=$!
    local stA=0 stB=0
    # shellcheck disable=SC2086
    timeout "$RUN_TIMEOUT" /usr/bin/time -f '%e %M' -o "$T/timeB" "$PGC" run "$file" --party b \
        --connect "127.0.0.1:$port" --input 0 --json -q $PGC_ARGS "${sec_args[@]}" \
        > "$T/outB" 2> "$T/errB" || stB=$?
    wait "$pid" || stA=$?
    for p in A B; do
        local st=$stA
        [ "$p" = B ] && st=$stB
        python3 - "$security" "$circuit" "$rep" "$p" "$st" "$T/out$p" "$T/time$p" "$T/err$p" \
            >> "$ROWS" <<'PY'
import json, sys
security, circuit, rep, party, status, out, tfile, err = sys.argv[1:]
row = {"system": "pgc", "security": security, "circuit": circuit, "run": int(rep),
       "party": party, "status": "ok"}
try:
    j = json.load(open(out))
    s = j["stats"]
    row.update(seconds=s["seconds"], bytes_sent=s["bytes_sent"], ands=s.get("and_gates"),
               out=j["outputs"][0] if j.get("outputs") else None)
except (OSError, ValueError, KeyError, TypeError, IndexError):
    msg = open(err, errors="replace").read().strip().splitlines()
    row["status"] = f"failed (exit {status}): " + (msg[-1][:120] if msg else "no output")
if status != "0" and row["status"] == "ok":
    row["status"] = f"failed (exit {status})"
try:
    wall, rss = open(tfile).read().split()[-2:]
    row.update(wall=float(wall), rss_kib=int(rss))
except (OSError, ValueError):
    pass
print(json.dumps(row))
PY
    done
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) logical CPUs; N=$N" >&2
for rep in $(seq 1 "$N"); do
    for c in $CIRCUITS; do
        old=${FILES[$c]%%|*}
        bf=${FILES[$c]##*|}
        echo "run $rep/$N: $c: emp-ag2pc" >&2
        run_emp "$c" "$old" "$rep"
        if [ -n "$PGC" ]; then
            for s in $SECURITY; do
                echo "run $rep/$N: $c: pgc --security $s" >&2
                run_pgc "$s" "$c" "$bf" "$rep"
            done
        fi
    done
done

python3 - "$ROWS" "$JSON_OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
json_out = sys.argv[2]

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

expected = {}  # circuit -> emp-ag2pc's output (all-zero inputs)
for r in rows:
    if r["system"] == "emp-ag2pc" and r.get("out"):
        expected.setdefault(r["circuit"], r["out"])

keys = []
for r in rows:
    k = (r["circuit"], r["system"], r["security"])
    if k not in keys:
        keys.append(k)

table = []
for circuit, system, security in keys:
    sel = [r for r in rows
           if (r["circuit"], r["system"], r["security"]) == (circuit, system, security)]
    ok = [r for r in sel if r["status"] == "ok"]
    t = {"circuit": circuit, "system": system, "security": security,
         "runs_ok": len({r["run"] for r in ok if r["party"] == "A"}),
         "runs": len({r["run"] for r in sel})}
    fails = sorted({r["status"] for r in sel if r["status"] != "ok"})
    if fails:
        t["failures"] = fails
    ands = med([r.get("ands") for r in ok])
    ands = t["ands"] = None if ands is None else int(ands)
    for p in "AB":
        pr = [r for r in ok if r["party"] == p]
        t[f"seconds_{p}"] = med([r.get("seconds") for r in pr])
        t[f"wall_{p}"] = med([r.get("wall") for r in pr])
        t[f"bytes_sent_{p}"] = med([r.get("bytes_sent") for r in pr])
        t[f"rss_mib_{p}"] = (lambda v: v / 1024 if v is not None else None)(
            med([r.get("rss_kib") for r in pr]))
        if system == "emp-ag2pc":
            t[f"phases_{p}"] = {k: med([r["phases"][k] for r in pr]) for k in
                                ("load", "setup", "indep", "dep", "online")} if pr else None
    if t["bytes_sent_A"] is not None and t["bytes_sent_B"] is not None:
        t["bytes_total"] = t["bytes_sent_A"] + t["bytes_sent_B"]
        t["bytes_per_and"] = t["bytes_total"] / ands if ands else None
    outs = {r.get("out") for r in ok}
    t["output_matches_emp"] = (None if not ok or circuit not in expected
                               else outs == {expected[circuit]})
    table.append(t)

def f(v, fmt):
    return "-" if v is None else format(v, fmt)

hdr = (f"{'circuit':<7} {'system':<9} {'security':<17} {'ANDs':>9} {'ok':>5} {'time A s':>9} "
       f"{'time B s':>9} {'wall A':>7} {'wall B':>7} {'sent A MB':>10} {'sent B MB':>10} "
       f"{'B/AND':>7} {'RSS A MiB':>9} {'RSS B MiB':>9} {'out':>4}")
print(hdr)
print("-" * len(hdr))
for t in table:
    ok = f"{t['runs_ok']}/{t['runs']}"
    mb = lambda v: None if v is None else v / 1e6
    print(f"{t['circuit']:<7} {t['system']:<9} {t['security']:<17} {f(t['ands'], ',d'):>9} {ok:>5} "
          f"{f(t['seconds_A'], '.3f'):>9} {f(t['seconds_B'], '.3f'):>9} {f(t['wall_A'], '.2f'):>7} "
          f"{f(t['wall_B'], '.2f'):>7} {f(mb(t['bytes_sent_A']), '.2f'):>10} "
          f"{f(mb(t['bytes_sent_B']), '.2f'):>10} {f(t.get('bytes_per_and'), '.0f'):>7} "
          f"{f(t['rss_mib_A'], '.0f'):>9} {f(t['rss_mib_B'], '.0f'):>9} "
          f"{ {True: 'yes', False: 'NO', None: '-'}[t['output_matches_emp']]:>4}")
for t in table:
    for msg in t.get("failures", []):
        print(f"  {t['circuit']} {t['system']} {t['security']}: {msg}")
print()
print("emp-ag2pc phases, median seconds per party (load = parsing the file, not in 'time'):")
for t in table:
    if t["system"] != "emp-ag2pc":
        continue
    for p in "AB":
        ph = t.get(f"phases_{p}")
        if ph:
            print(f"  {t['circuit']:<7} {p}: " + "  ".join(f"{k} {v:.4f}" for k, v in ph.items()))
if json_out:
    with open(json_out, "w") as fh:
        for t in table:
            fh.write(json.dumps(t) + "\n")
PY
