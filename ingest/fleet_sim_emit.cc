// The emitting pass: the plan turned into points of the fleet schema, one
// shard of nodes per thread, a stretch of minutes per batch. What a GPU
// reports in a minute follows from the job on it (its class and what that
// minute of work looked like), the incidents in effect, and a generator of
// its own, so a GPU's series are the same whichever thread writes them.

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <deque>
#include <mutex>
#include <thread>

#include "ingest/fleet_sim_emit.h"

namespace gpulse::fleet::sim {

namespace {

// DCGM's clock event reasons (DCGM_FI_DEV_CLOCKS_EVENT_REASONS bits).
constexpr int64_t kThrottleIdle = 0x1;
constexpr int64_t kThrottleSwPowerCap = 0x4;
constexpr int64_t kThrottleSwThermal = 0x20;
constexpr int64_t kThrottleHwThermal = 0x40;

constexpr std::string_view kGpuIndex[] = {"0", "1", "2",  "3",  "4",  "5",  "6",  "7",
                                          "8", "9", "10", "11", "12", "13", "14", "15"};

// Per class: share of SMs busy while a kernel runs, and of memory held.
constexpr double kSmEfficiency[] = {0.35, 0.55, 0.65, 0.78};
constexpr double kFbShare[] = {0.30, 0.50, 0.70, 0.88};

struct GpuState {
  Rng rng{0};
  size_t cursor = 0;
  uint32_t lead_job = UINT32_MAX;  // the job whose steps this GPU reports
  double steps = 0;
  int64_t ecc_sbe = 0, ecc_dbe = 0, nvlink_crc = 0, pcie_replay = 0;
};

// Points of a batch before their field spans are fixed (the field vector
// grows while the batch fills).
struct PendingPoint {
  std::string_view measurement;
  std::span<const TagRef> tags;
  size_t first_field, fields;
  int64_t timestamp_ns;
};

class Batch {
 public:
  void Begin(std::string_view measurement, std::span<const TagRef> tags, int64_t ts) {
    pending_.push_back({measurement, tags, fields_.size(), 0, ts});
  }
  template <typename V>
  void Add(std::string_view key, V value) {
    fields_.push_back({key, FieldValueRef(value)});
    ++pending_.back().fields;
  }
  size_t size() const { return pending_.size(); }
  // Keeps a string made for this batch until it is flushed.
  std::string_view Keep(std::string text) { return kept_.emplace_back(std::move(text)); }
  Status Flush(PointSink* sink, std::atomic<uint64_t>* emitted) {
    points_.clear();
    for (const PendingPoint& p : pending_) {
      if (p.fields == 0) continue;
      points_.push_back({p.measurement, p.tags, std::span(fields_).subspan(p.first_field, p.fields),
                         p.timestamp_ns});
    }
    pending_.clear();
    Status s = points_.empty() ? Status::Ok() : sink->Write(points_);
    emitted->fetch_add(points_.size(), std::memory_order_relaxed);
    fields_.clear();
    kept_.clear();
    return s;
  }

