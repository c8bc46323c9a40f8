// ExecContext: what every part of one statement's run shares. The planner,
// execution and the fleet statements all take one; it knows the Db, the
// caller's options and limits, the statement's clock and the stop flag the
// workers watch.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "storage/mutex.h"

namespace gpulse::query {

class PlanCache;  // query/plan/plan_cache.h

// What every part of one statement's run shares: the Db, the options, the
// clock, the limits and the stop flag the workers watch.
class ExecContext {
 public:
  ExecContext(Db* db, const QueryOptions& options, int64_t now_ns);

  Db* db() const { return db_; }
  const QueryOptions& options() const { return options_; }
  int64_t now_ns() const { return now_ns_; }

  // Called by the statement's own thread: cancellation and the deadline.
  // Returns the reason to stop, or OK. QueryOptions::cancelled is asked at
  // most every kCancelCheckInterval (the server's asks with a system call).
  Status Poll();
  static constexpr std::chrono::milliseconds kCancelCheckInterval{5};
  // Any thread: stop the statement for `why` (the first reason wins).
  void Stop(Status why);
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }
  Status stop_status();

  // Counts stored values read against QueryLimits::max_points.
  void CountPoints(uint64_t n);
  // Counts `bytes` more held by the query (QueryOptions::memory, which
  // Execute always sets) for `what`; past a budget the statement stops
  // (Stop) and the reason is returned. Any thread.
  Status Charge(uint64_t bytes, const char* what);
  QueryMemory* memory() const { return options_.memory; }

  // The statement's own answer may come by column
  // (QueryOptions::answers_by_column): Execute sets it for a SELECT it runs,
  // never for a query another statement runs inside itself.
  bool answers_by_column = false;
  // Set for a statement whose answer goes to QueryOptions::sink: a raw
  // SELECT hands its rows here a window at a time (false: stop) instead of
  // building them whole.
  std::function<bool(const ResultSeries&)> emit;
  // EXPLAIN: when on, the plan describes itself in lines.
  bool explain = false;
  // Where a SELECT over the Db keeps its plans for its next run, and finds
  // them (the executor's, query/plan/plan_cache.h); null: planned afresh and
  // kept nowhere (EXPLAIN never keeps).
  PlanCache* plan_cache = nullptr;
  std::vector<std::string> plan_lines;
  // Said with the answer (an approximate quantile); one thread only.
  std::vector<std::string> notes;
  // A series whose stored data could not be read (Corruption): it is left
  // out, the other series are answered, and the answer says which part was
  // damaged (DamageNotes). Any thread.
  void NoteDamage(const Status& why);
  // The notes for the damage seen, to say with the answer (none when none).
  std::vector<std::string> DamageNotes();
  std::atomic<uint64_t> points_read{0};
  std::atomic<uint64_t> series_read{0};

 private:
  Db* db_;
  const QueryOptions& options_;
  int64_t now_ns_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::steady_clock::time_point next_cancel_check_{};  // the first Poll asks
  std::atomic<bool> stopped_{false};
  Mutex mu_;
  Status stop_status_ GPULSE_GUARDED_BY(mu_);
  std::vector<std::string> damage_ GPULSE_GUARDED_BY(mu_);  // the first few
  size_t damage_count_ GPULSE_GUARDED_BY(mu_) = 0;
};

}  // namespace gpulse::query
