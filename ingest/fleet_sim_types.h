// The fleet simulator's vocabulary: the incidents it can stage, the options
// a run takes, what it reports of an incident and of its plan, and the sink
// its points go to. The simulator itself (fleet_sim.h) and its plan and emit
// passes (fleet_sim_model.h, fleet_sim_emit.h) all speak it.
#pragma once

#include <cstdint>
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
  // A control, not a fault: a cohort of nodes gets a new driver that works
  // as well as the old one. Nothing should page or be blamed for it.
  kHealthyUpgrade,
};

// Whether `kind` is a control (a change that harms nothing): a page or a
// cause called inside it is false.
bool IsControl(IncidentKind kind);

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
  // The regions are the simulator's list from this one on (0: us-east): a
  // site of a multi-site deployment simulates regions the others do not.
  int first_region = 0;
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

}  // namespace gpulse::fleet
