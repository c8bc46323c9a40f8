#!/usr/bin/env bash
# PromQL against VictoriaMetrics on one data set: starts victoria-metrics and
# `gpulse serve` on loopback ports, loads the same line protocol into both
# (in 4 MiB requests, one at a time), compacts gpulse, waits until
# VictoriaMetrics shows the data and both servers are idle (their CPU under
# 3% for 2 s: background merges and tier builds done, so neither is timed
# while it still settles), then runs bench/peers/promql_queries.py.
#
# Usage: bench/peers/promql_bench.sh DATASET.lp [ROUNDS]
#   GPULSE_BIN (default build/gpulse). VictoriaMetrics keeps 100 years
#   (the harness's data is from 2024) and answers up to 10 M series (the
#   100,000-GPU hour's Q6 reads a million).
set -euo pipefail
dataset=$1
rounds=${2:-21}
here=$(cd "$(dirname "$0")" && pwd)
gpulse=${GPULSE_BIN:-$here/../../build/gpulse}
work=$(mktemp -d /tmp/gpulse-promql-bench.XXXXXX)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
vm_port=$(port)
g_port=$(port)
victoria-metrics -storageDataPath="$work/vm" -httpListenAddr="127.0.0.1:$vm_port" \
  -retentionPeriod=100y -search.maxUniqueTimeseries=10000000 \
  -search.maxSamplesPerQuery=10000000000 >"$work/vm.log" 2>&1 &
vm=$!
"$gpulse" serve --data "$work/g" --listen "127.0.0.1:$g_port" >"$work/gpulse.log" 2>&1 &
g=$!
trap 'kill $vm $g 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
for url in "http://127.0.0.1:$vm_port/health" "http://127.0.0.1:$g_port/ping"; do
  for _ in $(seq 100); do curl -sf "$url" >/dev/null 2>&1 && break; sleep 0.1; done
done

load() {  # PORT TARGET: the data set in requests of about 4 MiB, cut at line ends
  python3 "$here/load_lp.py" "$1" "$dataset" "$2"
}
load "$vm_port" "/write?precision=s"
load "$g_port" "/write?db=bench&precision=s"
curl -s -XPOST "http://127.0.0.1:$vm_port/internal/force_flush" >/dev/null || true
curl -s -XPOST "http://127.0.0.1:$g_port/api/v1/compact" >/dev/null

# Until both are idle: CPU ticks of the two processes over 2 s under 3%.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for _ in $(seq 150); do
  a=$(( $(ticks $vm) + $(ticks $g) ))
  sleep 2
  b=$(( $(ticks $vm) + $(ticks $g) ))
  [ $(( b - a )) -le 6 ] && break
done
python3 "$here/promql_queries.py" --dataset "$dataset" --vm-port "$vm_port" \
  --gpulse-port "$g_port" --rounds "$rounds"
