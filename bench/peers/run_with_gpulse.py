#!/usr/bin/env python3
"""Runs the shared peer harness (../shared/bench/peers, read-only here) with
gpulse as its third system, answering the six dashboard queries.

The harness's own `own` adapter is a template whose queries are n/a. gpulse
speaks InfluxQL on /query in the InfluxDB 1.x JSON shape, so this adapter
reuses the InfluxDB 1.x adapter's query text and answer parser unchanged:
the same queries go to InfluxDB and to gpulse, and the harness checks both
against its reference evaluator.

Usage (every bench_peers.py option passes through):
  GPULSE_BIN=build-rel/gpulse python3 bench/peers/run_with_gpulse.py \
      --dataset /tmp/fleet/fleet-80x1.lp --systems influxdb,victoriametrics,own \
      --baseline victoriametrics --out-dir /tmp/peers-out --tag gpulse
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.environ.get("GPULSE_PEERS_DIR",
                       os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "bench", "peers")))
sys.path.insert(0, PEERS)

import bench_peers  # noqa: E402
import systems  # noqa: E402


class Gpulse(systems.OwnServer):
    """gpulse serve: writes with /write?db=bench, queries with /query?db=bench."""
    label = "gpulse (C++)"
    language = "InfluxQL (gpulse /query)"
    db = "bench"

    render_query = systems.InfluxDB1.render_query
    parse_answer = systems.InfluxDB1.parse_answer


def main():
    binary = os.path.abspath(os.environ.get("GPULSE_BIN", os.path.join(HERE, "..", "..", "build-rel", "gpulse")))
    os.environ.setdefault("OWN_TSDB_CMD", binary + " serve --listen 127.0.0.1:{port} --data {data}")
    os.environ.setdefault("OWN_TSDB_PORT", "8090")
    os.environ.setdefault("OWN_TSDB_READY", "/ping")
    os.environ.setdefault("OWN_TSDB_FLUSH", "/api/v1/compact")
    os.environ.setdefault("OWN_TSDB_VERSION", "gpulse")
    systems.SYSTEMS["own"] = Gpulse
    bench_peers.SYSTEMS["own"] = Gpulse
    return bench_peers.main()


if __name__ == "__main__":
    sys.exit(main())
