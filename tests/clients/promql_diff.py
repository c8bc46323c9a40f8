#!/usr/bin/env python3
"""PromQL against the real thing: the same samples loaded into Prometheus 2.42
(Debian's, backfilled with `promtool tsdb create-blocks-from openmetrics`)
and into gpulse (`gpulse import --format prom --measurement prom`), the same
expressions asked of both over /api/v1/query and /api/v1/query_range, and
the answers compared.

The data is made here, from a fixed seed: two and a half hours of 15 s
scrapes ending at 2026-01-01T00:00:00Z (the last before it), with a few
hundred milliseconds of jitter per target and scrape as real scrapes have.
dcgm-exporter-like gauges of 12 GPUs on 4 hosts (two of node2's GPUs carry
the attribution labels pod and namespace, which change during the run), a
counter with resets, a metric with gaps (a host down for 10 minutes, a
12-minute hole, a series that starts late, one that ends early), NaN and
+-Inf values, negative values, small integers, a classic histogram with a
reset, `up` and an info metric. The samples fill two of promtool's 2 h
blocks, [20:00, 22:00) and [22:00, 00:00), the last scrape before midnight,
so no third block holds a few stray samples.

Each expression of promql_queries.txt is asked as an instant query (GET) at
the times of INSTANT_TIMES and as a range query (POST form) over the windows
of RANGES. Two answers match when
  - both are errors (whatever the message and HTTP status), or
  - both succeed with the same resultType and the same series (by their full
    label set, in any order; for an expression whose outermost function is
    sort() or sort_desc(), also the order of the values), the same
    timestamps exactly, and values equal within a relative tolerance of
    1e-9 or an absolute one of 1e-12; NaN equals NaN and an infinity equals
    the infinity of the same sign. Strings must be equal.
An expression listed in promql_known_differences.txt is run and reported,
but its differences do not fail the test.

Usage: promql_diff.py PATH/TO/gpulse [--only SUBSTRING] [--keep]
       (ctest -L clients runs it)
  --only SUBSTRING  ask only the expressions that contain SUBSTRING
  --keep            keep the scratch folder (data, logs) and print its path
Exit status 1 when an expression not listed as a known difference differs.
Skips (exit 0) when /usr/bin/prometheus or /usr/bin/promtool is absent;
.ci/deps installs them.

--prometheus-only (for whoever edits the query list) asks Prometheus alone:
every expression must succeed at every instant, except those marked
`# error expected`, which must fail at least once. With a gpulse path it
also checks that `gpulse import` loads the data.
"""

import argparse
import concurrent.futures
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from processes import Process, free_port, http_get, start_gpulse

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = os.path.join(HERE, "promql_queries.txt")
KNOWN = os.path.join(HERE, "promql_known_differences.txt")
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
ERROR_EXPECTED = "# error expected"

END = 1767225600  # 2026-01-01T00:00:00Z
SCRAPE_S = 15
SCRAPES = 600  # 2.5 h
START = END - SCRAPES * SCRAPE_S  # 2025-12-31T21:30:00Z

INSTANT_TIMES = [
    ("start", f"{START + 45.5}"),  # the fourth scrape: windows reach before the data
    # node4 is down, and node2's GPUs 0 and 1 are silent before pod train-b.
    ("inside", f"{START + 5000.123}"),
    ("end", f"{END}"),  # the last scrape was 15 s before, less its jitter
    ("after", f"{END + 200}"),  # past the data, within the 5 m lookback
    ("empty", f"{END + 3600}"),  # no data within the lookback
]
RANGES = [  # start, end, step: seconds as Prometheus takes them
    (f"{START - 300}", f"{END + 600}", "60s"),
    (f"{START + 1234.567}", f"{END - 61.5}", "37"),  # unaligned start, step in seconds
]
REL_TOL, ABS_TOL = 1e-9, 1e-12

