// Forwarder: sends every point this node stores to Prometheus remote-write
// receivers (VictoriaMetrics' vminsert, Mimir, Thanos Receive, Cortex, a
// Prometheus with its receiver on, another gpulse), so that a node in each
// region or cluster feeds one central store (docs/operations.md, "Beyond one
// machine").
//
// Each target follows the write-ahead log (Db::FollowLog) under the name
// "remote_write:<name>": it reads what was logged after its position, sends
// it, and moves its position only once every sample read is acknowledged.
// The log it has not sent stays on disk (wal/held/), so a receiver that is
// down, a restart or a kill -9 lose nothing; what was sent but not yet
// recorded is sent again, which receivers take as the same samples (same
// series and timestamp).
//
// Names follow the Prometheus face (docs/prometheus-mapping.md): field f of
// a line-protocol measurement m is the metric m_f, a Prometheus
// measurement's field keeps its name; tags are labels, and the point's
// string fields (pod, namespace...) are labels of its samples. Booleans are
// 1 and 0; a stale marker (the field __stale__.f) is sent as Prometheus'
// stale NaN of f.
//
// A target with a tier resolution (5m, 1h, 1d) does not follow the log: it
// sends each numeric field's mean over each bucket of the tier, once the
// bucket closed lag_minutes ago, from a cursor kept in the store (the
// definition kind "remote_write_tier"); no string field labels them.
//
// https:// targets are spoken over TLS, verified by the target's CA file
// (or the system's CAs), with a client certificate for mutual TLS.
//
// Sending follows the remote-write spec: snappy-compressed WriteRequests of
// at most max_samples_per_send samples; a series always goes to the same of
// `shards` parallel senders, so its samples stay in order; 5xx, 429 and
// network errors are retried with exponential backoff (Retry-After
// honoured); any other 4xx drops that request's samples and counts them.
//
// A backfill (Backfill) sends a stored time range to a target, for history
// written before the target was configured; `gpulse backfill` drives it
// through POST /api/v1/forward/backfill.
//
// Thread safety: Start and Stop from one thread; AppendMetrics, Backfill
// and TargetNames from any.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "server/config.h"
#include "storage/mutex.h"

namespace gpulse::server {

// The log follower's name of a target.
std::string FollowerName(const RemoteWriteTarget& target);

// What a backfill sent.
struct BackfillResult {
  uint64_t series = 0;   // series with points in the range
  uint64_t points = 0;   // their points
  uint64_t samples = 0;  // the samples (or, to an influx target, values) they made
};

class Forwarder {
 public:
  // `db` must outlive the Forwarder.
  Forwarder(std::vector<RemoteWriteTarget> targets, Db* db);
  ~Forwarder();
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // Registers each target as a log follower (one already following goes on
  // from where it stood), stops following any "remote_write:" follower no
  // longer configured (its held log is freed), and starts the senders.
  Status Start();
  // Stops the senders; what they were sending is sent again after Start.
  void Stop();

  // gpulse_forward_* metrics, one series per target (docs/http-api.md).
  void AppendMetrics(std::string* out) const;

  // Sends what the store holds of [start_ns, end_ns) to target `target`,
  // as the log's sends would have sent it (the same names, labels and
  // filters), and returns when all of it is acknowledged or dropped: the
  // history a node held before the target was configured. Measurement by
  // measurement and series by series, each series' points in time order,
  // in rounds of the log's size; the log's own sends go on meanwhile.
  // Sending a range twice sends the same samples twice, which receivers
  // keep once. A request that fails (5xx, 429, network, TLS) is retried
  // with backoff 10 times, then the backfill stops with IOError naming the
  // failure: what it sent before stays sent. NotFound for a target not
  // configured; Busy while another backfill of the target runs; Cancelled
  // when Stop comes first; the store's errors. Works before Start as after.
  Status Backfill(std::string_view target, int64_t start_ns, int64_t end_ns,
                  BackfillResult* result);
  // The configured targets' names.
  std::vector<std::string> TargetNames() const;

  // Sends everything logged so far (a tier target: every bucket due) to
  // every target and returns when it is acknowledged (or dropped); Busy,
  // naming what is left, when `timeout` passes first. For tests.
  Status Drain(std::chrono::milliseconds timeout);

 private:
  class Sender;
  Db* const db_;
  std::vector<std::unique_ptr<Sender>> senders_;
};

}  // namespace gpulse::server
