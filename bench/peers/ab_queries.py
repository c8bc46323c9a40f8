#!/usr/bin/env python3
"""Compares two running `gpulse serve` builds on the peer harness's six
dashboard queries, in the harness's own pattern, in about a minute.

The harness (../shared/bench/peers) asks VictoriaMetrics a query, then gpulse
the same query (the order flipping each round), so each gpulse query runs on
caches the other server has just filled; a full harness run takes minutes and
its ratios swing by 20% from run to run. This script keeps both servers
loaded, and in every round asks VictoriaMetrics and then builds A and B in
turn (the order of A and B flipping too), so both builds see the same machine
at the same moments. The build asked second then runs on code the first just
warmed, which flatters small queries; --each-after-vm asks VictoriaMetrics
before each build instead (VM A VM B: the harness's own position, for both). It prints, per query, each build's median milliseconds
and its median ratio to VictoriaMetrics' time in the same round.

The queries are the harness's, for the data set given: its query texts
(InfluxQL for gpulse, MetricsQL for VictoriaMetrics) come from the harness's
own adapters. With --cpu PID_A,PID_B it also prints each server's CPU time
over the timed rounds, per round (utime + stime from /proc, which counts in
clock ticks: a figure for the whole round, not for each query).

The servers must already hold the data set: VictoriaMetrics loaded with
/write?precision=s, each gpulse with /write?db=bench&precision=s (for example
with `bench_peers.py --keep`, or any loader).

Usage:
  python3 bench/peers/ab_queries.py --dataset /tmp/fleet/fleet-80x1.lp \\
      --vm-port 8428 --a 8096 --b 8097 [--rounds 41] [--queries Q1,Q5] [--cpu 123,456]
"""

import argparse
import http.client
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


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", required=True, help="the .lp file the servers hold (with its .meta.json)")
    ap.add_argument("--vm-port", type=int, default=8428)
    ap.add_argument("--a", type=int, required=True, help="port of gpulse build A")
    ap.add_argument("--b", type=int, required=True, help="port of gpulse build B")
    ap.add_argument("--rounds", type=int, default=41, help="timed rounds (one untimed first)")
    ap.add_argument("--queries", default="Q1,Q2,Q3,Q4,Q5,Q6")
    ap.add_argument("--cpu", default="", help="PID_A,PID_B: also CPU time per query")
    ap.add_argument("--each-after-vm", action="store_true",
                    help="ask VictoriaMetrics before each build (VM A VM B), so that neither "
                         "build runs on code the other just warmed: for small queries")
    args = ap.parse_args()

    ds = workload.Dataset.load(args.dataset)
    specs = [s for s in workload.query_specs(ds) if s.qid in args.queries.split(",")]
    influx = systems.InfluxDB1.__new__(systems.InfluxDB1)  # only its query renderer is used
    influx.db = "bench"
    vm = systems.VictoriaMetrics.__new__(systems.VictoriaMetrics)
    conns = {name: http.client.HTTPConnection("127.0.0.1", port)
             for name, port in (("vm", args.vm_port), ("A", args.a), ("B", args.b))}
    requests = {}
    for spec in specs:
        for name, system in (("vm", vm), ("A", influx), ("B", influx)):
            nq = system.render_query(spec, ds)
            requests[(spec.qid, name)] = nq.path + "?" + urllib.parse.urlencode(nq.params)

    def ask(name, qid):
        conn = conns[name]
        t0 = time.perf_counter()
        conn.request("GET", requests[(qid, name)])
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise SystemExit("%s %s: HTTP %d" % (name, qid, resp.status))
        return time.perf_counter() - t0

    pids = [int(p) for p in args.cpu.split(",")] if args.cpu else []
    times = {(s.qid, n): [] for s in specs for n in ("vm", "A", "B")}
    ratios = {(s.qid, n): [] for s in specs for n in ("A", "B")}
    cpu_start = []
    for rnd in range(args.rounds + 1):
        if rnd == 1:
            cpu_start = [cpu_seconds(p) for p in pids]
        builds = ["A", "B"] if rnd % 2 == 0 else ["B", "A"]
        for spec in specs:
            got, vm_before = {}, {}
            if args.each_after_vm:
                for name in builds:
                    vm_before[name] = ask("vm", spec.qid)
                    got[name] = ask(name, spec.qid)
                got["vm"] = statistics.mean(vm_before.values())
            else:
                order = ["vm"] + builds if (rnd // 2) % 2 == 0 else builds + ["vm"]
                for name in order:
                    got[name] = ask(name, spec.qid)
            if rnd == 0:
                continue  # untimed: every window decoded once
            for name, dt in got.items():
                times[(spec.qid, name)].append(dt)
            for name in ("A", "B"):
                ratios[(spec.qid, name)].append(got[name] / vm_before.get(name, got["vm"]))

    cpu_used = [cpu_seconds(p) - c for p, c in zip(pids, cpu_start)]
    print("query   VM ms    A ms  A/VM    B ms  B/VM")
    for spec in specs:
        q = spec.qid
        print("%-5s %7.2f %7.2f %5.2fx %7.2f %5.2fx" % (
            q, 1000 * statistics.median(times[(q, "vm")]),
            1000 * statistics.median(times[(q, "A")]), statistics.median(ratios[(q, "A")]),
            1000 * statistics.median(times[(q, "B")]), statistics.median(ratios[(q, "B")])))
    if pids:
        print("server CPU a round (%s): A %.2f ms, B %.2f ms" % (
            ",".join(s.qid for s in specs), 1000 * cpu_used[0] / args.rounds,
            1000 * cpu_used[1] / args.rounds))


if __name__ == "__main__":
    main()