HOSTS = [("node1", "NVIDIA-H100", 4), ("node2", "NVIDIA-H100", 4),
         ("node3", "NVIDIA-A100", 2), ("node4", "NVIDIA-A100", 2)]
TYPES = {  # family -> OpenMetrics type
    "DCGM_FI_DEV_GPU_UTIL": "gauge", "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge",
    "DCGM_FI_DEV_GPU_TEMP": "gauge", "DCGM_FI_DEV_POWER_USAGE": "gauge",
    "DCGM_FI_DEV_SM_CLOCK": "gauge", "DCGM_FI_DEV_XID_ERRORS": "gauge",
    "gpu_energy_joules": "counter", "gpu_perf_per_watt": "gauge",
    "gpu_clock_offset_mhz": "gauge", "gpu_node_info": "gauge", "up": "gauge",
    "request_duration_seconds": "histogram",
}
BUCKETS = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"]


def fail(message):
    raise SystemExit("promql_diff: " + message)


# ---- The data ---------------------------------------------------------------

def scrape_times(rng):
    return [(START + i * SCRAPE_S) * 1000 + rng.randrange(500) for i in range(SCRAPES)]


def om_seconds(ms):
    """OpenMetrics' timestamp: seconds. promtool reads it back as
    int64(float * 1000), which truncates; around 2026 every millisecond
    survives that, which this checks."""
    text = f"{ms // 1000}.{ms % 1000:03d}"
    assert int(float(text) * 1000) == ms, text
    return text


class Dataset:
    """Series (metric name, sorted labels) -> [(ms, value)], in time order."""

    def __init__(self):
        self.series = {}

    def add(self, name, labels, ms, value):
        key = (name, tuple(sorted(labels.items())))
        self.series.setdefault(key, []).append((ms, value))


def walk(rng, value, step, low, high):
    """A random walk reflected at its bounds (clamping would make ties)."""
    value += rng.uniform(-step, step)
    return 2 * low - value if value < low else 2 * high - value if value > high else value


def pod_labels(host, gpu, i):
    """node2's GPUs 0 and 1 run pod train-a, idle 20 minutes, then train-b."""
    if host != "node2" or gpu > 1 or 240 <= i < 320:
        return {}
    return {"pod": "train-a" if i < 240 else "train-b", "namespace": "ml"}


def pod_silent(host, gpu, i):
    """The 5.25 minutes after each pod change, when node2's GPUs 0 and 1 send
    nothing. A live Prometheus ends a series whose labels changed with a
    stale marker, and so does gpulse (docs/promql.md); backfilled blocks
    carry no stale markers, so the backfilled Prometheus would keep the old
    series for the 5-minute lookback. The silence lets it end there too."""
    return host == "node2" and gpu <= 1 and (240 <= i < 261 or 320 <= i < 341)


def sm_clock_missing(host, gpu, i):
    return ((host, gpu) == ("node1", 1) and 200 <= i < 250  # 12.5 minutes
            or (host, gpu) == ("node2", 3) and 100 <= i < 112  # 3 minutes, within lookback
            or (host, gpu) == ("node3", 1) and i < 160  # starts late
            or (host, gpu) == ("node4", 0) and i >= 480)  # ends early


def perf_special(host, gpu, i):
    """The NaN and infinite values of gpu_perf_per_watt, or None."""
    if (host, gpu) == ("node1", 0) and 50 <= i < 54 or (host, gpu) == ("node4", 1) and i == 599:
        return math.nan
    if (host, gpu) == ("node2", 1) and 200 <= i <= 210 or (host, gpu) == ("node1", 3) and i >= 590:
        return math.inf
    if (host, gpu) == ("node3", 0) and i == 400:
        return -math.inf
    return None


ENERGY_RESETS = {("node1", 0): {300}, ("node3", 0): {100, 450}, ("node4", 1): {590}}