 private:
  std::vector<PendingPoint> pending_;
  std::vector<FieldRef> fields_;
  std::vector<PointRef> points_;
  std::deque<std::string> kept_;  // a deque: growing it moves no string
};

double Round1(double v) { return std::round(v * 10) / 10; }

constexpr std::string_view kEventNames[] = {"submitted", "started", "ended", "retried"};
constexpr std::string_view kQueues[] = {"interactive", "batch", "train"};
constexpr int kQueueOf[] = {0, 1, 2, 2};
constexpr std::string_view kPricing[] = {"on_demand", "reserved"};
constexpr double kReservedShare = 0.7;

size_t SchedTagIndex(int region, JobClass c, SchedEvent::Kind kind) {
  return (static_cast<size_t>(region) * std::size(kQueues) + kQueueOf[static_cast<int>(c)]) *
             std::size(kEventNames) +
         kind;
}

std::string JoinScope(const Incident& t) {
  std::string scope;
  const auto add = [&](std::string_view key, std::string_view value) {
    if (value.empty()) return;
    if (!scope.empty()) scope += ' ';
    scope += std::string(key) + "=" + std::string(value);
  };
  std::string nodes, gpus;
  for (const auto& n : t.nodes) nodes += (nodes.empty() ? "" : ",") + n;
  for (const auto& g : t.gpus) gpus += (gpus.empty() ? "" : ",") + g;
  add("gpus", gpus);
  if (gpus.empty()) add("nodes", nodes);
  add("driver_version", t.driver_version);
  add("image", t.image);
  add("cluster", t.cluster);
  add("region", t.region);
  add("queue", t.queue);
  add("team", t.team);
  return scope;
}

}  // namespace

Tables::Tables(const Plan& plan) {
  const int gpn = plan.gpn;
  for (size_t t = 0; t < Teams().size(); ++t) {
    for (int u = 0; u < 8; ++u)
      users.push_back("u-" + std::string(Teams()[t]) + "-" + std::to_string(u));
  }
  gpu_tags.resize(plan.nodes.size() * gpn);
  node_tags.resize(plan.nodes.size());
  link_tags.resize(plan.nodes.size());
  step_tags.resize(plan.nodes.size() * gpn);
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const Node& node = plan.nodes[n];
    const std::string_view cluster = plan.clusters[node.cluster].name;
    const std::string_view region = plan.regions[node.region].name;
    const std::string_view sku = Skus()[node.sku].name;
    node_tags[n] = {
        TagRef{"cluster", cluster}, {"node", node.name}, {"region", region}, {"sku", sku}};
    link_tags[n] = {
        TagRef{"cluster", cluster}, {"link", "ib0"}, {"node", node.name}, {"region", region}};
    for (int g = 0; g < gpn; ++g) {
      gpu_tags[n * gpn + g] = {TagRef{"cluster", cluster},
                               {"gpu", kGpuIndex[g]},
                               {"node", node.name},
                               {"region", region},
                               {"sku", sku}};
      step_tags[n * gpn + g] = {TagRef{"cluster", cluster},
                                {"gpu", kGpuIndex[g]},
                                {"node", node.name},
                                {"region", region}};
    }
  }
  for (const Region& r : plan.regions) {
    for (std::string_view queue : kQueues) {
      for (std::string_view event : kEventNames) {
        sched_tags.push_back({TagRef{"event", event}, {"queue", queue}, {"region", r.name}});
      }
    }
    for (int c = 0; c < kJobClasses; ++c) {
      job_tags.push_back(
          {TagRef{"region", r.name}, {"workload_class", JobClassName(static_cast<JobClass>(c))}});
    }
    for (const Sku& sku : Skus()) {
      for (std::string_view pricing : kPricing) {
        cost_tags.push_back({TagRef{"pricing", pricing}, {"region", r.name}, {"sku", sku.name}});
      }
    }
  }
  for (const MaintenanceWindow& w : plan.maintenance) {
    const Node& node = plan.nodes[w.node];
    maintenance_tags.push_back({TagRef{"node", node.name},
                                {"reason", w.reason},
                                {"region", plan.regions[node.region].name}});
  }
  for (const ActiveIncident& inc : plan.incidents) incident_scopes.push_back(JoinScope(inc.truth));
  for (size_t i = 0; i < plan.incidents.size(); ++i) {
    const Incident& t = plan.incidents[i].truth;
    incident_tags.push_back({TagRef{"cause_class", t.cause_class},
                             {"incident", t.name},
                             {"kind", IncidentKindName(t.kind)}});
  }
}

namespace {

// One shard's writer: nodes [first, last) for every minute.
class ShardEmitter {
 public:
  ShardEmitter(const Plan& plan, const Tables& tables, int first, int last, bool events)
      : plan_(plan), tables_(tables), first_(first), last_(last), events_(events) {
    gpus_.resize(static_cast<size_t>(last - first) * plan.gpn);
    for (size_t i = 0; i < gpus_.size(); ++i) {
      gpus_[i].rng = Rng(Hash(plan.options.seed, 0x6e11, first * plan.gpn + i));
    }
    node_rng_.reserve(last - first);
    for (int n = first; n < last; ++n) node_rng_.emplace_back(Hash(plan.options.seed, 0x40de, n));
    // Each node's maintenance windows, so a minute checks its own only.
    windows_.resize(last - first);
    for (const MaintenanceWindow& w : plan.maintenance) {
      if (w.node >= first && w.node < last)
        windows_[w.node - first].emplace_back(w.start_min, w.end_min);
    }
    work_minute_.assign(plan.jobs.size(), -1);
    work_.resize(plan.jobs.size());
  }

