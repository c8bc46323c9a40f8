// Incidents in the simulator: reading what was asked for, choosing a scope
// where none was given, what an incident touches, and the failures it adds.
#pragma once

#include <string>

#include "ingest/fleet_sim_model.h"

namespace gpulse::fleet::sim {

// Turns the requested incidents into ActiveIncidents with a concrete scope
// and fills Plan::active. InvalidArgument names a scope that does not exist.
Status ResolveIncidents(Plan* plan);

// Whether the incident's scope covers the job as placed (kinds that act on
// jobs: by GPU, node, cluster, image or team).
bool IncidentTouches(const Plan& plan, const ActiveIncident& incident, const Job& job);

struct FailureDraw {
  bool failed = false;
  EndCause cause = EndCause::kNone;
};

// Whether a running job fails in `minute`, and why: a per-minute hazard for
// hardware, software and network causes, raised by the incidents touching it.
FailureDraw DrawFailure(const Plan& plan, const Job& job, int32_t minute);

}  // namespace gpulse::fleet::sim
