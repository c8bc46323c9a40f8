#!/usr/bin/env bash
# The InfluxDB 1.x command-line client (`influx`, Debian's influxdb-client)
# against the real `gpulse serve`: points written with curl to
# /write?db=fleet, then read back with `influx -execute` in csv, json and
# column formats, with -precision rfc3339 and s, SHOW statements, a parse
# error and a failing statement (exit status 1 and the server's message), and
# after a restart with tokens, -username/-password (Basic auth) against the
# same data. Every answer is compared exactly with the text expected here.
#
# The CLI pings /ping first, then POSTs /query?chunked=true&db=..&epoch=..&q=..
# with an empty body.
#
# Usage: run_influx_cli.sh PATH/TO/gpulse       (ctest -L clients runs it)
# Skips (exit 0) when /usr/bin/influx is absent; .ci/deps installs it.
set -euo pipefail
gpulse=${1:?usage: run_influx_cli.sh PATH/TO/gpulse}
influx=/usr/bin/influx
if [ ! -e "$influx" ]; then
  echo "influx CLI not installed: skipped"
  exit 0
fi
[ -x "$gpulse" ] || { echo "run_influx_cli: $gpulse is not an executable" >&2; exit 1; }
for tool in curl python3; do
  command -v "$tool" >/dev/null ||
    { echo "run_influx_cli: '$tool' is missing; install it (.ci/deps installs curl)" >&2; exit 1; }
done
version=$("$influx" -version) || { echo "run_influx_cli: $influx -version failed" >&2; exit 1; }
[[ "$version" == "InfluxDB shell version: 1."* ]] ||
  { echo "run_influx_cli: $influx is not the 1.x CLI: $version" >&2; exit 1; }
echo "== $version"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-influx-cli-XXXXXX")
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

fail() {
  echo "run_influx_cli: $*" >&2
  echo "--- gpulse serve stderr:" >&2
  cat "$scratch"/serve*.err >&2 2>/dev/null || true
  exit 1
}

# The CLI reads credentials from these; keep the caller's out of the test.
unset INFLUX_USERNAME INFLUX_PASSWORD
export HOME="$scratch"  # nothing of the CLI's lands in the real home

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