  Status EmitMinutes(int32_t from, int32_t to, PointSink* sink, std::atomic<uint64_t>* emitted) {
    for (int32_t m = from; m < to; ++m) {
      for (int n = first_; n < last_; ++n) EmitNode(n, m);
      if (events_) EmitEvents(m);
    }
    return batch_.Flush(sink, emitted);
  }

 private:
  const MinuteWork& WorkOf(const Job& job, int32_t m) {
    if (work_minute_[job.id] != m) {
      work_[job.id] = plan_.Work(job, m);
      work_minute_[job.id] = m;
    }
    return work_[job.id];
  }

  // Incidents in effect at m, by kind, that reach node n or GPU gpu.
  bool NodeHit(IncidentKind kind, int n, int32_t m) const {
    for (uint32_t bits = plan_.active[m]; bits != 0; bits &= bits - 1) {
      const ActiveIncident& inc = plan_.incidents[std::countr_zero(bits)];
      if (inc.truth.kind == kind && inc.node_in_scope[n]) return true;
    }
    return false;
  }
  bool GpuHit(IncidentKind kind, int gpu, int32_t m) const {
    for (uint32_t bits = plan_.active[m]; bits != 0; bits &= bits - 1) {
      const ActiveIncident& inc = plan_.incidents[std::countr_zero(bits)];
      if (inc.truth.kind == kind && inc.gpu_in_scope[gpu]) return true;
    }
    return false;
  }
  bool InMaintenance(int n, int32_t m) const {
    for (const auto& [start, end] : windows_[n - first_]) {
      if (start <= m && m < end) return true;
    }
    return false;
  }

  // The job on GPU `gpu` at m, or null; keeps the GPU's lead-step count.
  const Job* JobOn(int gpu, GpuState* s, int32_t m) {
    const auto& occupancy = plan_.occupancy[gpu];
    while (s->cursor < occupancy.size() && occupancy[s->cursor].end_min <= m) ++s->cursor;
    if (s->cursor == occupancy.size() || occupancy[s->cursor].start_min > m) return nullptr;
    const Job& job = plan_.jobs[occupancy[s->cursor].job];
    if (job.gpu_ids.front() == gpu && s->lead_job != job.id) {
      s->lead_job = job.id;
      s->steps = job.steps0;
      // A job from the warm-up: the steps it made before the span.
      for (int32_t t = job.start_min; t < m; ++t) s->steps += WorkOf(job, t).steps;
    }
    return &job;
  }

  struct NodeMinute {
    int busy_gpus = 0;
    bool checkpointing = false;
    bool io_slow = false;
    bool multi_node = false;
    double sync_share = 0;
    bool xid = false;
  };

  void EmitNode(int n, int32_t m);
  void EmitGpu(int gpu, const Job* job, int32_t m, bool maintenance, NodeMinute* node);
  void EmitStep(int gpu, const Job& job, const MinuteWork& w, GpuState* s, int32_t m, bool report);
  void EmitEvents(int32_t m);
  void EmitJob(const Job& job, int64_t ts);
  void EmitCost(int32_t m);
  std::string NodesOf(const Job& job) const;

