#!/bin/bash
# 2026-11-26's closing device command: the GPU kernels' tests and figures with the final
# kernels, then issue 17's 16-core runs (s17.sh without the rows-as-calls run). Expects
# target/gpu/cuda-tests (`cargo test --release -p pgc-gpu --features cuda --no-run`, the
# tests/cuda.rs binary), target/gpu/biomatch.pgc, and target/scale/ from
# `FEATURES=gpu bash docs/benchmarks/device16/prepare17.sh`. The device returns at most eight
# files per command, so everything is written under /tmp and comes back as one tarball.
set -u
O=/tmp/out36; rm -rf $O; mkdir -p $O/gpu
{ PGC_REQUIRE_GPU=1 timeout 60 target/gpu/cuda-tests --test-threads 1 2>&1 | tail -9
  timeout 90 target/scale/pgc bench gpu --circuits random,builtin:aes128,target/gpu/biomatch.pgc --threads 1,16 --repeat 2 2>&1
} > $O/gpu/bench.txt
OUT=$O/s17 SKIP_ROWS=1 bash docs/benchmarks/device16/s17.sh > $O/s17.log 2>&1
tar czf ${OUT:-/tmp}/s36.tgz -C /tmp out36
