#!/bin/bash
set -u
S=target/scale; P=$S/pgc; O=$OUT/r; mkdir -p $O
export XDG_CACHE_HOME=/tmp/scale-xdg; rm -rf $XDG_CACHE_HOME; mkdir -p $XDG_CACHE_HOME
lscpu > $O/lscpu.txt; { ldd $P; mpirun --version; } > $O/ldd.txt 2>&1
timeout 15 $P bench width --repeat 3 --out $O/width > $O/width.txt 2>$O/width.err; cat $XDG_CACHE_HOME/pgc/fgp-tau > $O/tau.txt 2>&1
OUT=$O REPS=2 BIG= timeout 45 bash $S/s15.sh > $O/s15a.log 2>&1
( timeout 8 $P compile examples/edit_distance_large.c -D EDIT_LEN=511 --compact always -o /tmp/edt511c.pgc >/dev/null 2>&1; timeout 25 $S/compact_threads /tmp/edt511c.pgc 1 2 4 8 16 ) > $O/edt511_offline.txt 2>&1
OUT=$O/big REPS=0 BIG=bio8k BIGCONF="1x2 4x2 8x2" timeout 45 bash $S/s15.sh > $O/s15b.log 2>&1
tar czf $OUT/r.tgz -C $OUT r && rm -rf $O; ls -la $OUT
