// ServerConfig: everything `gpulse serve` can be told, from flags and an
// optional JSON config file (docs/operations.md documents every key).
//
// Thread safety: a plain value; read-only once the server starts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/query.h"

namespace gpulse::server {

// An API token and what it may do. A scope lists database names; "*" is all.
struct TokenConfig {
  std::string name;  // for logs and metrics; never the secret itself
  std::string token;
  std::vector<std::string> read;
  std::vector<std::string> write;
};

// A Prometheus endpoint gpulse pulls from.
struct ScrapeTarget {
  std::string url;  // http://host:port/path (plain HTTP)
  std::chrono::milliseconds interval{15000};
  std::chrono::milliseconds timeout{10000};
  std::string measurement = "prometheus";
  std::vector<Tag> tags;  // added to every point of this target
};

// A remote-write receiver gpulse forwards to (server/forwarder.h).
struct RemoteWriteTarget {
  // What the receiver speaks: Prometheus remote write 1.0 (snappy protobuf
  // to /api/v1/write), or InfluxDB line protocol (to /write?db=..., as
  // another gpulse takes it: every field, tag and nanosecond kept).
  enum class Protocol { kPrometheus, kInflux };
  Protocol protocol = Protocol::kPrometheus;
  std::string name;           // the metrics' target label and the log follower's name
  std::string url;            // http[s]://host:port/api/v1/write
  std::string authorization;  // the Authorization header ("Bearer ..."; basic auth is made one)
  // For an https url: the CA file (PEM) that verifies the receiver (empty:
  // the system's CAs), and a client certificate and key (PEM) for mutual TLS.
  std::string tls_ca_file, tls_cert_file, tls_key_file;
  // Measurements sent; empty: all of them.
  std::vector<std::string> measurements;
  // Numeric fields sent (by field name, of any measurement sent; a
  // Prometheus measurement's fields are its metric names); empty: all.
  // String fields always go, as the labels of their point's samples.
  std::vector<std::string> fields;
  // Labels set on every series (region, cluster), replacing one of the
  // same name; and labels renamed before that (old -> new).
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, std::string>> rename_labels;
  int shards = 4;
  size_t max_samples_per_send = 10000;
  uint64_t max_bytes_per_second = 0;  // of request bodies; 0: no cap
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds min_backoff{30};
  std::chrono::milliseconds max_backoff{5000};
  // Log read per round: the samples of about this many bytes are sent
  // before the position moves.
  uint64_t read_bytes = 8 << 20;
  // What is sent: the raw points, from the log (-1), or a tier (an index
  // into storage::kTiers): each numeric field's mean over each bucket, sent
  // `tier_lag_ns` after the bucket closes, the first run starting
  // `tier_backfill_ns` back (then on from where it stopped).
  int tier = -1;
  int64_t tier_lag_ns = 300'000'000'000;
  int64_t tier_backfill_ns = 0;
};

// The GPU-minute ledger written as series (server/ledger_export.h); the
// config file's "ledger_export" object turns it on.
struct LedgerExportConfig {
  bool enabled = false;
  int64_t every_ns = 300'000'000'000;        // bucket width
  int64_t lag_ns = 300'000'000'000;          // a bucket is exported this long after it closes
  int64_t backfill_ns = 86'400'000'000'000;  // the first export starts this far back
  std::string measurement = "gpu_minutes";
  std::string database;  // the rows' db tag; empty: none (the series of no database)
  std::chrono::milliseconds interval{60000};  // how often it looks for closed buckets
};

// Alert rules (server/alerts.h).
struct AlertConfig {
  bool evaluate = true;        // evaluate the stored rules every minute
  int64_t lag_seconds = 60;    // evaluate as of the minute this far back
  bool freshness_rule = true;  // the built-in rule on SHOW STALE's findings
};

struct ServerConfig {
  std::string data_dir = "./gpulse-data";
  std::string listen = "127.0.0.1:8086";
  // HTTP I/O threads, which run writes: 0, one a core (at least 2, at most
  // 64), so that ingest uses the cores it is given (HttpIoThreads).
  int threads = 0;
  uint64_t max_body_bytes = 64ull << 20;  // after gzip inflation too
  std::chrono::milliseconds read_timeout{30000};
  // Open connections at most; 0: the descriptor limit less a reserve
  // (HttpServerOptions::max_connections).
  size_t max_connections = 0;
  std::vector<TokenConfig> tokens;  // empty: authentication off
  std::vector<ScrapeTarget> scrape;
  std::vector<RemoteWriteTarget> remote_write;
  LedgerExportConfig ledger_export;
  // Sync policy, head bound, ...; the server guards the catalog's growth
  // by default (an embedded Db, `gpulse import` and `simulate` do not).
  Options db = [] {
    Options o;
    o.cardinality = {.max_series_per_database = 5'000'000, .max_new_series_per_minute = 250'000};
    return o;
  }();
  QueryLimits query_limits;  // per statement of /query (max_memory_bytes: per query)
  // Queries run on threads of their own, not on the I/O threads that take
  // writes and /ping: query_threads of them (0: one a core, at least 2),
  // with up to max_waiting_queries more waiting (more are answered 503).
  // Together they hold at most server_query_memory_bytes (0: a quarter
  // of physical memory; query/runtime/query_memory.h).
  int query_threads = 0;
  size_t max_waiting_queries = 64;
  uint64_t server_query_memory_bytes = 0;
  AlertConfig alerts;
};

// Reads the JSON config file at `path` into *config (keys not given keep
// their values). Errors name the file and the key at fault.
Status LoadConfigFile(const std::string& path, ServerConfig* config);

// The I/O threads `config` asks for: its `threads`, or for 0 one a core
// (std::thread::hardware_concurrency), at least 2 and at most 64.
int HttpIoThreads(const ServerConfig& config);

// Splits "host:port" (IPv6 as "[::1]:8086"). InvalidArgument when malformed.
Status SplitHostPort(const std::string& listen, std::string* host, uint16_t* port);

}  // namespace gpulse::server
