#!/usr/bin/env bash
# The proximity examples (examples/README.md, "Floating point"): AND gates, AND depth and
# semi-honest time of party A (median of 5 `pgc local` runs, plaintext loopback) for binary32
# and binary64 in both --optimize modes, on the README's inputs.
#
#   cargo build --release -p pgc-cli && scripts/bench_proximity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
lscpu | grep "Model name" || true
PGC=${PGC:-target/release/pgc}
A_ECEF=$(grep -o 'pgc local examples/proximity_ecef.c [^`]*' examples/README.md | cut -d' ' -f4-)
A_HS=$(grep -o 'pgc local examples/proximity_haversine.c [^`]*' examples/README.md | cut -d' ' -f4-)
A_UTM=$(grep -o 'pgc local examples/proximity_utm.c [^`]*' examples/README.md | cut -d' ' -f4-)
for f in utm ecef haversine; do
  case $f in utm) args=$A_UTM;; ecef) args=$A_ECEF;; haversine) args=$A_HS;; esac
  for real in float double; do
    for opt in size depth; do
      info=$($PGC info examples/proximity_$f.c -D REAL=$real --optimize $opt)
      ands=$(echo "$info" | grep -o 'AND [0-9,]*' | head -1 | cut -d' ' -f2 | sed 's/,$//')
      depth=$(echo "$info" | grep -o 'AND depth *[0-9]*' | grep -o '[0-9]*$')
      times=$(for i in 1 2 3 4 5; do $PGC local examples/proximity_$f.c -D REAL=$real --optimize $opt $args --insecure-plaintext --json | python3 -c "import json,sys; print(json.load(sys.stdin)['stats']['a']['seconds'])"; done | sort -n | sed -n 3p)
      printf '%-10s %-7s %-6s %8s %6s %8.1f ms\n' $f $real $opt $ands $depth $(python3 -c "print($times*1000)")
    done
  done
done
