#!/bin/bash
# Issue 15 item 5 on the device machine: ranks x threads per party, both parties on loopback.
set -u
S=target/scale; P=$S/pgc; O=${OUT:-/tmp/out15}/mpi; mkdir -p $O
export XDG_CACHE_HOME=/tmp/scale-xdg; mkdir -p $XDG_CACHE_HOME
export OMPI_MCA_btl_vader_single_copy_mechanism=none
T0=$(date +%s%N)
stamp() { echo "== $(date +%T) +$(( ($(date +%s%N) - T0) / 1000000 )) ms: $*" | tee -a $O/log.txt; }
MPI="mpirun --oversubscribe --allow-run-as-root --bind-to none"
if [ "${SMALL:-0}" = 1 ]; then APPS="mvmul"; CONF="1x2 2x2"; REPS=1; BIG=""
else APPS="biomatch mexp mvmul"; CONF="1x2 2x2 4x2 8x2 8x1"; REPS=${REPS:-3}; BIG=${BIG-bio8k}; fi
port=21000
one() { # app K T rep  (K=0: plain pgc run, no MPI)
  local app=$1 k=$2 t=$3 rep=$4 tag="$1_k$2_t$3_r$4"; port=$((port+20))
  local pre="" cl=""; [ $k -gt 0 ] && { pre="$MPI -np $k"; cl="--cluster"; }
  local s=$(date +%s%N)
  timeout 120 $pre $P run $S/$app.pgc --parallel cgp --threads $t --psk $S/t.psk --json --quiet --party a --listen 127.0.0.1:$port --inputs $S/${app}_a.json $cl > $O/$tag.a.json 2> $O/$tag.a.err &
  local pa=$!
  timeout 120 $pre $P run $S/$app.pgc --parallel cgp --threads $t --psk $S/t.psk --json --quiet --party b --connect 127.0.0.1:$port --inputs $S/${app}_b.json $cl > $O/$tag.b.json 2> $O/$tag.b.err
  local rb=$?; wait $pa; local ra=$?
  echo "$tag rc $ra $rb wall_ms $(( ($(date +%s%N) - s) / 1000000 )) $(tr -d '\n' < $O/$tag.b.json | head -c 400)" | tee -a $O/runs.txt
}
stamp start
for rep in $(seq $REPS); do
  for app in $APPS; do
    one $app 0 2 $rep
    for c in $CONF; do one $app ${c%x*} ${c#*x} $rep; done
  done
done
stamp big
for app in $BIG; do
  one $app 0 2 1
  for c in ${BIGCONF:-$CONF}; do one $app ${c%x*} ${c#*x} 1; done
  one $app 0 16 1
done
stamp done
