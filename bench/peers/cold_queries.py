#!/usr/bin/env python3
"""Times the peer harness's dashboard queries against a running `gpulse serve`
three ways, to separate the work a query does from what a CPU whose caches
hold other memory adds to it (the harness runs every gpulse query right after
another server's):

  warm    back to back
  pause   after 30 ms idle
  thrash  after writing 64 MiB (what another server's query leaves behind)

Prints the median milliseconds of each query in each way. The data must be the
harness's 80 nodes x 1 day set (gen_fleet.py, seed 42), loaded into database
`bench` (as run_with_gpulse.py loads it; `--keep` keeps its data directory).

Usage:
  build/gpulse serve --data DIR --listen 127.0.0.1:8094 &
  python3 bench/peers/cold_queries.py --port 8094 [--runs 30] [--queries Q1,Q5]
"""

import argparse
import http.client
import statistics
import time
import urllib.parse

RANGE = "time >= '2024-01-01T00:00:00Z' AND time < '2024-01-02T00:00:00Z'"
QUERIES = {
    "Q1": "SELECT mean(\"util\") FROM \"gpu\" WHERE \"node\" = 'use1-a-n001' AND "
          "time >= '2024-01-01T12:00:00Z' AND time < '2024-01-01T13:00:00Z' GROUP BY time(1m), \"gpu\"",
    "Q2": "SELECT mean(\"util\") FROM \"gpu\" WHERE %s GROUP BY time(1h)" % RANGE,
    "Q3": "SELECT percentile(\"util\", 95) FROM \"gpu\" WHERE %s GROUP BY time(1d), \"sku\"" % RANGE,
    "Q4": "SELECT max(\"temp_c\") FROM \"gpu\" WHERE %s GROUP BY time(5m), \"node\"" % RANGE,
    "Q5": "SELECT count(\"peak\") FROM (SELECT max(\"util\") AS \"peak\" FROM \"gpu\" WHERE %s "
          "GROUP BY time(15m), \"node\", \"gpu\") WHERE \"peak\" = 0 AND %s GROUP BY time(15m)"
          % (RANGE, RANGE),
    "Q6": "SELECT last(*) FROM \"gpu\" WHERE time >= '2024-01-01T23:00:00Z' AND "
          "time < '2024-01-02T00:00:00Z' GROUP BY *",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=8094)
    ap.add_argument("--runs", type=int, default=30, help="timed queries per query and way")
    ap.add_argument("--queries", default="Q1,Q2,Q3,Q4,Q5,Q6")
    ap.add_argument("--db", default="bench")
    args = ap.parse_args()

    conn = http.client.HTTPConnection("127.0.0.1", args.port)

    def run(qid):
        path = "/query?" + urllib.parse.urlencode({"db": args.db, "epoch": "s", "q": QUERIES[qid]})
        t0 = time.perf_counter()
        conn.request("GET", path)
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise SystemExit("%s: HTTP %d" % (qid, resp.status))
        return time.perf_counter() - t0

    qids = args.queries.split(",")
    for qid in qids:  # warm-up: every window decoded once
        run(qid)
    print("query   warm ms  pause ms  thrash ms")
    for qid in qids:
        medians = []
        for way in ("warm", "pause", "thrash"):
            times = []
            for _ in range(args.runs):
                if way == "pause":
                    time.sleep(0.03)
                elif way == "thrash":
                    b"\x01" * (64 << 20)  # 64 MiB written
                times.append(run(qid))
            medians.append(statistics.median(times) * 1000)
        print("%-5s %9.2f %9.2f %10.2f" % (qid, *medians))


if __name__ == "__main__":
    main()
