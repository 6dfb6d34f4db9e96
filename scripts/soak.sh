#!/usr/bin/env bash
# Soak test: one serving party (pgc run --serve) and RUNS consecutive client runs over TLS
# with a shared secret, each checked; the server's open file descriptors and resident
# memory are sampled as it goes, so a leak per run shows as growth.
#
#   scripts/soak.sh [RUNS] [CIRCUIT]      (defaults: 1000 builtin:millionaires)
#
# Needs a release build (cargo build --release). Prints one line per sample and a summary;
# exits non-zero if a run fails or the server's descriptors grow.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000}
CIRCUIT=${2:-builtin:millionaires}
PGC=${PGC:-target/release/pgc}
[ -x "$PGC" ] || { echo "build first: cargo build --release" >&2; exit 1; }

dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
export XDG_CONFIG_HOME="$dir/config" XDG_CACHE_HOME="$dir/cache"
"$PGC" keygen --secret "$dir/shared.psk" >/dev/null 2>&1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

"$PGC" run "$CIRCUIT" --party a --listen "127.0.0.1:$port" --serve --runs "$RUNS" \
  --psk "$dir/shared.psk" --json --input 5000 >"$dir/server.out" 2>"$dir/server.err" &
server=$!
until grep -q "serving runs on" "$dir/server.err" 2>/dev/null; do sleep 0.05; done

sample() {
  local fds rss
  fds=$(ls "/proc/$server/fd" | wc -l)
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$server/status")
  echo "after run $1: server fds $fds, RSS $rss KiB"
  eval "fds_$2=$fds rss_$2=$rss"
}

start=$(date +%s.%N)
for i in $(seq 1 "$RUNS"); do
  b=$(( i % 2 == 0 ? 4000 + i % 1000 : 6000 + i % 1000 ))
  want=$(( b < 5000 ? 1 : 0 ))
  got=$("$PGC" run "$CIRCUIT" --party b --connect "127.0.0.1:$port" --psk "$dir/shared.psk" \
         --json --timeout 20 --input "$b" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["outputs"][0],16))')
  if [ "$got" != "$want" ]; then echo "run $i: got $got, want $want" >&2; exit 1; fi
  case $i in
    10) sample "$i" first ;;
    "$((RUNS / 2))") sample "$i" mid ;;
    "$((RUNS - 1))") sample "$i" last ;;
  esac
done
end=$(date +%s.%N)
wait "$server"
served=$(grep -o "served [0-9]* runs ([0-9]* failed)" "$dir/server.err")
echo "$served in $(python3 -c "print(f'{$end - $start:.1f}')") s ($(python3 -c "print(f'{($end - $start) / $RUNS * 1000:.1f}')") ms per run, client process start included)"
echo "server fds: $fds_first after run 10, $fds_last after run $((RUNS - 1)); RSS: $rss_first KiB -> $rss_last KiB"
[ "$fds_last" -le "$fds_first" ] || { echo "file descriptors grew" >&2; exit 1; }
