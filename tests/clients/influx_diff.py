#!/usr/bin/env python3
"""InfluxQL against the real thing: the same points written to Debian's InfluxDB
1.6.7 (`influxd`) and to `gpulse serve`, the same statements sent to both over
/query, and the answers compared series by series and row by row.

Where gpulse differs on purpose, the difference is written in
docs/query-language.md ("Differences from InfluxDB 1.x") and the statement
is listed in DIFFERENT below with the section's words; it is run against
gpulse alone, which must answer it without an error. Every other statement
must give the same series (name, tags, columns) and the same rows; numbers
are equal when they agree to 1e-9 relative (InfluxDB prints a float 42.0 as
42).

Also here, as the tools send them: Telegraf's start-up (`CREATE DATABASE`
on POST /query), Grafana's InfluxQL data source (its "Save & test", a
panel's query with epoch=ms by GET and by POST form, and the template
variable queries), each checked against what InfluxDB answers.

Usage: influx_diff.py PATH/TO/gpulse     (ctest -L clients runs it)
Skips (exit 0) when influxd is absent; .ci/deps installs it (Debian's
influxdb package).
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from processes import Process, free_port

DB = "diff"
# 2026-11-02T00:00:00Z, a Monday, and three hours of minutes after it.
T0 = 1793577600
MINUTES = 180
RANGE = f"time >= {T0}s AND time < {T0 + MINUTES * 60}s"


def points():
    """Three nodes of two GPUs each, a point a minute with gaps, every field type."""
    lines = []
    for n, (node, sku) in enumerate([("n1", "H100"), ("n2", "H100"), ("n3", "A100")]):
        for gpu in range(2):
            for m in range(MINUTES):
                if (m + n) % 17 == 5:  # a missing minute now and then
                    continue
                t = T0 + m * 60
                util = (m * 7 + n * 13 + gpu * 29) % 101
                temp = 40 + ((m * 3 + n * 5 + gpu) % 37) / 2
                power = round(250 + 3.25 * ((m + gpu * 11) % 53) - n * 10.5, 2)
                energy = (m + 1) * (100 + n * 10 + gpu)  # a counter
                state = ["idle", "train", "train", "eval"][(m // 20 + n + gpu) % 4]
                healthy = "true" if (m + gpu) % 45 else "false"
                lines.append(
                    f"gpu,node={node},gpu={gpu},sku={sku} util={util}i,temp_c={temp},"
                    f"power_w={power},energy_j={energy}i,state=\"{state}\",healthy={healthy} {t}")
        for m in range(0, MINUTES, 5):
            lines.append(f"node,node={node},sku={sku} cpu_util={(m * 11 + n) % 97}i {T0 + m * 60}")
    return "\n".join(lines) + "\n"


# Statements both must answer alike. {r} is the range above.
SAME = [
    # Aggregates, over a range, by tags and by time.
    "SELECT count(util) FROM gpu WHERE {r}",
    "SELECT count(util), sum(util), mean(util) FROM gpu WHERE {r} GROUP BY node",
    "SELECT mean(temp_c), median(temp_c), spread(temp_c), stddev(temp_c) FROM gpu WHERE {r} GROUP BY node, gpu",
    "SELECT mode(state) FROM gpu WHERE {r} GROUP BY node",
    "SELECT count(state), count(healthy) FROM gpu WHERE {r}",
    "SELECT distinct(state) FROM gpu WHERE {r}",
    "SELECT count(distinct(state)) FROM gpu WHERE {r}",
    "SELECT count(distinct(util)) FROM gpu WHERE {r} GROUP BY node",
    "SELECT sum(energy_j) FROM gpu WHERE {r} GROUP BY time(30m)",
    "SELECT mean(util) FROM gpu WHERE {r} GROUP BY time(15m), node",
    "SELECT max(util) FROM gpu WHERE {r} GROUP BY time(1h), sku",
    "SELECT mean(util) FROM gpu WHERE {r} GROUP BY time(1h, 15m)",
    "SELECT mean(util) FROM gpu WHERE {r} GROUP BY time(1h, -20m)",
    "SELECT count(util) FROM gpu WHERE node = 'n1' AND gpu = '0' AND {r} GROUP BY time(10m) fill(none)",
    "SELECT mean(util) FROM gpu WHERE util > 90 AND {r} GROUP BY time(10m) fill(null)",
    "SELECT mean(util) FROM gpu WHERE util > 90 AND {r} GROUP BY time(10m) fill(0)",
    "SELECT mean(util) FROM gpu WHERE util > 90 AND {r} GROUP BY time(10m) fill(-1.5)",
    "SELECT mean(util) FROM gpu WHERE util > 90 AND {r} GROUP BY time(10m) fill(previous)",
    "SELECT mean(util) FROM gpu WHERE util > 90 AND {r} GROUP BY time(10m) fill(linear)",
    "SELECT mean(util) * 2 + 1, mean(util) / max(util) FROM gpu WHERE {r} GROUP BY node",
    # Selectors.
    "SELECT max(util) FROM gpu WHERE {r}",
    "SELECT min(temp_c) FROM gpu WHERE {r} GROUP BY node",
    "SELECT first(util) FROM gpu WHERE node = 'n2' AND gpu = '1' AND {r}",
    "SELECT last(power_w) FROM gpu WHERE node = 'n3' AND gpu = '0' AND {r}",
    "SELECT first(state), last(state) FROM gpu WHERE {r} GROUP BY node, gpu",
    "SELECT max(util) FROM gpu WHERE {r} GROUP BY time(30m), node",
    "SELECT top(util, 3) FROM gpu WHERE node = 'n1' AND gpu = '0' AND {r}",
    "SELECT bottom(util, 2) FROM gpu WHERE node = 'n1' AND gpu = '1' AND {r} GROUP BY time(1h)",
    "SELECT percentile(util, 90) FROM gpu WHERE node = 'n2' AND gpu = '0' AND {r}",
    # Quantiles over a range that is not whole tier buckets: read raw, exact.
    "SELECT percentile(util, 95), percentile(temp_c, 50) FROM gpu WHERE time >= {t0}s AND time < {t170}s GROUP BY node",
    # Whole hours: quantiles of buckets finer than a day are read raw, exactly.
    "SELECT percentile(util, 95), percentile(temp_c, 50) FROM gpu WHERE {r} GROUP BY node",
    # Transformations.
    "SELECT derivative(energy_j, 1m) FROM gpu WHERE node = 'n1' AND gpu = '0' AND time >= {t0}s AND time < {t30}s",
    "SELECT non_negative_derivative(energy_j, 1s) FROM gpu WHERE node = 'n2' AND gpu = '1' AND time >= {t0}s AND time < {t30}s",
    "SELECT difference(util) FROM gpu WHERE node = 'n3' AND gpu = '1' AND time >= {t0}s AND time < {t30}s",
    "SELECT non_negative_difference(util) FROM gpu WHERE node = 'n3' AND gpu = '0' AND time >= {t0}s AND time < {t30}s",
    "SELECT cumulative_sum(util) FROM gpu WHERE node = 'n1' AND gpu = '1' AND time >= {t0}s AND time < {t30}s",
    "SELECT moving_average(util, 3) FROM gpu WHERE node = 'n2' AND gpu = '0' AND time >= {t0}s AND time < {t30}s",
    "SELECT derivative(mean(util), 10m) FROM gpu WHERE {r} GROUP BY time(10m)",
    "SELECT difference(max(util)) FROM gpu WHERE {r} GROUP BY time(30m), node",
    "SELECT cumulative_sum(sum(energy_j)) FROM gpu WHERE {r} GROUP BY time(1h)",
    "SELECT moving_average(mean(temp_c), 2) FROM gpu WHERE {r} GROUP BY time(30m)",
    # Math.
    "SELECT abs(temp_c - 50), floor(power_w), ceil(power_w), round(power_w) FROM gpu WHERE node = 'n1' AND gpu = '0' AND time >= {t0}s AND time < {t10}s",
    "SELECT sqrt(util), pow(util, 2), ln(util + 1), log10(util + 1), log2(util + 1) FROM gpu WHERE node = 'n2' AND gpu = '1' AND time >= {t0}s AND time < {t10}s",
    # Raw rows, conditions, regexes.
    "SELECT util, temp_c FROM gpu WHERE node = 'n1' AND gpu = '0' AND time >= {t0}s AND time < {t10}s",
    "SELECT * FROM gpu WHERE node = 'n3' AND time >= {t0}s AND time < {t5}s",
    "SELECT util FROM gpu WHERE node =~ /n[12]/ AND gpu = '1' AND util > 95 AND {r}",
    "SELECT util FROM gpu WHERE node !~ /^n1$/ AND util >= 99 AND {r}",
    "SELECT state FROM gpu WHERE state =~ /^ev/ AND node = 'n1' AND gpu = '0' AND time >= {t0}s AND time < {t30}s",
    "SELECT util FROM gpu WHERE (util < 2 OR util > 99) AND healthy = true AND {r}",
    "SELECT util FROM /gp./ WHERE node = 'n1' AND gpu = '1' AND time >= {t0}s AND time < {t5}s",
    "SELECT util * 2, util + temp_c FROM gpu WHERE node = 'n3' AND gpu = '1' AND time >= {t0}s AND time < {t5}s",
    # ORDER BY, LIMIT, OFFSET, SLIMIT, SOFFSET.
    "SELECT util FROM gpu WHERE node = 'n1' AND gpu = '0' AND {r} ORDER BY time DESC LIMIT 5",
    "SELECT util FROM gpu WHERE node = 'n2' AND gpu = '0' AND {r} LIMIT 3 OFFSET 4",
    "SELECT mean(util) FROM gpu WHERE {r} GROUP BY time(1h), node ORDER BY time DESC",
    "SELECT mean(util) FROM gpu WHERE {r} GROUP BY time(30m), node LIMIT 2",
    "SELECT mean(util) FROM gpu WHERE {r} GROUP BY node, gpu SLIMIT 2",
    "SELECT mean(util) FROM gpu WHERE {r} GROUP BY node, gpu SLIMIT 2 SOFFSET 3",
    # Subqueries.
    "SELECT max(m) FROM (SELECT mean(util) AS m FROM gpu WHERE {r} GROUP BY time(10m), node) WHERE {r} GROUP BY time(1h)",
    "SELECT count(peak) FROM (SELECT max(util) AS peak FROM gpu WHERE {r} GROUP BY time(15m), node, gpu) WHERE peak > 95 AND {r}",
    "SELECT mean(s) FROM (SELECT sum(power_w) AS s FROM gpu WHERE {r} GROUP BY time(30m), node) WHERE {r} GROUP BY node",
    # Time zones.
    "SELECT count(util) FROM gpu WHERE {r} GROUP BY time(1h) tz('Europe/Paris')",
    "SELECT max(util) FROM gpu WHERE {r} GROUP BY time(30m) tz('America/New_York')",
    # Several statements in one query.
    "SELECT count(util) FROM gpu WHERE {r}; SELECT count(cpu_util) FROM node WHERE {r}",
    # SHOW.
    "SHOW MEASUREMENTS",
    "SHOW MEASUREMENTS WITH MEASUREMENT =~ /no/",
    "SHOW TAG KEYS",
    "SHOW TAG KEYS FROM gpu",
    "SHOW TAG VALUES FROM gpu WITH KEY = node",
    "SHOW TAG VALUES FROM gpu WITH KEY IN (sku, gpu)",
    "SHOW TAG VALUES FROM gpu WITH KEY = node WHERE sku = 'A100'",
    "SHOW FIELD KEYS",
    "SHOW FIELD KEYS FROM node",
]

# Statements gpulse answers differently on purpose: the reason, as
# docs/query-language.md ("Differences from InfluxDB 1.x") gives it. Run
# against gpulse alone.
DIFFERENT = {
    "SELECT mode(util) FROM gpu WHERE {r} GROUP BY node":
        "mode(): among values equally frequent, gpulse answers the smallest",
    "SELECT integral(power_w) FROM gpu WHERE {r} GROUP BY node, gpu":
        "integral() without GROUP BY time: the row's time is the range's start, as every "
        "aggregate's",
    "SELECT integral(power_w, 1h) FROM gpu WHERE {r} GROUP BY node":
        "integral() of a group of several series: the sum of each series' integral",
    "SELECT integral(power_w, 1m) FROM gpu WHERE node = 'n1' AND gpu = '0' AND {r} "
    "GROUP BY time(1h)":
        "integral() with GROUP BY time: each bucket integrates the points inside it",
}

# What Grafana's InfluxQL data source sends (its query editor and template
# variables), asked as it asks: GET with epoch=ms, and POST form.
GRAFANA = [
    ("GET", "SHOW measurements"),
    ("GET", "SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)gp/ LIMIT 100"),
    ("GET", 'SHOW TAG KEYS FROM "autogen"."gpu"'),
    ("GET", 'SHOW TAG VALUES FROM "gpu" WITH KEY = "node" WHERE "sku" = \'H100\''),
    ("GET", 'SHOW FIELD KEYS FROM "gpu"'),
    ("GET", 'SELECT mean("util") FROM "gpu" WHERE ("sku" = \'H100\') AND time >= {t0}000ms and '
            'time <= {tend}000ms GROUP BY time(1m), "node" fill(null)'),
    ("POST", 'SELECT mean("util") FROM "gpu" WHERE ("sku" = \'H100\') AND time >= {t0}000ms and '
             'time <= {tend}000ms GROUP BY time(15m), "node" fill(null)'),
    ("POST", 'SELECT max("temp_c") FROM "autogen"."gpu" WHERE time >= {t0}000ms and '
             'time <= {tend}000ms GROUP BY time(1h) fill(none)'),
]


class Server:
    def __init__(self, name, argv, port, log):
        self.name, self.port = name, port
        self.base = f"http://127.0.0.1:{port}"
        self.process = Process(name, argv, log, self.base + "/ping", timeout=30)

    def stop(self):
        self.process.stop()

    def request(self, method, path, params, body=None):
        query = urllib.parse.urlencode(params)
        data = None
        headers = {}
        if method == "POST" and body is None:
            data = query.encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            url = self.base + path
        else:
            url = self.base + path + ("?" + query if query else "")
            data = body
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def write(self, body):
        status, text = self.request("POST", "/write", {"db": DB, "precision": "s"}, body.encode())
        if status != 204:
            raise SystemExit(f"influx_diff: write to {self.name} answered {status}: {text[:300]}")

    def query(self, q, epoch="ns", method="GET"):
        status, text = self.request(method, "/query", {"db": DB, "q": q, "epoch": epoch})
        try:
            return status, json.loads(text)
        except json.JSONDecodeError:
            return status, {"unparsed": text[:300]}


def same_value(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return True
        if math.isnan(a) and math.isnan(b):
            return True
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    return a == b


def series_of(result):
    """A statement's series, sorted by name and tags, in a comparable form."""
    out = []
    for s in result.get("series", []):
        out.append((s.get("name", ""), sorted((s.get("tags") or {}).items()), s.get("columns", []),
                    s.get("values", [])))
    out.sort(key=lambda s: (s[0], s[1]))
    return out


