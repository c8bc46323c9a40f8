#!/usr/bin/env bash
# Forwarding's cost and speed: loads one data set into `gpulse serve` twice,
# first alone, then with a "remote_write" target (victoria-metrics on a
# loopback port), and reports:
#   - the load's wall time and gpulse's CPU seconds, alone and forwarding,
#     until everything is sent (gpulse_forward_pending_bytes 0);
#   - forwarding's CPU as a share of ingest's: (forwarding - alone) / alone;
#   - samples sent a second, counted from the load's start to the last ack;
#   - victoria-metrics' CPU seconds taking them.
# The data set is the shared harness's line protocol, loaded in requests of
# about 4 MiB one at a time (as bench/peers/promql_bench.sh does).
#
# With SPEED, the load replays the file's time at SPEED times real time
# (1: as the agents of that fleet send) and the report adds the most log a
# target had pending during the load (sampled each second) and how long after
# the load it had sent everything; MINUTES loads only the file's first
# minutes. With BACKFILL=1, the data of the run alone is then sent to a
# fresh victoria-metrics by `gpulse backfill`, timed, with gpulse's CPU.
#
# Usage: [SPEED=1 MINUTES=10 BACKFILL=1] bench/peers/forward_bench.sh DATASET.lp [SHARDS]
#   GPULSE_BIN (default build/gpulse).
set -euo pipefail
dataset=$1
shards=${2:-4}
here=$(cd "$(dirname "$0")" && pwd)
gpulse=${GPULSE_BIN:-$here/../../build/gpulse}
work=$(mktemp -d /tmp/gpulse-forward-bench.XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

wait_up() { for _ in $(seq 100); do curl -sf "$1" >/dev/null 2>&1 && return; sleep 0.1; done; }

load() {  # PORT
  python3 "$here/load_lp.py" "$1" "$dataset" "/write?db=bench&precision=s" \
    "${SPEED:-0}" "${MINUTES:-0}"
}

metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 ~ "^"m"({|$)" {print $2}'; }

run() {  # NAME CONFIG: one load, printed as "NAME wall_s cpu_s"
  local g_port=$(port)
  python3 - "$g_port" "$work/$1" "$2" > "$work/$1.json" <<'PY'
import json, sys
config = {"listen": "127.0.0.1:" + sys.argv[1], "data": sys.argv[2],
          "alerts": {"evaluate": False}}
config.update(json.loads(sys.argv[3]))
print(json.dumps(config))
PY
  "$gpulse" serve --config "$work/$1.json" >"$work/$1.log" 2>&1 &
  local g=$!
  pids+=("$g")
  wait_up "http://127.0.0.1:$g_port/ping"
  local t0=$(date +%s.%N) c0=$(ticks "$g")
  local sampler=
  if [ "$2" != "{}" ]; then
    (while sleep 1; do metric "$g_port" gpulse_forward_pending_bytes; done) \
      >"$work/$1.pending" 2>/dev/null &
    sampler=$!
  fi
  load "$g_port"
  local loaded=$(date +%s.%N)
  [ -n "$sampler" ] && kill "$sampler" && wait "$sampler" 2>/dev/null
  if [ "$2" != "{}" ]; then
    while [ "$(metric "$g_port" gpulse_forward_pending_bytes)" != "0" ]; do sleep 0.05; done
  fi
  local t1=$(date +%s.%N) c1=$(ticks "$g")
  local sent=$(metric "$g_port" gpulse_forward_samples_sent_total)
  local most=$(sort -n "$work/$1.pending" 2>/dev/null | tail -1)
  echo "$1 load_s=$(echo "$loaded - $t0" | bc) wall_s=$(echo "$t1 - $t0" | bc)" \
    "cpu_s=$(echo "scale=2; ($c1 - $c0) / $hz" | bc) sent=${sent:-0}" \
    "drain_s=$(echo "$t1 - $loaded" | bc) max_pending_bytes=${most:-0}"
  kill "$g"
  wait "$g" 2>/dev/null || true
}

backfill() {  # the run alone's data directory, sent to a fresh victoria-metrics
  local b_port=$(port) g_port=$(port)
  victoria-metrics -storageDataPath="$work/vm-backfill" -httpListenAddr="127.0.0.1:$b_port" \
    -retentionPeriod=100y -dedup.minScrapeInterval=1ms >"$work/vm-backfill.log" 2>&1 &
  local b=$!
  pids+=("$b")
  wait_up "http://127.0.0.1:$b_port/health"
  cat >"$work/backfill.json" <<JSON
{"listen": "127.0.0.1:$g_port", "data": "$work/alone", "alerts": {"evaluate": false},
 "remote_write": [{"name": "history", "shards": $shards,
                   "url": "http://127.0.0.1:$b_port/api/v1/write"}]}
JSON
  "$gpulse" serve --config "$work/backfill.json" >"$work/backfill.log" 2>&1 &
  local g=$!
  pids+=("$g")
  wait_up "http://127.0.0.1:$g_port/ping"
  local t0=$(date +%s.%N) c0=$(ticks "$g") v0=$(ticks "$b")
  # The data's span: its first line's time to its last's (or MINUTES on).
  local from=$(head -1 "$dataset" | awk '{print $NF}') to=$(tail -1 "$dataset" | awk '{print $NF + 1}')
  [ "${MINUTES:-0}" != 0 ] && to=$(echo "$from + ${MINUTES} * 60" | bc | cut -d. -f1)
  "$gpulse" backfill --url "http://127.0.0.1:$g_port" --target history \
    --from "$from" --to "$to" >"$work/backfill.out"
  local t1=$(date +%s.%N) c1=$(ticks "$g") v1=$(ticks "$b")
  local sent=$(metric "$g_port" gpulse_forward_backfilled_samples_total)
  echo "backfill wall_s=$(echo "$t1 - $t0" | bc) cpu_s=$(echo "scale=2; ($c1 - $c0) / $hz" | bc)" \
    "sent=$sent victoria_metrics_cpu_s=$(echo "scale=2; ($v1 - $v0) / $hz" | bc)"
  kill "$g" "$b"
  wait "$g" "$b" 2>/dev/null || true
}

vm_port=$(port)
victoria-metrics -storageDataPath="$work/vm" -httpListenAddr="127.0.0.1:$vm_port" \
  -retentionPeriod=100y -dedup.minScrapeInterval=1ms >"$work/vm.log" 2>&1 &
vm=$!
pids+=("$vm")
wait_up "http://127.0.0.1:$vm_port/health"

alone=$(run alone '{}')
echo "$alone"
vm_c0=$(ticks "$vm")
forwarding=$(run forwarding "{\"remote_write\": [{\"name\": \"vm\", \"shards\": $shards,
  \"url\": \"http://127.0.0.1:$vm_port/api/v1/write\"}]}")
vm_c1=$(ticks "$vm")
echo "$forwarding"
echo "victoria-metrics cpu_s=$(echo "scale=2; ($vm_c1 - $vm_c0) / $hz" | bc)"
python3 - "$alone" "$forwarding" <<'PY'
import sys
def fields(line):
    return {k: float(v) for k, v in (f.split("=") for f in line.split()[1:])}
a, f = fields(sys.argv[1]), fields(sys.argv[2])
print(f"forwarding CPU / ingest CPU: {(f['cpu_s'] - a['cpu_s']) / a['cpu_s']:.2f}; "
      f"{f['sent'] / f['wall_s'] / 1e6:.2f} M samples/s sent "
      f"({f['sent']:.0f} in {f['wall_s']:.1f} s from the load's start)")
PY
if [ "${BACKFILL:-0}" = 1 ]; then backfill; fi
