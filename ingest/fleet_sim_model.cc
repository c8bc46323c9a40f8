// The simulator's fixed tables and the per-minute model of a running job
// that both passes share (fleet_sim_model.h).

#include "ingest/fleet_sim_model.h"

#include <algorithm>

namespace gpulse::fleet::sim {

namespace {

// Public list prices vary; these are round figures of the 2026 market, for
// the cost measurement to have plausible magnitudes.
constexpr Sku kSkus[] = {
    {"H100-SXM5-80GB", 70, 700, 1980, 345, 81559, 2.10, 3.90},
    {"A100-SXM4-80GB", 55, 400, 1410, 210, 81920, 1.30, 2.40},
    {"H200-SXM5-141GB", 75, 700, 1980, 345, 143771, 2.80, 4.80},
};
constexpr std::string_view kTeams[] = {"search",   "ads",      "vision",   "speech",
                                       "llm-core", "llm-apps", "recsys",   "fraud",
                                       "robotics", "research", "infra-ml", "data-science"};
constexpr std::string_view kImages[] = {"pytorch:2.3.1-cuda12.1", "pytorch:2.4.0-cuda12.4",
                                        "pytorch:2.5.0-cuda12.4", "jax:0.4.30-cuda12.4"};
constexpr std::string_view kFrameworks[] = {"pytorch-2.3.1", "pytorch-2.4.0", "pytorch-2.5.0",
                                            "jax-0.4.30"};
constexpr std::string_view kDatasets[] = {"web-crawl-v3",     "imagenet-21k", "librispeech",
                                          "clicklogs-2026q3", "code-v2",      "laion-subset"};
constexpr std::string_view kModelTypes[] = {"llm", "vision", "speech", "recsys", "diffusion"};

}  // namespace

const std::string_view kBaseDriver = "535.183.01";
const std::string_view kUpgradeDriver = "550.90.07";

std::span<const Sku> Skus() { return kSkus; }
std::span<const std::string_view> Teams() { return kTeams; }
std::span<const std::string_view> Images() { return kImages; }
std::string_view FrameworkOf(int image) { return kFrameworks[image]; }
std::span<const std::string_view> Datasets() { return kDatasets; }
std::span<const std::string_view> ModelTypes() { return kModelTypes; }

std::string_view JobClassName(JobClass c) {
  constexpr std::string_view kNames[] = {"interactive", "batch", "retrain", "pretrain"};
  return kNames[static_cast<int>(c)];
}

std::string_view QueueName(JobClass c) {
  constexpr std::string_view kNames[] = {"interactive", "batch", "train", "train"};
  return kNames[static_cast<int>(c)];
}

std::string_view JobEndName(JobEnd e) {
  constexpr std::string_view kNames[] = {"running", "succeeded", "failed", "preempted",
                                         "cancelled"};
  return kNames[static_cast<int>(e)];
}

std::string_view EndCauseName(EndCause c) {
  constexpr std::string_view kNames[] = {"",        "hardware",    "software",
                                         "network", "maintenance", "queue_timeout"};
  return kNames[static_cast<int>(c)];
}

int Rng::Poisson(double mean) {
  // Knuth's product of uniforms: exact, and cheap for the small means of one
  // minute's arrivals; a normal approximation past 30.
  if (mean <= 0) return 0;
  if (mean > 30)
    return std::max(0, static_cast<int>(std::lround(mean + std::sqrt(mean) * Normal())));
  const double limit = std::exp(-mean);
  int k = 0;
  double p = Uniform();
  while (p > limit) {
    ++k;
    p *= Uniform();
  }
  return k;
}

MinuteWork Plan::Work(const Job& job, int32_t minute) const {
  MinuteWork w{};
  double compute = job.step_ms * (1.0 - job.data_frac - job.sync_frac);
  double data = job.step_ms * job.data_frac;
  double sync = job.step_ms * job.sync_frac;
  const bool multi_node = job.gpus > gpn;
  for (uint32_t bits = JobIncidents(job, minute); bits != 0; bits &= bits - 1) {
    switch (incidents[std::countr_zero(bits)].truth.kind) {
      case IncidentKind::kThermal:
        compute *= 1.35;  // clocks held near 70% of boost
        break;
      case IncidentKind::kFrameworkRegression:
        compute *= 1.5;
        break;
      case IncidentKind::kIoBottleneck:
        data *= 4.0;
        break;
      case IncidentKind::kNetworkDegradation:
        if (multi_node) sync *= 3.0;
        break;
      default:
        break;
    }
  }
  // A few percent of step-to-step jitter, the same on every run.
  compute *= 0.97 + 0.06 * Unit(Hash(options.seed, job.id, static_cast<uint64_t>(minute), 1));
  w.compute_ms = compute;
  w.data_ms = data;
  w.sync_ms = sync;
  const int running = minute - job.start_min;
  if (job.ckpt_every > 0 && running > 0 && running % job.ckpt_every == 0 && !job.dummy) {
    w.checkpoint_ms = 12000 + 24000 * Unit(Hash(options.seed, job.id, running, 2));
  }
  if (job.dummy) return w;
  const double step = compute + data + sync;
  const double available = 60000.0 - w.checkpoint_ms;
  w.steps = available / step;
  w.progress = available / 60000.0 * (job.step_ms / step);
  return w;
}

}  // namespace gpulse::fleet::sim
