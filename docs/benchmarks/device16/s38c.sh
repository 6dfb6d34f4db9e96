#!/bin/bash
# Workers that poll 20 ms before sleeping (the new default) against sleeping at once
# (PGC_WORKER_SPIN_MS=0, as before): cgp_trace, then `pgc bench apps` both ways.
set -u
S=target/scale3; O=/tmp/out38c; rm -rf $O; mkdir -p $O
export MIMALLOC_ALLOW_THP=0
for app in biomatch mexp mvmul; do
  for t in 2 4 8 16; do
    timeout 60 $S/cgp_trace examples/$app.c 15 $t 0 >> $O/trace.txt 2>&1
  done
  timeout 60 $S/cgp_trace examples/$app.c 15 8 20 >> $O/trace.txt 2>&1
done
for spin in 0 20; do
  echo "== PGC_WORKER_SPIN_MS=$spin" >> $O/apps.txt
  PGC_WORKER_SPIN_MS=$spin timeout 240 $S/pgc bench apps --repeat 3 > $O/apps_$spin.txt 2>&1
  sed -n '/Fig. 6/,/τ =/p;/Fig. 8:/,/^$/p;/Fig. 8 by/,/input phase:/p' $O/apps_$spin.txt >> $O/apps.txt
done
cat $O/trace.txt $O/apps.txt
tar czf ${OUT:-/tmp}/s38c.tgz -C /tmp out38c