  const Plan& plan_;
  const Tables& tables_;
  const int first_, last_;
  const bool events_;
  std::vector<GpuState> gpus_;
  std::vector<Rng> node_rng_;
  std::vector<std::vector<std::pair<int32_t, int32_t>>> windows_;  // by shard node: [start, end)
  std::vector<int32_t> work_minute_;
  std::vector<MinuteWork> work_;
  Batch batch_;
  size_t next_event_ = 0;
};

void ShardEmitter::EmitNode(int n, int32_t m) {
  const int gpn = plan_.gpn;
  const bool silent = NodeHit(IncidentKind::kSilentAgent, n, m);
  const bool maintenance = InMaintenance(n, m);
  NodeMinute node;
  int reported = 0;
  for (int g = 0; g < gpn; ++g) {
    const int gpu = n * gpn + g;
    GpuState& s = gpus_[gpu - first_ * gpn];
    const Job* job = JobOn(gpu, &s, m);
    if (job != nullptr && job->gpu_ids.front() == gpu) {
      EmitStep(gpu, *job, WorkOf(*job, m), &s, m, !silent);
    }
    if (silent || GpuHit(IncidentKind::kMissingGpu, gpu, m)) continue;
    ++reported;
    EmitGpu(gpu, job, m, maintenance, &node);
  }
  if (silent) return;
  Rng& rng = node_rng_[n - first_];
  const double busy = static_cast<double>(node.busy_gpus) / gpn;
  const int64_t ts = plan_.MinuteNs(m);
  batch_.Begin("node", tables_.node_tags[n], ts);
  batch_.Add("cpu_util", Round1(std::clamp(4 + 55 * busy + 6 * rng.Normal(), 0.5, 100.0)));
  batch_.Add("mem_used_pct", Round1(std::clamp(12 + 60 * busy + 3 * rng.Normal(), 1.0, 99.0)));
  batch_.Add("disk_read_bps",
             std::round(busy * (node.io_slow ? 130e6 : 400e6) * rng.Uniform(0.8, 1.2)));
  batch_.Add("disk_write_bps", std::round(busy * 20e6 * rng.Uniform(0.5, 1.5)));
  batch_.Add("nvme_read_bps", std::round(busy * 800e6 * rng.Uniform(0.7, 1.3)));
  batch_.Add("nvme_write_bps",
             std::round((node.checkpointing ? 2.2e9 : busy * 30e6) * rng.Uniform(0.8, 1.2)));
  batch_.Add("driver_version", NodeHit(IncidentKind::kDriverUpgrade, n, m) ||
                                       NodeHit(IncidentKind::kHealthyUpgrade, n, m)
                                   ? kUpgradeDriver
                                   : kBaseDriver);
  batch_.Add("kernel_version", std::string_view(plan_.nodes[n].kernel));
  batch_.Add("healthy", static_cast<int64_t>(!node.xid && reported == gpn));
  batch_.Add("gpu_count", static_cast<int64_t>(reported));
  batch_.Add("gpu_inventory", static_cast<int64_t>(gpn));
  batch_.Add("maintenance", static_cast<int64_t>(maintenance));

  const bool degraded = NodeHit(IncidentKind::kNetworkDegradation, n, m);
  const double traffic = node.multi_node ? 12e9 * std::min(1.0, node.sync_share * 4) + 50e6 : 20e6;
  batch_.Begin("link", tables_.link_tags[n], ts);
  batch_.Add("rx_bps", std::round(traffic * rng.Uniform(0.9, 1.1)));
  batch_.Add("tx_bps", std::round(traffic * rng.Uniform(0.9, 1.1)));
  batch_.Add("packet_loss_pct",
             degraded ? Round1(rng.Uniform(0.5, 2.0) * 100) / 100 : 0.0001 * rng.Uniform());
  batch_.Add("retransmits",
             static_cast<int64_t>(degraded ? rng.Poisson(40) * 12 : rng.Poisson(0.5)));
  batch_.Add("latency_us", Round1(degraded ? rng.Uniform(9, 15) : rng.Uniform(1.9, 2.4)));
}

void ShardEmitter::EmitGpu(int gpu, const Job* job, int32_t m, bool maintenance, NodeMinute* node) {
  const int n = gpu / plan_.gpn;
  const Sku& sku = Skus()[plan_.nodes[n].sku];
  GpuState& s = gpus_[gpu - first_ * plan_.gpn];
  Rng& rng = s.rng;
  const bool thermal = NodeHit(IncidentKind::kThermal, n, m);
  const bool faulty = GpuHit(IncidentKind::kHardwareFault, gpu, m);
  double util = 0, sm = 0, tensor = 0, fb = 0.004, load = 0;
  int64_t throttle = kThrottleIdle;
  double nvlink = 0, pcie_rx = 2e6, pcie_tx = 1e6;
  int64_t xid = 0;
  if (job != nullptr) {
    const MinuteWork& w = WorkOf(*job, m);
    const int c = static_cast<int>(job->cls);
    ++node->busy_gpus;
    node->checkpointing |= w.checkpoint_ms > 0;
    node->multi_node |= job->gpus > plan_.gpn;
    node->io_slow |= w.data_ms > job->step_ms * job->data_frac * 1.5;
    throttle = 0;
    if (job->dummy) {
      // A spin kernel: always a kernel resident, almost no SM doing work.
      util = rng.Uniform(99, 100.5);
      sm = rng.Uniform(0.015, 0.04);
      load = 0.3;
      fb = 0.03;
    } else {
      const double step = w.compute_ms + w.data_ms + w.sync_ms;
      double busy = w.compute_ms / step * (1 - w.checkpoint_ms / 60000);
      if (job->cls == JobClass::kInteractive) busy *= rng.Uniform(0.2, 0.8);  // think time
      util = 100 * busy * rng.Uniform(0.97, 1.02);
      sm = busy * kSmEfficiency[c] * rng.Uniform(0.92, 1.06);
      tensor = sm * (job->image == 3 ? 0.7 : 0.6) * rng.Uniform(0.9, 1.1);
      fb = kFbShare[c] * rng.Uniform(0.97, 1.0);
      load = 0.25 + 0.75 * std::min(1.0, sm / 0.8);
      node->sync_share = std::max(node->sync_share, w.sync_ms / step);
      if (job->gpus > 1) nvlink = 4e10 * (w.sync_ms / step + 0.05) * rng.Uniform(0.9, 1.1);
      pcie_rx = 2.5e9 * (w.data_ms / step) * rng.Uniform(0.8, 1.2) + 5e7;
      pcie_tx = 1e8 * rng.Uniform(0.5, 1.5);
      if (load > 0.9 && rng.Uniform() < 0.3) throttle |= kThrottleSwPowerCap;
    }
    if (job->end == JobEnd::kFailed && m == job->end_min - 1 && job->cause == EndCause::kSoftware) {
      xid = 13;  // graphics engine exception, as a crashing CUDA program leaves
    }
  }
  int sm_clock = job != nullptr ? static_cast<int>(sku.max_sm_clock * rng.Uniform(0.97, 1.0))
                                : sku.idle_sm_clock;
  double power = sku.idle_w * (maintenance ? 0.8 : 1.0) + (sku.tdp_w - sku.idle_w) * load;
  power *= rng.Uniform(0.96, 1.04);
  double temp = 29 + 47 * power / sku.tdp_w + rng.Normal();
  if (thermal) {
    // A hot node: its GPUs run hot; a busy one is held to ~70% of boost.
    throttle |= kThrottleSwThermal | kThrottleHwThermal;
    if (job != nullptr) sm_clock = static_cast<int>(sku.max_sm_clock * rng.Uniform(0.66, 0.74));
    temp = rng.Uniform(88, 93);
  }
  if (faulty && rng.Uniform() < 0.04) {
    xid = rng.Uniform() < 0.7 ? 48 : 79;
    if (xid == 48) ++s.ecc_dbe;
    s.ecc_sbe += rng.Below(4);
  }
  if (rng.Uniform() < 2e-5) ++s.ecc_sbe;
  if (rng.Uniform() < 5e-5) ++s.pcie_replay;
  if (nvlink > 0 && rng.Uniform() < 5e-5) ++s.nvlink_crc;
  node->xid |= xid == 48 || xid == 79;

  batch_.Begin("gpu", tables_.gpu_tags[gpu], plan_.MinuteNs(m));
  batch_.Add("util", static_cast<int64_t>(std::clamp(util, 0.0, 100.0)));
  batch_.Add("sm_active", std::round(std::clamp(sm, 0.0, 1.0) * 1000) / 1000);
  batch_.Add("tensor_active", std::round(std::clamp(tensor, 0.0, 1.0) * 1000) / 1000);
  batch_.Add("fb_used", static_cast<int64_t>(fb * sku.fb_total_mib));
  batch_.Add("power", Round1(power));
  batch_.Add("temp", static_cast<int64_t>(std::lround(temp)));
  batch_.Add("sm_clock", static_cast<int64_t>(sm_clock));
  batch_.Add("xid", xid);
  batch_.Add("ecc_sbe_total", s.ecc_sbe);
  batch_.Add("ecc_dbe_total", s.ecc_dbe);
  batch_.Add("throttle_reasons", throttle);
  batch_.Add("nvlink_bps", std::round(nvlink));
  batch_.Add("pcie_rx_bps", std::round(pcie_rx));
  batch_.Add("pcie_tx_bps", std::round(pcie_tx));
  batch_.Add("nvlink_crc_errors_total", s.nvlink_crc);
  batch_.Add("pcie_replay_total", s.pcie_replay);
  if (job != nullptr) {
    batch_.Add("job", std::string_view(job->name));
    batch_.Add("user", std::string_view(tables_.users[job->team * 8 + job->user]));
    batch_.Add("team", Teams()[job->team]);
    batch_.Add("workload_class", JobClassName(job->cls));
  }
}

void ShardEmitter::EmitStep(int gpu, const Job& job, const MinuteWork& w, GpuState* s, int32_t m,
                            bool report) {
  s->steps += w.steps;
  if (!report) return;
  batch_.Begin("job_step", tables_.step_tags[gpu], plan_.MinuteNs(m));
  batch_.Add("job", std::string_view(job.name));
  batch_.Add("step", static_cast<int64_t>(s->steps));
  if (!job.dummy) {
    batch_.Add("step_time_ms", Round1(w.compute_ms + w.data_ms + w.sync_ms));
    batch_.Add("data_loader_ms", Round1(w.data_ms));
    batch_.Add("grad_sync_ms", Round1(w.sync_ms));
  }
  batch_.Add("checkpoint_ms", Round1(w.checkpoint_ms));
  batch_.Add("image", Images()[job.image]);
  batch_.Add("framework", FrameworkOf(job.image));
  batch_.Add("workload_class", JobClassName(job.cls));
}

void ShardEmitter::EmitEvents(int32_t m) {
  const bool last = m == plan_.minutes - 1;
  const auto& events = plan_.events;
  for (; next_event_ < events.size() && (events[next_event_].minute <= m || last); ++next_event_) {
    const SchedEvent& e = events[next_event_];
    if (e.minute < plan_.first) continue;  // the warm-up's
    const Job& job = plan_.jobs[e.job];
    // Events of one minute share a series; the job number in nanoseconds
    // keeps each its own timestamp.
    const int64_t ts = plan_.MinuteNs(e.minute) + job.id;
    batch_.Begin("sched", tables_.sched_tags[SchedTagIndex(job.region, job.cls, e.kind)], ts);
    batch_.Add("job", std::string_view(job.name));
    batch_.Add("team", Teams()[job.team]);
    batch_.Add("user", std::string_view(tables_.users[job.team * 8 + job.user]));
    batch_.Add("workload_class", JobClassName(job.cls));
    batch_.Add("priority", static_cast<int64_t>(job.priority));
    batch_.Add("attempt", static_cast<int64_t>(job.attempt));
    switch (e.kind) {
      case SchedEvent::kSubmitted:
      case SchedEvent::kRetried:
        batch_.Add("requested_gpus", static_cast<int64_t>(job.gpus));
        EmitJob(job, ts);
        break;
      case SchedEvent::kStarted:
        batch_.Add("placed_gpus", static_cast<int64_t>(job.gpu_ids.size()));
        batch_.Add("wait_s", static_cast<int64_t>(job.start_min - job.submit_min) * 60);
        batch_.Add("nodes", batch_.Keep(NodesOf(job)));
        break;
      case SchedEvent::kEnded:
        batch_.Add("status", JobEndName(job.end));
        if (job.cause != EndCause::kNone) batch_.Add("reason", EndCauseName(job.cause));
        if (job.start_min >= 0) {
          batch_.Add("gpu_minutes", static_cast<int64_t>(job.end_min - job.start_min) *
                                        static_cast<int64_t>(job.gpu_ids.size()));
        }
        if (job.last_ckpt_min >= 0)
          batch_.Add("last_checkpoint", plan_.MinuteNs(job.last_ckpt_min + 1));
        break;
    }
  }
  for (size_t i = 0; i < plan_.maintenance.size(); ++i) {
    const MaintenanceWindow& w = plan_.maintenance[i];
    // A window the warm-up began is written at the first minute, with its start.
    const bool carried = m == plan_.first && w.start_min < m && w.end_min > m;
    if (w.start_min != m && !carried) continue;
    batch_.Begin("maintenance", tables_.maintenance_tags[i], plan_.MinuteNs(w.start_min));
    batch_.Add("end", plan_.MinuteNs(w.end_min));
    batch_.Add("duration_min", static_cast<int64_t>(w.end_min - w.start_min));
    batch_.Add("planned", true);
  }
  for (size_t i = 0; i < plan_.incidents.size(); ++i) {
    const ActiveIncident& inc = plan_.incidents[i];
    if (inc.start_min != m) continue;
    batch_.Begin("incident", tables_.incident_tags[i], plan_.MinuteNs(m));
    batch_.Add("end", inc.truth.end_ns);
    batch_.Add("scope", std::string_view(tables_.incident_scopes[i]));
    batch_.Add("description", std::string_view(inc.truth.description));
  }
  if ((m - plan_.first) % 60 == 0) EmitCost(m);
}

std::string ShardEmitter::NodesOf(const Job& job) const {
  std::string nodes;
  for (size_t i = 0; i < job.gpu_ids.size(); ++i) {
    const int n = job.gpu_ids[i] / plan_.gpn;
    if (i > 0 && job.gpu_ids[i - 1] / plan_.gpn == n) continue;
    if (!nodes.empty()) nodes += ',';
    nodes += plan_.nodes[n].name;
  }
  return nodes;
}

void ShardEmitter::EmitJob(const Job& job, int64_t ts) {
  batch_.Begin("job", tables_.job_tags[job.region * kJobClasses + static_cast<int>(job.cls)], ts);
  batch_.Add("job", std::string_view(job.name));
  batch_.Add("team", Teams()[job.team]);
  batch_.Add("user", std::string_view(tables_.users[job.team * 8 + job.user]));
  batch_.Add("model_type", ModelTypes()[job.model]);
  batch_.Add("dataset", Datasets()[job.dataset]);
  batch_.Add("image", Images()[job.image]);
  batch_.Add("framework", FrameworkOf(job.image));
  batch_.Add("queue", kQueues[kQueueOf[static_cast<int>(job.cls)]]);
  batch_.Add("priority", static_cast<int64_t>(job.priority));
  batch_.Add("requested_gpus", static_cast<int64_t>(job.gpus));
  batch_.Add("requested_mem_gb", static_cast<int64_t>(job.gpus) * 64);
  batch_.Add("attempt", static_cast<int64_t>(job.attempt));
}

void ShardEmitter::EmitCost(int32_t m) {
  // Capacity by region and SKU, 70% of it reserved, the rest on demand.
  const size_t skus = Skus().size();
  std::vector<int64_t> gpus(plan_.regions.size() * skus, 0);
  for (const Node& node : plan_.nodes) gpus[node.region * skus + node.sku] += plan_.gpn;
  for (size_t r = 0; r < plan_.regions.size(); ++r) {
    for (size_t k = 0; k < skus; ++k) {
      const int64_t total = gpus[r * skus + k];
      if (total == 0) continue;
      const int64_t reserved = static_cast<int64_t>(std::llround(total * kReservedShare));
      const Sku& sku = Skus()[k];
      for (int p = 0; p < 2; ++p) {
        batch_.Begin("cost", tables_.cost_tags[(r * skus + k) * 2 + p], plan_.MinuteNs(m));
        batch_.Add("usd_per_gpu_hour", p == 1 ? sku.usd_reserved : sku.usd_on_demand);
        const int64_t gpus = p == 1 ? reserved : total - reserved;
        batch_.Add("gpus", gpus);
        batch_.Add("usd_per_hour",
                   (p == 1 ? sku.usd_reserved : sku.usd_on_demand) * static_cast<double>(gpus));
      }
    }
  }
}

}  // namespace

