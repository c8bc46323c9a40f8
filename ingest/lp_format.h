// Writing points as InfluxDB line protocol: the inverse of the parser in
// line_protocol.h, for `gpulse simulate --out` and `--url`. Names and tag
// values are escaped as the protocol asks, floats are written in the
// shortest form that reads back to the same double, timestamps in ns.
#pragma once

#include <string>

#include "engine/gpulse.h"

namespace gpulse::ingest {

// Appends one line, newline included.
void AppendLineProtocol(const PointRef& point, std::string* out);

}  // namespace gpulse::ingest
