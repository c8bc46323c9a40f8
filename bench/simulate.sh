#!/usr/bin/env bash
# The simulator's speed target (issue 6): 1,200 GPUs x 7 days at minute
# grain, every measurement, into a new data directory, under 60 s.
#
# Usage: bench/simulate.sh [GPULSE_BIN] [extra gpulse simulate flags...]
#   GPULSE_BIN defaults to build/gpulse. The default fleet is simulate's:
#   2 regions, 150 nodes x 8 GPUs, 7 days, every incident kind once.
# Prints simulate's report (points, values, time, with the planning and
# tier-building times), then the directory's bytes and bytes per value.
# Record results with the date and machine in docs/performance.md.
set -euo pipefail
bin=${1:-build/gpulse}
shift || true
dir=$(mktemp -d /tmp/gpulse-simbench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$bin" simulate --data "$dir/data" --incidents all --start 2026-11-02T00:00:00Z "$@" | tee "$dir/report"
values=$(sed -n 's/.* points, \([0-9.]*\) M values.*/\1/p' "$dir/report")
bytes=$(du -sb "$dir/data/store" | cut -f1)
echo "store: $bytes bytes; $(awk -v b="$bytes" -v v="$values" 'BEGIN { printf "%.3f", b / (v * 1e6) }') bytes a value (raw, 1h and 1d tiers)"
