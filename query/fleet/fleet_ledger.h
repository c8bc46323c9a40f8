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
#include "query/plan/condition.h"

namespace gpulse::query {

// Where a GPU-minute went. Capacity minutes are all of them except planned
// maintenance; each counts once, in fractions when a productive minute spent
// part of its steps waiting on data or on the network above their baseline.
enum class Loss : unsigned char {
  kProductive,  // allocated, advancing, work kept, healthy GPU
  kHardware,    // XID / double-bit ECC / hardware throttling, or a GPU missing from its node
  kSoftware,    // the job failed for software reasons (after its last checkpoint), or made no
                // progress
  kScheduling,  // idle while jobs of its region waited in the queue
  kDataIo,      // the share of step time in the data loader above its class's baseline
  kNetwork,     // the share in gradient sync above baseline, or the job failed for network reasons
  kLostWork,    // after the last checkpoint of a preempted job, or of one failed for no known cause
  kSlack,       // idle, and no job waiting: capacity without demand
  kUnobserved,  // the node's agent reported nothing
};
constexpr size_t kLossCount = 9;
std::string_view LossName(Loss loss);

// The usual shares of step time in the data loader and in gradient sync, by
// workload class and width (an opaque key): (data, sync).
using StepBaselines = std::map<std::string, std::pair<double, double>>;

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
  // The baselines to judge the range's steps by instead of each day's
  // yardstick, the medians of the day before (a class and width missing
  // from them still gets the day's own). DECOMPOSE passes the earlier
  // window's, so that one yardstick measures both windows.
  const StepBaselines* baselines = nullptr;
  // Without `baselines`: judge the steps by the medians over the whole range
  // (DECOMPOSE's earlier window), returned in Ledger::baselines.
  bool range_yardstick = false;
};

// What a lost GPU-minute is traced to: where it was (region, cluster, node,
// gpu; for network losses the node's link), what ran there (driver_version,
// image, framework, team) and, for scheduling losses, the queues that
// waited (in proportion to the GPUs their waiting jobs asked for).
constexpr std::string_view kContributorDimensions[] = {
    "region",         "cluster", "node",      "gpu",   "link",
    "driver_version", "image",   "framework", "queue", "team"};

struct LedgerRow {
  int64_t bucket_ns = 0;
  std::vector<std::string> group;            // values of LedgerOptions::by, in order
  std::array<double, kLossCount> minutes{};  // by Loss
  // With LedgerOptions::contributors: per loss, contributor id -> minutes
  // lost; index 0 (productive) holds instead every capacity minute of the
  // contributor (its presence, against which a loss's concentration on it
  // is judged). Queues have no presence: they are traced for scheduling
  // losses only.
  std::array<std::unordered_map<uint32_t, double>, kLossCount> contributors;
  // The job attempts whose failure or preemption threw away minutes of this
  // row (by a hash of the job and the attempt's end), with the minutes each
  // threw away (all to its failure's loss): how many jobs a loss is spread
  // over, and how much of it is one job's, which tells a regression from one
  // unlucky job.
  struct FailedAttempt {
    Loss loss = Loss::kLostWork;
    double minutes = 0;
  };
  std::unordered_map<uint64_t, FailedAttempt> failed_attempts;
  // What the row's capacity minutes cost: each GPU-minute at the price of
  // its region's and SKU's GPU-hours then (the `cost` measurement: every
  // pricing's usd_per_hour over the GPUs it pays for), over 60. Minutes
  // with no price known are not in it; priced_minutes says how many are.
  double cost_usd = 0;
  double priced_minutes = 0;
  double Capacity() const;
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
