#!/usr/bin/env bash
# Time to detect of the recommended page rules over fresh seeds (issue 29's
# 15-minute promise): for each seed, bench/alert_replay stores a simulated
# week of 16 nodes, then plays a day with a thermal event at 02:00 and a
# driver upgrade at 10:00, evaluating the rules from an hour before each
# start to an hour after it. Prints each seed's line, then per incident
# class how many were detected within 15 minutes, and the firings no
# incident explains. Seeds are drawn afresh and printed unless given.
#
# A control (healthy-upgrade: a new driver with no bug) in INCIDENTS is
# counted apart: every firing during it is a false page.
#
# Usage: bench/alert_seeds.sh [N (default 20)] [SEED...]
#   BIN=build/bench/alert_replay  NODES=16  WATCH=60 (minutes evaluated after each start)
#   INCIDENTS="thermal@2h/4h driver-upgrade@10h/6h" (offsets from the played day's start)
#   e.g. INCIDENTS=healthy-upgrade@10h WATCH=360: bad_rollout's false pages on a rollout
set -euo pipefail
bin=${BIN:-build/bench/alert_replay}
n=${1:-20}
shift || true
seeds=("$@")
while ((${#seeds[@]} < n)); do seeds+=($(($(od -An -N4 -tu4 /dev/urandom) % 1000000))); done
echo "seeds: ${seeds[*]}"
out=$(mktemp /tmp/gpulse-alert-seeds.XXXXXX)
trap 'rm -f "$out"' EXIT
for seed in "${seeds[@]}"; do
  incidents=()
  for spec in ${INCIDENTS:-thermal@2h/4h driver-upgrade@10h/6h}; do incidents+=(--incident "$spec"); done
  "$bin" --nodes "${NODES:-16}" --seed "$seed" --live-days 1 --watch "${WATCH:-60}" "${incidents[@]}" 2>/dev/null |
    sed -n "s/^incident \([a-z-]*\)-1 .*: \(.*\)$/$seed \1 \2/p; s/^control \([a-z-]*\)-1 .*: \([0-9]*\) firings.*/$seed control \2/p; s/^firings no incident explains: \(.*\)/$seed unexplained \1/p" |
    tee -a "$out"
done
awk '
  $2 == "unexplained" { false_pages += $3; next }
  $2 == "control" { controls++; control_pages += $3; if ($3 > 0) paged++; next }
  { seen[$2]++ }
  $3 == "detected" { t = $5; times[$2] = times[$2] " " t; if (t <= 15) within[$2]++; by[$2 " " $8]++ }
  END {
    for (k in seen)
      printf "%s: %d of %d within 15 minutes; minutes to detect:%s\n", k, within[k], seen[k], times[k]
    for (k in by) printf "  %s first: %d\n", k, by[k]
    if (controls) printf "controls: %d of %d paged, %d firings during them\n", paged, controls, control_pages
    printf "firings no incident explains: %d\n", false_pages
  }' "$out"
