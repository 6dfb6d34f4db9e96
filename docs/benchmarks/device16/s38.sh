#!/bin/bash
# Issue 17 items 3-4 on the device machine, 2026-11-26 (second lending): what one core does
# when 1-16 of them are busy (T independent one-thread garblings at once: the ceiling any
# parallel run is measured against), then s17.sh (bench width/apps, the garbler alone, the
# compact EDT offline and end to end). Needs target/scale from prepare17.sh. Everything goes
# under /tmp and comes back as one tarball (the device returns at most eight files).
set -u
O=/tmp/out38; rm -rf $O; mkdir -p $O/ceiling
S=target/scale
{ lscpu; nproc; command -v perf; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor; } > $O/machine_short.txt 2>&1
# T copies of the one-thread garbling at once, each its own process (no shared memory, no
# barrier): each copy's time against one copy alone is the machine's own limit.
for app in mexp mvmul; do
  for t in 1 2 4 8 16; do
    for k in $(seq 1 $t); do
      MIMALLOC_ALLOW_THP=0 timeout 60 $S/cgp_one_thread examples/$app.c 30 1 > $O/ceiling/${app}_${t}_$k.txt 2>&1 &
    done
    wait
  done
done
OUT=$O/s17 SKIP_ROWS=1 bash docs/benchmarks/device16/s17.sh > $O/s17.log 2>&1
tar czf ${OUT:-/tmp}/s38.tgz -C /tmp out38
