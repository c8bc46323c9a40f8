// LedgerExport: the node's GPU-minute ledger (query/fleet/fleet_ledger.h) as
// plain series, so that a store with no gpulse in it can add nodes up. Once
// a minute it classifies the buckets (5 minutes by default) that closed at
// least `lag` ago and writes each (region, cluster, sku, team) row of them
// into the node's own store (in `database`, or no database) as a point of
// the measurement `gpu_minutes`:
// the fields capacity, productive and one per loss (hardware, software,
// scheduling, data_io, network, lost_work, slack, unobserved), in
// GPU-minutes, stamped one second before the bucket's end. Forwarded like
// every other point, they are the series gpu_minutes_capacity{region,
// cluster,sku,team} and the like, and a central PromQL engine computes
// fleet-wide goodput as
//   sum(sum_over_time(gpu_minutes_productive[1h]))
//     / sum(sum_over_time(gpu_minutes_capacity[1h]))
// (docs/operations.md, "Fleet-wide goodput across nodes").
//
// A bucket is exported once, with what was known `lag` after it closed:
// a job failure recorded later moves the node's own NORTHSTAR, not what was
// exported. Where it stands is kept in the store (a definition of kind
// "ledger_export"), so a restart goes on from there.
//
// Thread safety: Start and Stop from one thread; ExportUntil from one thread
// at a time (the export thread, or a test when it is not started).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "engine/gpulse.h"
#include "server/config.h"
#include "storage/mutex.h"

namespace gpulse::server {

class LedgerExport {
 public:
  // `db` must outlive the exporter.
  LedgerExport(LedgerExportConfig config, Db* db);
  ~LedgerExport();
  LedgerExport(const LedgerExport&) = delete;
  LedgerExport& operator=(const LedgerExport&) = delete;

  void Start();
  void Stop();

  // Exports every bucket that closed at or before now_ns - lag and is not
  // exported yet (on the first call, from `backfill` before that). *rows
  // (may be null) gets the points written.
  Status ExportUntil(int64_t now_ns, uint64_t* rows);

 private:
  void Loop();

  const LedgerExportConfig config_;
  Db* const db_;
  std::thread thread_;
  Mutex mu_;
  CondVar wake_;
  bool stopping_ GPULSE_GUARDED_BY(mu_) = false;
};

}  // namespace gpulse::server
