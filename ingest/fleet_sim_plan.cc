// The planning pass: the inventory, then the scheduler minute by minute over
// the whole span (arrivals, placement, progress, checkpoints, failures,
// retries, maintenance), with the incidents acting on all of it.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <set>

#include "ingest/fleet_sim_incidents.h"
#include "ingest/fleet_sim_model.h"

namespace gpulse::fleet::sim {

namespace {

struct RegionName {
  std::string_view name;
  int utc_offset_hours;
};
constexpr RegionName kRegions[] = {{"us-east", -5}, {"eu-west", 1},   {"ap-south", 5},
                                   {"us-west", -8}, {"eu-north", 2},  {"ap-east", 8},
                                   {"sa-east", -3}, {"me-central", 4}};
constexpr int kMaxNodesPerCluster = 32;
constexpr int kRetries = 2;  // a failed or preempted training job is submitted again this often

// Priorities: interactive work jumps the queue, training next, batch last.
uint8_t PriorityOf(JobClass c) {
  constexpr uint8_t kPriority[] = {3, 1, 2, 2};
  return kPriority[static_cast<int>(c)];
}

// The longest a job waits in the queue before it is given up (cancelled).
int QueueLimitMinutes(JobClass c) {
  constexpr int kLimit[] = {4 * 60, 24 * 60, 12 * 60, 48 * 60};
  return kLimit[static_cast<int>(c)];
}

// A working day's shape, peaking in the early afternoon, local time.
double DayShape(double local_hour) {
  if (local_hour < 8 || local_hour > 20) return 0;
  const double s = std::sin(3.141592653589793 * (local_hour - 8) / 12);
  return s * s;
}

void BuildInventory(Plan* plan) {
  const SimOptions& o = plan->options;
  plan->regions.resize(o.regions);
  for (int r = 0; r < o.regions; ++r) {
    plan->regions[r].name = kRegions[o.first_region + r].name;
    plan->regions[r].utc_offset_hours = kRegions[o.first_region + r].utc_offset_hours;
  }
  // Nodes are dealt round the regions, then cut into clusters of at most
  // kMaxNodesPerCluster; a cluster has one SKU, as bought.
  std::vector<int> per_region(o.regions, 0);
  for (int n = 0; n < o.nodes; ++n) ++per_region[n % o.regions];
  for (int r = 0; r < o.regions; ++r) {
    const int count = per_region[r];
    const int clusters = (count + kMaxNodesPerCluster - 1) / kMaxNodesPerCluster;
    for (int c = 0; c < clusters; ++c) {
      Cluster cluster;
      cluster.name = plan->regions[r].name + "-c" + std::to_string(c);
      cluster.region = r;
      const int cid = static_cast<int>(plan->clusters.size());
      const int sku = cid % static_cast<int>(Skus().size());
      const int first = count * c / clusters, last = count * (c + 1) / clusters;
      for (int i = first; i < last; ++i) {
        Node node;
        char name[32];
        std::snprintf(name, sizeof name, "-n%03d", i - first);
        node.name = cluster.name + name;
        node.region = r;
        node.cluster = cid;
        node.sku = sku;
        node.kernel = cid % 2 == 0 ? "5.15.0-105-generic" : "6.8.0-45-generic";
        const int id = static_cast<int>(plan->nodes.size());
        cluster.nodes.push_back(id);
        plan->regions[r].nodes.push_back(id);
        plan->nodes.push_back(std::move(node));
      }
      plan->regions[r].clusters.push_back(cid);
      plan->clusters.push_back(std::move(cluster));
    }
  }
}

// The day of the week (0 Monday) and hour at a minute, in a region's time.
void LocalTime(const Plan& plan, int region, int32_t minute, int* weekday, double* hour) {
  const int64_t seconds =
      plan.MinuteNs(minute) / 1'000'000'000 + plan.regions[region].utc_offset_hours * 3600LL;
  const int64_t days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400;
  *weekday = static_cast<int>(((days % 7) + 7 + 3) % 7);  // 1970-01-01 was a Thursday
  *hour = static_cast<double>(seconds - days * 86400) / 3600.0;
}

// Planned maintenance: every Wednesday 09:00-13:00 local, a tenth of each
// region's nodes (a rolling firmware update); every Saturday 22:00 local, one
// cluster of each region for four hours (kernel patching), in turn.
void PlanMaintenance(Plan* plan) {
  for (int r = 0; r < static_cast<int>(plan->regions.size()); ++r) {
    const Region& region = plan->regions[r];
    int wednesdays = 0, saturdays = 0;
    for (int32_t m = 0; m < plan->minutes; m += 60) {
      int weekday = 0;
      double hour = 0;
      LocalTime(*plan, r, m, &weekday, &hour);
      const int h = static_cast<int>(hour);
      // Minutes may start off the hour when the start is; align to it.
      const int32_t at = m - static_cast<int32_t>((hour - h) * 60 + 0.5);
      if (weekday == 2 && h == 9) {
        for (size_t i = 0; i < region.nodes.size(); ++i) {
          if (static_cast<int>(i % 10) != wednesdays % 10) continue;
          plan->maintenance.push_back({region.nodes[i], at, at + 240, "firmware-rollout"});
        }
        ++wednesdays;
      } else if (weekday == 5 && h == 22) {
        const Cluster& c = plan->clusters[region.clusters[saturdays % region.clusters.size()]];
        for (int node : c.nodes) plan->maintenance.push_back({node, at, at + 240, "kernel-patch"});
        ++saturdays;
      }
    }
  }
  for (auto& w : plan->maintenance) {
    w.start_min = std::max<int32_t>(w.start_min, 0);
    w.end_min = std::min<int32_t>(w.end_min, plan->minutes);
  }
  std::erase_if(plan->maintenance,
                [](const MaintenanceWindow& w) { return w.end_min <= w.start_min; });
  std::sort(plan->maintenance.begin(), plan->maintenance.end(),
            [](const auto& a, const auto& b) { return a.start_min < b.start_min; });
}

// Per running job: what it has done in this attempt.
struct RunState {
  uint32_t job;
  double done, steps;            // nominal work minutes and steps, this attempt included
  double ckpt_done, ckpt_steps;  // ... as of the last checkpoint
};

class Scheduler {
 public:
  explicit Scheduler(Plan* plan) : plan_(*plan), rng_(Hash(plan->options.seed, 0x5c4ed)) {}

