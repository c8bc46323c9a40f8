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
// Sending follows the remote-write spec: snappy-compressed WriteRequests of
// at most max_samples_per_send samples; a series always goes to the same of
// `shards` parallel senders, so its samples stay in order; 5xx, 429 and
// network errors are retried with exponential backoff (Retry-After
// honoured); any other 4xx drops that request's samples and counts them.
//
// Thread safety: Start and Stop from one thread; AppendMetrics from any.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "server/config.h"
#include "storage/mutex.h"

namespace gpulse::server {

// The log follower's name of a target.
std::string FollowerName(const RemoteWriteTarget& target);

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

  // Sends everything logged so far to every target and returns when it is
  // acknowledged (or dropped); Busy, naming what is left, when `timeout`
  // passes first. For tests.
  Status Drain(std::chrono::milliseconds timeout);

 private:
  class Sender;
  Db* const db_;
  std::vector<std::unique_ptr<Sender>> senders_;
};

}  // namespace gpulse::server
