// DECOMPOSE's accuracy on the simulator's ground truth (issue 7): one
// incident alone (or two at once, or none: a clean control) in a small fleet, from 12:00 to 24:00
// on a Wednesday, decomposed against the same hours of the Tuesday before. Does the loss of the
// incident's cause class grow most, and do its top three contributors name the incident's scope
// (its nodes, GPUs or links, driver version, image, cluster or a node of it, and for a scheduling
// incident its region, a cluster or node of it, or the queue it starves)?
//
// Used by tests/slow/decompose_accuracy_test.cc and bench/decompose_accuracy.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/fleet_sim.h"
#include "query/query.h"

namespace gpulse::test {

struct Contribution {
  std::string dimension, value;
  double change_points = 0;
};

// What DECOMPOSE said of one incident of a run.
struct IncidentFound {
  fleet::Incident incident;
  int cause_rank = 0;             // 1-based rank of the incident's cause class; 0: not found
  std::vector<Contribution> top;  // the cause's contributors, as DECOMPOSE ranks them
  // 1-based rank of the first contributor, or evidence item, in the scope; 0: none.
  int scope_rank = 0;
};

struct AccuracyResult {
  // The first incident's (the only one of a single-incident run); empty for a control.
  fleet::Incident incident;
  std::vector<std::pair<std::string, double>> losses;  // by rank, with their change in points
  int cause_rank = 0;
  std::vector<Contribution> top;
  int scope_rank = 0;
  std::vector<IncidentFound> incidents;  // every incident of the run, in the order asked
  // The largest significance DECOMPOSE gave a loss (a control run's measure
  // of how far the quietest fleet seems to move).
  double top_significance = 0;
  // The losses DECOMPOSE said stood out (beyond their usual range, or
  // backed by evidence), with the verdict: a clean control should have none.
  std::vector<std::pair<std::string, std::string>> claims;
};

// Whether a contributor names where the incident was or what it touched.
inline bool InScope(const fleet::Incident& i, const Contribution& c) {
  const auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  // A node of the incident, or of its cluster or region (node names are
  // "<region>-c<k>-nNNN", docs/fleet-schema.md).
  const auto node_in = [&](const std::string& node) {
    return has(i.nodes, node) || (!i.cluster.empty() && node.rfind(i.cluster + "-n", 0) == 0) ||
           (!i.region.empty() && node.rfind(i.region + "-c", 0) == 0);
  };
  const size_t slash = c.value.rfind('/');
  if (c.dimension == "node") return node_in(c.value);
  if (c.dimension == "gpu") {
    return has(i.gpus, c.value) ||
           (i.gpus.empty() && slash != std::string::npos && node_in(c.value.substr(0, slash)));
  }
  if (c.dimension == "link") return slash != std::string::npos && node_in(c.value.substr(0, slash));
  if (c.dimension == "driver_version") return c.value == i.driver_version;
  if (c.dimension == "image") return c.value == i.image;
  // A cluster of the incident's region is where a region-wide incident was,
  // as its nodes are (cluster names are "<region>-c<k>").
  if (c.dimension == "cluster") {
    return (!i.cluster.empty() && c.value == i.cluster) ||
           (!i.region.empty() && c.value.rfind(i.region + "-c", 0) == 0);
  }
  if (c.dimension == "region") return !i.region.empty() && c.value == i.region;
  if (c.dimension == "queue") return !i.queue.empty() && c.value == i.queue;
  return false;
}

// Simulates `kinds` at once (none: a clean control; `nodes` nodes, `seed`)
// into a new Db at `dir` and decomposes the incidents' window against the
// day before. `warmup` days run before the Monday, so that the Tuesday is
// not the fleet's first busy day after an empty start.
inline Status RunDecomposeAccuracy(const std::string& dir, const std::vector<std::string>& kinds,
                                   int nodes, uint64_t seed, int warmup, AccuracyResult* out) {
  constexpr int64_t kDayNs = 86'400LL * 1'000'000'000;
  constexpr int64_t kMonday = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z
  fleet::SimOptions o;
  o.nodes = nodes;
  o.days = 3 + warmup;
  o.seed = seed;
  o.start_ns = kMonday - warmup * kDayNs;
  for (const std::string& kind : kinds) {
    fleet::IncidentRequest request;
    std::string error;
    if (!fleet::ParseIncidentRequest(kind + "@" + std::to_string(2 + warmup) + "d12h/12h", &request,
                                     &error))
      return Status::InvalidArgument(error);
    o.incidents.push_back(request);
  }
  std::unique_ptr<fleet::Simulator> sim;
  GPULSE_RETURN_IF_ERROR(fleet::Simulator::Create(o, &sim));
  for (const fleet::Incident& i : sim->incidents()) out->incidents.push_back({i, 0, {}, 0});
  if (!out->incidents.empty()) out->incident = out->incidents[0].incident;

  Options db_options;
  db_options.info_log = [](std::string_view) {};
  db_options.sync_policy = SyncPolicy::kNone;
  std::unique_ptr<Db> db;
  GPULSE_RETURN_IF_ERROR(Db::Open(db_options, dir, &db));
  struct Sink final : fleet::PointSink {
    explicit Sink(Db* d) : db(d) {}
    Status Write(std::span<const PointRef> points) override { return db->Write(points); }
    Db* db;
  } sink(db.get());
  GPULSE_RETURN_IF_ERROR(sim->Emit(&sink, 2, {}, nullptr));

  QueryOptions q;
  q.now_ns = kMonday + 3 * kDayNs;
  QueryResult r;
  GPULSE_RETURN_IF_ERROR(
      gpulse::Query(db.get(),
                    "DECOMPOSE NORTHSTAR BETWEEN '2026-11-03T12:00:00Z' AND '2026-11-04T00:00:00Z' "
                    "VERSUS '2026-11-04T12:00:00Z' AND '2026-11-05T00:00:00Z'",
                    q, &r));
  if (r.statements.empty()) return Status::NotFound("DECOMPOSE gave no answer");
  const StatementResult& answer = r.statements[0];
  GPULSE_RETURN_IF_ERROR(answer.status);
  for (const ResultSeries& s : answer.series) {
    if (s.name == "decompose") {
      const auto column = [&](std::string_view name) {
        return static_cast<size_t>(std::find(s.columns.begin(), s.columns.end(), name) -
                                   s.columns.begin());
      };
      const size_t significance = column("significance"), verdict = column("verdict");
      if (verdict >= s.columns.size()) return Status::NotFound("DECOMPOSE has no verdict column");
      for (const auto& row : s.values) {
        const std::string& loss = std::get<std::string>(row[1]);
        if (loss == "goodput") continue;
        out->losses.push_back({loss, std::get<double>(row[4])});
        if (const double* sig = std::get_if<double>(&row[significance]))
          out->top_significance = std::max(out->top_significance, *sig);
        const std::string& said = std::get<std::string>(row[verdict]);
        if (said != "within its usual range" && said != "demand")
          out->claims.push_back({loss, said});
        for (IncidentFound& f : out->incidents) {
          if (loss == f.incident.cause_class) f.cause_rank = static_cast<int>(out->losses.size());
        }
      }
      continue;
    }
    if (s.name != "contributors" && s.name != "evidence") continue;
    const auto tag =
        std::find_if(s.tags.begin(), s.tags.end(), [](const Tag& t) { return t.key == "loss"; });
    if (tag == s.tags.end()) continue;
    for (IncidentFound& f : out->incidents) {
      if (tag->value != f.incident.cause_class) continue;
      for (const auto& row : s.values) {
        const Contribution c{std::get<std::string>(row[1]), std::get<std::string>(row[2]),
                             s.name == "contributors" ? std::get<double>(row[5]) : 0.0};
        const int rank = static_cast<int>(std::get<int64_t>(row[0]));
        if (s.name == "contributors") f.top.push_back(c);
        if (InScope(f.incident, c) && (f.scope_rank == 0 || rank < f.scope_rank))
          f.scope_rank = rank;
      }
    }
  }
  if (!out->incidents.empty()) {
    out->cause_rank = out->incidents[0].cause_rank;
    out->top = out->incidents[0].top;
    out->scope_rank = out->incidents[0].scope_rank;
  }
  return Status::Ok();
}

// One incident alone.
inline Status RunDecomposeAccuracy(const std::string& dir, const std::string& kind, int nodes,
                                   uint64_t seed, int warmup, AccuracyResult* out) {
  return RunDecomposeAccuracy(dir, std::vector<std::string>{kind}, nodes, seed, warmup, out);
}

// The six incident classes the accuracy target names.
inline constexpr const char* kAccuracyIncidents[] = {
    "hw-fault",      "driver-upgrade",     "framework-regression", "sched-fragmentation",
    "io-bottleneck", "network-degradation"};

}  // namespace gpulse::test
