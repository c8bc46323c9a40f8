// `gpulse serve`: the HTTP server on an embedded data directory.

#include <malloc.h>
#include <signal.h>

#include <cstdio>
#include <memory>

#include "server/config.h"
#include "server/forwarder.h"
#include "server/http_api.h"
#include "server/http_server.h"
#include "server/ledger_export.h"
#include "server/scraper.h"
#include "shell/commands.h"

namespace gpulse::cli {

namespace {

constexpr const char* kServeUsage =
    "Usage: gpulse serve [--data DIR] [--listen HOST:PORT] [--config FILE]\n"
    "\n"
    "Serves InfluxDB 1.x and 2.x line-protocol writes, Prometheus scrapes of the\n"
    "configured targets, queries (/query), the server's own /metrics and /health,\n"
    "and evaluates the alert rules (CREATE ALERT) every minute: /api/v1/alerts.\n"
    "\n"
    "  --data DIR          data directory (default ./gpulse-data; created if missing)\n"
    "  --listen HOST:PORT  address to listen on (default 127.0.0.1:8086, where agents\n"
    "                      already point for InfluxDB)\n"
    "  --config FILE       JSON config: auth tokens, scrape targets, limits, storage,\n"
    "                      alerts (docs/operations.md); flags given on the command\n"
    "                      line win\n"
    "\n"
    "Stops cleanly on SIGINT or SIGTERM: no new connections, requests in flight\n"
    "finish, the WAL is synced, exit status 0.\n";

int Usage(const char* error) {
  std::fprintf(stderr, "gpulse serve: %s\n\n%s", error, kServeUsage);
  return 2;
}

}  // namespace

int RunServe(const std::vector<std::string>& args) {
  // The program allocates with jemalloc (shell/allocator.cc), which ignores
  // these; they hold where it runs on glibc's malloc (sanitizer builds).
  // One malloc arena: glibc otherwise gives each I/O thread its own, and
  // memory freed on one thread and taken again on another (the head's
  // slabs after a flush, request bodies, flush buffers) strands in all of
  // them (measured on the fleet load with the earlier vector head: peak RSS
  // 220 MiB with the default arenas, 123 MiB with one, at the same rate).
  mallopt(M_ARENA_MAX, 1);
  // Queries allocate and free arrays of a few MB (a percentile's values):
  // keep them in the heap rather than mmap/munmap each time, whose page
  // faults cost a query more than its sorting.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  server::ServerConfig config;
  std::string data, listen, config_file;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kServeUsage, stdout);
      return 0;
    }
    if (i + 1 >= args.size()) return Usage(("missing value after " + a).c_str());
    if (a == "--data") {
      data = args[++i];
    } else if (a == "--listen") {
      listen = args[++i];
    } else if (a == "--config") {
      config_file = args[++i];
    } else {
      return Usage(("unknown option " + a).c_str());
    }
  }
  if (!config_file.empty()) {
    const Status s = server::LoadConfigFile(config_file, &config);
    if (!s.ok()) return Usage(s.message().c_str());
  }
  if (!data.empty()) config.data_dir = data;
  if (!listen.empty()) config.listen = listen;
  server::HttpServerOptions http;
  Status s = server::SplitHostPort(config.listen, &http.host, &http.port);
  if (!s.ok()) return Usage(s.message().c_str());
  server::ConfigureServer(config, &http);
  http.log = [](std::string_view line) {
    std::fprintf(stderr, "gpulse: %.*s\n", static_cast<int>(line.size()), line.data());
  };

  // Signals are taken by sigwait below; block them before any thread starts
  // so that no other thread receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  config.db.wait_when_full = false;  // answer 503 instead of holding connections
  std::unique_ptr<Db> db;
  s = Db::Open(config.db, config.data_dir, &db);
  if (!s.ok()) {
    std::fprintf(stderr, "gpulse serve: %s\n", s.ToString().c_str());
    return 1;
  }
  server::ServerMetrics metrics;
  server::SourceRegistry sources;
  server::WebhookSender webhooks;
  server::AlertManagerOptions alert_options;
  alert_options.lag = std::chrono::seconds(config.alerts.lag_seconds);
  alert_options.freshness_rule = config.alerts.freshness_rule;
  alert_options.limits = config.query_limits;
  server::AlertManager alerts(db.get(), alert_options, &webhooks);
  // Started after the server: its backfills are served from the start.
  server::Forwarder forwarder(config.remote_write, db.get());
  server::HttpApi api(db.get(), config, &metrics, &sources,
                      config.alerts.evaluate ? &alerts : nullptr, &forwarder);
  server::HttpServer http_server(http,
                                 [&api](const server::Request& r, const server::RequestContext& c) {
                                   return api.Handle(r, c);
                                 });
  s = http_server.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "gpulse serve: %s\n", s.ToString().c_str());
    return 1;
  }
  metrics.connections = [&http_server] { return http_server.connection_stats(); };
  server::Scraper scraper(config.scrape, config.max_body_bytes, db.get(), &metrics, &sources);
  scraper.Start();
  s = forwarder.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "gpulse serve: remote_write: %s\n", s.ToString().c_str());
    return 1;
  }
  metrics.forwarding = [&forwarder](std::string* out) { forwarder.AppendMetrics(out); };
  server::LedgerExport ledger_export(config.ledger_export, db.get());
  if (config.ledger_export.enabled) ledger_export.Start();
  if (config.alerts.evaluate) {
    webhooks.Start();
    alerts.Start();
  }
  std::fprintf(stderr,
               "gpulse: serving %s on http://%s:%u (auth %s, %zu scrape targets, %zu "
               "remote-write targets); SIGINT or SIGTERM stops\n",
               config.data_dir.c_str(), http.host.c_str(), http_server.port(),
               config.tokens.empty() ? "off" : "on", config.scrape.size(),
               config.remote_write.size());

  int signal = 0;
  sigwait(&signals, &signal);
  std::fprintf(stderr, "gpulse: %s: stopping\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
  forwarder.Stop();  // first: it ends a backfill that holds a request open
  http_server.Stop();
  scraper.Stop();
  ledger_export.Stop();
  metrics.forwarding = nullptr;
  alerts.Stop();
  webhooks.Stop();
  s = db->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "gpulse serve: close: %s\n", s.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "gpulse: stopped cleanly\n");
  return 0;
}

}  // namespace gpulse::cli