def add_gpu(data, rng, times, host, model, gpu):
    base = {"Hostname": host, "gpu": str(gpu), "modelName": model,
            "instance": f"{host}:9400", "job": "dcgm"}
    util, copy, temp = rng.uniform(1, 100), rng.uniform(0, 100), rng.uniform(40, 70)
    power, clock, offset = rng.uniform(100, 400), rng.randrange(1410, 1981, 15), 0
    energy, xid = rng.uniform(1e5, 1e6), 0
    for i, ms in enumerate(times):
        util, copy = walk(rng, util, 12, 1, 100), walk(rng, copy, 15, 0, 100)
        temp, power = walk(rng, temp, 1.5, 30, 85), walk(rng, power, 25, 50, 700)
        clock = min(1980, max(1410, clock + 15 * rng.randrange(-2, 3)))
        offset = min(100, max(-250, offset + 5 * rng.randrange(-2, 3)))
        energy = power * rng.random() if i in ENERGY_RESETS.get((host, gpu), ()) else energy + power * SCRAPE_S
        if i % 40 == 0:
            xid = rng.choice([0, 0, 0, 0, 13, 31, 43, 79])
        if host == "node4" and 300 <= i < 340 or pod_silent(host, gpu, i):  # the exporter is down
            continue
        labels = dict(base, **pod_labels(host, gpu, i))
        perf = perf_special(host, gpu, i)
        values = {
            "DCGM_FI_DEV_GPU_UTIL": float(round(util)),
            "DCGM_FI_DEV_MEM_COPY_UTIL": float(round(copy)),
            "DCGM_FI_DEV_GPU_TEMP": float(round(temp)),
            "DCGM_FI_DEV_POWER_USAGE": round(power, 3),
            "DCGM_FI_DEV_XID_ERRORS": float(xid),
            "gpu_energy_joules_total": round(energy, 3),
            "gpu_perf_per_watt": round(round(util) / power, 6) if perf is None else perf,
            "gpu_clock_offset_mhz": float(offset),
        }
        if not sm_clock_missing(host, gpu, i):
            values["DCGM_FI_DEV_SM_CLOCK"] = float(clock)
        for name, value in values.items():
            data.add(name, labels, ms, value)


def add_inference(data, rng, times, host, handler):
    """A classic histogram of request durations; node3's server restarts."""
    labels = {"instance": f"{host}:8000", "job": "inference", "handler": handler}
    counts, total = [0] * len(BUCKETS), 0.0
    for i, ms in enumerate(times):
        if host == "node3" and i == 350:
            counts, total = [0] * len(BUCKETS), 0.0
        idle = host == "node4" and 200 <= i < 260
        for _ in range(0 if idle else rng.randrange(12)):
            d = rng.lognormvariate(-1.5, 1.0)
            total += d
            for b, le in enumerate(BUCKETS):
                counts[b] += d <= float(le)
        for le, n in zip(BUCKETS, counts):
            data.add("request_duration_seconds_bucket", dict(labels, le=le), ms, float(n))
        data.add("request_duration_seconds_sum", labels, ms, round(total, 6))
        data.add("request_duration_seconds_count", labels, ms, float(counts[-1]))


def dataset():
    rng = random.Random(20260101)
    data = Dataset()
    for h, (host, model, gpus) in enumerate(HOSTS):
        dcgm, inference = scrape_times(rng), scrape_times(rng)
        for gpu in range(gpus):
            add_gpu(data, rng, dcgm, host, model, gpu)
        for i, ms in enumerate(dcgm):
            down = host == "node4" and 300 <= i < 340
            data.add("up", {"instance": f"{host}:9400", "job": "dcgm"}, ms, 0.0 if down else 1.0)
            data.add("gpu_node_info", {"Hostname": host, "instance": f"{host}:9400", "job": "dcgm",
                                       "rack": f"r{h // 2 + 1}", "driver": "550.54.15"}, ms, 1.0)
        for handler in ["/v1/completions", "/v1/embeddings"][:2 if host == "node1" else 1]:
            add_inference(data, rng, inference, host, handler)
        for ms in inference:
            data.add("up", {"instance": f"{host}:8000", "job": "inference"}, ms, 1.0)
    return data


