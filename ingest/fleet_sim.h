// The fleet simulator: a deterministic GPU fleet, minute by minute, in the
// measurements of the fleet schema (docs/fleet-schema.md), with incidents
// whose ground truth is known, so that the metric operators can be tested
// against it and a newcomer has something real-looking to ask about.
//
// It works in two passes. Plan (at Create) runs the scheduler over the whole
// span on one thread: job arrivals with weekday and diurnal seasonality, gang
// placement, queueing by priority, checkpoints, failures and retries,
// maintenance, and the incidents' effect on all of these. Emit then turns
// the plan into points, node by node across threads, calling the sink with
// one batch per shard and stretch of minutes. Every random draw comes from
// the seed and the identity of what is drawn (a hash, or a generator per
// GPU), so the output depends on nothing else: not on the thread count, not
// on the sink, not on the clock.
//
// Thread safety: a Simulator is immutable after Create; Emit may call the
// sink from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/fleet_sim_types.h"

namespace gpulse::fleet {

class Simulator {
 public:
  // Validates the options and plans the whole span.
  static Status Create(const SimOptions& options, std::unique_ptr<Simulator>* out);
  virtual ~Simulator() = default;

  virtual const SimSummary& summary() const = 0;
  virtual const std::vector<Incident>& incidents() const = 0;

  // The ground truth as JSON: options, inventory size, and every incident.
  virtual std::string GroundTruthJson() const = 0;

  // Emits every point, shard by shard on `threads` threads (at least one).
  // `progress` (may be empty) is called now and then with the fraction done,
  // from one thread at a time. Points emitted: *points when not null.
  virtual Status Emit(PointSink* sink, int threads, const std::function<void(double)>& progress,
                      uint64_t* points) const = 0;
};

}  // namespace gpulse::fleet
