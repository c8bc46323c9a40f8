#!/usr/bin/env python3
"""The requests Grafana's Prometheus data source makes for NVIDIA's
dcgm-exporter dashboard (grafana.com 12239), asked of Prometheus 2.42
(Debian's) and of `gpulse serve` holding the same samples; answers compared.

Five exporters in this process serve real dcgm-exporter scrapes
(../shared/data/real/dcgm_exporter/scrapes/), their values moved at every
scrape so that no series is flat. Four hold DCGM_FI_DEV_FB_FREE, which the
$Hostname variable lists; the fifth (8 H100s with pod labels) is a host it
leaves out, for the panels' Hostname=~"..." to exclude. Prometheus scrapes
each every second and remote-writes to /api/v1/write?measurement=dcgm. After
~25 s, at an instant T a few seconds back (once gpulse holds every sample
Prometheus has in [T-30s, T]), over [T-10s, T], both are asked:

  1. "Save & test": /api/v1/query?query=1+1&time=4 (scalar [4, "2"]), and
     /api/v1/status/buildinfo: gpulse's version must be 2.24.0 or later, for
     Grafana to list label values with /api/v1/label/<name>/values.
  2. The variables label_values(DCGM_FI_DEV_FB_FREE, Hostname) and
     label_values(DCGM_FI_DEV_FB_FREE{Hostname=~"$Hostname"}, gpu), by
     /api/v1/label/<name>/values and by the older /api/v1/series. "All" of a
     multi-value variable is the alternation of its values (Prometheus'), each
     escaped as Grafana escapes it; a variable over DCGM_FI_DRIVER_VERSION,
     whose values hold dots, puts the escaping to work.
  3. The metric browser: /api/v1/labels, /api/v1/label/__name__/values and
     /api/v1/series of one metric.
  4. Every panel, by POST /api/v1/query_range (the instant one by GET
     /api/v1/query), with $Hostname and $gpu as "All".

Listings are compared as sets (of names, values or label sets); query answers
as promql_diff.py compares them: the same resultType, series by label set,
timestamps exactly, values within a relative 1e-9 (or an absolute 1e-12).
Every panel must return series from Prometheus, or nothing would be proved.

Usage: grafana_replay.py PATH/TO/gpulse   (ctest -L clients runs it)
       KEEP=1 keeps the scratch folder (the servers' logs).
Exit status 1 on any difference. Skips (exit 0) when /usr/bin/prometheus is
absent; .ci/deps installs it.
"""

import os
import re
import shutil
import sys
import tempfile
import time

from processes import Exporter, Process, free_port, prometheus_config, start_gpulse
from promql_diff import answer_diff, ask

HERE = os.path.dirname(os.path.abspath(__file__))
SCRAPES = os.path.join(HERE, "..", "..", "..", "shared", "data", "real", "dcgm_exporter", "scrapes")
FILES = ["k8s-ai-conformance_kops_L4.prom", "k8s-ai-conformance_upcloud_L40S.prom",
         "k8s-ai-conformance_vks_GRID-A100-10C.prom", "k8s-ai-conformance_rafay_T4.prom",
         "nvidia-aicr_H100x8_k8s-pod-labels_sampled.prom"]  # the last has no FB_FREE
PROMETHEUS = "/usr/bin/prometheus"

# Grafana's step: the larger of the range over the panel's maxDataPoints (its
# width in pixels, ~1000) rounded to a round interval, and the data source's
# "Scrape interval" setting (15s unless set) or the query's "Min step"; at
# least range / 11000. Over 20 s the first is 20 ms, so the step is the
# setting, which we take as 2s (not the 1 s Prometheus scrapes at, so that
# steps fall between samples). Grafana aligns start and end down to a
# multiple of the step.
STEP = 2
WINDOW = 10  # seconds: [T - WINDOW, T]
SCRAPES_BEFORE_T = 14

S = '{Hostname=~"$Hostname", gpu=~"$gpu"}'  # every panel's selector
RANGE_PANELS = [
    f"max(DCGM_FI_DEV_GPU_TEMP{S}) by (Hostname, gpu, uuid)",
    f"avg(DCGM_FI_DEV_GPU_TEMP{S})",
    f"max(DCGM_FI_DEV_POWER_USAGE{S}) by (Hostname, gpu, uuid)",
    f"max(DCGM_FI_DEV_SM_CLOCK{S} * 1000000) by (Hostname, UUID, gpu)",
    f"max(DCGM_FI_PROF_GR_ENGINE_ACTIVE{S}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)",
    f"max(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{S}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)",
    f"max(DCGM_FI_DEV_FB_USED{S}) by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE)",
]
INSTANT_PANELS = [f"sum(max(DCGM_FI_DEV_POWER_USAGE{S}) by (gpu))"]


