#!/usr/bin/env bash
# Heavy queries against a served week (issue 25, item 5): the hostile probe's
# `SELECT * FROM gpu` over 1,200 GPUs x 7 days, alone and eight at once, with
# /ping and a one-line write timed all the while, then the same query with
# chunked=true. Prints, for each phase, the server's peak and final RSS, the
# queries' statuses and bytes, and the slowest /ping and write.
#
# Usage: bench/heavy_queries.sh [GPULSE_BIN] [DATA_DIR] [PORT]
#   GPULSE_BIN defaults to build/gpulse. DATA_DIR defaults to
#   /tmp/gpulse-heavy-week and is simulated there (gpulse simulate --nodes 150
#   --days 7, about a minute) when it holds no data yet. PORT: 18086.
#   PHASES (default "one eight chunked chunked8") picks the phases to run.
# Record results with the date and machine in docs/performance.md.
set -euo pipefail
bin=${1:-build/gpulse}
data=${2:-/tmp/gpulse-heavy-week}
port=${3:-18086}
url="http://127.0.0.1:$port"
work=$(mktemp -d /tmp/gpulse-heavy.XXXXXX)

if [ ! -d "$data/store" ]; then
  "$bin" simulate --nodes 150 --days 7 --data "$data" --start 2026-11-01T00:00:00Z >/dev/null
fi
"$bin" serve --data "$data" --listen "127.0.0.1:$port" 2>"$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
until curl -sf "$url/ping" >/dev/null; do sleep 0.1; done

rss_mb() { awk '/VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$pid/status"; }

# Samples RSS, /ping and a write every 100 ms into $work/samples until
# $work/stop exists.
sample() {
  local i=0
  while [ ! -e "$work/stop" ]; do
    ping=$(curl -s -o /dev/null -m 120 -w '%{time_total}' "$url/ping")
    write=$(curl -s -o /dev/null -m 120 -w '%{time_total}' \
      --data-binary "probe,host=h value=$i" "$url/write?db=probe")
    echo "$(rss_mb) $ping $write" >>"$work/samples"
    i=$((i + 1))
    sleep 0.1
  done
}

# phase NAME COUNT EXTRA_PARAMS: COUNT queries at once, sampled meanwhile.
phase() {
  local name=$1 count=$2 extra=$3
  rm -f "$work/stop" "$work/samples"
  local before
  before=$(rss_mb)
  sample &
  local sampler=$!
  local started=$SECONDS
  local queries=()
  for q in $(seq "$count"); do
    curl -s -o "$work/answer.$q" -m 600 -w '%{http_code} %{size_download}\n' \
      -G "$url/query" --data-urlencode "q=SELECT * FROM gpu" $extra >"$work/status.$q" &
    queries+=($!)
  done
  wait "${queries[@]}" || true
  local took=$((SECONDS - started))
  touch "$work/stop"
  wait "$sampler"
  sleep 2
  local statuses errors
  statuses=$(cat "$work"/status.* | awk '{ print $1 }' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  errors=$(grep -ho '"error":"[^"]*' "$work"/answer.* | sort | uniq -c | head -3 | tr '\n' ';' || true)
  local bytes
  bytes=$(cat "$work"/status.* | awk '{ s += $2 } END { printf "%.1f", s / 1e6 }')
  awk -v name="$name" -v before="$before" -v after="$(rss_mb)" -v took="$took" \
    -v statuses="$statuses" -v bytes="$bytes" '
    { if ($1 > rss) rss = $1; if ($2 > ping) ping = $2; if ($3 > write) write = $3; n++ }
    END { printf "%s: %ss; answers %s %s MB; RSS %d MB before, %d MB peak, %d MB after; " \
                 "slowest /ping %.3f s, write %.3f s (%d samples)\n",
                 name, took, statuses, bytes, before, rss, after, ping, write, n }' "$work/samples"
  [ -n "$errors" ] && echo "  errors: $errors"
  rm -f "$work"/answer.* "$work"/status.*
}

phases=${PHASES:-one eight chunked chunked8}
[[ " $phases " == *" one "* ]] && phase "one SELECT * FROM gpu" 1 ""
[[ " $phases " == *" eight "* ]] && phase "eight at once" 8 ""
[[ " $phases " == *" chunked "* ]] && phase "one, chunked=true" 1 "--data-urlencode chunked=true"
[[ " $phases " == *" chunked8 "* ]] && phase "eight at once, chunked=true" 8 "--data-urlencode chunked=true"
exit 0
