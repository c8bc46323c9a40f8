#include "ingest/remote_write.h"

#include <snappy.h>

#include <cstring>

#include "remote_write.pb.h"  // generated from ingest/remote_write.proto

namespace gpulse::ingest {

bool IsStaleMarker(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits == kStaleNaNBits;
}

namespace {

// "{job="dcgm", gpu="0"}": a series' labels, for an error message.
std::string LabelText(const prompb::TimeSeries& series) {
  std::string text = "{";
  for (const prompb::Label& l : series.labels()) {
    if (text.size() > 1) text += ", ";
    text += l.name() + "=\"" + l.value() + "\"";
    if (text.size() > 200) return text + ", ...}";
  }
  return text + "}";
}

}  // namespace

Status DecodeRemoteWrite(std::string_view body, size_t max_bytes, const PromMappingOptions& options,
                         std::vector<Point>* points, RemoteWriteStats* stats) {
  *stats = RemoteWriteStats();
  size_t length = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &length)) {
    return Status::InvalidArgument(
        "remote write body is not snappy block-compressed (Content-Encoding: snappy)");
  }
  if (length > max_bytes) {
    return Status::ResourceExhausted("remote write body inflates to " + std::to_string(length) +
                                     " bytes, past the limit of " + std::to_string(max_bytes) +
                                     " (max_body_bytes)");
  }
  std::string inflated;
  if (!snappy::Uncompress(body.data(), body.size(), &inflated)) {
    return Status::InvalidArgument("remote write body: the snappy block is damaged");
  }
  prompb::WriteRequest request;
  if (!request.ParseFromString(inflated)) {
    return Status::InvalidArgument("remote write body is not a protobuf WriteRequest");
  }
  stats->series = static_cast<size_t>(request.timeseries_size());
  stats->metadata = static_cast<size_t>(request.metadata_size());

  // The samples as MapSamples takes them, viewing the request's strings.
  std::vector<PromSample> samples;
  for (const prompb::TimeSeries& series : request.timeseries()) {
    stats->samples += static_cast<size_t>(series.samples_size());
    std::string_view name;
    PromSample base;
    for (const prompb::Label& l : series.labels()) {
      if (l.name() == "__name__") {
        name = l.value();
      } else {
        base.labels.emplace_back(l.name(), l.value());
      }
    }
    if (name.empty()) {
      stats->nameless += static_cast<size_t>(series.samples_size());
      if (stats->first_error.empty() && series.samples_size() > 0) {
        stats->first_error = "series " + LabelText(series) + " has no metric name (__name__)";
      }
      continue;
    }
    base.name = name;
    for (const prompb::Sample& s : series.samples()) {
      if (IsStaleMarker(s.value())) {
        ++stats->stale_markers;
        continue;
      }
      samples.push_back(base);
      samples.back().value = s.value();
      samples.back().timestamp_ms = s.timestamp();
    }
  }
  MapSamples(samples, 0, options, points, &stats->mapping);
  return Status::Ok();
}

}  // namespace gpulse::ingest
