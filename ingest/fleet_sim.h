// The fleet simulator: a deterministic GPU fleet, minute by minute, in the
// measurements of the fleet schema (docs/fleet-schema.md), with incidents
// whose ground truth is known, so that the metric operators can be tested
// against it and a newcomer has something real-looking to ask about.
//
// It works in two passes. Plan (at Create) runs the scheduler over the whole
// span on one thread: job arrivals with weekday and diurnal seasonality, gang
// placement, queueing by priority, checkpoints, failures and retries,
// maintenance, and the incidents' effect on all of these. Emit then turns
// the plan into points, node by node across threads, calling the sink with
// one batch per shard and stretch of minutes. Every random draw comes from
// the seed and the identity of what is drawn (a hash, or a generator per
// GPU), so the output depends on nothing else: not on the thread count, not
// on the sink, not on the clock.
//
// Thread safety: a Simulator is immutable after Create; Emit may call the
// sink from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::fleet {

// What can go wrong in the simulated fleet (docs/fleet-schema.md lists the
// effect of each and the cause class DECOMPOSE should find).
enum class IncidentKind : unsigned char {
  kHardwareFault,        // XID and ECC double-bit errors on some GPUs; jobs there fail
  kThermal,              // thermal throttling on a node: clocks down, steps slower
  kDriverUpgrade,        // a cohort of nodes gets a new driver; job failures spike there
  kFrameworkRegression,  // one image's steps get slower and fail more
  kSchedFragmentation,   // the scheduler spreads small jobs and stops backfilling
  kIoBottleneck,         // data-loader time grows for jobs of one cluster
  kNetworkDegradation,   // packet loss and retransmits on some links; gradient sync slows
  kDummyKernels,         // a team's jobs spin kernels: util high, no step progress
  kSilentAgent,          // a node's agent stops reporting
  kMissingGpu,           // a node reports one GPU fewer than its inventory
};

// The incident kinds by their command-line names ("hw-fault", "thermal", ...).
std::span<const std::string_view> IncidentKindNames();
std::string_view IncidentKindName(IncidentKind kind);
bool ParseIncidentKind(std::string_view name, IncidentKind* kind);

// An incident as asked for: its kind, when, and optionally where. Times are
// offsets from the simulation start; a negative duration lasts to the end.
struct IncidentRequest {
  IncidentKind kind = IncidentKind::kHardwareFault;
  int64_t offset_ns = 0;
  int64_t duration_ns = -1;
  // Kind-specific scope: node names for hw-fault, thermal, driver-upgrade,
  // network-degradation, silent-agent and missing-gpu (separated by '+');
  // an image for framework-regression; a cluster for io-bottleneck; a
  // region for sched-fragmentation; a team for dummy-kernels. Empty: the simulator
  // picks one from the seed.
  std::string scope;
};

// Parses "KIND[@OFFSET][/DURATION][:SCOPE]" (offset and duration as 36h, 2d,
// 90m; e.g. "driver-upgrade@3d/2d", "thermal@2d12h:us-east-c0-n003"); on error
// *error says what is wrong and where.
bool ParseIncidentRequest(std::string_view text, IncidentRequest* out, std::string* error);

// "2026-11-02T00:00:00Z".
std::string FormatUtcTime(int64_t unix_ns);

struct SimOptions {
  int regions = 2;
  int nodes = 150;  // in all, dealt round the regions
  int gpus_per_node = 8;
  int days = 7;
  // When above 0, the span in hours instead of days (a live load's hour).
  int hours = 0;
  // Job submissions a day across the fleet; 0 scales with the fleet (29 per
  // GPU a day: 35,000 for 1,200 GPUs). Mostly short interactive jobs; the
  // distributed training, retraining and batch jobs are sized by capacity.
  int jobs_per_day = 0;
  uint64_t seed = 1;
  int64_t start_ns = 0;  // the first minute; rounded down to a minute
  std::vector<IncidentRequest> incidents;
  // Minutes each emitting thread simulates before it hands its points to the
  // sink: fewer, larger writes by default; 1 when a live load is paced
  // minute by minute. Changes no point.
  int batch_minutes = 10;
};

// An incident as it happened: the ground truth the operators are tested on.
struct Incident {
  std::string name;  // "hw-fault-1"
  IncidentKind kind = IncidentKind::kHardwareFault;
  std::string cause_class;  // hardware, software, scheduling, data_io, network, waste, collection
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // exclusive
  std::vector<std::string> nodes;
  std::vector<std::string> gpus;  // "node/index"
  std::string driver_version;     // driver-upgrade: the new version
  std::string image;              // framework-regression
  std::string cluster;            // io-bottleneck
  std::string region;             // sched-fragmentation
  std::string queue;              // sched-fragmentation: the queue left waiting
  std::string team;               // dummy-kernels
  std::string description;
};

// What the plan holds, for the summary a command prints.
struct SimSummary {
  int gpus = 0;
  int nodes = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t jobs = 0;  // submissions, retries included
  uint64_t jobs_succeeded = 0;
  uint64_t jobs_failed = 0;
  uint64_t jobs_preempted = 0;
  uint64_t allocated_gpu_minutes = 0;
  uint64_t capacity_gpu_minutes = 0;  // inventory minus planned maintenance
  uint64_t maintenance_windows = 0;
};

// Receives the simulator's points. Write may be called from several threads
// at once; the points (and the strings they view) live only during the call.
// A non-OK Status stops the simulation and is returned by Emit.
class PointSink {
 public:
  virtual ~PointSink() = default;
  virtual Status Write(std::span<const PointRef> points) = 0;
};

class Simulator {
 public:
  // Validates the options and plans the whole span.
  static Status Create(const SimOptions& options, std::unique_ptr<Simulator>* out);
  virtual ~Simulator() = default;

  virtual const SimSummary& summary() const = 0;
  virtual const std::vector<Incident>& incidents() const = 0;

  // The ground truth as JSON: options, inventory size, and every incident.
  virtual std::string GroundTruthJson() const = 0;

  // Emits every point, shard by shard on `threads` threads (at least one).
  // `progress` (may be empty) is called now and then with the fraction done,
  // from one thread at a time. Points emitted: *points when not null.
  virtual Status Emit(PointSink* sink, int threads, const std::function<void(double)>& progress,
                      uint64_t* points) const = 0;
};

}  // namespace gpulse::fleet
