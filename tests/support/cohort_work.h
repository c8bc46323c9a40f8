// Test data for the software cohorts (DECOMPOSE's evidence, ROLLOUTS): an
// hour of one image's work of one workload class on one node, written as
// the fleet schema has it (sched events, gpu minutes, job steps), so that
// the workload-class weighting of a cohort's exposure can be pinned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "tests/support/time_units.h"

namespace gpulse::test {

// An hour of a node's work. Interactive work is 96 one-GPU jobs of five
// minutes (eight at a time), the first `failing` of which fail for a
// software reason; any other class is one job on all eight GPUs through the
// hour, which succeeds.
struct CohortWork {
  std::string node, image, workload_class;
  int failing = 0;
};

// The points of `w` in the hour from `hour_start`, in region r1 and cluster
// c1. `jobs` numbers the jobs across calls: events of one minute are told
// apart by nanoseconds (docs/fleet-schema.md).
inline std::vector<Point> CohortWorkPoints(int64_t hour_start, const CohortWork& w, int64_t* jobs) {
  std::vector<Point> out;
  const bool interactive = w.workload_class == "interactive";
  const std::vector<Tag> where = {{"region", "r1"}, {"cluster", "c1"}, {"node", w.node}};
  const auto sched = [&](const std::string& event, int64_t t, const std::string& job,
                         std::vector<Field> fields) {
    fields.insert(fields.begin(), {"job", job});
    out.push_back({"sched", {{"region", "r1"}, {"queue", "train"}, {"event", event}}, fields, t});
  };
  for (int k = 0; k < (interactive ? 96 : 1); ++k) {
    const std::string job =
        w.node + "-" + std::to_string(hour_start / kMinute) + "-" + std::to_string(k);
    const int first = interactive ? 5 * (k / 8) : 0, length = interactive ? 5 : 60;
    const int64_t start = hour_start + first * kMinute + ++*jobs, end = start + length * kMinute;
    sched("submitted", start, job, {{"requested_gpus", int64_t{interactive ? 1 : 8}}});
    sched("started", start, job, {{"nodes", w.node}});
    if (k < w.failing) {
      sched("ended", end, job,
            {{"status", std::string("failed")}, {"reason", std::string("software")}});
    } else {
      sched("ended", end, job, {{"status", std::string("succeeded")}});
    }
    for (int m = first; m < first + length; ++m) {
      const int64_t t = hour_start + m * kMinute;
      for (int g = interactive ? k % 8 : 0; g < (interactive ? k % 8 + 1 : 8); ++g) {
        std::vector<Tag> tags = where;
        tags.push_back({"gpu", std::to_string(g)});
        tags.push_back({"sku", "H100"});
        out.push_back({"gpu",
                       tags,
                       {{"util", int64_t{95}},
                        {"xid", int64_t{0}},
                        {"throttle_reasons", int64_t{0}},
                        {"job", job},
                        {"team", std::string("vision")}},
                       t});
        tags.pop_back();
        out.push_back({"job_step",
                       tags,
                       {{"job", job},
                        {"step", int64_t{m - first + 1}},
                        {"step_time_ms", 1000.0},
                        {"data_loader_ms", 100.0},
                        {"grad_sync_ms", 100.0},
                        {"workload_class", w.workload_class},
                        {"image", w.image}},
                       t});
      }
    }
  }
  return out;
}

// The node's own point of each minute of [from, to): eight GPUs, no
// maintenance, one driver.
inline std::vector<Point> CohortNodePoints(const std::string& node, int64_t from, int64_t to) {
  std::vector<Point> out;
  for (int64_t t = from; t < to; t += kMinute) {
    out.push_back({"node",
                   {{"region", "r1"}, {"cluster", "c1"}, {"node", node}, {"sku", "H100"}},
                   {{"maintenance", int64_t{0}},
                    {"gpu_inventory", int64_t{8}},
                    {"gpu_count", int64_t{8}},
                    {"driver_version", std::string("535.183.01")}},
                   t});
  }
  return out;
}

}  // namespace gpulse::test