def family(name):
    for suffix in ("_total", "_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[:-len(suffix)] in TYPES:
            return name[:-len(suffix)]
    return name


def text_value(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return str(int(v)) if v.is_integer() else repr(v)


def text_labels(labels):
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


def write_openmetrics(data, path):
    """Families one after another, each series' samples in time order,
    timestamps in seconds, as OpenMetrics (and promtool) wants them."""
    with open(path, "w") as f:
        for fam, kind in TYPES.items():
            f.write(f"# TYPE {fam} {kind}\n")
            for (name, labels), samples in data.series.items():
                if family(name) == fam:
                    head = name + text_labels(labels)
                    f.writelines(f"{head} {text_value(v)} {om_seconds(ms)}\n" for ms, v in samples)
        f.write("# EOF\n")


def write_prom_text(data, path):
    """Text exposition 0.0.4 with millisecond timestamps, one sample a line,
    in time order: each scrape's samples together, as a saved scrape."""
    lines = [(ms, name, labels, v) for (name, labels), samples in data.series.items()
             for ms, v in samples]
    lines.sort(key=lambda s: s[:3])
    with open(path, "w") as f:
        for name in sorted({name for name, _ in data.series}):
            kind = TYPES[family(name)]
            if kind == "histogram" and name.endswith("_bucket"):
                f.write(f"# TYPE {family(name)} histogram\n")
            elif kind != "histogram":
                f.write(f"# TYPE {name} {kind}\n")
        f.writelines(f"{name}{text_labels(labels)} {text_value(v)} {ms}\n"
                     for ms, name, labels, v in lines)


# ---- The servers ------------------------------------------------------------

def run(argv, what):
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{what} exited with {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")


def start_prometheus(work, samples):
    blocks = os.path.join(work, "prometheus")
    run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", "--quiet", samples, blocks],
        "promtool tsdb create-blocks-from openmetrics")
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:  # no scrape jobs; a subquery's default step is 1m
        f.write("global:\n  evaluation_interval: 1m\n")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # The blocks are older than the default retention (15d) would keep.
    return base, Process("prometheus", [
        PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={blocks}",
        "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
        os.path.join(work, "prometheus.log"), base + "/-/ready")


def import_gpulse(gpulse, work, samples):
    data = os.path.join(work, "gpulse")
    run([gpulse, "import", "--data", data, "--format", "prom", "--measurement", "prom", samples],
        "gpulse import")
    return data



# ---- Queries and answers ----------------------------------------------------

def load_queries(only):
    """[(expression, error expected)] of the query list, in order."""
    out = []
    with open(QUERIES) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            expected = line.endswith(ERROR_EXPECTED)
            query = line[:-len(ERROR_EXPECTED)].rstrip() if expected else line
            if only is None or only in query:
                out.append((query, expected))
    return out


def load_known():
    known = {}
    with open(KNOWN) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                query, _, reason = line.rstrip("\n").partition("\t")
                known[query.strip()] = reason.strip()
    return known


def requests_for(query):
    """(label, path, params, POST) of every request made for one expression."""
    out = [(f"query at {name} (time={t})", "/api/v1/query", {"query": query, "time": t}, False)
           for name, t in INSTANT_TIMES]
    out += [(f"query_range start={s} end={e} step={step}", "/api/v1/query_range",
             {"query": query, "start": s, "end": e, "step": step}, True) for s, e, step in RANGES]
    return out


def http_post_form(url, params, timeout):
    """(status, body text) of a form POST, as http_get answers."""
    data = urllib.parse.urlencode(params).encode()
    try:
        with urllib.request.urlopen(url, data=data, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


def ask(base, path, params, post):
    """(True, data) for a success; (False, message) for an error."""
    if post:
        status, text = http_post_form(base + path, params, timeout=30)
    else:
        status, text = http_get(base + path + "?" + urllib.parse.urlencode(params), timeout=30)
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        return False, f"HTTP {status}, not JSON: {text[:200]!r}"
    if status == 200 and body.get("status") == "success" and "data" in body:
        return True, body["data"]
    return False, f"HTTP {status} {body.get('errorType')}: {body.get('error')}"


# ---- Comparison -------------------------------------------------------------

def same_float(a, b):
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= max(REL_TOL * max(abs(x), abs(y)), ABS_TOL)


def show_labels(metric):
    labels = dict(metric)
    name = labels.pop("__name__", "")
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def point_diff(p, q):
    """How point p (gpulse's [t, "v"]) differs from q (Prometheus'), or None."""
    if float(p[0]) != float(q[0]):
        return f"time {p[0]} against Prometheus' {q[0]}"
    if not same_float(p[1], q[1]):
        return f"at {p[0]}: {p[1]} against Prometheus' {q[1]}"
    return None


def series_diff(ours, theirs, points):
    """How gpulse's series, each (metric, [point]), differ from Prometheus',
    matched by label set, or None."""
    ours = sorted(ours, key=lambda s: sorted(s[0].items()))
    theirs = sorted(theirs, key=lambda s: sorted(s[0].items()))
    mine = [sorted(m.items()) for m, _ in ours]
    prom = [sorted(m.items()) for m, _ in theirs]
    if mine != prom:
        only_ours = [show_labels(m) for m, _ in ours if sorted(m.items()) not in prom]
        only_theirs = [show_labels(m) for m, _ in theirs if sorted(m.items()) not in mine]
        return (f"{len(ours)} series against Prometheus' {len(theirs)}; "
                f"only in gpulse: {only_ours[:2]}{' ...' if len(only_ours) > 2 else ''}; "
                f"only in Prometheus: {only_theirs[:2]}{' ...' if len(only_theirs) > 2 else ''}")
    for (metric, a), (_, b) in zip(ours, theirs):
        if len(a) != len(b):
            first = next((i for i, (p, q) in enumerate(zip(a, b)) if point_diff(p, q)), None)
            where = "" if first is None else f", first differing: {point_diff(a[first], b[first])}"
            return f"{show_labels(metric)}: {len(a)} {points} against Prometheus' {len(b)}{where}"
        for p, q in zip(a, b):
            diff = point_diff(p, q)
            if diff:
                return f"{show_labels(metric)} {diff}"
    return None


def data_diff(ours, theirs, ordered):
    """How gpulse's `data` differs from Prometheus', or None when they match."""
    kind = theirs["resultType"]
    if ours.get("resultType") != kind:
        return f"resultType {ours.get('resultType')} against Prometheus' {kind}"
    a, b = ours["result"], theirs["result"]
    if kind == "string":
        return None if a == b else f"{a} against Prometheus' {b}"
    if kind == "scalar":
        return point_diff(a, b)
    if kind == "matrix":
        return series_diff([(s["metric"], s["values"]) for s in a],
                           [(s["metric"], s["values"]) for s in b], "points")
    diff = series_diff([(s["metric"], [s["value"]]) for s in a],
                       [(s["metric"], [s["value"]]) for s in b], "values")
    if diff is None and ordered and not all(
            same_float(s["value"][1], t["value"][1]) for s, t in zip(a, b)):
        return (f"order: {[s['value'][1] for s in a][:8]} against Prometheus' "
                f"{[t['value'][1] for t in b][:8]}")
    return diff


def answer_diff(ours, theirs, ordered):
    (ok_a, a), (ok_b, b) = ours, theirs
    if not ok_a and not ok_b:
        return None
    if ok_a != ok_b:
        return f"gpulse: {'success' if ok_a else a}; Prometheus: {'success' if ok_b else b}"
    try:
        return data_diff(a, b, ordered)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        return f"gpulse's data is malformed ({type(e).__name__}: {e}): {json.dumps(a)[:200]}"


def compare_query(query, gbase, pbase):
    """[(request label, difference)] for one expression; empty when alike."""
    ordered = query.startswith(("sort(", "sort_desc("))
    out = []
    for label, path, params, post in requests_for(query):
        diff = answer_diff(ask(gbase, path, params, post), ask(pbase, path, params, post), ordered)
        if diff:
            out.append((label, diff))
    return out


def differential(queries, gbase, pbase):
    known = load_known()
    per_query = len(requests_for(""))
    differ = failures = 0
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = pool.map(lambda q: compare_query(q[0], gbase, pbase), queries)
        for (query, _), diffs in zip(queries, results):
            reason = known.get(query)
            if diffs:
                differ += len(diffs)
                failures += reason is None
                print(f"{'KNOWN (' + reason + ')' if reason else 'DIFFERS'}: {query}")
                for label, diff in diffs[:3]:
                    print(f"  {label}: {diff}")
                if len(diffs) > 3:
                    print(f"  ... and {len(diffs) - 3} more requests")
            elif reason is not None:
                print(f"listed as a known difference but matches now: {query}")
    total = per_query * len(queries)
    print(f"promql_diff: {len(queries)} queries, {total} comparisons, {total - differ} match, "
          f"{differ} differ; {failures} queries with differences not in "
          f"{os.path.basename(KNOWN)}")
    return 1 if failures else 0


def prometheus_only(queries, pbase):
    """Every expression answered; errors only where the list expects them."""
    problems = errored = 0

    def errors(query):
        return [(label, message) for label, path, params, post in requests_for(query)
                for ok, message in [ask(pbase, path, params, post)] if not ok]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for (query, expected), errs in zip(queries, pool.map(lambda q: errors(q[0]), queries)):
            errored += bool(errs)
            instant = [e for e in errs if e[0].startswith("query at")]
            if expected and not errs or not expected and instant:
                problems += 1
                print(f"{'UNEXPECTED ERROR' if instant else 'NO ERROR'}: {query}")
                for label, message in errs[:2]:
                    print(f"  {label}: {message}")
    print(f"promql_diff --prometheus-only: {len(queries)} queries, {errored} with an error in "
          f"some request, {sum(e for _, e in queries)} marked '{ERROR_EXPECTED}', "
          f"{problems} problems")
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser(description="PromQL: gpulse against Prometheus 2.42")
    parser.add_argument("gpulse", nargs="?", help="the gpulse binary")
    parser.add_argument("--only", metavar="SUBSTRING", help="only expressions containing it")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--prometheus-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.gpulse is None and not args.prometheus_only:
        parser.error("the gpulse binary is required")
    if args.gpulse and not os.access(args.gpulse, os.X_OK):
        parser.error(f"{args.gpulse} is not an executable")
    if not (os.path.exists(PROMETHEUS) and os.path.exists(PROMTOOL)):
        print("prometheus or promtool not installed: skipped")
        return 0
    queries = load_queries(args.only)
    began = time.time()
    work = tempfile.mkdtemp(prefix="gpulse-promql-diff-")
    procs = []
    try:
        data = dataset()
        write_openmetrics(data, os.path.join(work, "samples.om"))
        write_prom_text(data, os.path.join(work, "samples.prom"))
        if args.gpulse:
            gdata = import_gpulse(args.gpulse, work, os.path.join(work, "samples.prom"))
        pbase, prom = start_prometheus(work, os.path.join(work, "samples.om"))
        procs.append(prom)
        print(f"promql_diff: {sum(map(len, data.series.values()))} samples of "
              f"{len(data.series)} series loaded ({time.time() - began:.1f} s)")
        if args.prometheus_only:
            return prometheus_only(queries, pbase)
        gbase, server = start_gpulse(args.gpulse, gdata, work)
        procs.append(server)
        return differential(queries, gbase, pbase)
    finally:
        for p in procs:
            p.stop()
        print(f"promql_diff: {time.time() - began:.1f} s")
        if args.keep:
            print(f"promql_diff: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
