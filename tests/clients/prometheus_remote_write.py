#!/usr/bin/env python3
"""Prometheus 2.42 (Debian's) remote-writing to the real `gpulse serve`.

A small exporter in this process serves a real dcgm-exporter scrape
(../shared/data/real/dcgm_exporter/scrapes/, 8 H100s, GPU 0 running a pod);
Prometheus scrapes it every second and remote-writes to gpulse's
/api/v1/write?measurement=dcgm. Half way, GPU 7's lines leave the scrape, so
Prometheus sends stale markers for its series.

Then every sample Prometheus holds up to an instant T (its own answer to
{__name__=~".+"}[10m] at T, which includes its synthetic up and scrape_*
series) must be in gpulse, and nothing else: the same metric, labels,
millisecond timestamp and value. gpulse keeps the attribution labels (pod,
namespace, container) as string fields of the GPU's point: they are read back
as labels for the comparison (docs/prometheus-mapping.md). The stale markers
must be counted by gpulse's /metrics and not stored.

Usage: prometheus_remote_write.py PATH/TO/gpulse   (ctest -L clients runs it)
Skips (exit 0) when /usr/bin/prometheus is absent; .ci/deps installs it.
"""

import json
import os
import shutil
import sys
import tempfile
import time
import urllib.parse

from processes import Exporter, Process, free_port, http_get, prometheus_config, start_gpulse

HERE = os.path.dirname(os.path.abspath(__file__))
SCRAPE = os.path.join(HERE, "..", "..", "..", "shared", "data", "real", "dcgm_exporter", "scrapes",
                      "nvidia-aicr_H100x8_k8s-pod-labels_sampled.prom")
PROMETHEUS = "/usr/bin/prometheus"
ATTRIBUTION = {"pod", "namespace", "container", "pod_uid"}


def fail(message):
    raise SystemExit("prometheus_remote_write: " + message)


class GpuScrape:
    """Serves the scrape file on /metrics; without_gpu7() drops GPU 7's lines."""

    def __init__(self, path):
        with open(path) as f:
            self.full = f.read()
        self.body = self.full
        self.exporter = Exporter(lambda: self.body)
        self.port = self.exporter.port

    def without_gpu7(self):
        self.body = "".join(l for l in self.full.splitlines(True) if 'gpu="7"' not in l)

    def stop(self):
        self.exporter.stop()


def prometheus_samples(base, t):
    """(metric, labels, ms, value) of every sample Prometheus holds in (t-10m, t]."""
    q = urllib.parse.urlencode({"query": '{__name__=~".+"}[10m]', "time": f"{t:.3f}"})
    status, text = http_get(f"{base}/api/v1/query?{q}")
    if status != 200:
        fail(f"Prometheus answered {status}: {text[:300]}")
    out = set()
    for series in json.loads(text)["data"]["result"]:
        labels = dict(series["metric"])
        name = labels.pop("__name__")
        key = tuple(sorted(labels.items()))
        for ts, value in series["values"]:
            out.add((name, key, round(float(ts) * 1000), float(value)))
    return out


def gpulse_samples(base, t):
    """The same from gpulse: each float field of a point is a sample, its
    string fields (attribution) labels of the point's samples."""
    q = f"SELECT * FROM dcgm WHERE time <= {round(t * 1000)}ms GROUP BY *"
    status, text = http_get(f"{base}/query?" + urllib.parse.urlencode({"q": q, "epoch": "ms"}))
    if status != 200:
        fail(f"gpulse answered {status}: {text[:300]}")
    result = json.loads(text)["results"][0]
    if "error" in result:
        fail("gpulse: " + result["error"])
    out = set()
    for series in result.get("series", []):
        columns = series["columns"]
        for row in series["values"]:
            labels = {k: v for k, v in series.get("tags", {}).items() if v != ""}
            for c, v in zip(columns[1:], row[1:]):
                if isinstance(v, str):
                    labels[c] = v
            key = tuple(sorted(labels.items()))
            for c, v in zip(columns[1:], row[1:]):
                if v is None or isinstance(v, str):
                    continue
                if c in ATTRIBUTION:
                    fail(f"attribution field {c} holds a number")
                out.add((c, key, row[0], float(v)))
    return out


