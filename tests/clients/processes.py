"""What the client tests in this folder share: a free loopback port, a
server process started, waited for until it answers, and stopped, and a
Prometheus exporter to scrape."""

import http.server
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10, context=None):
    """(status, body text); status 0 with the reason when nothing answered.
    `context`: the ssl.SSLContext of an https URL."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


class Process:
    """Runs argv with its output in `log` until ready_url answers 200 or 204
    (within `timeout` seconds; `context`: the ssl.SSLContext of an https
    one); raises SystemExit naming the log otherwise."""

    def __init__(self, name, argv, log, ready_url, timeout=60, context=None):
        self.name = name
        self.log_path = log
        self.log = open(log, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{name} exited at start; the end of its log ({log}):\n" +
                                 open(log).read()[-3000:])
            status, _ = http_get(ready_url, timeout=1, context=context)
            if status in (200, 204):
                return
            time.sleep(0.1)
        raise SystemExit(f"{name} did not answer {ready_url} within {timeout} s (log: {log})")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Exporter:
    """A /metrics endpoint on a loopback port (`port`) in this process,
    answering body() as Prometheus text: body is called at every scrape."""

    def __init__(self, body):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                data = body().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def prometheus_config(work, ports, remote_write_url):
    """Writes work/prometheus.yml for a Prometheus that scrapes the exporters
    on `ports` every second and remote-writes their samples, and their
    metadata, to remote_write_url within a second; returns its path."""
    targets = ", ".join(f'"127.0.0.1:{p}"' for p in ports)
    path = f"{work}/prometheus.yml"
    with open(path, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: dcgm
    static_configs:
      - targets: [{targets}]
remote_write:
  - url: "{remote_write_url}"
    queue_config:
      batch_send_deadline: 1s
      min_backoff: 100ms
      max_backoff: 1s
    metadata_config:
      send_interval: 1s
""")
    return path


def start_gpulse(gpulse, data, work):
    """`gpulse serve` on `data` and a free loopback port, its log in work:
    (its base URL, the Process)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    return base, Process("gpulse", [gpulse, "serve", "--data", data,
                                    "--listen", f"127.0.0.1:{port}"],
                         os.path.join(work, "gpulse.log"), base + "/ping")
