#!/usr/bin/env bash
# Compile-time and working-set figures for BENCHMARKS.md ("Billion-gate programs"):
# every large example at the seed paper's sizes, unrolled (--compact never) where that fits
# in memory and compact (--compact always), each compile under /usr/bin/time for its peak RSS.
# Prints one JSON object per line. Usage: scripts/large_programs.sh [PGC] > figures.jsonl
set -euo pipefail
PGC=${1:-target/release/pgc}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
row() { # name mode source defines...
    local name=$1 mode=$2 src=$3
    shift 3
    local defs=()
    for d in "$@"; do defs+=(-D "$d"); done
    local file="$OUT/$name-$mode.pgc"
    /usr/bin/time -f "%M" -o "$OUT/rss" "$PGC" compile "$src" "${defs[@]}" \
        --compact "$mode" --json -o "$file" > "$OUT/compile.json"
    "$PGC" info "$file" --json > "$OUT/info.json"
    python3 - "$name" "$mode" "$OUT" <<'PY'
import json, sys
name, mode, out = sys.argv[1], sys.argv[2], sys.argv[3]
rss = int(open(out + "/rss").read().split()[-1])
c = json.load(open(out + "/compile.json"))
i = json.load(open(out + "/info.json"))
print(json.dumps({
    "circuit": name, "mode": mode, "gates": c["gates"], "and_gates": c["and_gates"],
    "compile_seconds": round(c["compile_seconds"], 3),
    "gates_per_second": round(c["gates"] / c["compile_seconds"]),
    "compile_peak_rss_kib": rss,
    "peak_live_wires_file_order": i.get("peak_live_wires"),
    "slots_when_run": i.get("slots_when_run"),
    "label_bytes_when_run": i.get("label_bytes_when_run"),
}))
PY
    rm -f "$file"
}
ex=examples
for bits in 16 32 64; do row "rsa-$bits" never $ex/modexp.c RSA_BITS=$bits; done
for bits in 16 32 64 128; do row "rsa-$bits" always $ex/modexp.c RSA_BITS=$bits; done
for n in 31 63 127 255; do row "edt-$n" never $ex/edit_distance_large.c EDIT_LEN=$n; done
for n in 31 63 127 255 1023; do row "edt-$n" always $ex/edit_distance_large.c EDIT_LEN=$n; done
for n in 4 1024; do
    row "lwe-$n" never $ex/lwe_dot.c LWE_N=$n
    row "lwe-$n" always $ex/lwe_dot.c LWE_N=$n
done
