#!/bin/bash
# main (target/scale, 9fcbcb2) against the cgpwake branch (target/scale4), side by side:
# cgp_one_thread at 8 and 16 threads, the two binaries alternated, three rounds.
set -u
export MIMALLOC_ALLOW_THP=0
for round in 1 2 3; do
  for app in biomatch mexp mvmul; do
    for t in 8 16; do
      for bin in scale scale4; do
        echo "$round $app $t $bin $(timeout 60 target/$bin/cgp_one_thread examples/$app.c 10 $t | grep -E '^(none 1|cgp T)' | head -2 | awk '{print $3}' | tr '\n' ' ')"
      done
    done
  done
done