  void Run();

 private:
  // Arrivals.
  void CalibrateRates();
  void Arrive(int32_t m);
  uint32_t NewJob(JobClass cls, int region, int32_t m);
  void Submit(uint32_t job, int32_t m, SchedEvent::Kind kind);

  // The running set.
  void Advance(int32_t m);
  void End(size_t running_index, int32_t end_min, JobEnd how, EndCause cause);
  void Retry(const Job& failed, const RunState& state, int32_t m);

  // Maintenance and incidents that change the machines.
  void MachineEvents(int32_t m);

  // Placement.
  void Schedule(int32_t m);
  void ScheduleMisconfigured(int region, int32_t m);
  bool Place(Job* job, int32_t m, bool spread);
  bool NodeUsable(int node, int32_t m, double work_left) const;
  void Start(Job* job, int32_t m, const std::vector<int>& gpu_ids);
  bool FragmentationIn(int region, int32_t m) const;

  Plan& plan_;
  Rng rng_;
  std::vector<uint32_t> free_;        // by node: bit g when GPU g is free and usable
  std::vector<uint32_t> usable_;      // by node: GPUs present
  std::vector<int> maintenance_;      // by node: windows in progress
  std::vector<int32_t> next_window_;  // by node: start of its next window (INT32_MAX: none)
  std::vector<std::vector<uint32_t>> pending_;  // by region, in scheduling order
  std::vector<std::vector<uint32_t>> future_;   // by minute: retries not yet submitted
  std::vector<RunState> running_;
  std::vector<uint32_t> gpu_job_;  // by global GPU: job + 1, 0 when free
  double rate_[kJobClasses] = {};  // fleet-wide arrivals a minute at the shape's mean
  double shape_mean_[kJobClasses] = {};
};

void Scheduler::CalibrateRates() {
  const SimOptions& o = plan_.options;
  const double gpus = static_cast<double>(o.nodes) * o.gpus_per_node;
  // Training and batch demand are shares of capacity: 30% for distributed
  // pretraining, 20% for batch; the interactive count fills the job count.
  rate_[static_cast<int>(JobClass::kPretrain)] = 0.30 * gpus / (24.0 * 2.5 * 1440.0);
  rate_[static_cast<int>(JobClass::kBatch)] = 0.20 * gpus / (3.2 * 140.0);
  const double per_day_other =
      (rate_[1] + rate_[3]) * 1440.0 + o.regions * std::max(1.0, gpus / 150.0 / o.regions);
  const int jobs = o.jobs_per_day > 0 ? o.jobs_per_day : static_cast<int>(29 * gpus);
  rate_[static_cast<int>(JobClass::kInteractive)] = std::max(0.0, jobs - per_day_other) / 1440.0;
  // The mean of each class's weekly shape, so that rates are per average minute.
  for (int c = 0; c < kJobClasses; ++c) shape_mean_[c] = 1;
  double interactive = 0, batch = 0;
  for (int h = 0; h < 24 * 7; ++h) {
    const bool weekend = h / 24 >= 5;
    const double d = DayShape(h % 24 + 0.5);
    interactive += (0.25 + d) * (weekend ? 0.35 : 1.0);
    batch += (0.5 + 0.5 * d) * (weekend ? 0.6 : 1.0);
  }
  shape_mean_[static_cast<int>(JobClass::kInteractive)] = interactive / (24 * 7);
  shape_mean_[static_cast<int>(JobClass::kBatch)] = batch / (24 * 7);
}

uint32_t Scheduler::NewJob(JobClass cls, int region, int32_t m) {
  Job job;
  job.id = static_cast<uint32_t>(plan_.jobs.size());
  char name[24];
  std::snprintf(name, sizeof name, "job-%07u", job.id);
  job.name = name;
  job.cls = cls;
  job.region = static_cast<uint8_t>(region);
  job.submit_min = m;
  job.priority = PriorityOf(cls);
  job.team = static_cast<uint8_t>(rng_.Below(static_cast<int>(Teams().size())));
  job.user = static_cast<uint8_t>(rng_.Below(8));
  const double pick = rng_.Uniform();
  job.image = static_cast<uint8_t>(pick < 0.3 ? 0 : pick < 0.6 ? 1 : pick < 0.85 ? 2 : 3);
  job.dataset = static_cast<uint8_t>(rng_.Below(static_cast<int>(Datasets().size())));
  job.model = static_cast<uint8_t>(rng_.Below(static_cast<int>(ModelTypes().size())));
  const int gpn = plan_.gpn;
  // The largest gang a cluster of this region can hold twice over.
  int cluster_gpus = gpn;
  for (int c : plan_.regions[region].clusters) {
    cluster_gpus =
        std::max<int>(cluster_gpus, static_cast<int>(plan_.clusters[c].nodes.size()) * gpn);
  }
  const auto lognormal = [&](double median, double sigma, double lo, double hi) {
    return std::clamp(median * std::exp(sigma * rng_.Normal()), lo, hi);
  };
  switch (cls) {
    case JobClass::kInteractive:
      job.gpus = rng_.Uniform() < 0.9 ? 1 : std::min(2, gpn);
      job.work = lognormal(10, 0.8, 2, 240);
      job.step_ms = rng_.Uniform(500, 3000);
      job.data_frac = 0.1;
      break;
    case JobClass::kBatch: {
      const double g = rng_.Uniform();
      job.gpus = std::min(gpn, g < 0.4 ? 1 : g < 0.65 ? 2 : g < 0.85 ? 4 : 8);
      job.work = lognormal(90, 0.9, 15, 720);
      job.ckpt_every = 30;
      job.step_ms = rng_.Uniform(300, 900);
      job.data_frac = 0.2;
      job.sync_frac = job.gpus > 1 ? 0.03 : 0;
      break;
    }
    case JobClass::kRetrain: {
      const int sizes[] = {gpn, 2 * gpn, 4 * gpn};
      job.gpus = std::min(sizes[rng_.Below(3)], std::max(gpn, cluster_gpus / 2));
      job.work = rng_.Uniform(150, 270);
      job.ckpt_every = 30;
      job.step_ms = rng_.Uniform(800, 1500);
      job.data_frac = 0.15;
      job.sync_frac = job.gpus > gpn ? 0.12 : 0.04;
      break;
    }
    case JobClass::kPretrain: {
      const double g = rng_.Uniform();
      job.gpus = std::min(g < 0.4    ? 2 * gpn
                          : g < 0.75 ? 4 * gpn
                                     : 8 * gpn,
                          std::max(gpn, cluster_gpus / 2));
      job.work = rng_.Uniform(1440, 4 * 1440);
      job.ckpt_every = 60;
      job.step_ms = rng_.Uniform(1800, 4000);
      job.data_frac = 0.07;
      job.sync_frac = job.gpus > gpn ? 0.2 : 0.05;
      break;
    }
  }
  plan_.jobs.push_back(std::move(job));
  return plan_.jobs.back().id;
}

void Scheduler::Submit(uint32_t id, int32_t m, SchedEvent::Kind kind) {
  const Job& job = plan_.jobs[id];
  plan_.events.push_back({m, id, kind});
  auto& queue = pending_[job.region];
  const auto before = [&](uint32_t a, uint32_t b) {
    const Job& x = plan_.jobs[a];
    const Job& y = plan_.jobs[b];
    if (x.priority != y.priority) return x.priority > y.priority;
    if (x.submit_min != y.submit_min) return x.submit_min < y.submit_min;
    return a < b;
  };
  queue.insert(std::upper_bound(queue.begin(), queue.end(), id, before), id);
}

void Scheduler::Arrive(int32_t m) {
  const double gpus = static_cast<double>(plan_.options.nodes) * plan_.gpn;
  for (int r = 0; r < static_cast<int>(plan_.regions.size()); ++r) {
    const double share = plan_.regions[r].nodes.size() * plan_.gpn / gpus;
    int weekday = 0;
    double hour = 0;
    LocalTime(plan_, r, m, &weekday, &hour);
    const bool weekend = weekday >= 5;
    const double d = DayShape(hour);
    const double shapes[kJobClasses] = {(0.25 + d) * (weekend ? 0.35 : 1.0),
                                        (0.5 + 0.5 * d) * (weekend ? 0.6 : 1.0), 0, 1};
    for (int c : {0, 1, 3}) {
      const double mean = rate_[c] * share * shapes[c] / shape_mean_[c];
      for (int k = rng_.Poisson(mean); k > 0; --k) {
        Submit(NewJob(static_cast<JobClass>(c), r, m), m, SchedEvent::kSubmitted);
      }
    }
    // Weekday retrains, fired together by a cron at 02:00 local.
    const int minute_of_day = static_cast<int>(hour * 60 + 0.5);
    if (!weekend && minute_of_day == 120) {
      const int count =
          std::max(1, static_cast<int>(plan_.regions[r].nodes.size() * plan_.gpn / 150));
      for (int k = 0; k < count; ++k)
        Submit(NewJob(JobClass::kRetrain, r, m), m, SchedEvent::kSubmitted);
    }
  }
  for (uint32_t id : future_[m]) Submit(id, m, SchedEvent::kRetried);
}

bool Scheduler::FragmentationIn(int region, int32_t m) const {
  for (uint32_t bits = plan_.active[m]; bits != 0; bits &= bits - 1) {
    const ActiveIncident& inc = plan_.incidents[std::countr_zero(bits)];
    if (inc.truth.kind == IncidentKind::kSchedFragmentation && inc.region == region) return true;
  }
  return false;
}

bool Scheduler::NodeUsable(int node, int32_t m, double work_left) const {
  if (maintenance_[node] > 0) return false;
  // Drain before planned maintenance: no job that would run into the
  // window (long jobs are drained for at most half a day ahead).
  return next_window_[node] - m > std::min(work_left, 720.0);
}

bool Scheduler::Place(Job* job, int32_t m, bool spread) {
  const int gpn = plan_.gpn;
  const uint32_t all = gpn >= 32 ? 0xffffffffu : (1u << gpn) - 1;
  const double left = job->work - job->work_done0;
  std::vector<int> gpu_ids;
  if (job->gpus > gpn) {
    // A gang: whole free nodes of one cluster, the cluster with the most.
    const int needed = (job->gpus + gpn - 1) / gpn;
    std::vector<int> best;
    for (int c : plan_.regions[job->region].clusters) {
      std::vector<int> whole;
      for (int node : plan_.clusters[c].nodes) {
        if (free_[node] == all && usable_[node] == all && NodeUsable(node, m, left))
          whole.push_back(node);
      }
      if (whole.size() > best.size()) best.swap(whole);
    }
    if (static_cast<int>(best.size()) < needed) return false;
    for (int i = 0; i < needed; ++i) {
      for (int g = 0; g < gpn; ++g) gpu_ids.push_back(best[i] * gpn + g);
    }
    job->gpus = needed * gpn;
  } else {
    // One node: the fullest that fits (packing keeps whole nodes for gangs),
    // or the emptiest while the fragmentation incident is on.
    int chosen = -1, chosen_free = spread ? -1 : gpn + 1;
    for (int node : plan_.regions[job->region].nodes) {
      const int f = std::popcount(free_[node]);
      if (f < job->gpus || !NodeUsable(node, m, left)) continue;
      if (spread ? f > chosen_free : f < chosen_free) {
        chosen = node;
        chosen_free = f;
      }
    }
    if (chosen < 0) return false;
    uint32_t bits = free_[chosen];
    for (int k = 0; k < job->gpus; ++k) {
      const int g = std::countr_zero(bits);
      bits &= bits - 1;
      gpu_ids.push_back(chosen * gpn + g);
    }
  }
  Start(job, m, gpu_ids);
  return true;
}

void Scheduler::Start(Job* job, int32_t m, const std::vector<int>& gpu_ids) {
  const int gpn = plan_.gpn;
  job->start_min = m;
  job->gpu_ids = gpu_ids;
  for (int gpu : gpu_ids) {
    free_[gpu / gpn] &= ~(1u << (gpu % gpn));
    gpu_job_[gpu] = job->id + 1;
  }
  // Which incidents' scopes this placement touches, for the per-minute model.
  for (size_t i = 0; i < plan_.incidents.size(); ++i) {
    if (IncidentTouches(plan_, plan_.incidents[i], *job)) job->incident_mask |= 1u << i;
  }
  // A team's jobs started during the dummy-kernel incident spin without progress.
  for (uint32_t bits = plan_.active[m] & job->incident_mask; bits != 0; bits &= bits - 1) {
    if (plan_.incidents[std::countr_zero(bits)].truth.kind == IncidentKind::kDummyKernels &&
        job->cls != JobClass::kPretrain) {
      job->dummy = true;
    }
  }
  running_.push_back({job->id, job->work_done0, job->steps0, job->work_done0, job->steps0});
  plan_.events.push_back({m, job->id, SchedEvent::kStarted});
}

void Scheduler::Schedule(int32_t m) {
  for (int r = 0; r < static_cast<int>(plan_.regions.size()); ++r) {
    auto& queue = pending_[r];
    std::erase_if(queue, [&](uint32_t id) {
      Job& job = plan_.jobs[id];
      if (m - job.submit_min <= QueueLimitMinutes(job.cls)) return false;
      job.end = JobEnd::kCancelled;
      job.cause = EndCause::kQueueTimeout;
      job.end_min = m;
      plan_.events.push_back({m, job.id, SchedEvent::kEnded});
      return true;
    });
    if (FragmentationIn(r, m)) {
      ScheduleMisconfigured(r, m);
      continue;
    }
    // Priority order with backfill: a job that cannot start lets the ones
    // behind it by (and no smaller one-node job is tried once a one-node
    // job of that size failed: no node has that many GPUs free).
    int smallest_failed = INT32_MAX;
    size_t examined = 0;
    for (size_t i = 0; i < queue.size() && examined < 400; ++examined) {
      Job& job = plan_.jobs[queue[i]];
      if (job.gpus >= smallest_failed && job.gpus <= plan_.gpn) {
        ++i;
        continue;
      }
      if (Place(&job, m, /*spread=*/false)) {
        queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (job.gpus <= plan_.gpn) smallest_failed = std::min(smallest_failed, job.gpus);
      ++i;
    }
  }
}

// The sched-fragmentation incident: a configuration change that orders the
// queue by submission time alone (priorities lost), turns backfill off (the
// oldest job that cannot start blocks all behind it) and spreads one-node
// jobs over the emptiest nodes, so whole nodes for gangs rarely free up:
// GPUs sit idle while the queue grows.
void Scheduler::ScheduleMisconfigured(int r, int32_t m) {
  auto& queue = pending_[r];
  std::vector<uint32_t> by_age = queue;
  std::sort(by_age.begin(), by_age.end(), [&](uint32_t a, uint32_t b) {
    const Job& x = plan_.jobs[a];
    const Job& y = plan_.jobs[b];
    return x.submit_min != y.submit_min ? x.submit_min < y.submit_min : a < b;
  });
  size_t started = 0;
  while (started < by_age.size() && Place(&plan_.jobs[by_age[started]], m, /*spread=*/true))
    ++started;
  if (started == 0) return;
  const std::set<uint32_t> gone(by_age.begin(),
                                by_age.begin() + static_cast<std::ptrdiff_t>(started));
  std::erase_if(queue, [&](uint32_t id) { return gone.count(id) != 0; });
}

void Scheduler::End(size_t index, int32_t end_min, JobEnd how, EndCause cause) {
  const RunState state = running_[index];
  running_[index] = running_.back();
  running_.pop_back();
  Job& job = plan_.jobs[state.job];
  job.end_min = end_min;
  job.end = how;
  job.cause = cause;
  const int gpn = plan_.gpn;
  for (int gpu : job.gpu_ids) {
    gpu_job_[gpu] = 0;
    if (usable_[gpu / gpn] & (1u << (gpu % gpn))) free_[gpu / gpn] |= 1u << (gpu % gpn);
    plan_.occupancy[gpu].push_back({job.start_min, end_min, job.id});
  }
  plan_.events.push_back({end_min, job.id, SchedEvent::kEnded});
  if ((how == JobEnd::kFailed || how == JobEnd::kPreempted) && job.cls != JobClass::kInteractive &&
      job.attempt < kRetries && !job.dummy) {
    Retry(job, state, end_min);
  }
}

void Scheduler::Retry(const Job& failed, const RunState& state, int32_t m) {
  // A new attempt from the last checkpoint, submitted a few minutes later.
  const int32_t at = m + (failed.end == JobEnd::kPreempted ? 1 : 5);
  if (at >= plan_.minutes) return;
  Job job = failed;
  job.id = static_cast<uint32_t>(plan_.jobs.size());
  job.attempt = static_cast<uint8_t>(failed.attempt + 1);
  job.submit_min = at;
  job.start_min = job.end_min = job.last_ckpt_min = -1;
  job.work_done0 = state.ckpt_done;
  job.steps0 = state.ckpt_steps;
  job.incident_mask = 0;
  job.end = JobEnd::kRunning;
  job.cause = EndCause::kNone;
  job.gpu_ids.clear();
  plan_.jobs.push_back(std::move(job));
  future_[at].push_back(plan_.jobs.back().id);
}

void Scheduler::Advance(int32_t m) {
  for (size_t i = 0; i < running_.size();) {
    RunState& s = running_[i];
    Job& job = plan_.jobs[s.job];
    const MinuteWork w = plan_.Work(job, m);
    s.done += w.progress;
    s.steps += w.steps;
    if (w.checkpoint_ms > 0 && !job.dummy) {
      job.last_ckpt_min = m;
      s.ckpt_done = s.done;
      s.ckpt_steps = s.steps;
    }
    const FailureDraw fail = DrawFailure(plan_, job, m);
    if (fail.failed) {
      End(i, m + 1, JobEnd::kFailed, fail.cause);
      continue;
    }
    const bool finished =
        job.dummy ? m + 1 - job.start_min >= job.work - job.work_done0 : s.done >= job.work;
    if (finished) {
      End(i, m + 1, JobEnd::kSucceeded, EndCause::kNone);
      continue;
    }
    ++i;
  }
}

void Scheduler::MachineEvents(int32_t m) {
  const int gpn = plan_.gpn;
  const auto end_jobs_on = [&](auto holds, JobEnd how, EndCause cause) {
    for (size_t i = 0; i < running_.size();) {
      const Job& job = plan_.jobs[running_[i].job];
      if (std::any_of(job.gpu_ids.begin(), job.gpu_ids.end(), holds)) {
        End(i, m, how, cause);
      } else {
        ++i;
      }
    }
  };
  for (const MaintenanceWindow& w : plan_.maintenance) {
    if (w.start_min == m) {
      ++maintenance_[w.node];
      end_jobs_on([&](int gpu) { return gpu / gpn == w.node; }, JobEnd::kPreempted,
                  EndCause::kMaintenance);
    }
    if (w.end_min == m) --maintenance_[w.node];
  }
  // Each node's next window, for draining.
  std::fill(next_window_.begin(), next_window_.end(), INT32_MAX);
  for (auto it = plan_.maintenance.rbegin(); it != plan_.maintenance.rend(); ++it) {
    if (it->start_min > m) next_window_[it->node] = it->start_min;
  }
  for (const ActiveIncident& inc : plan_.incidents) {
    if (inc.truth.kind != IncidentKind::kMissingGpu) continue;
    if (inc.start_min == m) {
      for (size_t gpu = 0; gpu < inc.gpu_in_scope.size(); ++gpu) {
        if (!inc.gpu_in_scope[gpu]) continue;
        usable_[gpu / gpn] &= ~(1u << (gpu % gpn));
        free_[gpu / gpn] &= ~(1u << (gpu % gpn));
      }
      end_jobs_on([&](int gpu) { return inc.gpu_in_scope[gpu]; }, JobEnd::kFailed,
                  EndCause::kHardware);
    } else if (inc.end_min == m) {
      for (size_t gpu = 0; gpu < inc.gpu_in_scope.size(); ++gpu) {
        if (!inc.gpu_in_scope[gpu]) continue;
        usable_[gpu / gpn] |= 1u << (gpu % gpn);
        if (gpu_job_[gpu] == 0) free_[gpu / gpn] |= 1u << (gpu % gpn);
      }
    }
  }
}

void Scheduler::Run() {
  const int gpn = plan_.gpn;
  const size_t nodes = plan_.nodes.size();
  const uint32_t all = gpn >= 32 ? 0xffffffffu : (1u << gpn) - 1;
  free_.assign(nodes, all);
  usable_.assign(nodes, all);
  maintenance_.assign(nodes, 0);
  next_window_.assign(nodes, INT32_MAX);
  pending_.resize(plan_.regions.size());
  future_.resize(plan_.minutes + 8);
  gpu_job_.assign(nodes * gpn, 0);
  plan_.occupancy.assign(nodes * gpn, {});
  CalibrateRates();
  for (int32_t m = 0; m < plan_.minutes; ++m) {
    // Jobs placed at m work in minute m; a job that finishes in minute m
    // holds its GPUs to m + 1, when the next minute's placements may use them.
    MachineEvents(m);
    Arrive(m);
    Schedule(m);
    Advance(m);
  }
  // Still running at the end: their GPUs are held to the last minute.
  for (const RunState& s : running_) {
    const Job& job = plan_.jobs[s.job];
    for (int gpu : job.gpu_ids)
      plan_.occupancy[gpu].push_back({job.start_min, plan_.minutes, job.id});
  }
  for (auto& list : plan_.occupancy) {
    std::sort(list.begin(), list.end(),
              [](const auto& a, const auto& b) { return a.start_min < b.start_min; });
  }
  std::stable_sort(plan_.events.begin(), plan_.events.end(),
                   [](const SchedEvent& a, const SchedEvent& b) { return a.minute < b.minute; });
}

void Summarise(Plan* plan) {
  // Over the span only: the warm-up is not part of what was simulated.
  SimSummary& s = plan->summary;
  const int32_t first = plan->first;
  s.nodes = static_cast<int>(plan->nodes.size());
  s.gpus = s.nodes * plan->gpn;
  s.start_ns = plan->options.start_ns;
  s.end_ns = plan->MinuteNs(plan->minutes);
  for (const Job& job : plan->jobs) {
    s.jobs += job.submit_min >= first;
    if (job.end_min < first) continue;  // ended in the warm-up, or never
    s.jobs_succeeded += job.end == JobEnd::kSucceeded;
    s.jobs_failed += job.end == JobEnd::kFailed;
    s.jobs_preempted += job.end == JobEnd::kPreempted;
  }
  const auto in_span = [&](int32_t from, int32_t to) {
    return static_cast<uint64_t>(std::max(0, std::min(to, plan->minutes) - std::max(from, first)));
  };
  for (const auto& list : plan->occupancy) {
    for (const Occupancy& o : list) s.allocated_gpu_minutes += in_span(o.start_min, o.end_min);
  }
  uint64_t maintained = 0;
  for (const MaintenanceWindow& w : plan->maintenance) {
    maintained += in_span(w.start_min, w.end_min) * plan->gpn;
    s.maintenance_windows += w.start_min >= first;
  }
  s.capacity_gpu_minutes = static_cast<uint64_t>(s.gpus) * (plan->minutes - first) - maintained;
}

}  // namespace

Status BuildPlan(const SimOptions& options, Plan* plan) {
  if (options.regions < 1 || options.regions > static_cast<int>(std::size(kRegions))) {
    return Status::InvalidArgument("--regions must be 1 to " + std::to_string(std::size(kRegions)));
  }
  if (options.first_region < 0 ||
      options.first_region + options.regions > static_cast<int>(std::size(kRegions))) {
    return Status::InvalidArgument("--first-region plus --regions must be at most " +
                                   std::to_string(std::size(kRegions)));
  }
  if (options.nodes < options.regions || options.nodes > 100000) {
    return Status::InvalidArgument("--nodes must be at least --regions and at most 100000");
  }
  if (options.gpus_per_node < 1 || options.gpus_per_node > 16) {
    return Status::InvalidArgument("--gpus-per-node must be 1 to 16");
  }
  if (options.days < 1 || options.days > 400)
    return Status::InvalidArgument("--days must be 1 to 400");
  if (options.hours < 0 || options.hours > 400 * 24)
    return Status::InvalidArgument("--hours must be 1 to 9600");
  if (options.batch_minutes < 1) return Status::InvalidArgument("batch_minutes must be at least 1");
  if (options.jobs_per_day < 0)
    return Status::InvalidArgument("--jobs-per-day must not be negative");
  if (options.incidents.size() > kMaxIncidents) {
    return Status::InvalidArgument("at most " + std::to_string(kMaxIncidents) + " incidents");
  }
  plan->options = options;
  plan->options.start_ns =
      options.start_ns - (((options.start_ns % kMinuteNs) + kMinuteNs) % kMinuteNs);
  plan->minutes = kWarmupMinutes + (options.hours > 0 ? options.hours * 60 : options.days * 1440);
  plan->gpn = options.gpus_per_node;
  BuildInventory(plan);
  PlanMaintenance(plan);
  GPULSE_RETURN_IF_ERROR(ResolveIncidents(plan));
  Scheduler(plan).Run();
  Summarise(plan);
  return Status::Ok();
}

}  // namespace gpulse::fleet::sim
