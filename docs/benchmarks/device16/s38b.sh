#!/bin/bash
# Where CGP's wall time goes on 16 cores (cgp_trace), with pooled workers that sleep at once
# (0, as main) or poll first for 5 or 200 ms; then Fig. 6 offline the same two ways. Built from
# the cgpwake branch's first commit, whose knob was PGC_POOL_SPIN_US (now PGC_WORKER_SPIN_MS, in ms).
set -u
S=target/scale2; O=/tmp/out38b; rm -rf $O; mkdir -p $O
export MIMALLOC_ALLOW_THP=0
for app in biomatch mexp mvmul; do
  for t in 2 4 8 16; do
    for spin in 0 5000 200000; do
      echo "spin $spin" >> $O/trace_$app.txt
      PGC_POOL_SPIN_US=$spin timeout 60 $S/cgp_trace examples/$app.c 15 $t 0 >> $O/trace_$app.txt 2>&1
    done
  done
  for spin in 0 200000; do
    echo "spin $spin gap 20" >> $O/trace_$app.txt
    PGC_POOL_SPIN_US=$spin timeout 60 $S/cgp_trace examples/$app.c 15 8 20 >> $O/trace_$app.txt 2>&1
  done
done
for spin in 0 5000 0 5000; do
  echo "== spin $spin" >> $O/apps_offline.txt
  PGC_POOL_SPIN_US=$spin timeout 120 $S/pgc bench apps --offline-only --repeat 5 2>&1 | sed -n '/Fig. 6/,/τ =/p' >> $O/apps_offline.txt
done
cat $O/*.txt
tar czf ${OUT:-/tmp}/s38b.tgz -C /tmp out38b
