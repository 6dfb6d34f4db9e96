#!/usr/bin/env bash
# Semi-honest vs malicious vs dual execution, side by side in one run: `pgc local` (both
# parties in one process over loopback TCP, plaintext so the figures are the protocol's) on
# AES-128 and the seed benchmarks, each level in turn for every program.
#
#   cargo build --release -p pgc-cli
#   scripts/bench_security_levels.sh [PROGRAMS...]      # default: aes mvmul mexp biomatch edt255
#
# Environment: PGC (default target/release/pgc), LEVELS (default "semi-honest malicious
# dual-execution"), STAT_SEC (default 40), THREADS (default: half of the cores per party, as
# both run here), SHARED (default ../shared). Inputs are random, seeded (written to a temporary
# directory).
set -euo pipefail
cd "$(dirname "$0")/.."
PGC=${PGC:-target/release/pgc}
LEVELS=${LEVELS:-"semi-honest malicious dual-execution"}
STAT_SEC=${STAT_SEC:-40}
SHARED=${SHARED:-../shared}
THREADS=${THREADS:-$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))}
PROGRAMS=("$@")
[ ${#PROGRAMS[@]} -eq 0 ] && PROGRAMS=(aes mvmul mexp biomatch edt255)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 - "$TMP" <<'PY'
import json, random, sys
d = sys.argv[1]; r = random.Random(11)
json.dump({"INPUT_A_db": [[r.randrange(-1000, 1000) for _ in range(4)] for _ in range(512)],
           "INPUT_B_sample": [r.randrange(-1000, 1000) for _ in range(4)]}, open(f"{d}/biomatch.json", "w"))
json.dump({"INPUT_A_base": [r.randrange(1, 65521) for _ in range(32)],
           "INPUT_B_exponent": [r.randrange(0, 2**32) for _ in range(32)]}, open(f"{d}/mexp.json", "w"))
json.dump({"INPUT_A_matrix": [[r.randrange(-1000, 1000) for _ in range(16)] for _ in range(16)],
           "INPUT_B_vector": [r.randrange(-1000, 1000) for _ in range(16)]}, open(f"{d}/mvmul.json", "w"))
json.dump({"INPUT_A_text": [r.randrange(0, 4) for _ in range(255)],
           "INPUT_B_text": [r.randrange(0, 4) for _ in range(255)]}, open(f"{d}/edt255.json", "w"))
PY
lscpu | grep "Model name" || true
printf '%-9s %-15s %9s %9s %12s %12s %9s  %s\n' program level "time A" "time B" "A→B bytes" "B→A bytes" "RSS" output
for prog in "${PROGRAMS[@]}"; do
  case $prog in
    aes) args=("$SHARED/circuits/bristol_fashion/aes_128.txt" --a 0x000102030405060708090a0b0c0d0e0f --b 0x00112233445566778899aabbccddeeff) ;;
    edt255) args=(examples/edit_distance_large.c -D EDIT_LEN=255 --inputs "$TMP/edt255.json") ;;
    *) args=("examples/$prog.c" --inputs "$TMP/$prog.json") ;;
  esac
  # Compile (and cache) once outside the timed runs.
  "$PGC" info "${args[0]}" ${args[1]:+"${args[@]:1:2}"} >/dev/null 2>&1 || true
  for level in $LEVELS; do
    extra=(--security "$level")
    [ "$level" = malicious ] && extra+=(--stat-sec "$STAT_SEC")
    out=$( { /usr/bin/time -f "RSS %M" "$PGC" local "${args[@]}" "${extra[@]}" --threads "$THREADS" \
              --insecure-plaintext --json -q; } 2>&1 ) || { echo "$prog $level FAILED: $(echo "$out" | tail -1)"; continue; }
    python3 - "$prog" "$level" "$out" <<'PY'
import json, re, sys
prog, level, out = sys.argv[1:4]
j = next(json.loads(l) for l in out.splitlines() if l.startswith("{"))
rss = int(re.search(r"RSS (\d+)", out).group(1)) * 1024
a, b = j["stats"]["a"], j["stats"]["b"]
outs = j.get("outputs")
print(f"{prog:<9} {level:<15} {a['seconds']:8.3f}s {b['seconds']:8.3f}s {a['bytes_sent']:12,} {b['bytes_sent']:12,} {rss/2**20:7.0f}Mi  {str(outs)[:40]}")
PY
  done
done
