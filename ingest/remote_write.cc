#include "ingest/remote_write.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <snappy.h>

#include <cstring>
#include <unordered_map>

namespace gpulse::ingest {

bool IsStaleMarker(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits == kStaleNaNBits;
}

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// One TimeSeries of the request, its strings viewed in the inflated body.
struct SeriesView {
  std::string_view name;  // __name__; empty when the series has none
  // The encoded labels but __name__, as two runs of the body: equal runs
  // are equal label sets (a request sends one series a metric of each GPU).
  std::string_view before_name, after_name;
  size_t first_label = 0, labels = 0;    // in RequestView::labels, __name__ left out
  size_t first_sample = 0, samples = 0;  // in RequestView::samples
  // Its labels but __name__ are the series' before it, byte for byte (read
  // as one run, not label by label; `first_label` is that series').
  bool labels_as_previous = false;
  // `after_name` holds labels only (no sample or other field between them),
  // so that skipping such a run skips nothing else.
  bool run_only_labels = true;
};
struct RequestView {
  std::vector<SeriesView> series;
  std::vector<std::pair<std::string_view, std::string_view>> labels;
  std::vector<std::pair<double, int64_t>> samples;  // value, milliseconds
  std::vector<PromMetadata> metadata;
};

// The WriteRequest read with protobuf's own wire-format reader
// (CodedInputStream, WireFormatLite), the messages of
// ingest/prompb.proto field by field: strings are viewed in place, so
// a request of thousands of labels costs no allocation a label (the
// generated classes allocate each one, and took two thirds of the time of
// a write; on an arena, a third). Unknown fields are skipped, as the
// generated parser skips them.
class WireReader {
 public:
  explicit WireReader(std::string_view data)
      : base_(reinterpret_cast<const uint8_t*>(data.data())),
        in_(base_, static_cast<int>(data.size())) {}

  bool ReadRequest(RequestView* out) {
    while (uint32_t tag = in_.ReadTag()) {
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      if (field == 1 && IsLengthDelimited(tag)) {
        if (!Nested([&] { return ReadSeries(out); })) return false;
      } else if (field == 3 && IsLengthDelimited(tag)) {
        if (!Nested([&] { return ReadMetadata(&out->metadata.emplace_back()); })) return false;
      } else if (!WireFormatLite::SkipField(&in_, tag)) {
        return false;
      }
    }
    return in_.ConsumedEntireMessage();
  }

 private:
  static bool IsLengthDelimited(uint32_t tag) {
    return WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  }

  // Runs read(end) over the small length-delimited message at the reader
  // (a label, a sample: eight a series), `end` being the position where it
  // stops, without the cost of pushing a limit; a field that runs past
  // `end` fails it. Only inside a message read with Nested.
  template <typename Read>
  bool Within(Read read) {
    uint32_t length = 0;
    if (!in_.ReadVarint32(&length) || static_cast<int64_t>(length) > in_.BytesUntilLimit()) {
      return false;
    }
    const int end = in_.CurrentPosition() + static_cast<int>(length);
    return read(end) && in_.CurrentPosition() == end;
  }

  // Runs `read` inside the length-delimited message at the reader.
  template <typename Read>
  bool Nested(Read read) {
    uint32_t length = 0;
    if (!in_.ReadVarint32(&length) || !in_.IncrementRecursionDepth()) return false;
    const CodedInputStream::Limit limit = in_.PushLimit(static_cast<int>(length));
    const bool ok = read() && in_.ConsumedEntireMessage();
    in_.PopLimit(limit);
    in_.DecrementRecursionDepth();
    return ok;
  }

  // A string field, viewed in place.
  bool ReadView(std::string_view* out) {
    uint32_t length = 0;
    if (!in_.ReadVarint32(&length)) return false;
    const int at = in_.CurrentPosition();
    if (!in_.Skip(static_cast<int>(length))) return false;
    *out = std::string_view(reinterpret_cast<const char*>(base_) + at, length);
    return true;
  }

  // Whether the labels after a series' __name__, which came first, are the
  // previous series' run byte for byte: Prometheus sends a target's metrics
  // one series each, their labels sorted (__name__ first) and alike but the
  // name, so most series are read with one comparison, not label by label.
  // The run must end where the series' labels end: a label after it is a
  // different set (it is then read as usual, see ReadSeries).
  bool SkipLabelsOfPrevious(const RequestView& request) {
    if (request.series.empty()) return false;
    const SeriesView& previous = request.series.back();
    const std::string_view run = previous.after_name;
    if (previous.name.empty() || !previous.before_name.empty() || !previous.run_only_labels ||
        run.empty() || static_cast<int64_t>(run.size()) > in_.BytesUntilLimit()) {
      return false;
    }
    const uint8_t* at = base_ + in_.CurrentPosition();
    if (std::memcmp(at, run.data(), run.size()) != 0) return false;
    constexpr uint8_t kLabelTag = (1 << 3) | WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (static_cast<int64_t>(run.size()) < in_.BytesUntilLimit() && at[run.size()] == kLabelTag) {
      return false;
    }
    return in_.Skip(static_cast<int>(run.size()));
  }

