#!/bin/bash
# `--parallel auto` against every mode: wall time and CPU seconds (user + system, both
# parties: `pgc local` runs them in one process) of the whole `pgc local` command (load,
# analysis and both parties), for issue 17's table in BENCHMARKS.md.
#
#   scripts/bench_auto.sh [REPS] [PROGRAMS...]
#
# Prints one line per run (program, mode, threads, wall seconds, CPU seconds) and then the
# medians as two Markdown tables (wall, CPU). PGC (default target/release/pgc) is the
# binary; inputs are random, seeded. Each program is compiled (and cached) once before
# timing. Modes alternate within a rep. CPU seconds are what to compare on a shared core:
# other jobs stretch the wall time, not the process's own CPU time.
#
# Programs: aes (built in), sha256 (Bristol Fashion, from $BRISTOL_DIR, default
# /work/shared/circuits/bristol_fashion; skipped if absent), random (a random Bristol
# circuit of 2 M gates, seeded, written here), modexpB (examples/modexp.c, RSA_BITS=B), edtN
# (examples/edit_distance_large.c, EDIT_LEN=N), mvmul, mexp, biomatch.
set -u
REPS=${1:-3}; shift || true
PROGRAMS=("$@")
[ ${#PROGRAMS[@]} -eq 0 ] && PROGRAMS=(aes sha256 random modexp16 modexp32 modexp33 modexp64 modexp128 edt63 edt127 edt191 edt255 mvmul mexp biomatch)
BRISTOL_DIR=${BRISTOL_DIR:-/work/shared/circuits/bristol_fashion}
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
for n in (63, 127, 191, 255, 1023):
    json.dump({"INPUT_A_text": [r.randrange(0, 4) for _ in range(n)],
               "INPUT_B_text": [r.randrange(0, 4) for _ in range(n)]}, open(f"{d}/edt{n}.json", "w"))
for bits in (16, 32, 33, 64, 128):
    l = (bits + 31) // 32
    json.dump({"INPUT_A_base": [r.randrange(0, 2**32) for _ in range(l)],
               "INPUT_A_modulus": [r.randrange(1, 2**32) | 1 for _ in range(l)],
               "INPUT_B_exponent": [r.randrange(0, 2**32) for _ in range(l)]}, open(f"{d}/modexp{bits}.json", "w"))
# A random circuit in Bristol Fashion: 2 inputs of 128 bits, 2 M gates (a quarter AND, a
# tenth INV, the rest XOR), each reading wires written recently (as compiled code does), the
# last 64 wires the output.
n_in, n_gates, n_out = 256, 2_000_000, 64
lines = []
for k in range(n_gates):
    out = n_in + k
    lo = max(0, out - 4096)
    a, b = r.randrange(lo, out), r.randrange(lo, out)
    x = r.random()
    if x < 0.25: lines.append(f"2 1 {a} {b} {out} AND")
    elif x < 0.35: lines.append(f"1 1 {a} {out} INV")
    else: lines.append(f"2 1 {a} {b} {out} XOR")
with open(f"{d}/random.txt", "w") as f:
    f.write(f"{n_gates} {n_in + n_gates}\n2 128 128\n1 {n_out}\n\n" + "\n".join(lines) + "\n")
PY
args_of() {
  case $1 in
    aes) echo "builtin:aes128 --a 0x0 --b 0x0" ;;
    sha256) echo "$BRISTOL_DIR/sha256.txt --a 0x0 --b 0x0" ;;
    random) echo "$TMP/random.txt --a 0x0 --b 0x0" ;;
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
  if [ "$prog" = sha256 ] && [ ! -f "$BRISTOL_DIR/sha256.txt" ]; then
    echo "skipping sha256: no $BRISTOL_DIR/sha256.txt" >&2; continue
  fi
  # shellcheck disable=SC2046
  $PGC local $(args_of $prog) --parallel none --insecure-plaintext -q >/dev/null 2>&1
  for rep in $(seq "$REPS"); do
    for cfg in "${CONFIGS[@]}"; do
      set -- $cfg
      # shellcheck disable=SC2046
      if /usr/bin/time -f "%e %U %S" -o "$TMP/time" $PGC local $(args_of $prog) --parallel $1 --threads $2 --insecure-plaintext -q >/dev/null 2>"$TMP/err"; then
        t=$(awk '{printf "%.3f %.3f", $1, $2 + $3}' "$TMP/time")
      else
        t="refused refused"
        echo "  ($prog $1 $2: $(head -c 300 "$TMP/err"))" >&2
      fi
      echo "$prog $1 $2 $t" | tee -a "$OUT"
    done
  done
done
python3 - "$OUT" <<'PY'
import sys, statistics
runs, order, cols = {}, [], []
for line in open(sys.argv[1]):
    prog, mode, th, wall, cpu = line.split()
    col = f"{mode} t{th}"
    if prog not in order: order.append(prog)
    if col not in cols: cols.append(col)
    runs.setdefault((prog, col), []).append((wall, cpu))
def med(v, i):
    if any(x[i] == "refused" for x in v): return None
    return statistics.median(float(x[i]) for x in v)
for i, what in ((0, "wall seconds"), (1, "CPU seconds (user + system, both parties)")):
    print(f"\n{what}, medians of {max(len(v) for v in runs.values())}\n")
    print("| program | " + " | ".join(cols) + " | auto/none (t1, t2) |")
    print("|---" * (len(cols) + 2) + "|")
    for p in order:
        m = {c: med(runs.get((p, c), [("refused", "refused")]), i) for c in cols}
        cells = [f"{m[c]:.2f}" if m[c] is not None else "refused" for c in cols]
        n = m.get("none t1")
        ratio = " / ".join(f"{m[c] / n:.2f}" if m.get(c) is not None and n else "–" for c in ("auto t1", "auto t2"))
        print(f"| {p} | " + " | ".join(cells) + f" | {ratio} |")
PY
