// Spans of the GPU-minute ledger kept for reuse. A minute is classified
// from the data of its UTC day and the minutes before it in that day
// (fleet_ledger.h), never from the range that asks, so the ledger of whole
// hours, once built, is the answer for those hours in any later range until
// the data it was built from changes:
// - a point written or deleted in a time it read (LedgerSpan::Inputs),
//   which Db::DataVersion tells;
// - an attempt of a job that ran in it failing (or preempted) in a way not
//   known then: a `sched` ended event of one of its jobs, written since or
//   timed since it was built, at or before the end that decided the job's
//   minutes (any time, for a job still running then). A failure loses the
//   minutes after the job's last checkpoint, so the span's rows before it
//   still hold; a success or a cancellation changes nothing.
// Each kept span records what it was built from, and is used only while
// that holds (LedgerBuilder::HoldsUntil in ledger_spans.cc). A span holds
// consecutive whole rows of one day, per query shape (database, WHERE, BY):
// hourly rows, so that any EVERY whose buckets are whole hours reads them;
// or, for ROLLOUTS (LedgerOptions::cohorts), ten-minute rows that also
// count each driver's and image's work and software failures, so that its
// rule evaluated every minute reads only the minutes since the last whole
// ten. Spans used together are merged into one.
//
// Process-wide, bounded in bytes, the least recently used span forgotten
// first. Thread safety: LedgerDays may be used from any thread; a kept span
// is immutable.
#pragma once

#include <array>
#include <atomic>
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

#include "query/fleet/ledger_row.h"
#include "storage/mutex.h"

namespace gpulse::query {

struct LedgerSpan {
  static constexpr int64_t kHourNs = 3'600'000'000'000;
  int64_t day_ns = 0, from_ns = 0, to_ns = 0;  // rows [from, to) of the day
  int64_t row_ns = kHourNs;                    // each row's length: an hour, or ten minutes
  // With LedgerOptions::cohorts: each row's drivers and images, as the
  // LedgerRow fields of the same names hold them, by ids that index the
  // span's `names` (UINT32_MAX, no job, stays itself).
  struct Cohorts {
    std::vector<std::pair<uint32_t, double>> presence;  // LedgerRow::contributors[0]
    std::vector<std::pair<uint32_t, double>> class_minutes;
    std::vector<std::pair<uint64_t, double>> cohort_class_minutes;
    std::vector<std::pair<uint32_t, uint64_t>> software_failures;  // (cohort, attempt)
    std::vector<std::pair<uint64_t, uint32_t>> software_failure_class;
    size_t Bytes() const;
  };
  struct Row {
    int64_t start_ns = 0;
    uint32_t group = 0;  // index into groups
    std::array<double, kLossCount> minutes{};
    double cost_usd = 0, priced_minutes = 0;
    std::vector<std::pair<uint64_t, LedgerRow::FailedAttempt>> failed_attempts;
    std::shared_ptr<const Cohorts> cohorts;  // with LedgerOptions::cohorts
  };
  std::vector<std::vector<std::string>> groups;
  std::vector<Row> rows;   // by start
  ContributorNames names;  // what the rows' cohort ids name
  // The jobs seen on its GPUs, by hash (sorted), each with the end of the
  // attempt that decided its last minute in the span (INT64_MAX: running,
  // or its end unknown, when it was built): an end of the job after that
  // changes nothing in the span. And its first minute on them (before the
  // span: a GPU idle at its start held it last): a failure of the job
  // changes no minute before that. And whether the span knew the job
  // (steps or scheduler events): its minutes had a class and an image.
  struct Job {
    uint64_t hash = 0;
    int64_t decided_ns = 0, first_ns = 0;
    bool recorded = false;
    friend bool operator<(const Job& a, const Job& b) { return a.hash < b.hash; }
  };
  std::vector<Job> jobs;
  // A class and width the day before did not run was judged by the whole
  // day's medians: the span also read the day's later steps.
  bool read_whole_day_steps = false;

  // What it read, as (measurement, [start, end)): its GPUs and nodes from
  // the day's start (a GPU's last job before the span), steps from two
  // days before (the day before's medians are its yardstick), the
  // scheduler's events from three (the queue's and the starts' look-backs),
  // prices from one, planned maintenance windows from any time before (a
  // window's point is at its start).
  struct Input {
    const char* measurement;
    int64_t start_ns, end_ns;
  };
  std::array<Input, 6> Inputs() const;
  // Sorts jobs by hash; a hash listed twice keeps the later end, the
  // earlier first minute, and unrecorded if either was.
  void SortJobs();
  size_t Bytes() const;
};

// What the medians of a day's steps read: its steps (from the last minute
// of the day before) and the starts that give their jobs' widths.
std::array<LedgerSpan::Input, 2> MedianInputs(int64_t day_ns);

class LedgerDays {
 public:
  static constexpr size_t kDefaultBudgetBytes = 64u << 20;

  static LedgerDays& Process();  // the one the query layer uses
  explicit LedgerDays(size_t budget_bytes) : budget_(budget_bytes) {}

  // (db, database '\0' WHERE '\0' BY, the span's first hour)
  using Key = std::tuple<const void*, std::string, int64_t>;
  // A kept span and what it is true of: the outcomes known before
  // known_until_ns, and the data as of Db::LatestDataVersion as_of.
  struct Found {
    std::shared_ptr<const LedgerSpan> span;
    int64_t known_until_ns = 0;
    uint64_t as_of = 0;
  };
  // The spans of a day, by their first hour.
  std::vector<Found> FindDay(const void* db, const std::string& shape, int64_t day_ns);
  void Put(Found found, const void* db, const std::string& shape);
  void Erase(const void* db, const std::string& shape, int64_t from_ns);
  size_t bytes() const;
  // Spans read from kept ones, and built and kept, by every question so far.
  void Count(int reused, int built) {
    reused_.fetch_add(static_cast<uint64_t>(reused), std::memory_order_relaxed);
    built_.fetch_add(static_cast<uint64_t>(built), std::memory_order_relaxed);
  }
  uint64_t reused() const { return reused_.load(std::memory_order_relaxed); }
  uint64_t built() const { return built_.load(std::memory_order_relaxed); }

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
  void EraseLocked(std::map<Key, Kept>::iterator it) GPULSE_REQUIRES(mu_);

  const size_t budget_;
  std::atomic<uint64_t> reused_{0}, built_{0};
  mutable Mutex mu_;
  std::map<Key, Kept> spans_ GPULSE_GUARDED_BY(mu_);
  std::list<Key> lru_ GPULSE_GUARDED_BY(mu_);  // most recently used first
  size_t bytes_ GPULSE_GUARDED_BY(mu_) = 0;
  // A few kilobytes a day; forgotten all at once past kMaxMedians.
  static constexpr size_t kMaxMedians = 4096;
  std::map<MediansKey, Medians> medians_ GPULSE_GUARDED_BY(mu_);
};

}  // namespace gpulse::query