Status EmitPlan(const Plan& plan, const Tables& tables, PointSink* sink, int threads,
                const std::function<void(double)>& progress, uint64_t* points) {
  threads = std::clamp(threads, 1, static_cast<int>(plan.nodes.size()));
  std::atomic<uint64_t> emitted{0};
  std::atomic<int64_t> blocks_done{0};
  std::mutex error_mutex;
  Status error;
  std::atomic<bool> failed{false};
  const int block = plan.options.batch_minutes;
  const int64_t blocks = (plan.minutes - plan.first + block - 1) / block;
  const auto run = [&](int shard) {
    const int nodes = static_cast<int>(plan.nodes.size());
    ShardEmitter emitter(plan, tables, nodes * shard / threads, nodes * (shard + 1) / threads,
                         shard == 0);
    for (int32_t from = plan.first; from < plan.minutes && !failed.load(); from += block) {
      Status s = emitter.EmitMinutes(from, std::min(plan.minutes, from + block), sink, &emitted);
      if (!s.ok()) {
        std::lock_guard lock(error_mutex);
        if (!failed.exchange(true)) error = s;
        return;
      }
      const int64_t done = blocks_done.fetch_add(1) + 1;
      if (shard == 0 && progress) progress(static_cast<double>(done) / (blocks * threads));
    }
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(run, t);
  run(0);
  for (auto& w : workers) w.join();
  if (points != nullptr) *points = emitted.load();
  return error;
}

}  // namespace gpulse::fleet::sim
