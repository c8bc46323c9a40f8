// The emitting pass of the simulator (fleet_sim_emit.cc): tag sets built once
// for the whole run, and the pass itself.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "ingest/fleet_sim_model.h"

namespace gpulse::fleet::sim {

// Strings and tag sets the points view; they outlive every batch. Tags are
// in key order, as the engine stores them.
struct Tables {
  explicit Tables(const Plan& plan);

  std::vector<std::string> users;                       // team * 8 + user
  std::vector<std::array<TagRef, 5>> gpu_tags;          // by global GPU
  std::vector<std::array<TagRef, 4>> node_tags;         // by node
  std::vector<std::array<TagRef, 4>> link_tags;         // by node
  std::vector<std::array<TagRef, 4>> step_tags;         // by global GPU (a job's first)
  std::vector<std::array<TagRef, 3>> sched_tags;        // by (region, queue, event)
  std::vector<std::array<TagRef, 2>> job_tags;          // by (region, class)
  std::vector<std::array<TagRef, 3>> cost_tags;         // by (region, sku, pricing)
  std::vector<std::array<TagRef, 3>> maintenance_tags;  // by window
  std::vector<std::array<TagRef, 3>> incident_tags;     // by incident
  std::vector<std::string> incident_scopes;             // by incident
};

Status EmitPlan(const Plan& plan, const Tables& tables, PointSink* sink, int threads,
                const std::function<void(double)>& progress, uint64_t* points);

}  // namespace gpulse::fleet::sim
