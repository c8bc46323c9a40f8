// FleetLpReader: reads the line protocol that ../shared/bench/peers/gen_fleet.py
// writes ("gpu,tag=v,... field=1i,field=2.5,... SECONDS", no escapes, no quoted
// spaces) into gpulse::Points, batch by batch. Bench-only: the real line
// protocol parser is ingest/'s; this one only has to read the fleet file.
//
// Thread safety: one reader per thread.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::bench {

class FleetLpReader {
 public:
  FleetLpReader() = default;
  ~FleetLpReader();
  FleetLpReader(const FleetLpReader&) = delete;
  FleetLpReader& operator=(const FleetLpReader&) = delete;

  // False when the file cannot be opened.
  bool Open(const std::string& path);

  // Replaces *out with up to `max_points` points; false at end of file.
  bool NextBatch(size_t max_points, std::vector<Point>* out);

 private:
  FILE* file_ = nullptr;
  char* line_ = nullptr;
  size_t capacity_ = 0;
};

// The file named by $GPULSE_BENCH_LP, or /tmp/fleet/fleet-80x1.lp.
std::string FleetLpPath();

}  // namespace gpulse::bench
