#!/usr/bin/env bash
# pgc's side of BENCHMARKS.md, "Compiler gate counts side by side (issue 18, item 3)": AND
# gates, all gates and AND depth of the natural programs in examples/, at the sizes of the
# table there. The other compilers' figures come from programs outside this repository
# (described in that section).
#
#   nice cargo build --release -p pgc-cli && scripts/compiler_gates.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PGC=${PGC:-target/release/pgc}
while read -r file defines; do
  args=()
  for d in $defines; do args+=(-D "$d"); done
  info=$($PGC info "examples/$file" "${args[@]}")
  line=$(echo "$info" | grep -m1 '^gates')
  depth=$(echo "$info" | grep -o 'AND depth *[0-9,]*' | head -1 | grep -o '[0-9,]*$')
  printf '%-26s %-18s %s, AND depth %s\n' "$file" "${defines:--}" "$line" "$depth"
done <<'LIST'
edit_distance_textbook.c EDIT_LEN=16
edit_distance_textbook.c EDIT_LEN=64
edit_distance_textbook.c EDIT_LEN=255
sort.c SORT_N=16
aes128.c
hamming.c HAMMING_WORDS=16
hamming_textbook.c HAMMING_WORDS=16
dot_product.c N=100
LIST
