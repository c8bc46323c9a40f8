#include "server/metrics.h"

#include <cstdio>

#include "query/query.h"

namespace gpulse::server {

namespace {

void Line(std::string* out, const char* name, const char* type, const char* help, double value) {
  char buffer[512];
  std::snprintf(buffer, sizeof(buffer), "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name,
                type, name, value);
  out->append(buffer);
}

// A label value as the exposition format escapes it: \\, \" and \n.
std::string LabelValue(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

void ServerMetrics::RecordRequest(int status, double seconds) {
  const int cls = status / 100;
  if (cls >= 1 && cls <= 5) ++responses_by_class_[cls - 1];
  size_t bucket = 0;
  while (bucket < kLatencyBuckets.size() && seconds > kLatencyBuckets[bucket]) ++bucket;
  ++latency_counts_[bucket];
  ++latency_count_;
  latency_micros_ += static_cast<uint64_t>(seconds * 1e6);
}

std::string ServerMetrics::Render(const DbStats& db) const {
  std::string out;
  Line(&out, "gpulse_points_received_total", "counter", "Points accepted over HTTP and scrapes.",
       points_received);
  Line(&out, "gpulse_values_received_total", "counter", "Field values accepted.", values_received);
  Line(&out, "gpulse_bytes_received_total", "counter",
       "Request body bytes received by write endpoints, after gzip inflation.", bytes_received);
  Line(&out, "gpulse_lines_rejected_total", "counter",
       "Line-protocol lines rejected (syntax, type conflicts, out-of-order window).",
       lines_rejected);
  out.append("# HELP gpulse_auth_failures_total Requests refused by authentication.\n");
  out.append("# TYPE gpulse_auth_failures_total counter\n");
  out.append("gpulse_auth_failures_total{reason=\"unauthenticated\"} " +
             std::to_string(auth_unauthenticated) + "\n");
  out.append("gpulse_auth_failures_total{reason=\"forbidden\"} " + std::to_string(auth_forbidden) +
             "\n");
  Line(&out, "gpulse_writes_refused_busy_total", "counter",
       "Writes answered 503 because the head was full while a flush ran.", writes_refused_busy);
  out.append("# HELP gpulse_scrapes_total Prometheus scrapes by result.\n");
  out.append("# TYPE gpulse_scrapes_total counter\n");
  out.append("gpulse_scrapes_total{result=\"ok\"} " + std::to_string(scrapes_ok) + "\n");
  out.append("gpulse_scrapes_total{result=\"failed\"} " + std::to_string(scrapes_failed) + "\n");
  Line(&out, "gpulse_scrape_samples_total", "counter", "Samples read from scrape targets.",
       scrape_samples);
  Line(&out, "gpulse_scrape_stale_markers_total", "counter",
       "Stale markers written for metrics gone from a target's scrape, or of a target down.",
       scrape_stale_markers);
  Line(&out, "gpulse_remote_write_samples_total", "counter",
       "Samples received by Prometheus remote write (/api/v1/write), stale markers included.",
       remote_write_samples);
  Line(&out, "gpulse_remote_write_stale_markers_total", "counter",
       "Stale markers received by remote write, kept as __stale__.<metric> fields.",
       remote_write_stale_markers);
  Line(&out, "gpulse_queries_total", "counter", "Requests to /query.", queries);
  Line(&out, "gpulse_query_errors_total", "counter",
       "Statements that failed, and queries that did not parse.", query_errors);
  Line(&out, "gpulse_query_parse_cache_hits_total", "counter",
       "Queries whose text was among the recently parsed ones, so not parsed again.",
       query_parse_hits);

  out.append("# HELP gpulse_http_responses_total HTTP responses by status class.\n");
  out.append("# TYPE gpulse_http_responses_total counter\n");
  for (int cls = 1; cls <= 5; ++cls) {
    out.append("gpulse_http_responses_total{code=\"" + std::to_string(cls) + "xx\"} " +
               std::to_string(responses_by_class_[cls - 1]) + "\n");
  }
  out.append("# HELP gpulse_http_request_duration_seconds Time from request read to response.\n");
  out.append("# TYPE gpulse_http_request_duration_seconds histogram\n");
  uint64_t cumulative = 0;
  char buffer[128];
  for (size_t i = 0; i <= kLatencyBuckets.size(); ++i) {
    cumulative += latency_counts_[i];
    if (i < kLatencyBuckets.size()) {
      std::snprintf(buffer, sizeof(buffer), "%g", kLatencyBuckets[i]);
    } else {
      std::snprintf(buffer, sizeof(buffer), "+Inf");
    }
    out.append("gpulse_http_request_duration_seconds_bucket{le=\"" + std::string(buffer) + "\"} " +
               std::to_string(cumulative) + "\n");
  }
  std::snprintf(buffer, sizeof(buffer), "%.6f", static_cast<double>(latency_micros_) / 1e6);
  out.append("gpulse_http_request_duration_seconds_sum " + std::string(buffer) + "\n");
  out.append("gpulse_http_request_duration_seconds_count " + std::to_string(latency_count_) + "\n");

  Line(&out, "gpulse_series", "gauge", "Series in the catalog.", static_cast<double>(db.series));
  out +=
      "# HELP gpulse_database_series Live series of each database (db=\"\" for series with no db "
      "tag).\n"
      "# TYPE gpulse_database_series gauge\n";
  for (const auto& [database, n] : db.series_by_database) {
    out +=
        "gpulse_database_series{db=\"" + LabelValue(database) + "\"} " + std::to_string(n) + "\n";
  }
  Line(&out, "gpulse_series_refused_rate_total", "counter",
       "New series refused by max_new_series_per_minute (in writes refused whole with 429).",
       static_cast<double>(db.series_refused_rate));
  Line(&out, "gpulse_series_refused_cap_total", "counter",
       "Points rejected because their new series would pass max_series_per_database.",
       static_cast<double>(db.series_refused_cap));
  const QueryCacheStats caches = GetQueryCacheStats();
  Line(&out, "gpulse_query_kept_plan_series", "gauge",
       "Series held in the series lists of kept query plans (at most 65,536).",
       static_cast<double>(caches.kept_plan_series));
  Line(&out, "gpulse_ledger_kept_bytes", "gauge",
       "Memory held by kept spans of the GPU-minute ledger (NORTHSTAR's whole hours).",
       static_cast<double>(caches.ledger_kept_bytes));
  Line(&out, "gpulse_ledger_spans_reused_total", "counter",
       "Spans of whole hours NORTHSTAR read from kept ones.",
       static_cast<double>(caches.ledger_spans_reused));
  Line(&out, "gpulse_ledger_spans_built_total", "counter",
       "Spans of whole hours NORTHSTAR classified from the data and kept.",
       static_cast<double>(caches.ledger_spans_built));
  Line(&out, "gpulse_head_bytes", "gauge", "Memory held by unflushed points.",
       static_cast<double>(db.head_bytes));
  Line(&out, "gpulse_head_values", "gauge", "Unflushed field values.",
       static_cast<double>(db.head_values));
  if (connections) {
    const ConnectionStats c = connections();
    Line(&out, "gpulse_http_connections", "gauge", "Open HTTP connections.",
         static_cast<double>(c.open));
    Line(&out, "gpulse_http_max_connections", "gauge",
         "Open HTTP connections at most (max_connections).",
         static_cast<double>(c.max_connections));
    Line(&out, "gpulse_http_connections_refused_total", "counter",
         "Connections answered 503 because max_connections were open.",
         static_cast<double>(c.refused));
    Line(&out, "gpulse_http_accept_errors_total", "counter",
         "Failed accepts, such as at the file-descriptor limit.",
         static_cast<double>(c.accept_errors));
    Line(&out, "gpulse_queries_in_flight", "gauge",
         "Queries running or waiting for a query thread.",
         static_cast<double>(c.queries_in_flight));
  }
  if (query_memory) {
    const QueryMemoryStats m = query_memory();
    Line(&out, "gpulse_query_memory_bytes", "gauge",
         "Memory held by the queries running now (estimated as they build their answers).",
         static_cast<double>(m.held));
    Line(&out, "gpulse_query_memory_limit_bytes", "gauge",
         "Memory the queries running at once may hold (query.server_memory_mb).",
         static_cast<double>(m.limit));
    Line(&out, "gpulse_queries_refused_memory_total", "counter",
         "Queries stopped because the queries running together held query.server_memory_mb.",
         static_cast<double>(m.refused));
  }
  Line(&out, "gpulse_wal_bytes", "gauge", "Bytes in live WAL segments.",
       static_cast<double>(db.wal_bytes));
  Line(&out, "gpulse_wal_held_bytes", "gauge",
       "Bytes of WAL segments kept only for remote-write targets that have not sent them.",
       static_cast<double>(db.wal_held_bytes));
  Line(&out, "gpulse_wal_syncs_total", "counter", "WAL fsyncs (group commits).",
       static_cast<double>(db.wal_syncs));
  Line(&out, "gpulse_wal_sync_seconds_total", "counter", "Time spent in WAL fsyncs.",
       db.wal_sync_seconds);
  Line(&out, "gpulse_wal_replay_damaged_bytes", "gauge",
       "Bytes of damaged WAL records skipped by the last start's replay (their points are lost).",
       static_cast<double>(db.wal_replay_damaged_bytes));
  Line(&out, "gpulse_wal_replay_damaged_regions", "gauge",
       "Damaged regions of the WAL skipped by the last start's replay.",
       static_cast<double>(db.wal_replay_damaged_regions));
  Line(&out, "gpulse_wal_replay_cut_bytes", "gauge",
       "Bytes of torn WAL tail cut by the last start's replay.",
       static_cast<double>(db.wal_replay_cut_bytes));
  Line(&out, "gpulse_flushes_total", "counter", "Head flushes to chunks.",
       static_cast<double>(db.flushes));
  Line(&out, "gpulse_windows_merged_total", "counter",
       "Chunk windows whose parts the background merged into one.",
       static_cast<double>(db.windows_merged));
  Line(&out, "gpulse_retention_runs_total", "counter", "Passes of the retention enforcer.",
       static_cast<double>(db.retention_runs));
  Line(&out, "gpulse_retention_deleted_total", "counter",
       "Raw chunk parts and tier blocks deleted or trimmed by retention.",
       static_cast<double>(db.retention_deleted_keys));
  Line(&out, "gpulse_window_cache_hits_total", "counter",
       "Chunk windows a query read from the decoded-window cache.",
       static_cast<double>(db.window_cache_hits));
  Line(&out, "gpulse_window_cache_misses_total", "counter",
       "Chunk windows a query decoded from the store.",
       static_cast<double>(db.window_cache_misses));
  Line(&out, "gpulse_window_cache_refused_total", "counter",
       "Decoded chunk windows not kept: the cache was full of windows asked for as often.",
       static_cast<double>(db.window_cache_refused));
  Line(&out, "gpulse_window_cache_bytes", "gauge", "Memory held by the decoded-window cache.",
       static_cast<double>(db.window_cache_bytes));
  Line(&out, "gpulse_values_written_total", "counter", "Field values written to the engine.",
       static_cast<double>(db.values_written));
  if (forwarding) forwarding(&out);
  return out;
}

}  // namespace gpulse::server
