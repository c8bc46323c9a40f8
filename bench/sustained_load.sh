#!/usr/bin/env bash
# A sustained load (issue 23): `gpulse simulate --url --pace` sends a fleet's
# points to a new `gpulse serve` minute by minute as their time comes (pace
# 1: real time, as the agents of the fleet would), while this samples the
# server every 10 s: resident memory, the head's bytes, the WAL, flushes and
# the writes it refused. Prints the samples and a summary: memory after the
# first tenth of the run, and refusals, which must be none.
#
# Usage: bench/sustained_load.sh [NODES] [HOURS] [PACE] [GPULSE_BIN] [PORT]
#   NODES: nodes of 8 GPUs (default 12500: 100,000 GPUs, about 58,000
#   values/s at pace 1); HOURS of simulated time (default 1); PACE simulated
#   minutes a wall-clock minute (default 1); GPULSE_BIN defaults to
#   build/gpulse, PORT to 18089. More simulate options in SIMULATE_ARGS
#   (e.g. "--jobs-per-day 100000": planning 100,000 GPUs' jobs of the
#   three-day warm-up takes minutes at the default rate). The data
#   directory is a new temporary one, removed at the end. Record results
#   with the date and machine in docs/performance.md.
set -euo pipefail
nodes=${1:-12500}
hours=${2:-1}
pace=${3:-1}
bin=${4:-build/gpulse}
port=${5:-18089}
url="http://127.0.0.1:$port"
work=$(mktemp -d /tmp/gpulse-sustained.XXXXXX)
pid=
sampler=
trap '[ -n "$sampler" ] && kill $sampler 2>/dev/null; [ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

"$bin" serve --data "$work/data" --listen "127.0.0.1:$port" 2>"$work/serve.log" &
pid=$!
until curl -sf "$url/ping" >/dev/null; do sleep 0.1; done

metric() { awk -v m="$1" '$1 == m { printf "%d", $2 }' "$work/metrics"; }
sample() {
  local t0=$1
  while kill -0 "$pid" 2>/dev/null; do
    curl -sf "$url/metrics" -o "$work/metrics" || true
    printf "%6d %8d %8d %8d %6d %6d\n" $(( $(date +%s) - t0 )) \
      "$(awk '/VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$pid/status")" \
      "$(( $(metric gpulse_head_bytes) / 1048576 ))" \
      "$(( $(du -sb "$work/data/wal" | cut -f1) / 1048576 ))" \
      "$(metric gpulse_flushes_total)" "$(metric gpulse_writes_refused_busy_total)"
    sleep 10
  done
}
echo "    s   RSS MiB  head MiB  WAL MiB flushes refused"
sample "$(date +%s)" | tee "$work/samples" &
sampler=$!
# shellcheck disable=SC2086
"$bin" simulate --url "$url" --nodes "$nodes" --hours "$hours" --pace "$pace" \
  --truth "$work/truth.json" ${SIMULATE_ARGS:-} | tee "$work/simulate.out"
sleep 10
kill $sampler 2>/dev/null || true
sampler=
lines=$(wc -l <"$work/samples")
skip=$(( lines / 10 ))
tail -n +$(( skip + 1 )) "$work/samples" | awk -v skip="$skip" '
  NR == 1 { lo = hi = $2 } { if ($2 < lo) lo = $2; if ($2 > hi) hi = $2; refused = $6 }
  END { printf "after the first %d samples: RSS %d to %d MiB; writes refused %d\n", skip, lo, hi, refused }'
echo "server peak RSS: $(awk '/VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$pid/status") MiB"
