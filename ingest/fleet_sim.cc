// The simulator's public face (fleet_sim.h) over the plan and emit passes.

#include "ingest/fleet_sim.h"

#include <nlohmann/json.hpp>

#include "ingest/fleet_sim_emit.h"
#include "ingest/fleet_sim_incidents.h"
#include "ingest/fleet_sim_model.h"

namespace gpulse::fleet {

namespace {

class SimulatorImpl final : public Simulator {
 public:
  Status Init(const SimOptions& options) {
    GPULSE_RETURN_IF_ERROR(sim::BuildPlan(options, &plan_));
    tables_ = std::make_unique<sim::Tables>(plan_);
    for (const auto& inc : plan_.incidents) incidents_.push_back(inc.truth);
    return Status::Ok();
  }

  const SimSummary& summary() const override { return plan_.summary; }
  const std::vector<Incident>& incidents() const override { return incidents_; }

  std::string GroundTruthJson() const override {
    const SimOptions& o = plan_.options;
    const SimSummary& s = plan_.summary;
    nlohmann::ordered_json j;
    j["generator"] = std::string("gpulse simulate ") + Version();
    j["seed"] = o.seed;
    j["start"] = FormatUtcTime(s.start_ns);
    j["end"] = FormatUtcTime(s.end_ns);
    j["regions"] = o.regions;
    j["nodes"] = s.nodes;
    j["gpus_per_node"] = o.gpus_per_node;
    j["gpus"] = s.gpus;
    j["days"] = o.days;
    if (o.hours > 0) j["hours"] = o.hours;
    j["jobs"] = s.jobs;
    j["capacity_gpu_minutes"] = s.capacity_gpu_minutes;
    j["allocated_gpu_minutes"] = s.allocated_gpu_minutes;
    j["maintenance_windows"] = s.maintenance_windows;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const Incident& inc : incidents_) {
      nlohmann::ordered_json e;
      e["incident"] = inc.name;
      e["kind"] = std::string(IncidentKindName(inc.kind));
      e["cause_class"] = inc.cause_class;
      e["start"] = FormatUtcTime(inc.start_ns);
      e["end"] = FormatUtcTime(inc.end_ns);
      e["start_ns"] = inc.start_ns;
      e["end_ns"] = inc.end_ns;
      nlohmann::ordered_json scope;
      if (!inc.nodes.empty()) scope["nodes"] = inc.nodes;
      if (!inc.gpus.empty()) scope["gpus"] = inc.gpus;
      if (!inc.driver_version.empty()) scope["driver_version"] = inc.driver_version;
      if (!inc.image.empty()) scope["image"] = inc.image;
      if (!inc.cluster.empty()) scope["cluster"] = inc.cluster;
      if (!inc.region.empty()) scope["region"] = inc.region;
      if (!inc.queue.empty()) scope["queue"] = inc.queue;
      if (!inc.team.empty()) scope["team"] = inc.team;
      e["scope"] = scope.empty() ? nlohmann::ordered_json::object() : scope;
      e["description"] = inc.description;
      list.push_back(std::move(e));
    }
    j["incidents"] = std::move(list);
    return j.dump(2) + "\n";
  }

  Status Emit(PointSink* sink, int threads, const std::function<void(double)>& progress,
              uint64_t* points) const override {
    return sim::EmitPlan(plan_, *tables_, sink, threads, progress, points);
  }

 private:
  sim::Plan plan_;
  std::unique_ptr<sim::Tables> tables_;
  std::vector<Incident> incidents_;
};

}  // namespace

Status Simulator::Create(const SimOptions& options, std::unique_ptr<Simulator>* out) {
  auto sim = std::make_unique<SimulatorImpl>();
  GPULSE_RETURN_IF_ERROR(sim->Init(options));
  *out = std::move(sim);
  return Status::Ok();
}

}  // namespace gpulse::fleet
