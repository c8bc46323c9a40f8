// ServerMetrics: the server's own counters and the request latency
// histogram, rendered with the engine's statistics as Prometheus text for
// GET /metrics (docs/http-api.md lists every metric).
//
// Thread safety: counters are atomics; any thread may add and render.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "engine/gpulse.h"

namespace gpulse::server {

// The HTTP server's view of its connections.
struct ConnectionStats {
  uint64_t open = 0;
  uint64_t refused = 0;        // answered 503 at max_connections
  uint64_t accept_errors = 0;  // accept(2) failures, such as the descriptor limit (EMFILE)
  uint64_t max_connections = 0;
  uint64_t queries_in_flight = 0;  // queries running or waiting for a query thread
};

// The queries' memory (query/runtime/query_memory.h), as the metrics show it.
struct QueryMemoryStats {
  uint64_t held = 0;
  uint64_t limit = 0;
  uint64_t refused = 0;
};

class ServerMetrics {
 public:
  // Upper bounds (seconds) of the latency histogram's buckets, +Inf implied.
  static constexpr std::array<double, 12> kLatencyBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};

  void RecordRequest(int status, double seconds);

  std::atomic<uint64_t> points_received{0};
  std::atomic<uint64_t> values_received{0};
  std::atomic<uint64_t> bytes_received{0};  // request bodies, after gzip inflation
  std::atomic<uint64_t> lines_rejected{0};
  std::atomic<uint64_t> auth_unauthenticated{0};
  std::atomic<uint64_t> auth_forbidden{0};
  std::atomic<uint64_t> writes_refused_busy{0};         // 503: the head was full
  std::atomic<uint64_t> remote_write_samples{0};        // /api/v1/write, stale markers too
  std::atomic<uint64_t> remote_write_stale_markers{0};  // kept as __stale__.<metric> fields
  std::atomic<uint64_t> scrapes_ok{0};
  std::atomic<uint64_t> scrapes_failed{0};
  std::atomic<uint64_t> scrape_samples{0};
  std::atomic<uint64_t> scrape_stale_markers{0};  // series gone from a target's scrape
  std::atomic<uint64_t> queries{0};
  std::atomic<uint64_t> query_errors{0};      // failed statements, and queries that did not parse
  std::atomic<uint64_t> query_parse_hits{0};  // queries whose text was parsed before (ParseCache)

  // Set by whoever runs the HTTP server (it is made after the metrics);
  // unset, the connection metrics are left out.
  std::function<ConnectionStats()> connections;
  // Set by the HttpApi while it lives; unset, the query memory is left out.
  std::function<QueryMemoryStats()> query_memory;
  // Set while a Forwarder runs: appends its gpulse_forward_* metrics.
  std::function<void(std::string*)> forwarding;

  // The exposition text: these metrics and `db` statistics.
  std::string Render(const DbStats& db) const;

 private:
  std::array<std::atomic<uint64_t>, 5> responses_by_class_{};  // 1xx..5xx
  std::array<std::atomic<uint64_t>, kLatencyBuckets.size() + 1> latency_counts_{};
  std::atomic<uint64_t> latency_count_{0};
  std::atomic<uint64_t> latency_micros_{0};
};

}  // namespace gpulse::server