def compare(q, ours, theirs):
    """The differences between two /query answers, as lines; none when alike."""
    problems = []
    a, b = ours.get("results", []), theirs.get("results", [])
    if len(a) != len(b):
        return [f"{len(a)} results against InfluxDB's {len(b)}: {ours} / {theirs}"]
    for i, (x, y) in enumerate(zip(a, b)):
        if ("error" in x) != ("error" in y):
            problems.append(f"statement {i}: gpulse error {x.get('error')!r}, "
                            f"InfluxDB error {y.get('error')!r}")
            continue
        sx, sy = series_of(x), series_of(y)
        if [s[:3] for s in sx] != [s[:3] for s in sy]:
            problems.append(f"statement {i}: series differ:\n    gpulse   {[s[:3] for s in sx]}\n"
                            f"    InfluxDB {[s[:3] for s in sy]}")
            continue
        for (name, tags, cols, rows_x), (_, _, _, rows_y) in zip(sx, sy):
            if len(rows_x) != len(rows_y):
                problems.append(f"statement {i}, series {name} {tags}: {len(rows_x)} rows against "
                                f"InfluxDB's {len(rows_y)}\n    gpulse   {rows_x[:6]}\n"
                                f"    InfluxDB {rows_y[:6]}")
                continue
            for r, (rx, ry) in enumerate(zip(rows_x, rows_y)):
                if len(rx) != len(ry) or not all(same_value(u, v) for u, v in zip(rx, ry)):
                    problems.append(f"statement {i}, series {name} {tags}, row {r}:\n"
                                    f"    gpulse   {rx}\n    InfluxDB {ry}")
                    break
    return problems


