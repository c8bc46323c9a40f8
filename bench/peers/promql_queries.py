#!/usr/bin/env python3
"""PromQL against VictoriaMetrics on the peer harness's dashboard queries:
the same PromQL text, the same /api/v1/query or /api/v1/query_range request,
asked of a running VictoriaMetrics and a running `gpulse serve` that hold the
same data set.

The harness (../shared/bench/peers) asks VictoriaMetrics its queries in
MetricsQL; Q1, Q2, Q4, Q5 and Q6 are plain PromQL as written (Q3 uses
VictoriaMetrics' histogram_over_time and is left out). This script renders
each with the harness's own VictoriaMetrics adapter and sends the very same
request to gpulse (plus db=bench, the database gpulse holds the data set
under). It first checks that both answer the same series with the same
values (relative 1e-9), then times the rounds, VictoriaMetrics first and
gpulse second in each, and prints per query the median milliseconds of each
and the median of gpulse's time over VictoriaMetrics' in the same round.

The servers must already hold the data set: VictoriaMetrics loaded with
/write?precision=s, gpulse with /write?db=bench&precision=s.

Usage:
  python3 bench/peers/promql_queries.py --dataset /tmp/fleet/fleet-80x1.lp \\
      --vm-port 8428 --gpulse-port 8097 [--rounds 21] [--queries Q1,Q2]
"""

import argparse
import http.client
import json
import math
import os
import statistics
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.environ.get("GPULSE_PEERS_DIR",
                       os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "bench", "peers")))
sys.path.insert(0, PEERS)

import systems  # noqa: E402
import workload  # noqa: E402

PROMQL_QUERIES = "Q1,Q2,Q4,Q5,Q6"


def answer(conn, path):
    # A server may close a keep-alive connection left idle past its timeout
    # (gpulse's read_timeout, 30 s; the other server's Q6 can take longer at
    # 100,000 GPUs): the GET is sent again on a new connection, as Go's and
    # browsers' clients do, and timed from there.
    for attempt in (1, 2):
        t0 = time.perf_counter()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            break
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            conn.close()
            if attempt == 2:
                raise
    body = resp.read()
    elapsed = time.perf_counter() - t0
    if resp.status != 200:
        raise SystemExit("%s: HTTP %d %s" % (path, resp.status, body[:300]))
    return elapsed, json.loads(body)["data"]


def points(data):
    """{(labels, time): value} of a vector or matrix answer."""
    out = {}
    for s in data["result"]:
        labels = tuple(sorted(s["metric"].items()))
        for t, v in s.get("values") or [s["value"]]:
            out[(labels, float(t))] = float(v)
    return out


def same(a, b):
    if a.keys() != b.keys():
        return False
    for k, x in a.items():
        y = b[k]
        if not (x == y or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-9 * max(abs(x), abs(y))):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True, help="the .lp file the servers hold (with its .meta.json)")
    ap.add_argument("--vm-port", type=int, default=8428)
    ap.add_argument("--gpulse-port", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=21, help="timed rounds (one untimed first)")
    ap.add_argument("--queries", default=PROMQL_QUERIES)
    args = ap.parse_args()

    ds = workload.Dataset.load(args.dataset)
    specs = [s for s in workload.query_specs(ds) if s.qid in args.queries.split(",")]
    vm = systems.VictoriaMetrics.__new__(systems.VictoriaMetrics)  # only its query renderer is used
    conns = {"vm": http.client.HTTPConnection("127.0.0.1", args.vm_port),
             "gpulse": http.client.HTTPConnection("127.0.0.1", args.gpulse_port)}
    paths = {}
    for spec in specs:
        nq = vm.render_query(spec, ds)
        query = nq.path + "?" + urllib.parse.urlencode(nq.params)
        paths[spec.qid] = {"vm": query, "gpulse": query + "&db=bench"}
        _, a = answer(conns["vm"], paths[spec.qid]["vm"])
        _, b = answer(conns["gpulse"], paths[spec.qid]["gpulse"])
        pa, pb = points(a), points(b)
        print("%s  %s\n      %d points from VictoriaMetrics, %d from gpulse: %s" % (
            spec.qid, nq.display, len(pa), len(pb), "equal" if same(pa, pb) else "DIFFERENT"))

    times = {(s.qid, n): [] for s in specs for n in ("vm", "gpulse")}
    ratios = {s.qid: [] for s in specs}
    for rnd in range(args.rounds + 1):
        for spec in specs:
            got = {name: answer(conns[name], paths[spec.qid][name])[0] for name in ("vm", "gpulse")}
            if rnd == 0:
                continue
            for name, dt in got.items():
                times[(spec.qid, name)].append(dt)
            ratios[spec.qid].append(got["gpulse"] / got["vm"])
    print("query   VM ms  gpulse ms  gpulse/VM")
    for spec in specs:
        q = spec.qid
        print("%-5s %7.2f  %9.2f  %8.2fx" % (q, 1000 * statistics.median(times[(q, "vm")]),
                                            1000 * statistics.median(times[(q, "gpulse")]),
                                            statistics.median(ratios[q])))


if __name__ == "__main__":
    main()
