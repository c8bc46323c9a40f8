// Prometheus remote write 1.0 request bodies -> gpulse points: the body is
// snappy block-compressed protobuf (ingest/remote_write.proto); each sample
// becomes a field of a point exactly as a scraped one would
// (ingest/prom_mapping.h: the metric name is the field, the labels are tags,
// attribution labels are string fields, samples of one label set and
// timestamp are one point).
//
// Stale markers (the NaN with bits 0x7ff0000000000002 that Prometheus sends
// when a series ends) are counted and not stored: gpulse's InfluxQL would
// read one as a NaN value. docs/prometheus-mapping.md, "Remote write".
//
// Thread safety: DecodeRemoteWrite may run on any number of threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/prom_mapping.h"
#include "storage/status.h"

namespace gpulse::ingest {

// Prometheus' staleness marker.
inline constexpr uint64_t kStaleNaNBits = 0x7ff0000000000002ull;
bool IsStaleMarker(double value);

struct RemoteWriteStats {
  size_t series = 0;         // time series in the request
  size_t samples = 0;        // samples in the request, stale markers included
  size_t stale_markers = 0;  // not stored
  // Samples of a series without a __name__ label, or whose metric name is
  // empty: left out, and the request answered 400 once the rest is written.
  size_t nameless = 0;
  size_t metadata = 0;  // metadata entries (read, not stored yet)
  PromMappingStats mapping;
  std::string first_error;  // the first nameless series' labels, for the 400
};

// Decodes `body` and appends its points to *points. InvalidArgument names
// what is wrong when the body is not snappy-compressed, inflates past
// `max_bytes` (ResourceExhausted) or is not a WriteRequest; then nothing is
// appended.
Status DecodeRemoteWrite(std::string_view body, size_t max_bytes, const PromMappingOptions& options,
                         std::vector<Point>* points, RemoteWriteStats* stats);

}  // namespace gpulse::ingest
