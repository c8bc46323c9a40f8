// Days of the GPU-minute ledger kept for reuse. A minute is classified from
// the data of its UTC day (fleet_ledger.h), so a whole day's ledger, once
// built, is the answer for that day in any later range until the data it
// was built from changes:
// - a point written or deleted on a day it read (kLedgerInputs), which
//   Db::DataVersion tells;
// - an attempt of a job that ran in it ending in a way not known then (a
//   failure loses the minutes after the last checkpoint): a `sched` ended
//   event of one of its jobs, written since or timed since it was built, at
//   or before the end that decided the job's minutes (any time, for a job
//   still running then).
// Each kept day records what it was built from, and is used only while
// that holds (LedgerBuilder::Reusable in fleet_ledger.cc).
//
// Days are kept in hourly rows, per query shape (database, WHERE, BY), so
// that any EVERY whose buckets are whole hours reads them. Process-wide,
// bounded in bytes, the least recently used day forgotten first.
//
// Thread safety: LedgerDays may be used from any thread; a kept day is
// immutable.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "query/fleet_ledger.h"

namespace gpulse::query {

struct LedgerDay {
  struct Row {
    int64_t hour_ns = 0;
    uint32_t group = 0;  // index into groups
    std::array<double, kLossCount> minutes{};
    double cost_usd = 0, priced_minutes = 0;
    std::vector<std::pair<uint64_t, LedgerRow::FailedAttempt>> failed_attempts;
  };
  std::vector<std::vector<std::string>> groups;
  std::vector<Row> rows;
  // The jobs seen on its GPUs, by hash (sorted), each with the end of the
  // attempt that decided its last minute of the day (INT64_MAX: running,
  // or its end unknown, when the day was built): an end of the job after
  // that changes nothing in the day.
  std::vector<std::pair<uint64_t, int64_t>> jobs;

  size_t Bytes() const;
};

// The days of each measurement a day's ledger reads, as offsets in days:
// its steps (and the day before's, for the yardstick, from the last minute
// of the day before that), the scheduler's events from three days before
// (the queue's and the starts' look-backs), prices from the day before,
// and its GPUs and nodes.
struct LedgerInput {
  const char* measurement;
  int first_day, last_day;  // relative to the day, inclusive
};
inline constexpr LedgerInput kLedgerInputs[] = {
    {"job_step", -2, 0}, {"sched", -3, 0}, {"cost", -1, 0}, {"gpu", 0, 0}, {"node", 0, 0}};
// ... and the medians of a day's steps (the next day's yardstick): its steps
// (from the last minute of the day before) and the starts that give their
// jobs' widths.
inline constexpr LedgerInput kMedianInputs[] = {{"job_step", -1, 0}, {"sched", -2, 0}};

class LedgerDays {
 public:
  static constexpr size_t kDefaultBudgetBytes = 64u << 20;

  static LedgerDays& Process();  // the one the query layer uses
  explicit LedgerDays(size_t budget_bytes) : budget_(budget_bytes) {}

  // (db, database '\0' WHERE '\0' BY, day start)
  using Key = std::tuple<const void*, std::string, int64_t>;
  // A kept day and what it is true of: the outcomes known before
  // known_until_ns, and the data as of Db::LatestDataVersion as_of.
  struct Found {
    std::shared_ptr<const LedgerDay> day;
    int64_t known_until_ns = 0;
    uint64_t as_of = 0;
  };
  std::optional<Found> Find(const Key& key);
  void Put(const Key& key, Found found);
  // The kept `day` is still true at a later known_until and as_of.
  void Confirm(const Key& key, const LedgerDay* day, int64_t known_until_ns, uint64_t as_of);
  size_t bytes() const;

  // The medians of a day's steps, as of a data version: (db, database, day).
  using MediansKey = std::tuple<const void*, std::string, int64_t>;
  struct Medians {
    StepBaselines medians;
    uint64_t as_of = 0;
  };
  std::optional<Medians> FindMedians(const MediansKey& key);
  void PutMedians(const MediansKey& key, Medians medians);

 private:
  struct Kept {
    Found found;
    std::list<Key>::iterator use;  // in lru_
  };
  const size_t budget_;
  mutable std::mutex mu_;
  std::map<Key, Kept> days_;  // GUARDED_BY(mu_)
  std::list<Key> lru_;        // GUARDED_BY(mu_): most recently used first
  size_t bytes_ = 0;          // GUARDED_BY(mu_)
  // A few kilobytes a day; forgotten all at once past kMaxMedians.
  static constexpr size_t kMaxMedians = 4096;
  std::map<MediansKey, Medians> medians_;  // GUARDED_BY(mu_)
};

}  // namespace gpulse::query
