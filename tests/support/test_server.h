// TestServer: the HTTP server in-process for tests, as `gpulse serve` wires
// it (Db -> HttpApi -> HttpServer, and the AlertManager with its webhook
// sender), on an ephemeral 127.0.0.1 port. Owns the Db, the HttpApi, the
// HttpServer and the alert manager, whose clock the test drives (its
// thread is not started: call alerts()->EvaluateAt). The metrics and source
// registry are the caller's so that a test can read them across a restart.
//
// Thread safety: Start, Stop and the destructor on one thread; the server
// answers on its own threads.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "engine/gpulse.h"
#include "server/alerts.h"
#include "server/config.h"
#include "server/http_api.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/sources.h"

namespace gpulse::test {

// Options for a Db under test: no fsync, no log lines, 503 instead of
// waiting on a full head.
inline void UseQuietTestDb(Options* options) {
  options->sync_policy = SyncPolicy::kNone;
  options->info_log = [](std::string_view) {};
  options->wait_when_full = false;
}

class TestServer {
 public:
  TestServer() = default;
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;
  ~TestServer() { static_cast<void>(Stop()); }  // a test wanting the Status calls Stop

  // Opens a Db on `dir` with config.db and serves it. `metrics` and `sources`
  // must outlive the server. On error nothing is left running.
  Status Start(const std::string& dir, const server::ServerConfig& config,
               server::ServerMetrics* metrics, server::SourceRegistry* sources,
               std::chrono::milliseconds read_timeout = std::chrono::seconds(5)) {
    config_ = config;  // HttpApi keeps a reference: it must live as long as the api
    Status s = Db::Open(config_.db, dir, &db_);
    if (!s.ok()) return s;
    if (config_.alerts.evaluate) {
      server::WebhookOptions hooks;
      hooks.first_backoff = std::chrono::milliseconds(50);
      webhooks_ = std::make_unique<server::WebhookSender>(hooks);
      webhooks_->Start();
      server::AlertManagerOptions alerts;
      alerts.freshness_rule = config_.alerts.freshness_rule;
      alerts.limits = config_.query_limits;
      alerts_ = std::make_unique<server::AlertManager>(db_.get(), alerts, webhooks_.get());
    }
    api_ = std::make_unique<server::HttpApi>(db_.get(), config_, metrics, sources, alerts_.get());
    server::HttpServerOptions options;
    server::ConfigureServer(config_, &options);
    options.port = 0;
    options.read_timeout = read_timeout;
    server_ = std::make_unique<server::HttpServer>(
        options, [this](const server::Request& r, const server::RequestContext& c) {
          return api_->Handle(r, c);
        });
    s = server_->Start();
    if (!s.ok()) static_cast<void>(Stop());  // the start error is the one to report
    if (s.ok()) {
      metrics_ = metrics;
      metrics->connections = [this] { return server_->connection_stats(); };
    }
    return s;
  }

  // Stops serving and closes the Db. Harmless when not started.
  Status Stop() {
    if (metrics_ != nullptr) metrics_->connections = nullptr;
    metrics_ = nullptr;
    if (server_) server_->Stop();
    server_.reset();
    api_.reset();
    alerts_.reset();
    webhooks_.reset();
    Status s = Status::Ok();
    if (db_) s = db_->Close();
    db_.reset();
    return s;
  }

  // REQUIRES: started.
  uint16_t port() const { return server_->port(); }
  Db* db() const { return db_.get(); }
  // Null when config.alerts.evaluate is false.
  server::AlertManager* alerts() const { return alerts_.get(); }
  server::WebhookSender* webhooks() const { return webhooks_.get(); }

 private:
  server::ServerConfig config_;
  server::ServerMetrics* metrics_ = nullptr;  // the caller's, while started
  std::unique_ptr<Db> db_;
  std::unique_ptr<server::WebhookSender> webhooks_;
  std::unique_ptr<server::AlertManager> alerts_;
  std::unique_ptr<server::HttpApi> api_;
  std::unique_ptr<server::HttpServer> server_;
};

}  // namespace gpulse::test
