// `gpulse simulate`, in pieces `gpulse demo` reuses (shell/simulate.cc).
#pragma once

#include <string>
#include <vector>

#include "ingest/fleet_sim.h"

namespace gpulse::cli {

struct SimulateArgs {
  fleet::SimOptions sim;
  std::string data, url, out;  // exactly one is set after parsing
  std::string truth;           // the ground truth JSON's path
  std::string database = "gpulse";
  std::string token;
  int threads = 2;
  // With --url: simulated minutes a wall-clock minute (1: real time); each
  // minute's points are sent once its time has come. 0: as fast as the
  // server takes them.
  int pace = 0;
  bool help = false;
};

// Reads the command line; InvalidArgument says what is wrong.
Status ParseSimulateArgs(const std::vector<std::string>& args, SimulateArgs* out);

// The default --start: `days` before today 00:00 UTC.
int64_t DefaultSimulationStart(int days);
// The default --start of a run of `hours`: paced, so that the last minute
// is sent as the run ends (at pace 1 the first minute is now's); else
// `hours` before the current hour.
int64_t DefaultSimulationStart(int hours, int pace);

struct SimulationReport {
  fleet::SimSummary summary;
  std::vector<fleet::Incident> incidents;
  uint64_t points = 0;
  uint64_t values = 0;      // known when writing to a data directory
  uint64_t refused = 0;     // --url: writes the server answered 503 (each retried)
  double seconds = 0;       // in all
  double plan_seconds = 0;  // of which planning the jobs
  double tier_seconds = 0;  // ... and building tiers after a load into a new directory
};

// Plans, emits to the destination, writes the ground truth.
Status RunSimulation(const SimulateArgs& args, SimulationReport* report, bool show_progress);
void PrintSimulationReport(const SimulateArgs& args, const SimulationReport& report);

}  // namespace gpulse::cli
