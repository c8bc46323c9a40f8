#!/usr/bin/env python3
"""Prometheus 2.42 (Debian's) remote-writing to, and remote-reading from,
the real `gpulse serve`.

A small exporter in this process serves a real dcgm-exporter scrape
(../shared/data/real/dcgm_exporter/scrapes/, 8 H100s, GPU 0 running a pod);
Prometheus A scrapes it every second and remote-writes to gpulse's
/api/v1/write?measurement=dcgm. Half way, GPU 7's lines leave the scrape, so
Prometheus sends stale markers for its series.

Remote write: every sample A holds up to an instant T (its own answer to
{__name__=~".+"}[10m] at T, which includes its synthetic up and scrape_*
series) must be in gpulse, and nothing else: the same metric, labels,
millisecond timestamp and value. gpulse keeps the attribution labels (pod,
namespace, container) as string fields of the GPU's point: they are read back
as labels for the comparison (docs/prometheus-mapping.md). The stale markers
must be counted by gpulse's /metrics and end GPU 7's series for PromQL.

Remote read: Prometheus B, with no target and a remote_read section pointed
at gpulse, answers PromQL over that data; its answers must equal A's, at T
and over the minute before it. And the raw answers of /api/v1/read, asked of
A and of gpulse alike, as SAMPLES and as STREAMED_XOR_CHUNKS, must hold the
same samples, stale markers included, bit for bit: the frames and XOR chunks
are read by this file's own decoder (written from the formats'
description), which A's chunks check as much as gpulse's.

Usage: prometheus_remote.py PATH/TO/gpulse   (ctest -L clients runs it with
Debian's /usr/bin/python3: python3-protobuf, python3-snappy, python3-crcmod)
Skips (exit 0) when /usr/bin/prometheus is absent; .ci/deps installs it.
"""

import importlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import crcmod.predefined
import snappy

from processes import Exporter, Process, free_port, http_get, prometheus_config, start_gpulse

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "..", "ingest", "prompb.proto")
SCRAPE = os.path.join(HERE, "..", "..", "..", "shared", "data", "real", "dcgm_exporter", "scrapes",
                      "nvidia-aicr_H100x8_k8s-pod-labels_sampled.prom")
PROMETHEUS = "/usr/bin/prometheus"
ATTRIBUTION = {"pod", "namespace", "container", "pod_uid"}


def fail(message):
    raise SystemExit("prometheus_remote: " + message)


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


def prompb_module(work):
    """The messages of ingest/prompb.proto, compiled here by protoc."""
    subprocess.run(["protoc", f"--python_out={work}", f"-I{os.path.dirname(PROTO)}", PROTO],
                   check=True)
    sys.path.insert(0, work)
    return importlib.import_module("prompb_pb2")


