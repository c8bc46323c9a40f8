// Incidents: parsing requests, resolving scopes, their reach and their
// failures, and the ground truth written for tests (fleet_sim_incidents.h).

#include "ingest/fleet_sim_incidents.h"

#include <algorithm>
#include <bit>
#include <ctime>
#include <nlohmann/json.hpp>

namespace gpulse::fleet {

namespace {

constexpr std::string_view kKindNames[] = {"hw-fault",
                                           "thermal",
                                           "driver-upgrade",
                                           "framework-regression",
                                           "sched-fragmentation",
                                           "io-bottleneck",
                                           "network-degradation",
                                           "dummy-kernels",
                                           "silent-agent",
                                           "missing-gpu",
                                           "healthy-upgrade"};

// "36h", "2d12h", "90m", "0": a sum of integers with units d, h, m, s.
bool ParseSpan(std::string_view text, int64_t* ns) {
  if (text == "0") {
    *ns = 0;
    return true;
  }
  int64_t total = 0;
  size_t i = 0;
  if (text.empty()) return false;
  while (i < text.size()) {
    int64_t n = 0;
    const size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && n < 1'000'000)
      n = n * 10 + (text[i++] - '0');
    if (i == digits || i == text.size()) return false;
    int64_t unit = 0;
    switch (text[i++]) {
      case 'd':
        unit = 86400;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'm':
        unit = 60;
        break;
      case 's':
        unit = 1;
        break;
      default:
        return false;
    }
    total += n * unit * 1'000'000'000;
  }
  *ns = total;
  return true;
}

}  // namespace

std::span<const std::string_view> IncidentKindNames() { return kKindNames; }

std::string_view IncidentKindName(IncidentKind kind) { return kKindNames[static_cast<int>(kind)]; }

bool IsControl(IncidentKind kind) { return kind == IncidentKind::kHealthyUpgrade; }

bool ParseIncidentKind(std::string_view name, IncidentKind* kind) {
  for (size_t i = 0; i < std::size(kKindNames); ++i) {
    if (kKindNames[i] == name) {
      *kind = static_cast<IncidentKind>(i);
      return true;
    }
  }
  return false;
}

bool ParseIncidentRequest(std::string_view text, IncidentRequest* out, std::string* error) {
  IncidentRequest r;
  const size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    r.scope = std::string(text.substr(colon + 1));
    text = text.substr(0, colon);
    if (r.scope.empty()) {
      *error = "empty scope after ':'";
      return false;
    }
  }
  const size_t slash = text.find('/');
  if (slash != std::string_view::npos) {
    if (!ParseSpan(text.substr(slash + 1), &r.duration_ns) || r.duration_ns <= 0) {
      *error = "duration '" + std::string(text.substr(slash + 1)) +
               "' is not a span such as 6h or 1d12h";
      return false;
    }
    text = text.substr(0, slash);
  }
  const size_t at = text.find('@');
  if (at != std::string_view::npos) {
    if (!ParseSpan(text.substr(at + 1), &r.offset_ns)) {
      *error = "start '" + std::string(text.substr(at + 1)) +
               "' is not an offset from the simulation start such as 3d or 2d12h";
      return false;
    }
    text = text.substr(0, at);
  }
  if (!ParseIncidentKind(text, &r.kind)) {
    *error = "unknown incident '" + std::string(text) + "' (known:";
    for (std::string_view k : kKindNames) *error += " " + std::string(k);
    *error += ")";
    return false;
  }
  *out = std::move(r);
  return true;
}

