#!/usr/bin/env python3
"""A node's history backfilled, and its live points forwarded, to the other
receivers users put behind gpulse: Debian's Prometheus with its
remote-write receiver on, and vmagent relaying to victoria-metrics.

A `gpulse serve` node with no target takes two simulated hours (16 GPUs).
It is restarted with two remote_write targets, both labelled site="A":
  - "prom", a Prometheus 2.42 started with --web.enable-remote-write-receiver
    (and an out-of-order window, so that history older than what it holds
    is taken), only the gpu and node measurements and only the fields util,
    power and gpu_count (the measurements and fields filters);
  - "relay", a vmagent that relays to victoria-metrics, everything, over
    TLS: vmagent serves https with a certificate for 127.0.0.1 signed by a
    CA made here with openssl, which the target names as its ca_file;
  - "trend", victoria-metrics directly, the 5-minute tier only, its first
    run four hours back: it sends the two hours' buckets at once, and the
    third hour's arrive after their buckets were due, so a backfill sends
    them (the documented remedy for late points); then every bucket's value
    in victoria-metrics is the node's mean of it (InfluxQL's mean() GROUP BY
    time(5m)), stamped a second before the bucket ends;
  - "untrusted", the same vmagent without the CA: every send fails the
    certificate check and is retried (counted, nothing sent, nothing
    dropped), and its backfill fails after its retries, naming the reason.
A third hour is then simulated and forwarded as it is written, and
`gpulse backfill` sends everything from the first hour to now to each
target, half an hour a step (overlapping what went live, which the
receivers keep once). Afterwards every sample the node holds, series by series, is in
Prometheus (of the metrics it was to get) and in victoria-metrics (all of
them), counted as forward_vm.py counts them; a backfill of a target not
configured fails with exit status 1, naming it.

Usage: forward_receivers.py PATH/TO/gpulse   (ctest runs it with Debian's
/usr/bin/python3)
Skips (exit 0) when /usr/bin/prometheus, vmagent or victoria-metrics is
absent; .ci/deps installs them.
"""

import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

from forward_vm import Node, check_sent, fail, start_vm
from processes import Process, free_port, http_get

PROMETHEUS = "/usr/bin/prometheus"
VMAGENT = "/usr/bin/vmagent"
PROM_METRICS = {"gpu_util", "gpu_power", "node_gpu_count"}


def start_prometheus(work, port):
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write("storage:\n  tsdb:\n    out_of_order_time_window: 1d\n")
    return Process("prometheus",
                   [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={work}/prom",
                    f"--web.listen-address=127.0.0.1:{port}", "--web.enable-remote-write-receiver",
                    "--log.level=warn"],
                   os.path.join(work, "prometheus.log"), f"http://127.0.0.1:{port}/-/ready")