def same_answer(mine, influx, q, epoch, method):
    """The differences between the two servers' answers to `q`, as lines."""
    s1, ours_json = mine.query(q, epoch=epoch, method=method)
    s2, theirs_json = influx.query(q, epoch=epoch, method=method)
    problems = compare(q, ours_json, theirs_json)
    if s1 != s2:
        problems.insert(0, f"HTTP {s1} against InfluxDB's {s2}")
    return problems


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: influx_diff.py PATH/TO/gpulse")
    gpulse = sys.argv[1]
    influxd = shutil.which("influxd")
    if influxd is None:
        print("influxd not installed: skipped (.ci/deps installs Debian's influxdb)")
        return 0
    scratch = tempfile.mkdtemp(prefix="gpulse-influx-diff-")
    servers = []
    try:
        port, rpc, ours = free_port(), free_port(), free_port()
        conf = os.path.join(scratch, "influxdb.conf")
        with open(conf, "w") as f:
            f.write(f"""reporting-disabled = true
bind-address = "127.0.0.1:{rpc}"
[meta]
  dir = "{scratch}/influx/meta"
[data]
  dir = "{scratch}/influx/data"
  wal-dir = "{scratch}/influx/wal"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:{port}"
  log-enabled = false
[continuous_queries]
  enabled = false
""")
        influx = Server("influxd", [influxd, "run", "-config", conf], port,
                        os.path.join(scratch, "influxd.log"))
        servers.append(influx)
        mine = Server("gpulse", [gpulse, "serve", "--data", os.path.join(scratch, "gpulse"),
                                 "--listen", f"127.0.0.1:{ours}"], ours,
                      os.path.join(scratch, "gpulse.log"))
        servers.append(mine)

        # Telegraf's start-up: CREATE DATABASE on POST /query, before writing.
        for server in (influx, mine):
            status, text = server.request("POST", "/query", {"q": f'CREATE DATABASE "{DB}"'})
            if status != 200 or '"error"' in text:
                raise SystemExit(f"influx_diff: CREATE DATABASE on {server.name}: {status} {text}")
        status, shown = mine.query("SHOW DATABASES")
        names = [v[0] for s in shown["results"][0].get("series", []) for v in s.get("values", [])]
        if DB not in names:
            raise SystemExit(f"influx_diff: SHOW DATABASES after CREATE DATABASE lists {names}")

        body = points()
        influx.write(body)
        mine.write(body)

        subst = {"r": RANGE, "t0": T0, "t5": T0 + 300, "t10": T0 + 600, "t30": T0 + 1800,
                 "t170": T0 + 170 * 60, "tend": T0 + MINUTES * 60 - 1}
        failures = 0
        asked = [("GET", "ns", template, "") for template in SAME]
        asked += [(method, "ms", template, f" (Grafana, {method})") for method, template in GRAFANA]
        for method, epoch, template, label in asked:
            q = template.format(**subst)
            problems = same_answer(mine, influx, q, epoch, method)
            if problems:
                failures += 1
                print(f"DIFFERS{label}: {q}")
                for p in problems:
                    print("  " + p)
        compared = len(asked)
        for template, why in DIFFERENT.items():
            q = template.format(**subst)
            status, ours_json = mine.query(q)
            errors = [r.get("error") for r in ours_json.get("results", []) if "error" in r]
            if status != 200 or errors:
                failures += 1
                print(f"FAILS (a documented difference must still answer): {q}: {status} {errors}")
        print(f"influx_diff: {compared} statements compared with InfluxDB "
              f"{subprocess.run([influxd, 'version'], capture_output=True, text=True).stdout.strip()}, "
              f"{len(DIFFERENT)} documented differences, {failures} failures")
        return 1 if failures else 0
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
