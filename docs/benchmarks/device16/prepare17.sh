#!/bin/bash
# Builds here what s17.sh runs on the device machine (which has no Rust toolchain), into
# target/scale (ignored by git; carry it with the run tool's `carry`, under 64 MiB):
#   bash docs/benchmarks/device16/prepare17.sh && ls -la target/scale     (FEATURES=gpu: a pgc that also runs `bench gpu`)
set -eu
S=target/scale; mkdir -p $S
cargo build --release -p pgc-cli ${FEATURES:+--features $FEATURES} --bin pgc --example compact_threads --example cgp_one_thread --example cgp_trace --example input_phase --example stream_open
cp target/release/pgc target/release/examples/{compact_threads,cgp_one_thread,cgp_trace,input_phase,stream_open} $S/
strip $S/pgc $S/compact_threads $S/cgp_one_thread $S/cgp_trace $S/input_phase $S/stream_open
P=$S/pgc
# EDT-1023 with rows as calls (0.8 MB gzipped; the compact EDT-1023 of 1 M calls, 55 MB
# gzipped, is compiled on the device by s17.sh instead).
rm -f $S/edt1023c.pgc.gz
$P compile crates/cli/tests/programs/edit_distance_rows.c -D EDIT_LEN=1023 --compact always -o /tmp/edt1023rows.pgc --quiet
gzip -c /tmp/edt1023rows.pgc > $S/edt1023rows.pgc.gz
# The two strings (fixed, printable), one file per party.
python3 - "$S" <<'PY'
import json, sys
s = sys.argv[1]
json.dump({"INPUT_A_text": [97 + (i * 7) % 26 for i in range(1023)]}, open(f"{s}/edt1023_a.json", "w"))
json.dump({"INPUT_B_text": [97 + (i * 11 + 3) % 26 for i in range(1023)]}, open(f"{s}/edt1023_b.json", "w"))
PY
# SMALL=1 rehearsal inputs (s17.sh uses /tmp/edt_small.pgc and /tmp/edt63_{a,b}.json).
du -sh $S; ls -la $S
