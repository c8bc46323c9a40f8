#!/usr/bin/env python3
"""Loads a line-protocol file into a server on a loopback port, in requests
of about 4 MiB cut at line ends, one at a time, as the shared harness's
loader does. Exits with an error naming the status of a refused request.

With SPEED, the file's time is replayed: a request whose last line is t
seconds after the file's first is sent no sooner than t / SPEED seconds
after the load began (SPEED 1: real time, as agents send; the file's lines
must be in time order, as the harness writes them, stamped in seconds).
With MINUTES, only the file's first MINUTES minutes are sent.

Usage: load_lp.py PORT FILE TARGET [SPEED [MINUTES]]
  (TARGET: "/write?db=bench&precision=s")"""
import http.client
import sys
import time

port, path, target = int(sys.argv[1]), sys.argv[2], sys.argv[3]
speed = float(sys.argv[4]) if len(sys.argv) > 4 else 0
minutes = float(sys.argv[5]) if len(sys.argv) > 5 else 0


def stamp(line):
    return int(line[line.rfind(b" ") + 1:])


conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
began, first, done = time.time(), None, False
with open(path, "rb") as f:
    rest = b""
    while not done:
        chunk = f.read(4 << 20)
        if not chunk and not rest:
            break
        data = rest + chunk
        cut = data.rfind(b"\n") + 1 if chunk else len(data)
        data, rest = data[:cut], data[cut:]
        if speed or minutes:
            lines = data.rstrip(b"\n").split(b"\n")
            if first is None:
                first = stamp(lines[0])
            if minutes and stamp(lines[-1]) >= first + minutes * 60:
                # The lines of the minutes asked for, and no more.
                lines = [l for l in lines if stamp(l) < first + minutes * 60]
                data, done = b"\n".join(lines) + b"\n", True
            if speed:
                time.sleep(max(0.0, began + (stamp(lines[-1]) - first) / speed - time.time()))
        conn.request("POST", target, body=data)
        r = conn.getresponse()
        r.read()
        if r.status not in (200, 204):
            sys.exit("HTTP %d from port %d" % (r.status, port))