  bool ReadSeries(RequestView* out) {
    SeriesView series;
    series.first_label = out->labels.size();
    series.first_sample = out->samples.size();
    int labels_begin = -1, labels_end = -1, name_begin = -1, name_end = -1;
    bool other_since_name = false;  // a field not a label read after __name__
    while (true) {
      const int at = in_.CurrentPosition();
      const uint32_t tag = in_.ReadTag();
      if (tag == 0) break;
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      bool ok = true;
      if (field == 1 && IsLengthDelimited(tag)) {
        std::string_view name, value;
        ok = Within([&](int end) { return ReadLabel(end, &name, &value); });
        if (series.labels_as_previous) {
          // A label past the previous series' run: this set is its own, so
          // the run's labels are copied to lie before this one.
          const SeriesView& previous = out->series.back();
          series.labels_as_previous = false;
          series.first_label = out->labels.size();
          for (size_t i = 0; i < previous.labels; ++i) {
            const auto label = out->labels[previous.first_label + i];
            out->labels.push_back(label);
          }
        }
        if (labels_begin < 0) labels_begin = at;
        labels_end = in_.CurrentPosition();
        if (name == "__name__") {
          series.name = value;
          name_begin = at;
          name_end = labels_end;
          other_since_name = false;
          series.run_only_labels = true;
          if (ok && labels_begin == at && !series.name.empty() && SkipLabelsOfPrevious(*out)) {
            series.labels_as_previous = true;
            series.first_label = out->series.back().first_label;
            labels_end = in_.CurrentPosition();
          }
        } else {
          out->labels.emplace_back(name, value);
          if (other_since_name) series.run_only_labels = false;
        }
      } else if (field == 2 && IsLengthDelimited(tag)) {
        double value = 0;
        int64_t ms = 0;
        ok = Within([&](int end) { return ReadSample(end, &value, &ms); });
        out->samples.emplace_back(value, ms);
        other_since_name = name_begin >= 0;
      } else {
        ok = WireFormatLite::SkipField(&in_, tag);
        other_since_name = name_begin >= 0;
      }
      if (!ok) return false;
    }
    series.labels = series.labels_as_previous ? out->series.back().labels
                                              : out->labels.size() - series.first_label;
    series.samples = out->samples.size() - series.first_sample;
    if (labels_begin >= 0) {
      const char* base = reinterpret_cast<const char*>(base_);
      if (name_begin < 0) name_begin = name_end = labels_end;
      series.before_name = std::string_view(base + labels_begin, name_begin - labels_begin);
      series.after_name = std::string_view(base + name_end, labels_end - name_end);
    }
    out->series.push_back(series);
    return true;
  }

  bool ReadLabel(int end, std::string_view* name, std::string_view* value) {
    while (in_.CurrentPosition() < end) {
      const uint32_t tag = in_.ReadTag();
      if (tag == 0) return false;
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      bool ok;
      if (field == 1 && IsLengthDelimited(tag)) {
        ok = ReadView(name);
      } else if (field == 2 && IsLengthDelimited(tag)) {
        ok = ReadView(value);
      } else {
        ok = WireFormatLite::SkipField(&in_, tag);
      }
      if (!ok || in_.CurrentPosition() > end) return false;
    }
    return true;
  }

  // A MetricMetadata: its type by the name the Prometheus API gives it.
  bool ReadMetadata(PromMetadata* out) {
    static constexpr const char* kTypes[] = {"unknown",        "counter", "gauge", "histogram",
                                             "gaugehistogram", "summary", "info",  "stateset"};
    out->type = kTypes[0];
    while (uint32_t tag = in_.ReadTag()) {
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      std::string_view text;
      bool ok = true;
      if (field == 1 && WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
        uint32_t type = 0;
        ok = in_.ReadVarint32(&type);
        out->type = type < std::size(kTypes) ? kTypes[type] : kTypes[0];
      } else if ((field == 2 || field == 4 || field == 5) && IsLengthDelimited(tag)) {
        ok = ReadView(&text);
        (field == 2 ? out->name : field == 4 ? out->help : out->unit) = text;
      } else {
        ok = WireFormatLite::SkipField(&in_, tag);
      }
      if (!ok) return false;
    }
    return true;
  }