namespace sim {

namespace {

std::string_view CauseClass(IncidentKind kind) {
  constexpr std::string_view kCause[] = {"hardware",   "hardware", "software", "software",
                                         "scheduling", "data_io",  "network",  "waste",
                                         "collection", "hardware", "none"};
  return kCause[static_cast<int>(kind)];
}

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t from = 0;
  while (true) {
    const size_t to = text.find(sep, from);
    out.emplace_back(text.substr(from, to - from));
    if (to == std::string_view::npos) return out;
    from = to + 1;
  }
}

int FindNode(const Plan& plan, std::string_view name) {
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    if (plan.nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

template <typename Names>
int FindName(const Names& names, std::string_view name) {
  for (size_t i = 0; i < std::size(names); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

Status UnknownScope(const ActiveIncident& inc, std::string_view what, std::string_view name,
                    std::string_view example) {
  return Status::InvalidArgument("incident " + std::string(IncidentKindName(inc.truth.kind)) +
                                 ": no " + std::string(what) + " '" + std::string(name) +
                                 "' (e.g. " + std::string(example) + ")");
}

void AddNode(const Plan& plan, int node, ActiveIncident* inc) {
  if (inc->node_in_scope[node]) return;
  inc->node_in_scope[node] = true;
  inc->truth.nodes.push_back(plan.nodes[node].name);
}

void AddGpu(const Plan& plan, int gpu, ActiveIncident* inc) {
  if (inc->gpu_in_scope[gpu]) return;
  inc->gpu_in_scope[gpu] = true;
  AddNode(plan, gpu / plan.gpn, inc);
  inc->truth.gpus.push_back(plan.nodes[gpu / plan.gpn].name + "/" + std::to_string(gpu % plan.gpn));
}

// The scope named on the command line ("a+b", node names, "node/3" GPUs).
Status ScopeFromRequest(const Plan& plan, const IncidentRequest& request, ActiveIncident* inc) {
  const std::string example = plan.nodes.front().name;
  switch (request.kind) {
    case IncidentKind::kFrameworkRegression:
      inc->image = FindName(Images(), request.scope);
      if (inc->image < 0) return UnknownScope(*inc, "image", request.scope, Images()[2]);
      return Status::Ok();
    case IncidentKind::kIoBottleneck:
      for (size_t c = 0; c < plan.clusters.size(); ++c) {
        if (plan.clusters[c].name == request.scope) inc->cluster = static_cast<int>(c);
      }
      if (inc->cluster < 0)
        return UnknownScope(*inc, "cluster", request.scope, plan.clusters[0].name);
      return Status::Ok();
    case IncidentKind::kSchedFragmentation:
      for (size_t r = 0; r < plan.regions.size(); ++r) {
        if (plan.regions[r].name == request.scope) inc->region = static_cast<int>(r);
      }
      if (inc->region < 0) return UnknownScope(*inc, "region", request.scope, plan.regions[0].name);
      return Status::Ok();
    case IncidentKind::kDummyKernels:
      inc->team = FindName(Teams(), request.scope);
      if (inc->team < 0) return UnknownScope(*inc, "team", request.scope, Teams()[0]);
      return Status::Ok();
    default:
      break;
  }
  const bool by_gpu =
      request.kind == IncidentKind::kHardwareFault || request.kind == IncidentKind::kMissingGpu;
  for (const std::string& item : Split(request.scope, '+')) {
    const size_t slash = item.find('/');
    const int node = FindNode(plan, item.substr(0, slash));
    if (node < 0) return UnknownScope(*inc, "node", item.substr(0, slash), example);
    if (!by_gpu) {
      AddNode(plan, node, inc);
      continue;
    }
    if (slash == std::string::npos) {
      for (int g = 0; g < plan.gpn; ++g) AddGpu(plan, node * plan.gpn + g, inc);
      continue;
    }
    const std::string index = item.substr(slash + 1);
    const int g = index.empty() || index.size() > 2 ? -1 : std::stoi("0" + index);
    if (g < 0 || g >= plan.gpn || index.find_first_not_of("0123456789") != std::string::npos) {
      return UnknownScope(*inc, "GPU", item, example + "/3");
    }
    AddGpu(plan, node * plan.gpn + g, inc);
  }
  return Status::Ok();
}

// A scope chosen from the seed when none was given.
void DefaultScope(const Plan& plan, size_t index, ActiveIncident* inc) {
  Rng rng(Hash(plan.options.seed, 0x1c1d, index));
  const Cluster& cluster = plan.clusters[rng.Below(static_cast<int>(plan.clusters.size()))];
  const int size = static_cast<int>(cluster.nodes.size());
  const int at = rng.Below(size);
  const int node = cluster.nodes[at];
  switch (inc->truth.kind) {
    case IncidentKind::kHardwareFault: {
      // Three GPUs on two nodes of one cluster.
      const int other = cluster.nodes[(at + 1) % size];
      AddGpu(plan, node * plan.gpn + rng.Below(plan.gpn), inc);
      AddGpu(plan, node * plan.gpn + (plan.gpn - 1), inc);
      AddGpu(plan, other * plan.gpn + rng.Below(plan.gpn), inc);
      break;
    }
    case IncidentKind::kMissingGpu:
      AddGpu(plan, node * plan.gpn + plan.gpn - 1, inc);
      break;
    case IncidentKind::kThermal:
    case IncidentKind::kSilentAgent:
      AddNode(plan, node, inc);
      break;
    case IncidentKind::kDriverUpgrade:
    case IncidentKind::kHealthyUpgrade:
      // The first half of one cluster: a cohort the upgrade reached first.
      for (int i = 0; i < (size + 1) / 2; ++i) AddNode(plan, cluster.nodes[i], inc);
      break;
    case IncidentKind::kNetworkDegradation:
      // The nodes under one leaf switch: eight in a row.
      for (int i = 0; i < std::min(size, 8); ++i)
        AddNode(plan, cluster.nodes[(i + size / 3) % size], inc);
      break;
    case IncidentKind::kFrameworkRegression:
      inc->image = 2;
      break;
    case IncidentKind::kIoBottleneck:
      inc->cluster = static_cast<int>(&cluster - plan.clusters.data());
      break;
    case IncidentKind::kSchedFragmentation:
      inc->region = cluster.region;
      break;
    case IncidentKind::kDummyKernels:
      inc->team = rng.Below(static_cast<int>(Teams().size()));
      break;
  }
}

std::string Describe(const Plan& plan, const ActiveIncident& inc) {
  const Incident& t = inc.truth;
  const std::string nodes = std::to_string(t.nodes.size()) + " node(s)";
  switch (t.kind) {
    case IncidentKind::kHardwareFault:
      return "XID 48/79 and ECC double-bit errors on " + std::to_string(t.gpus.size()) +
             " GPU(s); jobs placed there fail";
    case IncidentKind::kThermal:
      return "thermal throttling on " + nodes + ": SM clocks near 70% of boost, steps 35% slower";
    case IncidentKind::kDriverUpgrade:
      return "driver " + std::string(kBaseDriver) + " -> " + t.driver_version + " on " + nodes +
             ": each GPU there crashes its job every two hours or so";
    case IncidentKind::kFrameworkRegression:
      return "image " + t.image + ": compute 50% slower per step, and a crash every four GPU-hours";
    case IncidentKind::kSchedFragmentation:
      return "scheduler in " + plan.regions[inc.region].name +
             " spreads small jobs and stops backfilling: gang jobs of queue train wait while GPUs "
             "idle";
    case IncidentKind::kIoBottleneck:
      return "storage of cluster " + t.cluster + " slows: data-loader time per step x4";
    case IncidentKind::kNetworkDegradation:
      return "links of " + nodes +
             " lose packets and retransmit: gradient sync of multi-node jobs x3";
    case IncidentKind::kDummyKernels:
      return "team " + t.team +
             " runs spin kernels: util near 100%, SM activity near 0, no step progress";
    case IncidentKind::kSilentAgent:
      return "the agent of " + t.nodes.front() + " stops reporting (gpu, node, link, job_step)";
    case IncidentKind::kMissingGpu:
      return t.gpus.front() +
             " falls off the bus: the node reports one GPU fewer than its inventory";
    case IncidentKind::kHealthyUpgrade:
      return "driver " + std::string(kBaseDriver) + " -> " + t.driver_version + " on " + nodes +
             ", a driver as good as the old one: a control, nothing should page or be blamed";
  }
  return {};
}

}  // namespace

Status ResolveIncidents(Plan* plan) {
  plan->active.assign(plan->minutes + 1, 0);
  std::vector<int> per_kind(std::size(kKindNames), 0);
  for (size_t i = 0; i < plan->options.incidents.size(); ++i) {
    const IncidentRequest& request = plan->options.incidents[i];
    ActiveIncident inc;
    Incident& t = inc.truth;
    t.kind = request.kind;
    t.name = std::string(IncidentKindName(request.kind)) + "-" +
             std::to_string(++per_kind[static_cast<int>(request.kind)]);
    t.cause_class = std::string(CauseClass(request.kind));
    const int64_t span = static_cast<int64_t>(plan->minutes - plan->first) * kMinuteNs;
    if (request.offset_ns >= span) {
      return Status::InvalidArgument("incident " + t.name + " starts after the simulation ends");
    }
    inc.start_min = plan->first + static_cast<int32_t>(request.offset_ns / kMinuteNs);
    const int64_t end =
        request.duration_ns < 0 ? span : std::min(span, request.offset_ns + request.duration_ns);
    inc.end_min = std::max<int32_t>(
        inc.start_min + 1, plan->first + static_cast<int32_t>((end + kMinuteNs - 1) / kMinuteNs));
    t.start_ns = plan->MinuteNs(inc.start_min);
    t.end_ns = plan->MinuteNs(inc.end_min);
    inc.node_in_scope.assign(plan->nodes.size(), false);
    inc.gpu_in_scope.assign(plan->nodes.size() * plan->gpn, false);
    if (request.scope.empty()) {
      DefaultScope(*plan, i, &inc);
    } else {
      GPULSE_RETURN_IF_ERROR(ScopeFromRequest(*plan, request, &inc));
    }
    if (t.kind == IncidentKind::kDriverUpgrade || t.kind == IncidentKind::kHealthyUpgrade) {
      t.driver_version = std::string(kUpgradeDriver);
    }
    if (inc.image >= 0) t.image = std::string(Images()[inc.image]);
    if (inc.cluster >= 0) t.cluster = plan->clusters[inc.cluster].name;
    if (inc.team >= 0) t.team = std::string(Teams()[inc.team]);
    if (t.kind == IncidentKind::kSchedFragmentation) {
      t.queue = "train";
      t.region = plan->regions[inc.region].name;
    }
    t.description = Describe(*plan, inc);
    for (int32_t m = inc.start_min; m < inc.end_min; ++m) plan->active[m] |= 1u << i;
    plan->incidents.push_back(std::move(inc));
  }
  return Status::Ok();
}

bool IncidentTouches(const Plan& plan, const ActiveIncident& inc, const Job& job) {
  const auto any_node = [&](auto pred) {
    return std::any_of(job.gpu_ids.begin(), job.gpu_ids.end(),
                       [&](int gpu) { return pred(gpu / plan.gpn); });
  };
  switch (inc.truth.kind) {
    case IncidentKind::kHardwareFault:
    case IncidentKind::kMissingGpu:
      return std::any_of(job.gpu_ids.begin(), job.gpu_ids.end(),
                         [&](int gpu) { return inc.gpu_in_scope[gpu]; });
    case IncidentKind::kThermal:
    case IncidentKind::kDriverUpgrade:
    case IncidentKind::kHealthyUpgrade:
    case IncidentKind::kNetworkDegradation:
    case IncidentKind::kSilentAgent:
      return any_node([&](int node) { return inc.node_in_scope[node]; });
    case IncidentKind::kFrameworkRegression:
      return job.image == inc.image;
    case IncidentKind::kIoBottleneck:
      return any_node([&](int node) { return plan.nodes[node].cluster == inc.cluster; });
    case IncidentKind::kDummyKernels:
      return job.team == inc.team;
    case IncidentKind::kSchedFragmentation:
      return false;
  }
  return false;
}

FailureDraw DrawFailure(const Plan& plan, const Job& job, int32_t minute) {
  if (job.dummy) return {};
  // Base hazards a minute: a GPU fails a job every 250 days; software kills a
  // job every 3 (interactive) or 6 days of running; the fabric kills a
  // multi-node job every 40 node-days.
  const bool multi_node = job.gpus > plan.gpn;
  double hw = job.gpus / (250.0 * 1440);
  double sw = 1.0 / ((job.cls == JobClass::kInteractive ? 3.0 : 6.0) * 1440);
  double net = multi_node ? (job.gpus / plan.gpn) / (40.0 * 1440) : 0;
  for (uint32_t bits = plan.JobIncidents(job, minute); bits != 0; bits &= bits - 1) {
    const ActiveIncident& inc = plan.incidents[std::countr_zero(bits)];
    switch (inc.truth.kind) {
      case IncidentKind::kHardwareFault:
        hw += 1.0 / 45;
        break;
      case IncidentKind::kDriverUpgrade: {
        // A driver bug kills the job of each GPU it runs under every two
        // hours or so: wide jobs on the cohort hardly finish.
        const auto on_cohort = std::count_if(job.gpu_ids.begin(), job.gpu_ids.end(), [&](int gpu) {
          return inc.node_in_scope[gpu / plan.gpn];
        });
        sw += static_cast<double>(on_cohort) / 120;
        break;
      }
      case IncidentKind::kFrameworkRegression:
        // The regressed build crashes now and then on every GPU it runs on
        // (once in four GPU-hours), besides running its steps slower.
        sw += static_cast<double>(job.gpus) / 240;
        break;
      case IncidentKind::kNetworkDegradation:
        net *= 15;
        break;
      default:
        break;
    }
  }
  const double u = Unit(Hash(plan.options.seed, job.id, static_cast<uint64_t>(minute), 3));
  if (u >= hw + sw + net) return {};
  return {true, u < hw        ? EndCause::kHardware
                : u < hw + sw ? EndCause::kSoftware
                              : EndCause::kNetwork};
}

}  // namespace sim

std::string FormatUtcTime(int64_t unix_ns) {
  const time_t seconds = static_cast<time_t>(unix_ns / 1'000'000'000);
  struct tm tm;
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace gpulse::fleet