start_server() {  # name [extra serve args...]
  local name=$1
  shift
  "$gpulse" serve --data "$scratch/data" --listen "127.0.0.1:$port" "$@" 2>"$scratch/serve-$name.err" &
  pid=$!
  local code=""
  for _ in $(seq 150); do  # 15 s at most
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$base/ping" || true)
    [ "$code" = 204 ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "gpulse serve ($name) exited before answering /ping"
    sleep 0.1
  done
  fail "GET /ping did not answer 204 within 15 s ($name)"
}

stop_server() {
  kill -TERM "$pid"
  for _ in $(seq 100); do  # 10 s at most
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && fail "gpulse serve still running 10 s after SIGTERM"
  local status=0
  wait "$pid" || status=$?
  pid=""
  [ "$status" = 0 ] || fail "gpulse serve exited with status $status after SIGTERM"
}

checks=0
# check NAME STATUS [influx args...] <<< expected stdout: runs the CLI against
# database fleet; its exit status must be STATUS and its stdout the expected
# text exactly (trailing blanks of each line aside: the column format pads).
check() {
  local name=$1 want_status=$2
  shift 2
  local expected="$scratch/$name.expected" actual="$scratch/$name.out" status=0
  cat >"$expected"
  timeout 30 "$influx" -host 127.0.0.1 -port "$port" -database fleet "$@" \
    >"$actual" 2>"$scratch/$name.err" || status=$?
  sed -i 's/[[:blank:]]*$//' "$actual"
  if [ "$status" != "$want_status" ] || ! diff -u "$expected" "$actual" >"$scratch/$name.diff"; then
    echo "--- influx $*" >&2
    echo "--- exit status $status (expected $want_status); stdout diff (- expected, + actual):" >&2
    cat "$scratch/$name.diff" >&2
    echo "--- stderr:" >&2
    cat "$scratch/$name.err" >&2
    fail "check '$name' failed"
  fi
  checks=$((checks + 1))
  echo "ok $name"
}

echo "== gpulse serve on $base"
start_server plain

echo "== curl: /write?db=fleet&precision=s, and one point in db=other"
write() {  # db body [curl args...]
  local db=$1 body=$2
  shift 2
  local code
  code=$(curl -sS -o "$scratch/write.out" -w '%{http_code}' --max-time 10 "$@" \
    -XPOST "$base/write?db=$db&precision=s" --data-binary "$body") || fail "curl write to $db failed"
  [ "$code" = 204 ] || fail "write to $db answered $code: $(cat "$scratch/write.out")"
}
write fleet 'gpu,node=a,sku=H100 util=10i,temp_c=50.5 1704067200
gpu,node=a,sku=H100 util=20i,temp_c=52 1704067260
gpu,node=b,sku=A100 util=30i,temp_c=61.5 1704067200
gpu,node=b,sku=A100 util=50i 1704067260
cpu,host=h1 load=0.25 1704067200'
write other 'gpu,node=z,sku=L4 util=99i 1704067200'

echo "== influx -execute"
# (The CLI's csv writer repeats the header before each tagged series.)
check mean_csv 0 -execute 'SELECT mean(util) FROM gpu GROUP BY node' -format csv <<'EOF'
name,tags,time,mean
gpu,node=a,0,15
name,tags,time,mean
gpu,node=b,0,40
EOF

check mean_json 0 -execute 'SELECT mean(util) FROM gpu GROUP BY node' -format json <<'EOF'
{"results":[{"series":[{"name":"gpu","tags":{"node":"a"},"columns":["time","mean"],"values":[[0,15]]},{"name":"gpu","tags":{"node":"b"},"columns":["time","mean"],"values":[[0,40]]}]}]}
EOF

check buckets_rfc3339 0 -precision rfc3339 -format csv -execute \
  "SELECT mean(util) FROM gpu WHERE time >= '2024-01-01T00:00:00Z' AND time < '2024-01-01T00:03:00Z' GROUP BY time(1m), node" <<'EOF'
name,tags,time,mean
gpu,node=a,2024-01-01T00:00:00Z,10
gpu,node=a,2024-01-01T00:01:00Z,20
gpu,node=a,2024-01-01T00:02:00Z,
name,tags,time,mean
gpu,node=b,2024-01-01T00:00:00Z,30
gpu,node=b,2024-01-01T00:01:00Z,50
gpu,node=b,2024-01-01T00:02:00Z,
EOF

check raw_column_rfc3339 0 -precision rfc3339 -execute "SELECT util, temp_c FROM gpu WHERE node = 'b'" <<'EOF'
name: gpu
time                 util temp_c
----                 ---- ------
2024-01-01T00:00:00Z 30   61.5
2024-01-01T00:01:00Z 50
EOF

check raw_ns_csv 0 -format csv -execute "SELECT util FROM gpu WHERE sku = 'H100'" <<'EOF'
name,time,util
gpu,1704067200000000000,10
gpu,1704067260000000000,20
EOF

check raw_s_json 0 -precision s -format json -execute "SELECT temp_c FROM gpu GROUP BY sku" <<'EOF'
{"results":[{"series":[{"name":"gpu","tags":{"sku":"A100"},"columns":["time","temp_c"],"values":[[1704067200,61.5]]},{"name":"gpu","tags":{"sku":"H100"},"columns":["time","temp_c"],"values":[[1704067200,50.5],[1704067260,52]]}]}]}
EOF

check show_measurements 0 -execute 'SHOW MEASUREMENTS' -format csv <<'EOF'
name,name
measurements,cpu
measurements,gpu
EOF

check show_measurements_column 0 -execute 'SHOW MEASUREMENTS' <<'EOF'
name: measurements
name
----
cpu
gpu
EOF

check show_databases 0 -execute 'SHOW DATABASES' -format csv <<'EOF'
name,name
databases,fleet
databases,other
EOF

check show_keys 0 -format csv -execute 'SHOW TAG KEYS FROM gpu; SHOW FIELD KEYS; SHOW TAG VALUES FROM gpu WITH KEY = sku' <<'EOF'
name,tagKey
gpu,node
gpu,sku
name,fieldKey,fieldType
cpu,load,float
name,fieldKey,fieldType
gpu,temp_c,float
gpu,util,integer
name,key,value
gpu,sku,A100
gpu,sku,H100
EOF

# A query that does not parse: HTTP 400; the CLI prints the server's message.
check parse_error 1 -execute 'SELEC util FROM gpu' <<'EOF'
ERR: error parsing query: line 1, column 1: expected SELECT, SHOW, EXPLAIN, DELETE, DROP, CREATE, NORTHSTAR, DECOMPOSE, ANOMALIES or ROLLOUTS, found SELEC
EOF

# One failing statement among three: the others answer, the CLI exits 1.
check statement_error 1 -format csv -execute "SELECT util FROM gpu WHERE node = 'a'; SELECT util FROM gpu WHERE util =~ /x/; SELECT count(util) FROM gpu" <<'EOF'
name,time,util
gpu,1704067200000000000,10
gpu,1704067260000000000,20
name,time,count
gpu,0,4
ERR: line 1, column 67: 'util' is an integer field; =~ and !~ match strings (tags and string fields)
EOF

echo "== restart with tokens: -username/-password (Basic auth) on the same data"
stop_server
cat >"$scratch/gpulse.json" <<'EOF'
{"auth": {"tokens": [
  {"name": "grafana", "token": "read-fleet-token", "read": ["fleet"], "write": []}
]}}
EOF
start_server tokens --config "$scratch/gpulse.json"

check auth_read 0 -username grafana -password read-fleet-token -format csv \
  -execute 'SELECT mean(util) FROM gpu GROUP BY node' <<'EOF'
name,tags,time,mean
gpu,node=a,0,15
name,tags,time,mean
gpu,node=b,0,40
EOF

check auth_missing 1 -format csv -execute 'SELECT mean(util) FROM gpu GROUP BY node' <<'EOF'
ERR: authentication required: send "Authorization: Token <token>"
EOF

check auth_wrong_db 1 -username grafana -password read-fleet-token -format csv \
  -database other -execute 'SELECT mean(util) FROM gpu' <<'EOF'
ERR: this token may not read database other (it may read fleet)
EOF

stop_server
grep -q "gpulse: stopped cleanly" "$scratch/serve-tokens.err" || fail "stderr does not say it stopped cleanly"
echo "run_influx_cli: OK ($checks answers of the influx 1.x CLI as expected, clean stops)"