def make_certificates(work):
    """A CA, and a certificate for 127.0.0.1 it signed: (ca, cert, key) paths."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=work)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=gpulse test CA")
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(work, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    return tuple(os.path.join(work, f) for f in ("ca.pem", "server.pem", "server.key"))


def start_vmagent(work, port, vm_url, ca, cert, key):
    return Process("vmagent",
                   [VMAGENT, f"-httpListenAddr=127.0.0.1:{port}", "-tls",
                    f"-tlsCertFile={cert}", f"-tlsKeyFile={key}",
                    f"-remoteWrite.url={vm_url}/api/v1/write",
                    f"-remoteWrite.tmpDataPath={work}/vmagent", "-remoteWrite.flushInterval=100ms",
                    "-loggerLevel=ERROR"],
                   os.path.join(work, "vmagent.log"), f"https://127.0.0.1:{port}/health",
                   context=ssl.create_default_context(cafile=ca))


def target_metric(node, name, target):
    status, body = http_get(node.base + "/metrics")
    for line in body.splitlines():
        if line.startswith(f'{name}{{target="{target}"}} '):
            return float(line.rsplit(" ", 1)[1])
    fail(f"/metrics has no {name} of {target}")


def backfill(gpulse, node, target, start, end=None):
    """`gpulse backfill` of [start, end) (end: now) in steps of 30 minutes."""
    return subprocess.run([gpulse, "backfill", "--url", node.base, "--target", target,
                           "--from", str(start), "--step", "30m"] +
                          ([] if end is None else ["--to", str(end)]),
                          capture_output=True, text=True, timeout=300)


def check_trend(node, vm_url, first, end):
    """victoria-metrics' gpu_util{site="T"} is the node's 5-minute means
    (InfluxQL shows the db tag as the database, not as a tag: left out)."""
    want = {}
    q = (f"SELECT mean(util) FROM gpu WHERE time >= {first}s AND time < {end}s "
         "GROUP BY time(5m), * fill(none)")
    status, body = http_get(f"{node.base}/query?" +
                            urllib.parse.urlencode({"q": q, "db": "gpulse", "epoch": "s"}))
    if status != 200:
        fail(f"the node answered {status} to {q}: {body[:300]}")
    for series in json.loads(body)["results"][0].get("series", []):
        tags = tuple(sorted(series.get("tags", {}).items()))
        for t, mean in series["values"]:
            want[(tags, int(t) + 299)] = mean
    status, body = http_get(vm_url + "/api/v1/export?" + urllib.parse.urlencode(
        {"match[]": 'gpu_util{site="T"}', "start": str(first), "end": str(end)}))
    if status != 200:
        fail(f"victoria-metrics' export answered {status}: {body[:300]}")
    got = {}
    for line in body.splitlines():
        row = json.loads(line)
        tags = tuple(sorted((k, v) for k, v in row["metric"].items()
                            if k not in ("__name__", "site", "db")))
        for ms, value in zip(row["timestamps"], row["values"]):
            got[(tags, ms // 1000)] = value
    if not want or set(got) != set(want):
        fail(f"the tier target: {len(want)} buckets held, victoria-metrics has {len(got)}; "
             f"missing {sorted(set(want) - set(got))[:3]}, extra {sorted(set(got) - set(want))[:3]}")
    wrong = [(k, want[k], got[k]) for k in want if abs(want[k] - got[k]) > 1e-9 * abs(want[k])]
    if wrong:
        fail(f"the tier target: {len(wrong)} buckets differ from the node's means: {wrong[:3]}")
    print(f"forward_receivers: the 5-minute tier of gpu_util, {len(want)} buckets, in "
          "victoria-metrics as the node's means")


def main():
    gpulse = sys.argv[1]
    for binary in (PROMETHEUS, VMAGENT, "/usr/bin/victoria-metrics"):
        if not os.path.exists(binary):
            print(f"forward_receivers: skipped, no {binary}")
            return
    work = tempfile.mkdtemp(prefix="gpulse-receivers-")
    started, node = [], None
    try:
        vm_port, prom_port, agent_port = free_port(), free_port(), free_port()
        vm_url = f"http://127.0.0.1:{vm_port}"
        prom_url = f"http://127.0.0.1:{prom_port}"
        started.append(start_vm(work, vm_port))
        started.append(start_prometheus(work, prom_port))
        ca, cert, key = make_certificates(work)
        started.append(start_vmagent(work, agent_port, vm_url, ca, cert, key))

        node = Node(gpulse, work, "A", {"storage": {"tiers": ["5m", "1h", "1d"]}})
        # The three hours before the current one: the receiver's out-of-order
        # window reaches them.
        first = (int(time.time()) // 3600 - 3) * 3600
        node.simulate(seed=7, start=first, hours=2, first_region=0)
        node.proc.stop()
        node.settings["remote_write"] = [
            {"name": "prom", "url": prom_url + "/api/v1/write", "labels": {"site": "A"},
             "measurements": ["gpu", "node"], "fields": ["util", "power", "gpu_count"]},
            {"name": "relay", "url": f"https://127.0.0.1:{agent_port}/api/v1/write",
             "tls": {"ca_file": ca}, "labels": {"site": "A"}},
            {"name": "trend", "url": vm_url + "/api/v1/write", "resolution": "5m",
             "lag_minutes": 0, "backfill_hours": 4, "measurements": ["gpu"],
             "labels": {"site": "T"}},
            {"name": "untrusted", "url": f"https://127.0.0.1:{agent_port}/api/v1/write",
             "labels": {"site": "U"}}]
        node.start()
        node.simulate(seed=8, start=first + 2 * 3600, hours=1, first_region=0)

        done = backfill(gpulse, node, "trend", first + 2 * 3600, first + 3 * 3600)
        if done.returncode != 0:
            fail(f"gpulse backfill --target trend exited {done.returncode}: {done.stderr}")
        # Up to now: the points the node took before its restart, whatever
        # their time (the simulator's last events come after its hours);
        # what the live forwarding sent too, which the receivers keep once.
        for target in ("prom", "relay"):
            done = backfill(gpulse, node, target, first)
            steps = [line for line in done.stdout.splitlines() if " samples in " in line]
            if done.returncode != 0 or len(steps) < 6:
                fail(f"gpulse backfill --target {target} exited {done.returncode} after "
                     f"{len(steps)} steps: {done.stdout}{done.stderr}")
            print(f"forward_receivers: backfill of {target}: {done.stdout.splitlines()[-1]}")
        done = backfill(gpulse, node, "nobody", first, first + 3600)
        if done.returncode != 1 or '"nobody"' not in done.stderr or "go on with" not in done.stderr:
            fail(f"a backfill of an unknown target exited {done.returncode}: {done.stderr}")
        done = backfill(gpulse, node, "untrusted", first, first + 3600)
        if done.returncode != 1 or "certificate verify failed" not in done.stderr:
            fail(f"a backfill to a receiver whose CA is not given exited {done.returncode}: "
                 f"{done.stderr}")

        deadline = time.time() + 60
        while any(target_metric(node, "gpulse_forward_pending_bytes", t) > 0
                  for t in ("prom", "relay")):
            if time.time() > deadline:
                fail("the node did not send its log within 60 s")
            time.sleep(0.2)
        for t in ("prom", "relay", "untrusted"):
            if target_metric(node, "gpulse_forward_samples_dropped_total", t) != 0:
                fail(f"samples to {t} were dropped: " + open(node.proc.log_path).read()[-2000:])
        if target_metric(node, "gpulse_forward_samples_sent_total", "untrusted") != 0 or \
                target_metric(node, "gpulse_forward_sends_failed_total", "untrusted") == 0 or \
                target_metric(node, "gpulse_forward_pending_bytes", "untrusted") == 0:
            fail("the target without the CA sent, or did not count its failures")

        at = first + 3 * 3600
        span = 4 * 3600
        samples, series, _ = check_sent(node.base, "A", prom_url, at, span,
                                        names=PROM_METRICS)
        print(f"forward_receivers: Prometheus holds the node's {samples} samples of "
              f"{sorted(PROM_METRICS)} ({series} series)")
        # vmagent sends on its own time: wait until victoria-metrics has all.
        deadline = time.time() + 60
        while True:
            http_get(vm_url + "/internal/force_flush")
            try:
                samples, series, events = check_sent(node.base, "A", vm_url, at, span)
                break
            except SystemExit:
                if time.time() > deadline:
                    raise
                time.sleep(1)
        print(f"forward_receivers: victoria-metrics holds, through vmagent, all {samples} "
              f"samples ({series} series, and {events} of events)")
        check_trend(node, vm_url, first, at)
    finally:
        if node:
            node.proc.stop()
        for p in reversed(started):
            p.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("forward_receivers: ok")


if __name__ == "__main__":
    main()
