// The GPU-minute ledger: every GPU-minute of the fleet in a time range,
// classified as productive or as exactly one loss, from the measurements of
// the fleet schema (docs/fleet-schema.md) read through the public Db API.
// Each minute is classified from the data of its UTC day (and look-backs
// from the day's start), so its answer is the same in any range that holds
// it: a range's ledger is the sum of its days'.
// NORTHSTAR is its productive share; DECOMPOSE compares two of them. The
// rules, and why they are what they are, are in docs/metric-framework.md.
//
// Thread safety: BuildLedger reads the Db (which may be written meanwhile)
// and touches nothing shared.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/gpulse.h"
#include "query/fleet/ledger_row.h"
#include "query/plan/condition.h"
#include "query/runtime/result.h"

namespace gpulse::query {

struct LedgerOptions {
  int64_t start_ns = 0;  // rounded down to a minute
  int64_t end_ns = 0;    // exclusive, rounded up to a minute
  int64_t every_ns = 0;  // bucket width; 0: one bucket for the range
  // Calendar buckets instead (EVERY 1mo): the start of the bucket holding
  // an instant; a bucket that began before the range is labelled with its
  // own start, as GROUP BY time(1mo) does.
  std::function<int64_t(int64_t)> bucket_of;
  // What was known then: job outcomes recorded at or after this instant are
  // not read (a job that fails later has not lost its minutes yet). NORTHSTAR
  // and DECOMPOSE set it to now(), so that an alert rule evaluated for a past
  // instant sees what a live server saw.
  int64_t known_until_ns = INT64_MAX;
  // What the rows are grouped by: gpu tags (region, cluster, sku, node, gpu)
  // or the attribution of the minute (team, workload_class, user, job); an
  // idle minute has no attribution and groups under "".
  std::vector<std::string> by;
  const TagCondition* where = nullptr;  // on the gpu series' tags; null: all
  std::string database;                 // only series tagged db=<database>, when set
  std::function<bool()> cancelled;      // polled; true stops with Cancelled
  uint64_t max_gpu_minutes = 2'000'000'000;
  // The WHERE's canonical text: with it (or no WHERE), whole days of the
  // range are kept and reused (query/fleet/ledger_days.h), unless keep_days is
  // false.
  std::string where_text;
  bool keep_days = true;
  // Trace each loss's minutes to the contributors below (DECOMPOSE).
  bool contributors = false;
  // Count only each driver_version's and image's GPU-minutes (their
  // presence, in contributors[0]) and software failures (software_failures),
  // with the work of each workload class (class_minutes and the rest of
  // LedgerRow's class fields), without the other contributors and evidence:
  // what ROLLOUTS reads. Its
  // minutes are classified from the range's start, not the day's, so it
  // reads less than contributors does; and its productive minutes are not
  // split by the steps' yardstick (their data and network shares stay
  // productive): the capacity and failures it counts do not depend on it.
  // Kept spans of it have ten-minute rows. (Implied by contributors.)
  bool cohorts = false;
  // The baselines to judge the range's steps by instead of each day's
  // yardstick, the medians of the day before (a class and width missing
  // from them still gets the day's own). DECOMPOSE passes the earlier
  // window's, so that one yardstick measures both windows.
  const StepBaselines* baselines = nullptr;
  // Without `baselines`: judge the steps by the medians over the whole range
  // (DECOMPOSE's earlier window), returned in Ledger::baselines.
  bool range_yardstick = false;

  // What a statement's options and clock decide: its database, its
  // cancellation, what was known at `now_ns`, and its points limit.
  void AskedBy(const QueryOptions& options, int64_t now_ns) {
    database = options.database;
    cancelled = options.cancelled;
    known_until_ns = now_ns;
    max_gpu_minutes = options.limits.max_points;
  }
};

struct Ledger {
  std::vector<LedgerRow> rows;  // in (group, bucket) order; buckets with capacity only
  // Contributor ids: (dimension, value).
  std::vector<std::pair<std::string, std::string>> contributor_names;
  StepBaselines baselines;  // with range_yardstick: what the range's steps were judged by
  int spans_reused = 0;     // spans of whole hours read from kept ledgers (ledger_days.h)
  int spans_built = 0;      // ... and built and kept
};

Status BuildLedger(Db* db, const LedgerOptions& options, Ledger* out);

}  // namespace gpulse::query
