#!/bin/bash
# 2026-11-26's closing device command: the GPU kernels' tests and figures with the final
# kernels, then issue 17's 16-core runs (s17.sh without the rows-as-calls run). Expects
# target/gpu/cuda-tests and target/gpu/biomatch.pgc, and target/scale/ from prepare17.sh
# built with `--features gpu` (so target/scale/pgc runs `bench gpu`). Writes into $OUT.
set -u
O=${OUT:-/tmp/out36}; mkdir -p $O/gpu
{ PGC_REQUIRE_GPU=1 timeout 60 target/gpu/cuda-tests --test-threads 1 2>&1 | tail -9
  timeout 90 target/scale/pgc bench gpu --circuits random,builtin:aes128,target/gpu/biomatch.pgc --threads 1,16 --repeat 2 2>&1
} > $O/gpu/bench.txt
OUT=$O/s17 SKIP_ROWS=1 bash docs/benchmarks/device16/s17.sh > $O/s17.log 2>&1
