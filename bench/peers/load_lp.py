#!/usr/bin/env python3
"""Loads a line-protocol file into a server on a loopback port, in requests
of about 4 MiB cut at line ends, one at a time, as the shared harness's
loader does. Exits with an error naming the status of a refused request.

Usage: load_lp.py PORT FILE TARGET   (TARGET: "/write?db=bench&precision=s")"""
import http.client
import sys

port, path, target = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
with open(path, "rb") as f:
    rest = b""
    while True:
        chunk = f.read(4 << 20)
        if not chunk and not rest:
            break
        data = rest + chunk
        cut = data.rfind(b"\n") + 1 if chunk else len(data)
        data, rest = data[:cut], data[cut:]
        conn.request("POST", target, body=data)
        r = conn.getresponse()
        r.read()
        if r.status not in (200, 204):
            sys.exit("HTTP %d from port %d" % (r.status, port))
