#!/usr/bin/env bash
# Builds the working corpora of the fuzz targets under fuzz/corpus/TARGET/ (not committed)
# from real files: the committed seeds (fuzz/seeds/), the shared Bristol circuits, .pgc
# files compiled from examples/ (every version: plain, parallel, compact), and transcripts of
# honest protocol runs recorded in memory. Run from anywhere; see docs/fuzzing.md.
#
#   fuzz/seed_corpus.sh            # circuits from $PGC_SHARED_CIRCUITS (default /work/shared/circuits)
#
# Files above MAX_SEED_BYTES are skipped: libFuzzer runs each input many times, and a small
# corpus covers the same code.
set -euo pipefail

FUZZ=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$FUZZ")
CORPUS="$FUZZ/corpus"
SHARED=${PGC_SHARED_CIRCUITS:-/work/shared/circuits}
MAX_SEED_BYTES=${MAX_SEED_BYTES:-65536}

mkdir -p "$CORPUS"
for dir in "$FUZZ"/seeds/*/; do
    target=$(basename "$dir")
    mkdir -p "$CORPUS/$target"
    cp "$dir"* "$CORPUS/$target/"
done

small() { [ "$(stat -c %s "$1")" -le "$MAX_SEED_BYTES" ]; }

# Bristol: the first byte picks the reader (0 detect, 1 Bristol Fashion, 2 old Bristol).
if [ -d "$SHARED" ]; then
    for pair in bristol_fashion:1 bristol_fashion_mand:1 bristol_format:2; do
        folder=${pair%%:*} selector=${pair##*:}
        for f in "$SHARED/$folder"/*.txt; do
            [ -f "$f" ] && small "$f" || continue
            out="$CORPUS/bristol/$folder-$(basename "$f" .txt)"
            { printf "\\x0$selector"; cat "$f"; } > "$out"
            { printf '\x00'; cat "$f"; } > "$out-detect"
        done
    done
else
    echo "note: $SHARED not found, Bristol corpus has the committed seeds only" >&2
fi

# .pgc files of every version, compiled by the release pgc from small example programs.
cargo build --release -q -p pgc-cli --manifest-path "$ROOT/Cargo.toml"
PGC="$ROOT/target/release/pgc"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
compile() { # name, source, then pgc compile options
    local name=$1 src=$2
    shift 2
    for compact in never always; do
        local out="$TMP/$name-$compact.pgc"
        "$PGC" compile "$ROOT/examples/$src" -o "$out" --compact "$compact" "$@" > /dev/null
        small "$out" || continue
        local version
        version=$(od -An -tu4 -j8 -N4 "$out" | tr -d ' ')
        cp "$out" "$CORPUS/pgc_v$version/$name-$compact.pgc"
    done
}
mkdir -p "$CORPUS"/pgc_v1 "$CORPUS"/pgc_v2 "$CORPUS"/pgc_v3
compile millionaires millionaires.c
compile hamming hamming.c
compile dot_product-2 dot_product.c -D N=2
compile dot_product-3-depth dot_product.c -D N=3 --optimize depth
compile median-4 median.c -D MEDIAN_N=4
compile mvmul-2 mvmul.c -D MVMUL_M=2 -D MVMUL_K=2
compile auction-2 auction.c -D AUCTION_A=2 -D AUCTION_B=2
compile biomatch-2 biomatch.c -D BIOMATCH_N=2 -D BIOMATCH_D=2
compile edit_distance-3 edit_distance.c -D EDIT_LEN=3

# Honest transcripts of both parties, sequential and every parallel mode and thread count,
# the malicious protocols, three-halves and compact. Recorded by a `--cfg fuzzing` build
# (its own target dir), whose replayed entropy the fuzz build shares: the newer targets'
# transcripts pass the honest party's random checks only then (docs/fuzzing.md).
RUSTFLAGS="--cfg fuzzing" cargo run -q -p pgc-fuzz --example write_seeds \
    --manifest-path "$ROOT/Cargo.toml" --target-dir "$ROOT/fuzz/target/cfg-fuzzing" -- "$CORPUS"

# Random programs of the compiler's own generators (integer, ranged loops, floating point),
# preprocessed, for the differential target; RANDOM_C_SEEDS of them (default 300).
cargo run -q -p pgc-fuzz --example random_c_seeds --manifest-path "$ROOT/Cargo.toml" -- \
    "$CORPUS/c_semantics" "${RANDOM_C_SEEDS:-300}"

for dir in "$CORPUS"/*/; do
    printf '%-14s %4d files\n' "$(basename "$dir")" "$(find "$dir" -type f | wc -l)"
done