  bool ReadSample(int end, double* value, int64_t* ms) {
    while (in_.CurrentPosition() < end) {
      const uint32_t tag = in_.ReadTag();
      if (tag == 0) return false;
      const int field = WireFormatLite::GetTagFieldNumber(tag);
      const auto wire = WireFormatLite::GetTagWireType(tag);
      bool ok;
      if (field == 1 && wire == WireFormatLite::WIRETYPE_FIXED64) {
        uint64_t bits = 0;
        ok = in_.ReadLittleEndian64(&bits);
        std::memcpy(value, &bits, sizeof bits);
      } else if (field == 2 && wire == WireFormatLite::WIRETYPE_VARINT) {
        uint64_t v = 0;
        ok = in_.ReadVarint64(&v);
        *ms = static_cast<int64_t>(v);
      } else {
        ok = WireFormatLite::SkipField(&in_, tag);
      }
      if (!ok || in_.CurrentPosition() > end) return false;
    }
    return true;
  }

  const uint8_t* const base_;
  CodedInputStream in_;
};

// "{job="dcgm", gpu="0"}": a series' labels, for an error message.
std::string LabelText(const RequestView& request, const SeriesView& series) {
  std::string text = "{";
  for (size_t i = 0; i < series.labels; ++i) {
    const auto& [name, value] = request.labels[series.first_label + i];
    if (text.size() > 1) text += ", ";
    text += std::string(name) + "=\"" + std::string(value) + "\"";
    if (text.size() > 200) return text + ", ...}";
  }
  return text + "}";
}

}  // namespace

Status InflateSnappy(std::string_view body, size_t max_bytes, std::string_view what,
                     std::string* out) {
  const std::string name(what);
  size_t length = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &length)) {
    return Status::InvalidArgument(
        name + " body is not snappy block-compressed (Content-Encoding: snappy)");
  }
  if (length > max_bytes) {
    return Status::ResourceExhausted(name + " body inflates to " + std::to_string(length) +
                                     " bytes, past the limit of " + std::to_string(max_bytes) +
                                     " (max_body_bytes)");
  }
  if (!snappy::Uncompress(body.data(), body.size(), out)) {
    return Status::InvalidArgument(name + " body: the snappy block is damaged");
  }
  return Status::Ok();
}

Status RemoteWriteBatch::Parse(std::string_view body, size_t max_bytes,
                               const PromMappingOptions& options) {
  stats_ = RemoteWriteStats();
  points_ = {};
  GPULSE_RETURN_IF_ERROR(InflateSnappy(body, max_bytes, "remote write", &inflated_));
  RequestView request;
  if (inflated_.size() > static_cast<size_t>(INT32_MAX) ||
      !WireReader(inflated_).ReadRequest(&request)) {
    return Status::InvalidArgument("remote write body is not a protobuf WriteRequest");
  }
  stats_.series = request.series.size();
  stats_.metadata = request.metadata.size();
  metadata_ = std::move(request.metadata);
  builder_ = std::make_unique<PromPointBuilder>(options);
  std::unordered_map<uint64_t, const SeriesView*> label_sets;
  std::vector<size_t> series_number(request.series.size());  // in the builder
  const auto add_samples = [&](const SeriesView& series) {
    for (size_t k = 0; k < series.samples; ++k) {
      const auto [value, ms] = request.samples[series.first_sample + k];
      if (IsStaleMarker(value)) {
        ++stats_.stale_markers;
        builder_->AddStaleMarker(ms);
        continue;
      }
      builder_->AddSample(value, ms, 0);
    }
  };
  for (const SeriesView& series : request.series) {
    stats_.samples += series.samples;
    if (series.name.empty()) {
      stats_.nameless += series.samples;
      if (stats_.first_error.empty() && series.samples > 0) {
        stats_.first_error =
            "series " + LabelText(request, series) + " has no metric name (__name__)";
      }
      continue;
    }
    // A label set met before in this request is mapped once.
    const size_t index = &series - request.series.data();
    if (series.labels_as_previous) {
      builder_->AddSeriesLike(series_number[index - 1], series.name);
    } else {
      const uint64_t key = std::hash<std::string_view>()(series.before_name) * 31 +
                           std::hash<std::string_view>()(series.after_name);
      auto [seen, added] = label_sets.try_emplace(key, &series);
      const SeriesView* like = seen->second;
      if (!added && like->before_name == series.before_name &&
          like->after_name == series.after_name) {
        builder_->AddSeriesLike(series_number[like - request.series.data()], series.name);
      } else {
        builder_->AddSeries(series.name,
                            std::span(request.labels).subspan(series.first_label, series.labels));
      }
    }
    series_number[index] = builder_->series_count() - 1;
    add_samples(series);
  }
  points_ = builder_->Finish();
  stats_.mapping = builder_->stats();
  return Status::Ok();
}

}  // namespace gpulse::ingest