def fail(message):
    raise SystemExit("grafana_replay: " + message)


# ---- The exporters ----------------------------------------------------------

def moved(text, n):
    """The scrape text with each value moved for the n-th scrape: a counter
    grows by n steps, a gauge (or untyped) follows a sawtooth of period 7. The
    step is 1 for an integral value, which stays integral, 0.125 otherwise."""
    counters = set(re.findall(r"^# TYPE (\S+) counter$", text, re.M))
    out = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            k = n if series.partition("{")[0] in counters else n % 7
            integral = re.fullmatch(r"-?\d+", value) is not None
            value = str(int(value) + k) if integral else repr(float(value) + 0.125 * k)
            line = f"{series} {value}"
        out.append(line + "\n")
    return "".join(out)


class MovingScrape:
    """Serves one scrape file on /metrics, its values moved at every request."""

    def __init__(self, path):
        with open(path) as f:
            self.text = f.read()
        self.scrapes = 0
        self.exporter = Exporter(self.next_body)
        self.port = self.exporter.port

    def next_body(self):
        self.scrapes += 1
        return moved(self.text, self.scrapes)

    def stop(self):
        self.exporter.stop()


# ---- What Grafana does to a variable ----------------------------------------

def regex_escape(value):
    """Grafana's prometheusSpecialRegexEscape (its default behaviour): a
    backslash becomes four, and each of $^*{}[]+?.()| gets two before it, one
    escaping the character in the regular expression and one escaping that
    backslash in PromQL's double-quoted string. '-' is left as it is."""
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]+?.()|]", lambda m: "\\\\" + m.group(0), value)


def all_values(values):
    """"All" of a multi-value variable without a custom all value: its values
    escaped, alone if there is one, else an alternation in parentheses."""
    escaped = [regex_escape(v) for v in values]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


# ---- Requests and answers ---------------------------------------------------

def listing_diff(ours, theirs):
    """How gpulse's list (of names, values or label sets) differs from
    Prometheus' as a set, or None."""
    (ok, a), (_, b) = ours, theirs
    if not ok:
        return f"gpulse: {a}"
    if not isinstance(a, list):
        return f"gpulse's data is not a list: {str(a)[:200]}"
    key = lambda x: tuple(sorted(x.items())) if isinstance(x, dict) else x
    mine, prom = {key(x) for x in a}, {key(x) for x in b}
    if len(mine) != len(a):
        return f"gpulse lists {len(a) - len(mine)} entries twice"
    if mine == prom:
        return None
    return (f"{len(mine)} entries against Prometheus' {len(prom)}; only in gpulse: "
            f"{sorted(mine - prom, key=str)[:3]}; only in Prometheus: "
            f"{sorted(prom - mine, key=str)[:3]}")


def size(answer, listing):
    ok, data = answer
    if not ok:
        return "an error"
    if listing:
        return f"{len(data)} entries"
    kind = data.get("resultType") if isinstance(data, dict) else None
    return f"{len(data['result'])} series" if kind in ("vector", "matrix") else str(kind)


class Replay:
    """Asks both servers the same requests, prints a line for each and
    counts those whose answers differ."""

    def __init__(self, gbase, pbase):
        self.gbase, self.pbase = gbase, pbase
        self.asked = self.differ = 0

    def record(self, what, diff, counts=""):
        self.asked += 1
        self.differ += diff is not None
        print(f"{'ok     ' if diff is None else 'DIFFERS'} {what}{': ' + counts if counts else ''}")
        if diff:
            print(f"        {diff}")

    def request(self, what, path, params, post=False, listing=False, expect=None):
        """Prometheus' data for the request; its failure ends the test. With
        `expect`, both answers must be exactly that data."""
        theirs = ask(self.pbase, path, params, post)
        if not theirs[0] or expect not in (None, theirs[1]):
            fail(f"Prometheus answered {what} with {theirs[1]}")
        ours = ask(self.gbase, path, params, post)
        diff = listing_diff(ours, theirs) if listing else answer_diff(ours, theirs, False)
        if diff is None and expect not in (None, ours[1]):
            diff = f"gpulse answered {ours[1]}, not {expect}"
        self.record(what, diff, f"{size(theirs, listing)} (gpulse {size(ours, listing)})")
        return theirs[1]


