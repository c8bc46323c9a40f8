// Prometheus remote write 1.0 request bodies -> gpulse points: the body is
// snappy block-compressed protobuf (ingest/prompb.proto); each sample
// becomes a field of a point exactly as a scraped one would
// (ingest/prom_mapping.h: the metric name is the field, the labels are tags,
// attribution labels are string fields, samples of one label set and
// timestamp are one point).
//
// The body is read with protobuf's wire-format reader (CodedInputStream,
// WireFormatLite) field by field, strings viewed in place, and each label
// set met once a request is mapped once: the generated message classes
// allocate every label, which made remote write a third of VictoriaMetrics'
// rate (docs/performance.md, session 22). A series whose labels after
// __name__ are the series' before it byte for byte (a target's metrics, one
// series each) is read as one comparison of that run (session 33). The
// .proto is the schema; the tests build their requests with its generated
// classes, so the reader is checked against protobuf's own encoder, and
// .ci/fuzz fuzzes it.
//
// Stale markers (the NaN with bits 0x7ff0000000000002 that Prometheus sends
// when a series ends) are counted and kept apart from the metric's values,
// as the bool field StaleFieldOf(metric) of the point (engine/gpulse.h):
// PromQL ends the series there, and InfluxQL, which would read a NaN value,
// does not list them. docs/prometheus-mapping.md, "Remote write".
//
// Thread safety: a RemoteWriteBatch is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
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

// A Prometheus remote protocol's body (`what`: "remote write", "remote
// read") inflated from its snappy block into *out: InvalidArgument when it
// is not one or is damaged, ResourceExhausted when it would inflate past
// `max_bytes`.
Status InflateSnappy(std::string_view body, size_t max_bytes, std::string_view what,
                     std::string* out);

struct RemoteWriteStats {
  size_t series = 0;         // time series in the request
  size_t samples = 0;        // samples in the request, stale markers included
  size_t stale_markers = 0;  // kept as stale fields
  // Samples of a series without a __name__ label, or whose metric name is
  // empty: left out, and the request answered 400 once the rest is written.
  size_t nameless = 0;
  size_t metadata = 0;  // metadata entries (metric families' type, help, unit)
  PromMappingStats mapping;
  std::string first_error;  // the first nameless series' labels, for the 400
};

// One remote write request's points, viewing its inflated body (the strings
// of the points live as long as the batch).
class RemoteWriteBatch {
 public:
  RemoteWriteBatch() = default;
  RemoteWriteBatch(const RemoteWriteBatch&) = delete;
  RemoteWriteBatch& operator=(const RemoteWriteBatch&) = delete;

  // Decodes `body`. InvalidArgument names what is wrong when the body is
  // not snappy-compressed or not a WriteRequest, ResourceExhausted when it
  // inflates past `max_bytes`; then there are no points.
  Status Parse(std::string_view body, size_t max_bytes, const PromMappingOptions& options);
  std::span<const PointRef> points() const { return points_; }
  const RemoteWriteStats& stats() const { return stats_; }
  // The request's metadata entries (Prometheus sends them apart from the
  // samples, every minute by default).
  const std::vector<PromMetadata>& metadata() const { return metadata_; }

 private:
  std::vector<PromMetadata> metadata_;
  std::string inflated_;
  std::unique_ptr<PromPointBuilder> builder_;
  std::span<const PointRef> points_;
  RemoteWriteStats stats_;
};

}  // namespace gpulse::ingest
