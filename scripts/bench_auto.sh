#!/bin/bash
# `--parallel auto` against every mode, wall time of the whole `pgc local` command (load,
# analysis and both parties), for issue 17's table in BENCHMARKS.md.
#
#   scripts/bench_auto.sh [REPS] [PROGRAMS...]
#
# Prints one line per run (program, mode, threads, seconds) and then the medians as a
# Markdown table. PGC (default target/release/pgc) is the binary; inputs are random, seeded.
# Each program is compiled (and cached) once before timing. Modes alternate within a rep.
set -u
REPS=${1:-3}; shift || true
PROGRAMS=("$@")
[ ${#PROGRAMS[@]} -eq 0 ] && PROGRAMS=(aes modexp16 modexp32 modexp33 modexp64 modexp128 edt63 edt255 mvmul mexp biomatch)
PGC=${PGC:-target/release/pgc}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
python3 - "$TMP" <<'PY'
import json, random, sys
d = sys.argv[1]; r = random.Random(17)
json.dump({"INPUT_A_db": [[r.randrange(-1000, 1000) for _ in range(4)] for _ in range(512)],
           "INPUT_B_sample": [r.randrange(-1000, 1000) for _ in range(4)]}, open(f"{d}/biomatch.json", "w"))
json.dump({"INPUT_A_base": [r.randrange(1, 65521) for _ in range(32)],
           "INPUT_B_exponent": [r.randrange(0, 2**32) for _ in range(32)]}, open(f"{d}/mexp.json", "w"))
json.dump({"INPUT_A_matrix": [[r.randrange(-1000, 1000) for _ in range(16)] for _ in range(16)],
           "INPUT_B_vector": [r.randrange(-1000, 1000) for _ in range(16)]}, open(f"{d}/mvmul.json", "w"))
for n in (63, 255, 1023):
    json.dump({"INPUT_A_text": [r.randrange(0, 4) for _ in range(n)],
               "INPUT_B_text": [r.randrange(0, 4) for _ in range(n)]}, open(f"{d}/edt{n}.json", "w"))
for bits in (16, 32, 33, 64, 128):
    l = (bits + 31) // 32
    json.dump({"INPUT_A_base": [r.randrange(0, 2**32) for _ in range(l)],
               "INPUT_A_modulus": [r.randrange(1, 2**32) | 1 for _ in range(l)],
               "INPUT_B_exponent": [r.randrange(0, 2**32) for _ in range(l)]}, open(f"{d}/modexp{bits}.json", "w"))
PY
args_of() {
  case $1 in
    aes) echo "builtin:aes128 --a 0x0 --b 0x0" ;;
    modexp*) echo "examples/modexp.c -D RSA_BITS=${1#modexp} --inputs $TMP/$1.json" ;;
    edt*) echo "examples/edit_distance_large.c -D EDIT_LEN=${1#edt} --inputs $TMP/$1.json" ;;
    *) echo "examples/$1.c --inputs $TMP/$1.json" ;;
  esac
}
# CONFIGS="none 1,auto 1" picks the mode/thread pairs to run (default: all of them; "none 2"
# runs exactly what "none 1" runs, since none uses one thread: a control for the noise).
IFS=, read -r -a CONFIGS <<< "${CONFIGS:-none 1,none 2,auto 1,auto 2,fgp 2,cgp 1,cgp 2,ipp 1,ipp 2}"
OUT=$TMP/runs.txt
for prog in "${PROGRAMS[@]}"; do
  # shellcheck disable=SC2046
  $PGC local $(args_of $prog) --parallel none --insecure-plaintext -q >/dev/null 2>&1
  for rep in $(seq "$REPS"); do
    for cfg in "${CONFIGS[@]}"; do
      set -- $cfg
      s=$(date +%s.%N)
      # shellcheck disable=SC2046
      if $PGC local $(args_of $prog) --parallel $1 --threads $2 --insecure-plaintext -q >/dev/null 2>"$TMP/err"; then
        t=$(echo "$(date +%s.%N) - $s" | bc)
      else
        t=refused
      fi
      echo "$prog $1 $2 $t" | tee -a "$OUT"
    done
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics
runs = {}
order = []
for line in open(sys.argv[1]):
    prog, mode, th, t = line.split()
    key = (prog, f"{mode} t{th}")
    if prog not in order: order.append(prog)
    runs.setdefault(key, []).append(t)
cols = []
for line in open(sys.argv[1]):
    prog, mode, th, t = line.split()
    if f"{mode} t{th}" not in cols: cols.append(f"{mode} t{th}")
print("| program | " + " | ".join(cols) + " | auto/none (t1, t2) |")
print("|---" * (len(cols) + 2) + "|")
def med(v):
    if any(x == "refused" for x in v): return None
    return statistics.median(float(x) for x in v)
for p in order:
    m = {c: med(runs.get((p, c), ["refused"])) for c in cols}
    cells = [f"{m[c]:.2f}" if m[c] is not None else "refused" for c in cols]
    n = m["none t1"]
    ratio = " / ".join(f"{m[c] / n:.2f}" if m.get(c) is not None and n else "–" for c in ("auto t1", "auto t2"))
    print(f"| {p} | " + " | ".join(cells) + f" | {ratio} |")
PY