def wait_for_scrapes(pbase, n):
    """Until Prometheus has scraped every target n times."""
    deadline = time.time() + n + 30
    while time.time() < deadline:
        ok, data = ask(pbase, "/api/v1/query", {"query": "count_over_time(up[1m])"}, False)
        counts = [float(s["value"][1]) for s in data["result"]] if ok else []
        if len(counts) == len(FILES) and min(counts) >= n:
            return
        time.sleep(0.25)
    fail(f"Prometheus did not scrape its {len(FILES)} targets {n} times in time")


def wait_for_remote_write(gbase, pbase, t):
    """Until gpulse holds every sample Prometheus holds in [t-30s, t]."""
    params = {"query": '{__name__=~".+"}[30s]', "time": str(t)}
    theirs = ask(pbase, "/api/v1/query", params, False)
    if not theirs[0]:
        fail(f"Prometheus failed {params['query']}: {theirs[1]}")
    deadline = time.time() + 20
    while True:
        diff = answer_diff(ask(gbase, "/api/v1/query", params, False), theirs, False)
        if diff is None:
            points = sum(len(s["values"]) for s in theirs[1]["result"])
            print(f"data: {points} samples of {len(theirs[1]['result'])} series equal in "
                  f"[T-30s, T], T={t}")
            return
        if time.time() > deadline:
            fail(f"gpulse does not hold Prometheus' samples of [T-30s, T] after 20 s: {diff}")
        time.sleep(0.5)


def save_and_test(r):
    r.request("query 1+1 at 4", "/api/v1/query", {"query": "1+1", "time": "4"},
              expect={"resultType": "scalar", "result": [4, "2"]})
    # Grafana reads the version to choose its features; Prometheus' own is not
    # compared (Debian's says 2.42.0+ds).
    ok, info = ask(r.gbase, "/api/v1/status/buildinfo", {}, False)
    version = info.get("version", "") if ok and isinstance(info, dict) else ""
    semver = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    recent = semver is not None and tuple(map(int, semver.groups())) >= (2, 24, 0)
    r.record("buildinfo", None if recent else f"gpulse answered {info}: not a version "
             "2.24.0 or later, so Grafana would not use the label values API",
             f"gpulse says version {version}")


def template_variables(r, span):
    """$Hostname and $gpu as "All", from Prometheus' answers."""
    def label_values(match, label):
        return r.request(f"label_values({match}, {label})", f"/api/v1/label/{label}/values",
                         [("match[]", match)] + span, listing=True)

    def series(match):  # what older Grafanas ask for label_values
        return r.request(f"series {match}", "/api/v1/series", [("match[]", match)] + span,
                         listing=True)

    hosts = label_values("DCGM_FI_DEV_FB_FREE", "Hostname")
    if sorted({s.get("Hostname") for s in series("DCGM_FI_DEV_FB_FREE")}) != hosts or \
            len(hosts) != 4:
        fail(f"the scrapes should give 4 hosts with FB_FREE, both ways: {hosts}")
    hostname = all_values(hosts)
    match = f'DCGM_FI_DEV_FB_FREE{{Hostname=~"{hostname}"}}'
    gpu = all_values(label_values(match, "gpu"))
    series(match)
    drivers = all_values(label_values("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DRIVER_VERSION"))
    match = f'DCGM_FI_DEV_FB_FREE{{DCGM_FI_DRIVER_VERSION=~"{drivers}"}}'
    if label_values(match, "Hostname") != hosts:
        fail(f"Prometheus' answer to the escaped driver versions is not every host: {match}")
    return hostname, gpu


def metric_browser(r, span):
    r.request("labels", "/api/v1/labels", span, listing=True)
    r.request("label __name__ values", "/api/v1/label/__name__/values", span, listing=True)
    # Grafana's metric browser asks for at most 40000 series (Prometheus 2.42
    # ignores `limit`; here it is far above the count).
    match = '{__name__="DCGM_FI_DEV_GPU_TEMP"}'
    r.request(f"series {match}", "/api/v1/series",
              [("match[]", match), ("limit", "40000")] + span, listing=True)


