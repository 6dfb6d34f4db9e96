#!/bin/bash
# 2026-11-26, second lending, closing run: the cgpwake branch (pooled workers poll before they
# sleep, label array zeroed by the run's threads, per-thread table buffers reserved by their
# thread, plan check on a bitset) through s17.sh, then cgp_trace and a second `bench apps`.
# Binaries in target/scale4 (built from the branch as prepare17.sh builds them, plus cgp_trace).
set -u
O=/tmp/out38d; rm -rf $O; mkdir -p $O
rm -rf target/scale; cp -r target/scale4 target/scale
OUT=$O/s17 SKIP_ROWS=1 bash docs/benchmarks/device16/s17.sh > $O/s17.log 2>&1
export MIMALLOC_ALLOW_THP=0
for app in biomatch mexp mvmul; do
  for t in 2 4 8 16; do timeout 60 target/scale/cgp_trace examples/$app.c 15 $t 0 >> $O/trace.txt 2>&1; done
done
timeout 200 target/scale/pgc bench apps --repeat 3 > $O/apps2.txt 2>&1
sed -n '/Fig. 6/,/τ =/p;/Fig. 8:/,/^$/p' $O/s17/apps.txt $O/apps2.txt; cat $O/trace.txt; grep -h seconds $O/s17/edt_b_*.json | cut -c1-60
for f in $O/s17/cgp_cpu_*.txt; do echo "$f: $(grep -E 'none 1|cgp T' $f | head -2 | tr '\n' ' ')"; done
cat $O/s17/edt_offline.txt | tail -12
tar czf ${OUT:-/tmp}/s38d.tgz -C /tmp out38d
