#!/bin/bash
# Issue 17 item 4 on the device machine. Run from the repository root; writes into $OUT.
# The device returns at most eight files per command: give OUT a folder under /tmp and tar it
# into the run's $OUT (as s36.sh does). SMALL=1: a quick local rehearsal with tiny sizes. SKIP_ROWS=1: leave out EDT rows as calls.
set -u
S=target/scale; P=$S/pgc; O=${OUT:-/tmp/out17}; mkdir -p $O
export XDG_CACHE_HOME=/tmp/scale-xdg; rm -rf $XDG_CACHE_HOME; mkdir -p $XDG_CACHE_HOME
T0=$(date +%s%N)
stamp() { echo "== $(date +%T) +$(( ($(date +%s%N) - T0) / 1000000 )) ms: $*" | tee -a $O/log.txt; }
{ lscpu; echo; nproc; free -g; uname -a; cat /etc/os-release | head -2; ldd $P; mpirun --version; nvidia-smi; ls /usr/local/cuda*/lib64 2>&1 | head -50; } > $O/machine.txt 2>&1
stamp machine; grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|MHz|NUMA node\(s\)|L3" $O/machine.txt | tee -a $O/log.txt
if [ "${SMALL:-0}" = 1 ]; then WARGS="--threads 1,2 --depth 100 --repeat 1"; AARGS="--small --threads 1,2"; EDT=/tmp/edt_small.pgc; TH="1 2"; EIN=/tmp/edt63
else WARGS="--repeat 3"; AARGS="--repeat 3"; EDT=/tmp/edt1023c.pgc; TH="1 2 4 8 16"; EIN=$S/edt1023; fi
stamp "bench width"
timeout 120 $P bench width $WARGS --out $O/width > $O/width.txt 2>$O/width.err; echo "rc $?" >> $O/width.txt
cat $XDG_CACHE_HOME/pgc/fgp-tau > $O/tau.txt 2>&1
stamp "bench apps"
timeout 200 $P bench apps $AARGS --out $O/apps > $O/apps.txt 2>$O/apps.err; echo "rc $?" >> $O/apps.txt
# What limits CGP (BENCHMARKS.md, "What limits CGP"): CPU seconds of none/cgp per thread
# count, garbler alone, and the input phase's parts with the base OTs on t threads. Built
# with `cargo build --release -p pgc-cli --example cgp_one_thread --example input_phase`,
# copied into $S.
for t in $TH; do
  [ -x $S/cgp_one_thread ] && MIMALLOC_ALLOW_THP=0 timeout 60 $S/cgp_one_thread examples/biomatch.c 10 $t > $O/cgp_cpu_$t.txt 2>&1
  [ -x $S/input_phase ] && timeout 60 $S/input_phase examples/biomatch.c 5 $t > $O/input_phase_$t.txt 2>&1
  # The other two apps, and opening t TLS streams (BENCHMARKS.md, "Where CGP's extra CPU
  # went"; stream_open built as the others).
  for app in mexp mvmul; do
    [ -x $S/cgp_one_thread ] && MIMALLOC_ALLOW_THP=0 timeout 60 $S/cgp_one_thread examples/$app.c 10 $t > $O/cgp_cpu_${app}_$t.txt 2>&1
  done
  [ -x $S/stream_open ] && timeout 60 $S/stream_open $t 10 tls > $O/stream_open_$t.txt 2>&1
done
stamp "edt offline"
# EDT-1023 compact is 95 MB (55 MB gzipped), too much to carry with the binaries: compiled
# here from the working tree, unless a copy was carried.
if [ "${SMALL:-0}" != 1 ]; then
  if [ -f $S/edt1023c.pgc.gz ]; then gunzip -c $S/edt1023c.pgc.gz > $EDT
  else stamp "compile edt1023c"; $P compile examples/edit_distance_large.c -D EDIT_LEN=1023 --compact always -o $EDT --quiet > $O/edt_compile.txt 2>&1; fi
fi
timeout 120 $S/compact_threads $EDT $TH > $O/edt_offline.txt 2>&1; echo "rc $?" >> $O/edt_offline.txt
# The compact passes fed piece by piece (push/finish) instead of pipelined (garble_main), to
# compare (BENCHMARKS.md, "Compact circuits on every core: where the threads' CPU went").
PGC_PUSH=1 PGC_COMPACT_ONLY=1 timeout 90 $S/compact_threads $EDT $TH > $O/edt_offline_push.txt 2>&1; echo "rc $?" >> $O/edt_offline_push.txt
# Rows as calls (crates/cli/tests/programs/edit_distance_rows.c): the executor opens each row
# call so its cells form the wavefront again (garble/src/compact.rs). Made here with
#   pgc compile --compact always crates/cli/tests/programs/edit_distance_rows.c -D EDIT_LEN=1023 -o r.pgc && gzip -c r.pgc > $S/edt1023rows.pgc.gz
if [ "${SMALL:-0}" != 1 ] && [ "${SKIP_ROWS:-0}" != 1 ] && [ -f $S/edt1023rows.pgc.gz ]; then
  stamp "edt rows offline"
  gunzip -c $S/edt1023rows.pgc.gz > /tmp/edt1023rows.pgc
  timeout 120 $S/compact_threads /tmp/edt1023rows.pgc $TH > $O/edt_rows_offline.txt 2>&1; echo "rc $?" >> $O/edt_rows_offline.txt
fi
stamp "edt end to end"
port=17400
for t in $TH; do
  port=$((port+1))
  stamp "edt e2e threads $t"
  timeout 60 $P run $EDT --party a --listen 127.0.0.1:$port --inputs ${EIN}_a.json --threads $t --insecure-plaintext --json --quiet > $O/edt_a_$t.json 2>$O/edt_a_$t.err &
  pa=$!
  timeout 60 $P run $EDT --party b --connect 127.0.0.1:$port --inputs ${EIN}_b.json --threads $t --insecure-plaintext --json --quiet > $O/edt_b_$t.json 2>$O/edt_b_$t.err
  wait $pa
  cat $O/edt_b_$t.json | tee -a $O/log.txt
done
stamp done
