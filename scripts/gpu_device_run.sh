#!/usr/bin/env bash
# The GPU checks and figures of issue 14, as run on the accelerator machine (H100, 16 cores):
# the kernels' tests, both devices against each other through the protocol (one process and
# two), then `pgc bench gpu` and end-to-end runs. Expects release binaries built here with
# `--features gpu`: target/gpu/pgc and target/gpu/cuda-tests (see BENCHMARKS.md, "GPU").
# Writes logs under $OUT (or /tmp/pgc-gpu-run).
set -u
PGC=${PGC:-target/gpu/pgc}
OUT=${OUT:-/tmp/pgc-gpu-run}
ANDS=${ANDS:-33554432}
mkdir -p "$OUT"
W="$OUT/work"; mkdir -p "$W"
step() { echo; echo "=== $*"; }
hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

step machine
nvidia-smi -L; lscpu | grep 'Model name'; nproc

step kernel tests against the CPU reference and the CPU engine
PGC_REQUIRE_GPU=1 target/gpu/cuda-tests --test-threads 1 2>&1 | tail -15

step protocol: GPU and CPU parties, in one process and as two processes
A=0x$(hex 512); B=0x$(hex 512)
for dev in cpu gpu auto; do
  echo "local --device $dev: $($PGC local builtin:random:4096x64 --a $A --b $B --device $dev --parallel none --json --quiet 2>&1 | head -c 80)"
done
for pair in "gpu cpu" "cpu gpu" "gpu gpu"; do
  set -- $pair
  port=$((7400 + RANDOM % 500))
  $PGC run builtin:random:4096x64 --party a --listen 127.0.0.1:$port --input "$A" --device $1 --parallel none --insecure-plaintext --json --quiet > "$W/a.json" 2>&1 &
  sleep 0.3
  $PGC run builtin:random:4096x64 --party b --connect 127.0.0.1:$port --input "$B" --device $2 --parallel none --insecure-plaintext --json --quiet > "$W/b.json" 2>&1
  wait
  echo "run A on $1, B on $2: A $(head -c 80 "$W/a.json") | B $(head -c 80 "$W/b.json")"
done
echo "cleartext: $($PGC eval builtin:random:4096x64 --input $A --input $B 2>&1 | head -c 80)"

step circuits
$PGC compile examples/biomatch.c -o "$W/biomatch.pgc" 2>&1 | tail -2
$PGC compile examples/edit_distance_large.c -D EDIT_LEN=255 --compact always -o "$W/edt255.pgc" 2>&1 | tail -2

step "pgc bench gpu (in memory; CPU on 1 and 16 threads)"
timeout 420 $PGC bench gpu --circuits random,builtin:aes128,"$W/biomatch.pgc","$W/edt255.pgc" \
  --ands "$ANDS" --threads 1,16 --repeat 2 2>&1 | tee "$OUT/bench_gpu.txt"

step "end to end, both parties here (pgc local, TLS): random layered 65536x512"
A=0x$(hex 8192); B=0x$(hex 8192)
for how in "--device cpu --parallel none" "--device gpu --parallel none" "--device cpu --parallel fgp --threads 8"; do
  for rep in 1 2 3; do
    echo "$how #$rep: $($PGC local builtin:random:65536x512 --a $A --b $B $how --json --quiet 2>&1 | grep -o '"seconds":[0-9.]*' | tr '\n' ' ')"
  done
done
