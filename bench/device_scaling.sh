#!/usr/bin/env bash
# Ingest scaling with cores (issue 23): `gpulse simulate` of 1,200 GPUs x 1 day
# into a new directory with 1, 2, 4, 8 and 16 emitting threads, then the
# engine's write path (write_bench --load) over the same day as line protocol
# with 1 to 16 writer threads, and last 10,000 GPUs x 1 day with 16 threads.
# Each line gives wall seconds, CPU seconds and cores used (CPU / wall).
#
# Usage: bench/device_scaling.sh BIN_DIR [OUT_DIR]
#   BIN_DIR holds gpulse and write_bench (and, for a machine without
#   Debian's libraries, the shared libraries they need: LD_LIBRARY_PATH is
#   set to it). OUT_DIR (default /tmp/gpulse-scaling) gets the data and a
#   log. Made for a 16-core machine; on fewer cores the larger thread counts
#   show the oversubscription.
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

for threads in 1 2 4 8 16; do
  rm -rf "$out/sim"
  timed "simulate 1,200 GPUs x 1 day, --threads $threads" \
    "$bin/gpulse" simulate --nodes 150 --days 1 --start 2026-11-02T00:00:00Z \
    --threads "$threads" --data "$out/sim"
done

"$bin/gpulse" simulate --nodes 150 --days 1 --start 2026-11-02T00:00:00Z --threads 16 \
  --out "$out/day.lp" >/dev/null 2>&1
echo "line protocol: $(wc -l <"$out/day.lp") lines, $(du -m "$out/day.lp" | cut -f1) MB"
for threads in 1 2 4 8 16; do
  rm -rf "$out/load"
  GPULSE_BENCH_LP="$out/day.lp" timed "write_bench --load --threads $threads" \
    "$bin/write_bench" --load --policy interval --threads "$threads" --dir "$out/load"
done
rm -rf "$out/load" "$out/day.lp"

rm -rf "$out/sim"
timed "simulate 10,000 GPUs x 1 day, --threads 16" \
  timeout 300 "$bin/gpulse" simulate --nodes 1250 --days 1 --start 2026-11-02T00:00:00Z \
  --threads 16 --data "$out/sim"
du -sh "$out/sim" 2>/dev/null
