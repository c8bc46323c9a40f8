#!/usr/bin/env bash
# Real third-party clients against the real `gpulse serve` process: the npm
# InfluxDB 2.x client (influx_v2_client.mjs, 3 points) and curl with InfluxDB
# 1.x writes, plain and gzip (curl_v1_write.sh, 4 points). Then the server's
# /metrics must count exactly the 7 points, and SIGTERM must stop it with exit
# status 0. Needs node, npm (with access to the npm registry, or a filled npm
# cache) and curl.
#
# Usage: run_clients.sh PATH/TO/gpulse          (ctest -L clients runs it)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gpulse=${1:?usage: run_clients.sh PATH/TO/gpulse}
[ -x "$gpulse" ] || { echo "run_clients: $gpulse is not an executable" >&2; exit 1; }
for tool in node npm curl python3 gzip; do
  command -v "$tool" >/dev/null ||
    { echo "run_clients: '$tool' is missing; install it (.ci/deps installs nodejs, npm, curl)" >&2; exit 1; }
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-clients-XXXXXX")
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

fail() {
  echo "run_clients: $*" >&2
  echo "--- gpulse serve stderr:" >&2
  cat "$scratch/serve.err" >&2 2>/dev/null || true
  exit 1
}

echo "== npm ci (@influxdata/influxdb-client, pinned in package-lock.json)"
timeout 180 npm ci --prefix "$here" --no-audit --no-fund --loglevel=error >"$scratch/npm.log" 2>&1 ||
  { cat "$scratch/npm.log" >&2; fail "npm ci failed"; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
echo "== gpulse serve on $base"
"$gpulse" serve --data "$scratch/data" --listen "127.0.0.1:$port" 2>"$scratch/serve.err" &
pid=$!
for _ in $(seq 150); do  # 15 s at most
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$base/ping" || true)
  [ "$code" = 204 ] && break
  kill -0 "$pid" 2>/dev/null || fail "gpulse serve exited before answering /ping"
  sleep 0.1
done
[ "$code" = 204 ] || fail "GET /ping did not answer 204 within 15 s"

echo "== @influxdata/influxdb-client (v2 write API)"
(cd "$here" && timeout 60 node influx_v2_client.mjs "$base") || fail "the npm client failed"

echo "== curl (v1 writes, plain and gzip)"
timeout 60 bash "$here/curl_v1_write.sh" "$port" || fail "the curl writes failed"

echo "== /metrics"
metrics=$(curl -sS --max-time 10 "$base/metrics") || fail "GET /metrics failed"
expect_metric() {  # name value
  grep -qx "$1 $2" <<<"$metrics" ||
    fail "expected '$1 $2' in /metrics, got: $(grep "^$1 " <<<"$metrics" || echo none)"
}
expect_metric gpulse_points_received_total 7
expect_metric gpulse_values_received_total 20  # 3 points x 4 fields + 4 points x 2 fields
expect_metric gpulse_lines_rejected_total 0

echo "== SIGTERM"
kill -TERM "$pid"
for _ in $(seq 100); do  # 10 s at most
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "gpulse serve still running 10 s after SIGTERM"
status=0
wait "$pid" || status=$?
pid=""
[ "$status" = 0 ] || fail "gpulse serve exited with status $status after SIGTERM"
grep -q "gpulse: stopped cleanly" "$scratch/serve.err" || fail "stderr does not say it stopped cleanly"
echo "run_clients: OK (7 points from 2 real clients, clean stop)"
