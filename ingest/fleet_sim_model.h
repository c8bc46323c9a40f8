// The simulator's inside: the inventory, the job plan and the incidents in
// effect, shared by the planning pass (fleet_sim_plan.cc) and the emitting
// pass (fleet_sim_emit.cc). Not part of the public face (fleet_sim.h).
//
// Time inside the simulator is in minutes from the start of a warm-up: the
// plan runs kWarmupMinutes before the first minute the user asked for, so
// that the fleet is already busy (multi-day jobs running, queues formed)
// when the points begin; nothing of the warm-up is emitted but what carries
// into the span (jobs still running, step counters). A job occupies its GPUs
// for minutes [start_min, end_min).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/fleet_sim_types.h"

namespace gpulse::fleet::sim {

constexpr int64_t kMinuteNs = 60'000'000'000;
constexpr int kMaxIncidents = 32;  // incidents are a bitmask per minute
constexpr int32_t kWarmupMinutes = 3 * 1440;

// Stateless randomness: the same inputs give the same draw on every run,
// whatever the order the draws are asked for.
inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline uint64_t Hash(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) {
  return Mix(Mix(Mix(a ^ Mix(b)) ^ c) ^ (d * 0x2545f4914f6cdd1dull));
}
// A uniform draw in [0, 1) from 53 bits of `h`.
inline double Unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// A sequential generator (xoshiro256**), for draws made in a fixed order.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& word : s_) word = seed = Mix(seed);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  double Uniform() { return Unit(Next()); }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  int Below(int n) { return static_cast<int>(Uniform() * n); }
  double Normal() {  // Box-Muller; one of the pair is enough here
    const double u = 1.0 - Uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * Uniform());
  }
  int Poisson(double mean);

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_;
};

struct Sku {
  std::string_view name;
  double idle_w, tdp_w;
  int max_sm_clock, idle_sm_clock;
  int fb_total_mib;
  double usd_reserved, usd_on_demand;  // per GPU-hour
};

struct Region {
  std::string name;
  int utc_offset_hours = 0;
  std::vector<int> nodes;
  std::vector<int> clusters;
};

struct Cluster {
  std::string name;
  int region = 0;
  std::vector<int> nodes;
};

struct Node {
  std::string name;
  int region = 0;
  int cluster = 0;
  int sku = 0;
  std::string kernel;
};

enum class JobClass : unsigned char { kInteractive, kBatch, kRetrain, kPretrain };
constexpr int kJobClasses = 4;
std::string_view JobClassName(JobClass c);
std::string_view QueueName(JobClass c);

enum class JobEnd : unsigned char { kRunning, kSucceeded, kFailed, kPreempted, kCancelled };
std::string_view JobEndName(JobEnd e);

// Why a job ended other than by succeeding.
enum class EndCause : unsigned char {
  kNone,
  kHardware,
  kSoftware,
  kNetwork,
  kMaintenance,
  kQueueTimeout
};
std::string_view EndCauseName(EndCause c);

struct Job {
  std::string name;  // shared by every attempt
  uint32_t id = 0;   // index in Plan::jobs
  uint8_t attempt = 0;
  JobClass cls = JobClass::kInteractive;
  uint8_t team = 0, user = 0, image = 0, dataset = 0, model = 0, priority = 0;
  uint8_t region = 0;
  bool dummy = false;  // spins kernels without progress (dummy-kernels incident)
  int gpus = 1;
  int32_t submit_min = 0;
  int32_t start_min = -1;  // -1: never started
  int32_t end_min = -1;    // -1: still running (or pending) at the end
  // Nominal work in minutes; work_done0 of it was done by earlier attempts
  // (up to their last checkpoint).
  double work = 0;
  double work_done0 = 0;
  double steps0 = 0;   // steps done by earlier attempts, to their last checkpoint
  int ckpt_every = 0;  // running minutes between checkpoints; 0 for none
  int32_t last_ckpt_min = -1;
  double step_ms = 0;                   // nominal step time
  double data_frac = 0, sync_frac = 0;  // nominal shares of a step
  uint32_t incident_mask = 0;           // incidents whose scope this attempt's placement touches
  JobEnd end = JobEnd::kRunning;
  EndCause cause = EndCause::kNone;
  std::vector<int> gpu_ids;  // global GPU numbers: node * gpus_per_node + index
};

// One stretch of a GPU's time held by a job.
struct Occupancy {
  int32_t start_min, end_min;
  uint32_t job;
};

struct SchedEvent {
  int32_t minute;
  uint32_t job;
  enum Kind : unsigned char { kSubmitted, kStarted, kEnded, kRetried } kind;
};

struct MaintenanceWindow {
  int node;
  int32_t start_min, end_min;
  std::string_view reason;
};

// An incident as the plan uses it: the public record plus lookups.
struct ActiveIncident {
  Incident truth;
  int32_t start_min = 0, end_min = 0;
  std::vector<bool> node_in_scope;  // by node
  std::vector<bool> gpu_in_scope;   // by global GPU (hw-fault, missing-gpu)
  int image = -1, cluster = -1, team = -1, region = -1;
};

// What one minute of a running job did.
struct MinuteWork {
  double compute_ms, data_ms, sync_ms;  // per step
  double checkpoint_ms;                 // spent checkpointing this minute
  double steps;                         // steps completed this minute
  double progress;                      // nominal work minutes done this minute
};

// The fixed tables: SKUs, teams, images and so on.
std::span<const Sku> Skus();
std::span<const std::string_view> Teams();
std::span<const std::string_view> Images();
std::string_view FrameworkOf(int image);
std::span<const std::string_view> Datasets();
std::span<const std::string_view> ModelTypes();
extern const std::string_view kBaseDriver;
extern const std::string_view kUpgradeDriver;

struct Plan {
  SimOptions options;
  int minutes = 0;                 // warm-up and span: the plan's minutes are [0, minutes)
  int32_t first = kWarmupMinutes;  // the first minute emitted
  int gpn = 8;
  std::vector<Region> regions;
  std::vector<Cluster> clusters;
  std::vector<Node> nodes;
  std::vector<Job> jobs;
  std::vector<std::vector<Occupancy>> occupancy;  // by global GPU, by start
  std::vector<SchedEvent> events;                 // by minute
  std::vector<MaintenanceWindow> maintenance;
  std::vector<ActiveIncident> incidents;
  std::vector<uint32_t> active;  // by minute: bit i when incidents[i] is in effect
  SimSummary summary;

  int64_t MinuteNs(int32_t minute) const {
    return options.start_ns + static_cast<int64_t>(minute - first) * kMinuteNs;
  }
  bool Active(int incident, int32_t minute) const { return (active[minute] >> incident) & 1; }
  // The incidents in effect at `minute` whose scope touches the job.
  uint32_t JobIncidents(const Job& job, int32_t minute) const {
    return job.incident_mask & active[minute];
  }
  MinuteWork Work(const Job& job, int32_t minute) const;
};

// Builds the whole plan (fleet_sim_plan.cc).
Status BuildPlan(const SimOptions& options, Plan* plan);

}  // namespace gpulse::fleet::sim