def wait_for_scrapes(base, n):
    """Until Prometheus has scraped the exporter n times (30 s at most)."""
    q = urllib.parse.urlencode({"query": "count_over_time(up[10m])"})
    deadline = time.time() + 30
    while time.time() < deadline:
        status, text = http_get(f"{base}/api/v1/query?{q}")
        if status == 200:
            result = json.loads(text)["data"]["result"]
            if result and float(result[0]["value"][1]) >= n:
                return
        time.sleep(0.25)
    fail(f"Prometheus did not scrape the exporter {n} times within 30 s")


def stale_markers(base):
    _, text = http_get(f"{base}/metrics")
    for line in text.splitlines():
        if line.startswith("gpulse_remote_write_stale_markers_total "):
            return float(line.split()[1])
    fail("gpulse's /metrics has no gpulse_remote_write_stale_markers_total")


def main():
    if len(sys.argv) != 2:
        fail("usage: prometheus_remote_write.py PATH/TO/gpulse")
    if not os.path.exists(PROMETHEUS):
        print("prometheus not installed: skipped")
        return
    gpulse = sys.argv[1]
    if not os.path.exists(SCRAPE):
        fail(f"{SCRAPE} is missing (the shared data folder beside the checkout)")
    work = tempfile.mkdtemp(prefix="gpulse-promrw-")
    procs = []
    exporter = GpuScrape(SCRAPE)
    try:
        gbase, server = start_gpulse(gpulse, os.path.join(work, "g"), work)
        procs.append(server)
        pport = free_port()
        pbase = f"http://127.0.0.1:{pport}"
        config = prometheus_config(work, [exporter.port], f"{gbase}/api/v1/write?measurement=dcgm")
        procs.append(Process("prometheus", [
            PROMETHEUS, "--config.file", config, "--storage.tsdb.path", os.path.join(work, "p"),
            "--web.listen-address", f"127.0.0.1:{pport}"],
            os.path.join(work, "prometheus.log"), pbase + "/-/ready"))
        # Prometheus applies its targets about 5 s after it starts.
        wait_for_scrapes(pbase, 4)  # of all eight GPUs
        exporter.without_gpu7()
        wait_for_scrapes(pbase, 7)  # GPU 7's series have ended: stale markers
        t = time.time() - 1
        theirs = prometheus_samples(pbase, t)
        # Remote write runs behind the scrapes by up to its batch deadline.
        deadline = time.time() + 30
        while True:
            ours = gpulse_samples(gbase, t)
            if ours == theirs or time.time() > deadline:
                break
            time.sleep(0.5)
        missing, extra = sorted(theirs - ours), sorted(ours - theirs)
        for what, rows in (("missing from gpulse", missing), ("in gpulse only", extra)):
            for r in rows[:10]:
                print(f"{what}: {r}")
        if missing or extra:
            fail(f"{len(missing)} samples missing from gpulse, {len(extra)} in gpulse only "
                 f"(of {len(theirs)}); logs in {work}")
        # Staleness arrives with the scrape after GPU 7 left, batched like the rest.
        deadline = time.time() + 15
        while stale_markers(gbase) == 0 and time.time() < deadline:
            time.sleep(0.5)
        markers = stale_markers(gbase)
        if markers == 0:
            fail("no stale marker reached gpulse after GPU 7 left the scrape")
        print(f"prometheus_remote_write: {len(theirs)} samples of "
              f"{len({(n, k) for n, k, _, _ in theirs})} series equal in Prometheus and gpulse; "
              f"{markers:.0f} stale markers counted")
    finally:
        for p in reversed(procs):
            p.stop()
        exporter.stop()
    if os.environ.get("KEEP") is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
