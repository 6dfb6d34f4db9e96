#!/bin/bash
# Issue 17 item 4, for the next lending of a 16-core device machine (not run yet: no machine
# was lent in the session that wrote it). Region instances claimed as the threads go
# (Plan::claimed, what pgc runs since protocol version 10) against the fixed split
# (Plan::new), side by side in one process: cgp_one_thread alternates `cgp T` (claimed) and
# `cgp T fixed` run by run; cgp_trace shows each way's busy mean/slowest; then s17.sh
# (bench width/apps — Fig. 6 now claimed — and the compact EDT). Needs target/scale from
# prepare17.sh. Everything comes back as one tarball (at most eight files return). Two calls
# of at most 10 minutes: PART=1 (claimed against fixed, traces), PART=2 (s17.sh).
set -u
O=/tmp/out39; rm -rf $O; mkdir -p $O
S=target/scale
export MIMALLOC_ALLOW_THP=0
{ lscpu; nproc; } > $O/machine_short.txt 2>&1
if [ "${PART:-1}" = 1 ]; then
for round in 1 2 3; do
  for app in biomatch mexp mvmul; do
    for t in 2 4 8 16; do
      echo "== round $round $app $t" >> $O/claimed_vs_fixed.txt
      timeout 60 $S/cgp_one_thread examples/$app.c 10 $t 2>&1 | grep -E '^(none 1|cgp T)' >> $O/claimed_vs_fixed.txt
    done
  done
done
for app in biomatch mexp mvmul; do
  for t in 2 4 8 16; do
    timeout 60 $S/cgp_trace examples/$app.c 15 $t 0 >> $O/trace.txt 2>&1
    timeout 60 $S/cgp_trace examples/$app.c 15 $t 0 fixed >> $O/trace.txt 2>&1
  done
done
else
OUT=$O/s17 SKIP_ROWS=1 bash docs/benchmarks/device16/s17.sh > $O/s17.log 2>&1
fi
tar czf ${OUT:-/tmp}/s39-part${PART:-1}.tgz -C /tmp out39
