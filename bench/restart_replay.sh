#!/usr/bin/env bash
# A restart after kill -9 with a full head (issue 23): loads a line-protocol
# file into `gpulse serve` over HTTP, kills the server with SIGKILL (nothing
# flushed but what the head's bounds flushed on their own), starts it again
# on the same directory and times how long until /ping answers and until a
# query over the loaded data answers. Prints the WAL's size at the kill, the
# replay's log lines and both times.
#
# Usage: bench/restart_replay.sh FILE.lp [GPULSE_BIN] [PORT]
#   FILE.lp: e.g. python3 ../shared/bench/peers/gen_fleet.py --nodes 12500
#   --hours 1 --out /tmp/fleet/fleet-12500x1h.lp (100,000 GPUs). GPULSE_BIN
#   defaults to build/gpulse; PORT to 18087. The data directory is a new
#   temporary one, removed at the end.
# Record results with the date and machine in docs/performance.md.
set -euo pipefail
lp=$1
bin=${2:-build/gpulse}
port=${3:-18087}
url="http://127.0.0.1:$port"
work=$(mktemp -d /tmp/gpulse-replay.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT

start_server() {
  "$bin" serve --data "$work/data" --listen "127.0.0.1:$port" 2>>"$work/serve.log" &
  pid=$!
}

start_server
until curl -sf "$url/ping" >/dev/null; do sleep 0.1; done
# 50,000 lines a request, two at a time, as the peer harness's writers do.
split -l 50000 -d -a 4 "$lp" "$work/part."
load_start=$(date +%s.%N)
ls "$work"/part.* | xargs -P 2 -I{} curl -sf -o /dev/null --data-binary @{} \
  "$url/write?db=bench&precision=s"
load_end=$(date +%s.%N)
rm -f "$work"/part.*
echo "loaded $(wc -l <"$lp") lines in $(echo "$load_end - $load_start" | bc) s;" \
  "server RSS $(awk '/VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$pid/status") MiB at most"
echo "WAL at the kill: $(du -sb "$work/data/wal" | cut -f1) bytes"
kill -9 $pid
wait $pid 2>/dev/null || true

t0=$(date +%s.%N)
start_server
until curl -sf "$url/ping" >/dev/null; do sleep 0.05; done
t1=$(date +%s.%N)
first=$(head -1 "$lp" | sed 's/.* //')
q="SELECT count(util) FROM gpu WHERE time >= ${first}s AND time < ${first}s + 1h"
until curl -sf -G "$url/query" --data-urlencode "db=bench" --data-urlencode "q=$q" \
  -o "$work/answer"; do sleep 0.05; done
t2=$(date +%s.%N)
grep -i -E "replay|wal" "$work/serve.log" | tail -5 || true
echo "after kill -9: /ping in $(echo "$t1 - $t0" | bc) s, a query in $(echo "$t2 - $t0" | bc) s:" \
  "$(head -c 300 "$work/answer")"
