// A row of the GPU-minute ledger: one group's minutes in one bucket, by
// loss, and what they are traced to. The ledger (fleet_ledger.h) builds rows;
// kept spans (ledger_days.h) hold them; NORTHSTAR and DECOMPOSE read them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

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
  // With LedgerOptions::contributors, the direct evidence DECOMPOSE shows
  // beside the losses (docs/metric-framework.md, "Ranking the losses"):
  // minutes each GPU (its contributor id) raised a hardware XID; GPU-minutes
  // each fabric link (its id) was troubled under a GPU of its node; and, for
  // each driver_version and image (their ids), the attempts (hashes as in
  // failed_attempts) that failed there for software reasons.
  std::unordered_map<uint32_t, double> xid_minutes;
  std::unordered_map<uint32_t, double> troubled_minutes;
  std::unordered_map<uint32_t, std::unordered_set<uint64_t>> software_failures;
  // With contributors or cohorts, the work behind those failures, by class
  // (the class of the job that held the minute, interned as a contributor
  // name of dimension "workload_class"; UINT32_MAX for minutes no job held):
  // capacity minutes by class, each driver's and image's by class (keyed
  // CohortClassKey), and each software failure's class (by attempt hash).
  // Jobs of one class fail at a rate of their own (a notebook far more often
  // a GPU-hour than a 64-GPU training run), so a cohort is judged against
  // what its own mix of work fails at.
  std::unordered_map<uint32_t, double> class_minutes;
  std::unordered_map<uint64_t, double> cohort_class_minutes;
  std::unordered_map<uint64_t, uint32_t> software_failure_class;
  // With contributors, by region (its contributor id; only in the rows of
  // the whole fleet or, BY region, of that region): its minutes, and those
  // in which a job waited in its queue beside a node of the region with
  // enough idle GPUs for it, a wait that a scheduler placing what fits does
  // not make.
  struct QueueWaits {
    double minutes = 0, beside_room = 0;
  };
  std::unordered_map<uint32_t, QueueWaits> queue_waits;
  // What the row's capacity minutes cost: each GPU-minute at the price of
  // its region's and SKU's GPU-hours then (the `cost` measurement: every
  // pricing's usd_per_hour over the GPUs it pays for), over 60. Minutes
  // with no price known are not in it; priced_minutes says how many are.
  double cost_usd = 0;
  double priced_minutes = 0;
  double Capacity() const;
};

inline uint64_t CohortClassKey(uint32_t cohort, uint32_t workload_class) {
  return static_cast<uint64_t>(cohort) << 32 | workload_class;
}

// A ledger's contributor names (LedgerRow's contributor ids index them).
using ContributorNames = std::vector<std::pair<std::string, std::string>>;

// The name of workload class `id` (as interned in `names`): UINT32_MAX, the
// minutes no job held, is a class of its own; a job without a class is "".
std::string WorkloadClassOf(const ContributorNames& names, uint32_t id);

// What a GPU-minute of each workload class fails at: the software failures
// a GPU-minute of the class over the rows added (each attempt once, though
// its lost minutes span rows), one failure added so that a class that never
// failed still counts. A driver's or image's GPU-minutes, each times its
// class's weight, are its exposure to software failures
// (docs/metric-framework.md, "Direct evidence"): a one-GPU notebook fails
// far more often a GPU-hour than a 64-GPU training run, and a cohort whose
// work turned from one to the other is no different for it.
class WorkloadWeights {
 public:
  // The row's classes (LedgerRow::class_minutes, software_failure_class).
  void Add(const ContributorNames& names, const LedgerRow& row);
  // The weight of a GPU-minute of class `id` (as interned in `names`;
  // UINT32_MAX: minutes no job held, which no software failure can end).
  double Of(const ContributorNames& names, uint32_t id) const;
  // A row's GPU-minutes, each times its class's weight.
  double Exposure(const ContributorNames& names, const LedgerRow& row) const;

 private:
  std::map<std::string, std::pair<double, double>> classes_;  // (failures, minutes)
  std::unordered_set<uint64_t> counted_;                      // attempts counted
};

}  // namespace gpulse::query
