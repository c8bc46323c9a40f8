#!/usr/bin/env python3
"""Two `gpulse serve` nodes, sites A and B (regions us-east and eu-west),
each fed by `gpulse simulate`, forwarding everything they store to one
Debian victoria-metrics by Prometheus remote write and to a central
`gpulse serve` by line protocol, and exporting their GPU-minute ledgers as
series (ledger_export) that go the same way.

In the middle the receivers are stopped for OUTAGE seconds (20 unless the
environment says otherwise: four times the senders' 5 s backoff cap, so they
retry at the cap) while both nodes take more simulated hours, and
node A is killed with -9 and started again (node B is restarted cleanly,
with the ledger export turned on for both). Afterwards:
  - both nodes have nothing left to send (gpulse_forward_pending_bytes 0),
    they counted failed sends during the outage and dropped nothing;
  - every sample each node holds is in victoria-metrics, series by series:
    count_over_time over the whole span, metric by metric, asked of the
    node's PromQL and of victoria-metrics', gives the same series (the node's
    labels plus site="A" or "B", set by the forwarding config) with the same
    counts;
  - the central gpulse holds, measurement by measurement and field by field,
    as many values as the two nodes together;
  - fleet-wide goodput from victoria-metrics' PromQL over the exported
    ledger, sum(sum_over_time(gpu_minutes_productive[6h])) /
    sum(sum_over_time(gpu_minutes_capacity[6h])), equals NORTHSTAR over the
    union at the central gpulse, and so do the hardware and slack shares.

The fleet schema's events (sched, job, maintenance, incident) tell the
events of one minute apart by nanoseconds (docs/fleet-schema.md). Remote
write carries milliseconds, and PromQL reads one sample a millisecond per
series, so the node's PromQL shows fewer of them than it holds: their
metrics are compared by total, the node's from InfluxQL's count() of the
stored field, victoria-metrics' as the sum of its series' counts.

victoria-metrics runs with -dedup.minScrapeInterval=1ms: a sender that resends
after a crash sends the same samples again, which it then keeps once, as
docs/operations.md ("Beyond one machine") tells users to run it.

The recording rules of docs/central/gpulse-fleet-rules.yml are evaluated by
victoria-metrics over the same series and must give NORTHSTAR's figures for
the last hour, and the panel of docs/central/ must show their series.

Usage: forward_vm.py PATH/TO/gpulse   (ctest runs it with Debian's
/usr/bin/python3, whose python3-yaml reads the rules)
Skips (exit 0) when /usr/bin/victoria-metrics is absent; .ci/deps installs it.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

import yaml

from processes import Process, free_port, http_get

VM = "/usr/bin/victoria-metrics"
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "central")
OUTAGE = float(os.environ.get("OUTAGE", "20"))


def fail(message):
    raise SystemExit(os.path.basename(sys.argv[0]).removesuffix(".py") + ": " + message)


def start_vm(work, port):
    return Process("victoria-metrics",
                   [VM, f"-httpListenAddr=127.0.0.1:{port}", f"-storageDataPath={work}/vm",
                    "-retentionPeriod=100y", "-dedup.minScrapeInterval=1ms",
                    "-search.latencyOffset=0s", "-loggerLevel=ERROR"],
                   os.path.join(work, "vm.log"), f"http://127.0.0.1:{port}/health")


class Node:
    """A `gpulse serve` of site `site` with the config `extra` (forwarding)."""

    def __init__(self, gpulse, work, site, extra):
        self.gpulse, self.site = gpulse, site
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = os.path.join(work, f"gpulse-{site}.log")
        self.config = os.path.join(work, f"gpulse-{site}.json")
        self.settings = {"listen": f"127.0.0.1:{self.port}",
                         "data": os.path.join(work, f"data-{site}"),
                         "alerts": {"evaluate": False}}
        self.settings.update(extra)
        self.proc = None
        self.start()

    def start(self):
        with open(self.config, "w") as f:
            json.dump(self.settings, f)
        self.proc = Process(f"gpulse {self.site}", [self.gpulse, "serve", "--config", self.config],
                            self.log + f".{time.time():.0f}", self.base + "/ping")

    def kill9(self):
        self.proc.proc.send_signal(signal.SIGKILL)
        self.proc.proc.wait()
        self.proc.log.close()

    def simulate(self, seed, start, hours, first_region):
        subprocess.run([self.gpulse, "simulate", "--url", self.base, "--regions", "1",
                        "--first-region", str(first_region), "--nodes", "2",
                        "--hours", str(hours), "--start", str(start),
                        "--seed", str(seed), "--truth", os.devnull],
                       check=True, stdout=subprocess.DEVNULL)

    def metric(self, name):
        status, body = http_get(self.base + "/metrics")
        if status != 200:
            fail(f"{self.site} /metrics answered {status}")
        for line in body.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
        fail(f"{self.site} /metrics has no {name}")


def query(base, expr, at):
    q = urllib.parse.urlencode({"query": expr, "time": str(at)})
    status, body = http_get(f"{base}/api/v1/query?{q}", timeout=60)
    if status != 200:
        fail(f"{base} answered {status} to {expr}: {body[:500]}")
    return json.loads(body)["data"]["result"]


def counts(base, at, span, site=None):
    """{(name, labels as sorted pairs, site left out): samples} of every
    series over the span before `at`, a metric name at a time (a range
    function drops the name, so series of two names could collide)."""
    match = "" if site is None else f'{{site="{site}"}}'
    status, body = http_get(f"{base}/api/v1/label/__name__/values?" + urllib.parse.urlencode(
        {"match[]": match or '{__name__=~".+"}', "start": str(at - span), "end": str(at)}))
    if status != 200:
        fail(f"{base} answered {status} to its metric names: {body[:300]}")
    out = {}
    for name in json.loads(body)["data"]:
        where = f'__name__="{name}"' + ("" if site is None else f',site="{site}"')
        for r in query(base, f"count_over_time({{{where}}}[{span}s])", at):
            labels = tuple(sorted((k, v) for k, v in r["metric"].items() if k != "site"))
            out[(name, labels)] = int(float(r["value"][1]))
    return out


EVENTS = ("sched", "job", "maintenance", "incident")


def is_event(name):
    return any(name.startswith(e + "_") for e in EVENTS)


def influx(base, q):
    status, body = http_get(f"{base}/query?" + urllib.parse.urlencode({"q": q, "db": "gpulse"}))
    if status != 200:
        fail(f"{base} answered {status} to {q}: {body[:300]}")
    return json.loads(body)["results"][0].get("series", [])


def event_totals(base, at, span):
    """{metric: samples stored} of the event measurements' numeric fields,
    over the window a store's count_over_time(...[span]) at `at` reads:
    (at - span, at] in milliseconds, the precision remote write carries. An
    event stamped in the nanoseconds after second `at` (the simulator adds
    the job number) is a sample at `at` there, so it is counted here too."""
    out = {}
    window = f"time > {(at - span) * 1000}ms AND time < {at * 1000 + 1}ms"
    for m in EVENTS:
        for series in influx(base, f'SHOW FIELD KEYS FROM "{m}"'):
            for field, kind in series["values"]:
                if kind == "string":
                    continue
                rows = influx(base, f'SELECT count("{field}") FROM "{m}" WHERE {window}')
                out[f"{m}_{field}"] = rows[0]["values"][0][1] if rows else 0
    return out


def field_counts(base):
    """{(measurement, field): values stored} over all time."""
    out = {}
    for series in influx(base, "SHOW MEASUREMENTS"):
        for (m,) in series["values"]:
            for row in influx(base, f'SELECT count(*) FROM "{m}"'):
                for column, value in zip(row["columns"][1:], row["values"][0][1:]):
                    out[(m, column)] = value or 0
    return out


def check_sent(node, site, store, at, span, names=None):
    """Every sample the node at `node` holds over the span before `at` (of
    the metrics `names`, or all) is in the store at `store`, under the
    label site=`site`: (samples, series, samples of events) compared."""
    held = counts(node, at, span)
    sent = counts(store, at, span, site)
    events = {} if names is not None else event_totals(node, at, span)
    if names is not None:
        held = {k: n for k, n in held.items() if k[0] in names}
    for name, stored in events.items():
        got = sum(n for (metric, _), n in sent.items() if metric == name)
        if got != stored:
            fail(f"site {site}: {name}: the node holds {stored} samples, {store} {got}")
    held = {k: n for k, n in held.items() if not is_event(k[0])}
    sent = {k: n for k, n in sent.items() if not is_event(k[0])}
    missing = [k for k in held if k not in sent]
    extra = [k for k in sent if k not in held]
    wrong = [(k, held[k], sent[k]) for k in held if k in sent and held[k] != sent[k]]
    if missing or extra or wrong or not held:
        fail(f"site {site}: {len(held)} series held, {len(missing)} missing from {store} "
             f"(first {missing[:2]}), {len(extra)} it has that the node does not "
             f"({extra[:2]}), {len(wrong)} with other counts ({wrong[:3]})")
    return sum(held.values()) + sum(events.values()), len(held), sum(events.values())


def check_recording_rules(vm_url, central, end):
    """Every rule of docs/central/gpulse-fleet-rules.yml, evaluated by
    victoria-metrics at `end`, equals NORTHSTAR's figure for the hour before
    it at the centre; the panel of docs/central/ shows recorded series."""
    with open(os.path.join(DOCS, "gpulse-fleet-rules.yml")) as f:
        rules = yaml.safe_load(f)["groups"][0]["rules"]
    hour = f"WHERE time >= {end - 3600}s AND time < {end}s"
    fleet = influx(central, "NORTHSTAR " + hour)[0]
    fleet = dict(zip(fleet["columns"], fleet["values"][0]))
    regions = {r["tags"]["region"]: dict(zip(r["columns"], r["values"][0]))
               for r in influx(central, "NORTHSTAR BY region " + hour)}
    for rule in rules:
        got = query(vm_url, rule["expr"], end)
        for series in got:
            value = float(series["value"][1])
            name = rule["record"]
            if name == "fleet:goodput:ratio1h":
                want = fleet["goodput"]
            elif name == "region:goodput:ratio1h":
                want = regions[series["metric"]["region"]]["goodput"]
            elif name == "fleet:gpu_minutes_capacity:sum1h":
                want = fleet["capacity_gpu_minutes"]
            else:
                want = fleet[rule["labels"]["loss"]]
            if abs(value - want) > 1e-9 * max(1.0, abs(want)):
                fail(f"rule {name} {series['metric']}: victoria-metrics says {value}, "
                     f"NORTHSTAR at the centre {want} (by region: {regions}; fleet: {fleet})")
        if not got:
            fail(f"rule {rule['record']}: victoria-metrics answered nothing")
    with open(os.path.join(DOCS, "fleet-goodput-panel.json")) as f:
        panel = json.load(f)
    recorded = {rule["record"] for rule in rules}
    for target in panel["targets"]:
        if target["expr"] not in recorded:
            fail(f"the panel's {target['expr']} is not a recorded series")
    print(f"forward_vm: the {len(rules)} recording rules of docs/central/ agree with NORTHSTAR")


def main():
    gpulse = sys.argv[1]
    if not os.path.exists(VM):
        print("forward_vm: skipped, no " + VM)
        return
    work = tempfile.mkdtemp(prefix="gpulse-forward-")
    vm_port = free_port()
    vm = start_vm(work, vm_port)
    vm_url = f"http://127.0.0.1:{vm_port}"
    nodes, central = [], None
    try:
        central = Node(gpulse, work, "central", {})
        for site in ("A", "B"):
            nodes.append(Node(gpulse, work, site, {"remote_write": [
                {"name": "vm", "url": vm_url + "/api/v1/write", "labels": {"site": site}},
                {"name": "central", "protocol": "influx", "url": central.base + "/write",
                 "labels": {"site": site}}]}))
        # Two UTC days ago, 30 hours: the second day's minutes are judged by
        # the first day's usual waits (docs/metric-framework.md, rule 6).
        first = (int(time.time()) // 86400 - 2) * 86400
        for i, node in enumerate(nodes):
            node.simulate(seed=21 + i, start=first, hours=27, first_region=i)

        vm.stop()
        central.proc.stop()
        outage_began = time.time()
        for i, node in enumerate(nodes):
            node.simulate(seed=31 + i, start=first + 27 * 3600, hours=3, first_region=i)
        time.sleep(2)  # the senders meet the closed ports
        # The ledger's export from now on: its first run covers the 72 hours
        # before, all of the simulated span.
        for node in nodes:
            node.settings["ledger_export"] = {"every_minutes": 5, "backfill_hours": 72,
                                              "database": "gpulse"}
        nodes[0].kill9()
        nodes[0].start()
        nodes[1].proc.stop()
        nodes[1].start()
        time.sleep(max(0.0, OUTAGE - (time.time() - outage_began)))
        vm = start_vm(work, vm_port)
        central.start()
        print(f"forward_vm: the receivers were down {time.time() - outage_began:.0f} s; "
              "node A was killed with -9, node B restarted")

        deadline = time.time() + 120
        while any(n.metric("gpulse_forward_pending_bytes") > 0 for n in nodes) or \
                any(not influx(n.base, 'SHOW FIELD KEYS FROM "gpu_minutes"') for n in nodes):
            if time.time() > deadline:
                fail("the nodes did not export and send everything within 120 s after the outage")
            time.sleep(0.5)
        while any(n.metric("gpulse_forward_pending_bytes") > 0 for n in nodes):
            time.sleep(0.2)
        for node in nodes:
            if node.metric("gpulse_forward_samples_dropped_total") != 0:
                fail(f"{node.site} dropped samples")
            if node.metric("gpulse_forward_samples_sent_total") == 0:
                fail(f"{node.site} sent nothing")
        # Node B's figures count since its restart; A's since the kill.
        if nodes[1].metric("gpulse_forward_sends_failed_total") == 0 and \
           nodes[0].metric("gpulse_forward_sends_failed_total") == 0:
            fail("no failed send counted during the outage")
        http_get(vm_url + "/internal/force_flush")

        at = first + 31 * 3600
        span = 32 * 3600  # the whole span: Prometheus 2 and VictoriaMetrics differ at its start
        total = 0
        for node in nodes:
            samples, series, events = check_sent(node.base, node.site, vm_url, at, span)
            total += samples
            print(f"forward_vm: site {node.site}: {samples} samples ({series} series, and "
                  f"{events} of events), all in victoria-metrics")

        # The central gpulse holds both nodes' points.
        a, b, c = (field_counts(n.base) for n in (nodes[0], nodes[1], central))
        for key in set(a) | set(b) | set(c):
            if a.get(key, 0) + b.get(key, 0) != c.get(key, 0):
                fail(f"{key}: the nodes hold {a.get(key, 0)} + {b.get(key, 0)} values, "
                     f"the central gpulse {c.get(key, 0)}")
        print(f"forward_vm: the central gpulse holds the {sum(c.values())} values of both nodes")

        # Fleet-wide goodput over the second day's 6 hours: victoria-metrics
        # over the exported ledger, and NORTHSTAR over the union at the centre.
        begin, end = first + 24 * 3600, first + 30 * 3600
        def ratio(loss):
            got = query(vm_url, f"sum(sum_over_time(gpu_minutes_{loss}[6h])) / "
                                "sum(sum_over_time(gpu_minutes_capacity[6h]))", end)
            return float(got[0]["value"][1])
        rows = influx(central.base, f"NORTHSTAR WHERE time >= {begin}s AND time < {end}s")
        ns = dict(zip(rows[0]["columns"], rows[0]["values"][0]))
        for loss, column in (("productive", "goodput"), ("hardware", "hardware"),
                             ("slack", "slack")):
            exported = ratio(loss)
            if abs(exported - ns[column]) > 1e-9:
                by_site = []
                for node in nodes:
                    got = query(vm_url, f'sum(sum_over_time(gpu_minutes_{loss}{{site="{node.site}"}}[6h])) / '
                                        f'sum(sum_over_time(gpu_minutes_capacity{{site="{node.site}"}}[6h]))', end)
                    own = influx(node.base, f"NORTHSTAR WHERE time >= {begin}s AND time < {end}s")
                    own = dict(zip(own[0]["columns"], own[0]["values"][0]))
                    by_site.append(f"{node.site}: exported {got[0]['value'][1]}, its NORTHSTAR "
                                   f"{own[column]} of {own['capacity_gpu_minutes']}")
                union = influx(central.base, f"NORTHSTAR BY region WHERE time >= {begin}s AND time < {end}s")
                by_site += [f"central {r['tags']}: {dict(zip(r['columns'], r['values'][0]))[column]}" for r in union]
                fail(f"{loss}: victoria-metrics over the exported ledgers says {exported}, "
                     f"NORTHSTAR over the union {ns[column]} ({'; '.join(by_site)})")
        print(f"forward_vm: fleet goodput {ns['goodput']:.6f} from victoria-metrics over the "
              "exported ledgers and from NORTHSTAR at the centre")
        check_recording_rules(vm_url, central.base, end)
        print(f"forward_vm: ok, {total} samples")
    finally:
        for node in nodes + ([central] if central else []):
            node.proc.stop()
        vm.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
