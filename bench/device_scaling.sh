#!/usr/bin/env bash
# Ingest scaling with cores (issue 23): `gpulse simulate` of 1,200 GPUs x 1 day
# into a new directory with 1, 2, 4, 8 and 16 emitting threads; the engine's
# write path (write_bench --load) with 1 to 16 writer threads over the peer
# harness's fleet (gen_fleet.py: 1,200 GPUs x 1 day, and 10,000 GPUs x 1
# hour, a million series-fields); and 10,000 GPUs x 1 day simulated with 16
# threads. Each line gives wall seconds, CPU seconds and cores used.
#
# Usage: bench/device_scaling.sh BIN_DIR [OUT_DIR]
#   BIN_DIR holds gpulse, write_bench and gen_fleet.py (from
#   ../shared/bench/peers/), and, for a machine without Debian's libraries,
#   the shared libraries they need (LD_LIBRARY_PATH is set to it). OUT_DIR
#   (default /tmp/gpulse-scaling) gets the data. PHASES (default
#   "simulate load big") picks the parts to run. Made for a 16-core machine.
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
  grep -E "values/s|M values|points" "$out/last.log" | tail -2 | sed 's/^/    /'
}

phases=${PHASES:-simulate load big}

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
