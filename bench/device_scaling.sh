#!/usr/bin/env bash
# Ingest scaling with cores (issue 23): `gpulse simulate` of 1,200 GPUs x 1 day
# into a new directory with 1, 2, 4, 8 and 16 emitting threads; the engine's
# write path (write_bench --load) with 1 to 16 writer threads over the peer
# harness's fleet (gen_fleet.py: 1,200 GPUs x 1 day, and 10,000 GPUs x 1
# hour, a million series-fields); and 10,000 GPUs x 1 day simulated with 16
# threads; and Prometheus remote write over HTTP to `gpulse serve` and to
# VictoriaMetrics with 1 to 16 concurrent writers (remote_write_load, the
# 1,200-GPU day as 8,640 requests of 2,000 samples). Each line gives wall
# seconds, CPU seconds and cores used.
#
# Usage: bench/device_scaling.sh BIN_DIR [OUT_DIR]
#   BIN_DIR holds gpulse, write_bench, remote_write_load, victoria-metrics
#   and gen_fleet.py (from ../shared/bench/peers/), and, for a machine
#   without Debian's libraries,
#   the shared libraries they need (LD_LIBRARY_PATH is set to it). OUT_DIR
#   (default /tmp/gpulse-scaling) gets the data. PHASES (default
#   "simulate load big remote") picks the parts to run. Made for a 16-core
#   machine.
# Record results with the date and machine in docs/performance.md.
set -uo pipefail
bin=$(cd "$1" && pwd)
out=${2:-/tmp/gpulse-scaling}
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$out"
echo "cores: $(nproc); $(uname -r)"

# timed LABEL COMMAND...: one line of wall, CPU and cores.
timed() {
  local label=$1
  shift
  local TIMEFORMAT="%R %U %S" rc wall user sys
  { time "$@" >"$out/last.log" 2>&1; } 2>"$out/time"
  rc=$?
  read -r wall user sys <"$out/time" || { wall=0; user=0; sys=0; }
  awk -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" -v rc="$rc" \
    'BEGIN { printf "%-44s wall %7.2f s  cpu %7.2f s  cores %5.2f  exit %d\n", l, w, u + s, (w > 0 ? (u + s) / w : 0), rc }'
  grep -E "values/s|samples/s|M values|points" "$out/last.log" | tail -2 | sed 's/^/    /'
}

phases=${PHASES:-simulate load big remote}

if [[ $phases == *simulate* ]]; then
  for threads in 1 2 4 8 16; do
    rm -rf "$out/sim"
    timed "simulate 1,200 GPUs x 1 day, --threads $threads" \
      "$bin/gpulse" simulate --nodes 150 --days 1 --start 2026-11-02T00:00:00Z \
      --threads "$threads" --data "$out/sim"
  done
fi

if [[ $phases == *load* ]]; then
  for set in "150 --days 1" "1250 --hours 1"; do
    read -r nodes span count <<<"$set"
    python3 "$bin/gen_fleet.py" --nodes "$nodes" "$span" "$count" --out "$out/fleet.lp" \
      2>&1 | tail -1
    for threads in 1 2 4 8 16; do
      rm -rf "$out/load"
      GPULSE_BENCH_LP="$out/fleet.lp" timed "write_bench --load, $nodes nodes $span $count, $threads threads" \
        "$bin/write_bench" --load --policy interval --threads "$threads" --dir "$out/load"
    done
  done
  rm -rf "$out/load" "$out/fleet.lp"
fi

if [[ $phases == *big* ]]; then
  rm -rf "$out/sim"
  timed "simulate 10,000 GPUs x 1 day, --threads 16" \
    timeout 300 "$bin/gpulse" simulate --nodes 1250 --days 1 --start 2026-11-02T00:00:00Z \
    --threads 16 --data "$out/sim"
  du -sh "$out/sim" 2>/dev/null
fi

if [[ $phases == *remote* ]]; then
  python3 "$bin/gen_fleet.py" --nodes 150 --days 1 --out "$out/fleet.lp" 2>&1 | tail -1
  ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
  for system in gpulse victoria-metrics; do
    for writers in 1 2 4 8 16; do
      rm -rf "$out/rw"
      if [ $system = gpulse ]; then
        "$bin/gpulse" serve --data "$out/rw" --listen 127.0.0.1:18097 >"$out/server.log" 2>&1 &
        url="http://127.0.0.1:18097/api/v1/write?measurement=gpu"
        ready="http://127.0.0.1:18097/ping"
      else
        "$bin/victoria-metrics" -storageDataPath="$out/rw" -httpListenAddr=127.0.0.1:18428 \
          -retentionPeriod=100y >"$out/server.log" 2>&1 &
        url="http://127.0.0.1:18428/api/v1/write"
        ready="http://127.0.0.1:18428/health"
      fi
      server=$!
      for _ in $(seq 100); do curl -sf "$ready" >/dev/null 2>&1 && break; sleep 0.1; done
      before=$(ticks $server)
      GPULSE_BENCH_LP="$out/fleet.lp" timed "remote write to $system, $writers writers" \
        "$bin/remote_write_load" --url "$url" --writers "$writers" --pid "$server"
      echo "    server CPU seconds during the run and load: $(( ($(ticks $server) - before) / 100 ))"
      kill $server
      wait $server 2>/dev/null
    done
  done
  rm -rf "$out/rw" "$out/fleet.lp"
fi