class XorChunk:
    """Prometheus' XOR chunk read back: a big-endian count, the first time as
    a zig-zag varint and value as 64 bits, the second time's delta as a
    uvarint, then deltas of deltas behind 0, 10, 110, 1110, 1111 in 0, 14,
    17, 20, 64 bits, and values as XORs with the one before, behind 0 (equal),
    10 (in the previous window of zeros) or 11 (5 bits of leading zeros and
    6 of length, 0 meaning 64)."""

    def __init__(self, data):
        self.data = data
        self.bit = 16

    def bits(self, n):
        out = 0
        for _ in range(n):
            byte = self.data[self.bit // 8] if self.bit // 8 < len(self.data) else 0
            out = (out << 1) | ((byte >> (7 - self.bit % 8)) & 1)
            self.bit += 1
        return out

    def uvarint(self):
        out, shift = 0, 0
        while True:
            b = self.bits(8)
            out |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return out

    def samples(self):
        """[(ms, value bits)]."""
        n = struct.unpack(">H", self.data[:2])[0]
        out = []
        t = v = delta = leading = trailing = 0
        for i in range(n):
            if i == 0:
                z = self.uvarint()
                t = (z >> 1) ^ -(z & 1)
                v = self.bits(64)
            else:
                if i == 1:
                    delta = self.uvarint()
                else:
                    prefix = 0
                    while prefix < 4 and self.bits(1) == 1:
                        prefix += 1
                    width = (0, 14, 17, 20, 64)[prefix]
                    dod = self.bits(width) if width else 0
                    if width and dod > (1 << (width - 1)):
                        dod -= 1 << width
                    delta += dod
                t += delta
                if self.bits(1):
                    if self.bits(1):
                        leading = self.bits(5)
                        length = self.bits(6) or 64
                        trailing = 64 - leading - length
                    v ^= self.bits(64 - leading - trailing) << trailing
            out.append((t, v))
        if self.bit > len(self.data) * 8:
            fail("an XOR chunk ends before its samples")
        return out


def float_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def remote_read(pb, url, matchers, start_ms, end_ms, streamed):
    """{labels: [(ms, value bits)]} of one query asked of a remote read
    endpoint, as SAMPLES or as STREAMED_XOR_CHUNKS (frames' CRCs checked)."""
    request = pb.ReadRequest()
    q = request.queries.add()
    q.start_timestamp_ms, q.end_timestamp_ms = start_ms, end_ms
    for kind, name, value in matchers:
        m = q.matchers.add()
        m.type, m.name, m.value = kind, name, value
    if streamed:
        request.accepted_response_types.append(pb.ReadRequest.STREAMED_XOR_CHUNKS)
    http = urllib.request.Request(url, data=snappy.compress(request.SerializeToString()), headers={
        "Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
        "X-Prometheus-Remote-Read-Version": "0.1.0"})
    with urllib.request.urlopen(http, timeout=30) as r:
        body, ctype = r.read(), r.headers.get("Content-Type", "")
    out = {}
    if not streamed:
        response = pb.ReadResponse()
        response.ParseFromString(snappy.uncompress(body))
        for ts in response.results[0].timeseries:
            key = tuple((l.name, l.value) for l in ts.labels)
            out[key] = [(s.timestamp, float_bits(s.value)) for s in ts.samples]
        return out
    if not ctype.startswith("application/x-streamed-protobuf"):
        fail(f"{url} answered a stream as {ctype!r}")
    crc32c = crcmod.predefined.mkCrcFun("crc-32c")
    at = 0
    while at < len(body):
        length, shift = 0, 0
        while True:
            b = body[at]
            at += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        crc = struct.unpack(">I", body[at:at + 4])[0]
        message = body[at + 4:at + 4 + length]
        at += 4 + length
        if crc32c(message) != crc:
            fail(f"{url}: a frame's CRC-32C does not match its message")
        frame = pb.ChunkedReadResponse()
        frame.ParseFromString(message)
        for cs in frame.chunked_series:
            key = tuple((l.name, l.value) for l in cs.labels)
            samples = out.setdefault(key, [])
            for c in cs.chunks:
                got = XorChunk(c.data).samples()
                if got and (got[0][0] != c.min_time_ms or got[-1][0] != c.max_time_ms):
                    fail(f"{url}: a chunk's bounds are not its samples' times")
                samples.extend(got)
    return out


def promql(base, path, params):
    status, text = http_get(f"{base}{path}?" + urllib.parse.urlencode(params))
    if status != 200:
        fail(f"{base}{path} answered {status}: {text[:300]}")
    result = json.loads(text)["data"]["result"]
    return sorted(json.dumps(r, sort_keys=True) for r in result)


# PromQL asked of Prometheus A (its own data) and of Prometheus B (gpulse's,
# by remote read).
QUERIES = [
    "DCGM_FI_DEV_GPU_TEMP",
    'DCGM_FI_DEV_GPU_TEMP{gpu="7"}',
    "sum by (gpu) (DCGM_FI_DEV_POWER_USAGE)",
    'count by (__name__) ({__name__=~"DCGM_.+"})',
    "max_over_time(DCGM_FI_DEV_GPU_UTIL[30s])",
    "rate(DCGM_FI_DEV_MEM_COPY_UTIL[20s])",
    "deriv(scrape_samples_scraped[30s])",
    "up",
    'DCGM_FI_DEV_POWER_USAGE{pod!=""} * on (gpu) group_left DCGM_FI_DEV_GPU_TEMP',
]


def check_remote_read(pb, work, procs, pbase, gbase, t):
    """Prometheus B over gpulse answers as A; /api/v1/read of A and of
    gpulse hold the same samples. Returns a line of what was compared."""
    bport = free_port()
    bbase = f"http://127.0.0.1:{bport}"
    config = os.path.join(work, "prometheus-b.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
remote_read:
  - url: "{gbase}/api/v1/read"
    read_recent: true
""")
    procs.append(Process("prometheus B", [
        PROMETHEUS, "--config.file", config, "--storage.tsdb.path", os.path.join(work, "pb"),
        "--web.listen-address", f"127.0.0.1:{bport}"],
        os.path.join(work, "prometheus-b.log"), bbase + "/-/ready"))
    t_ms = round(t * 1000)
    matchers = [(pb.LabelMatcher.RE, "__name__", "DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_POWER_USAGE|up")]
    samples = series = stale = 0
    for streamed in (False, True):
        theirs = remote_read(pb, f"{pbase}/api/v1/read", matchers, t_ms - 600_000, t_ms, streamed)
        # Stale markers may come in a later remote write batch than the rest.
        deadline = time.time() + 15
        while True:
            ours = remote_read(pb, f"{gbase}/api/v1/read", matchers, t_ms - 600_000, t_ms,
                               streamed)
            if ours == theirs or time.time() > deadline:
                break
            time.sleep(0.5)
        if theirs != ours:
            for key in sorted(set(theirs) | set(ours))[:40]:
                if theirs.get(key) != ours.get(key):
                    print(f"{dict(key)}: A {len(theirs.get(key, []))} samples, "
                          f"gpulse {len(ours.get(key, []))}")
            fail(f"/api/v1/read ({'streamed' if streamed else 'samples'}): gpulse's answer "
                 f"differs from Prometheus A's; logs in {work}")
        samples, series = sum(len(v) for v in ours.values()), len(ours)
        stale = sum(1 for v in ours.values() for _, bits in v if bits == 0x7FF0000000000002)
    if stale == 0:
        fail("/api/v1/read holds no stale marker for GPU 7's series")
    asked = 0
    for q in QUERIES:
        for path, params in (("/api/v1/query", {"query": q, "time": f"{t:.3f}"}),
                             ("/api/v1/query_range", {"query": q, "start": f"{t - 60:.3f}",
                                                      "end": f"{t:.3f}", "step": "5"})):
            theirs, ours = promql(pbase, path, params), promql(bbase, path, params)
            if theirs != ours:
                for line in sorted(set(theirs) ^ set(ours))[:6]:
                    print(("A only: " if line in theirs else "B only: ") + line[:400])
                fail(f"{path} {q}: Prometheus B over gpulse answers {len(ours)} series, "
                     f"A {len(theirs)}; logs in {work}")
            asked += 1
    return (f"Prometheus B over gpulse answered {asked} PromQL requests as A; /api/v1/read of "
            f"both equal ({samples} samples of {series} series, {stale} stale markers, "
            f"as samples and as XOR chunks)")


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
        fail("usage: prometheus_remote.py PATH/TO/gpulse")
    if not os.path.exists(PROMETHEUS):
        print("prometheus not installed: skipped")
        return
    gpulse = sys.argv[1]
    if not os.path.exists(SCRAPE):
        fail(f"{SCRAPE} is missing (the shared data folder beside the checkout)")
    work = tempfile.mkdtemp(prefix="gpulse-promremote-")
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
        print(f"prometheus_remote: {len(theirs)} samples of "
              f"{len({(n, k) for n, k, _, _ in theirs})} series equal in Prometheus and gpulse; "
              f"{markers:.0f} stale markers counted")
        # T again: every sample up to it is in gpulse, and the stale markers
        # came with the scrapes before it.
        print("prometheus_remote: " + check_remote_read(prompb_module(work), work, procs, pbase,
                                                        gbase, t))
    finally:
        for p in reversed(procs):
            p.stop()
        exporter.stop()
    if os.environ.get("KEEP") is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