def metadata(r):
    """The help the metric browser shows, from /api/v1/metadata. Prometheus
    lists each distinct (type, help, unit) its targets gave a metric; gpulse
    keeps the latest that remote write sent, which must be one of them."""
    deadline = time.time() + 10  # metadata goes out every second, apart from samples
    while True:
        theirs = ask(r.pbase, "/api/v1/metadata", {}, False)
        ours = ask(r.gbase, "/api/v1/metadata", {}, False)
        diff = None
        if not theirs[0] or not theirs[1]:
            fail(f"Prometheus answered /api/v1/metadata with {theirs[1]}")
        if not ours[0]:
            diff = f"gpulse: {ours[1]}"
        elif set(ours[1]) != set(theirs[1]):
            diff = f"metrics only in Prometheus: {sorted(set(theirs[1]) - set(ours[1]))[:3]}; only " \
                   f"in gpulse: {sorted(set(ours[1]) - set(theirs[1]))[:3]}"
        else:
            wrong = [n for n, e in ours[1].items() if len(e) != 1 or e[0] not in theirs[1][n]]
            diff = f"entries not Prometheus': {wrong[:3]}" if wrong else None
        if diff is None or time.time() > deadline:
            break
        time.sleep(0.5)
    r.record("metadata", diff, f"{len(theirs[1])} metrics (gpulse {len(ours[1]) if ours[0] else 0})")


def panels(r, hostname, gpu, start, end):
    answers = []
    for expr in RANGE_PANELS + INSTANT_PANELS:
        query = expr.replace("$Hostname", hostname).replace("$gpu", gpu)
        if expr in INSTANT_PANELS:
            answers.append(r.request(f"instant {expr}", "/api/v1/query",
                                     {"query": query, "time": end}))
        else:
            answers.append(r.request(f"range {expr}", "/api/v1/query_range",
                                     {"query": query, "start": start, "end": end,
                                      "step": str(STEP)}, post=True))
    empty = sum(not data["result"] for data in answers)
    if empty:
        fail(f"{empty} panels returned no series from Prometheus: the comparison proves nothing")


def replay(r, t):
    start, end = str(t - WINDOW), str(t)
    span = [("start", start), ("end", end)]
    print("-- Save & test")
    save_and_test(r)
    print("-- Template variables")
    hostname, gpu = template_variables(r, span)
    print("-- Metric browser")
    metric_browser(r, span)
    metadata(r)
    print(f"-- Panels ($Hostname={hostname}, $gpu={gpu})")
    panels(r, hostname, gpu, start, end)


def main():
    if len(sys.argv) != 2:
        fail("usage: grafana_replay.py PATH/TO/gpulse")
    if not os.path.exists(PROMETHEUS):
        print("prometheus not installed: skipped")
        return 0
    gpulse = sys.argv[1]
    missing = [f for f in FILES if not os.path.exists(os.path.join(SCRAPES, f))]
    if missing:
        fail(f"{missing} missing from {SCRAPES} (the shared data folder beside the checkout)")
    began = time.time()
    work = tempfile.mkdtemp(prefix="gpulse-grafana-")
    exporters = [MovingScrape(os.path.join(SCRAPES, f)) for f in FILES]
    procs = []
    try:
        gbase, server = start_gpulse(gpulse, os.path.join(work, "g"), work)
        procs.append(server)
        pport = free_port()
        pbase = f"http://127.0.0.1:{pport}"
        procs.append(Process("prometheus", [
            PROMETHEUS, "--config.file",
            prometheus_config(work, [e.port for e in exporters], f"{gbase}/api/v1/write?measurement=dcgm"),
            "--storage.tsdb.path", os.path.join(work, "p"),
            "--web.listen-address", f"127.0.0.1:{pport}"],
            os.path.join(work, "prometheus.log"), pbase + "/-/ready"))
        # Prometheus applies its targets about 5 s after it starts.
        wait_for_scrapes(pbase, SCRAPES_BEFORE_T)
        t = int(time.time() - 3) // STEP * STEP  # Grafana's end, aligned down to the step
        wait_for_remote_write(gbase, pbase, t)
        r = Replay(gbase, pbase)
        replay(r, t)
    except BaseException:
        print(f"grafana_replay: logs in {work}")
        raise
    finally:
        for p in reversed(procs):
            p.stop()
        for e in exporters:
            e.stop()
        print(f"grafana_replay: {time.time() - began:.1f} s")
    if os.environ.get("KEEP") is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"grafana_replay: {r.asked} requests compared, {r.differ} differ")
    return 1 if r.differ else 0


if __name__ == "__main__":
    sys.exit(main())
