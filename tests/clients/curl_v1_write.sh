#!/usr/bin/env bash
# InfluxDB 1.x style writes with curl, as shell scripts and cron jobs send
# them: a plain body and a gzip body, each checked for 204.
# Usage: curl_v1_write.sh PORT    (4 points in all)
set -euo pipefail
port=${1:?usage: curl_v1_write.sh PORT}
url="http://127.0.0.1:${port}/write?db=x&precision=s"

expect_204() {  # $1: what was sent; stdin: curl's -i output
  local reply status
  reply=$(cat)
  # The first line, without a pipeline: bash writes a builtin's output a line at
  # a time, so `printf | head -n1` could die of SIGPIPE and, under pipefail and
  # set -e, fail this script without a word.
  status=${reply%%$'\n'*}
  status=${status%$'\r'}
  if [[ "$status" != "HTTP/1.1 204"* ]]; then
    echo "curl_v1_write: $1: expected 204, got: $reply" >&2
    exit 1
  fi
}

printf 'cpu,host=h1,region=eu usage=12.5,cores=8i 1704067200\ncpu,host=h2,region=eu usage=7.25,cores=16i 1704067200\n' |
  curl -sS -i --max-time 10 -XPOST "$url" --data-binary @- | expect_204 "plain write"

printf 'cpu,host=h1,region=eu usage=13.5,cores=8i 1704067260\ncpu,host=h2,region=eu usage=8.25,cores=16i 1704067260\n' |
  gzip -c |
  curl -sS -i --max-time 10 -XPOST "$url" -H 'Content-Encoding: gzip' --data-binary @- |
  expect_204 "gzip write"

echo "curl_v1_write: 2 writes (4 points) acknowledged"
