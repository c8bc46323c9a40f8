// Prometheus samples -> gpulse points. Owns no state: MapSamples is a pure
// function of its arguments.
//
// The mapping (docs/prometheus-mapping.md has the reasons and a worked
// example from a real dcgm-exporter scrape):
//   - measurement: PromMappingOptions::measurement, one per scrape target
//     ("dcgm", "node"); the metric name is not the measurement.
//   - field: the metric name verbatim (DCGM_FI_DEV_GPU_UTIL), value as a float.
//   - tags: the sample's labels with their names as they come (dcgm-exporter's
//     `Hostname` and a newer one's `hostname` are both kept as written), minus
//     attribution labels, plus the target's extra tags. An extra tag wins over
//     a label of the same name, which is kept as exported_<name>, as
//     Prometheus does with target labels. Labels with an empty value are left
//     out: Prometheus treats `l=""` as no label, and gpulse refuses empty tags.
//   - attribution labels (who ran on the GPU: pod, namespace, container...)
//     become string fields of the same point, so a GPU's series stays one
//     series while workloads come and go.
//   - samples with the same tag set and timestamp become one point with one
//     field per metric: all DCGM_FI_* of one GPU at one scrape are one point.
//   - timestamp: the sample's own (ms -> ns) when present, else the scrape's.
//
// Thread safety: MapSamples may run on any number of threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/prom_text.h"
#include "storage/mutex.h"

namespace gpulse::ingest {

// dcgm-exporter's Kubernetes, DRA and HPC attribution labels (current and
// --use-old-namespace names): pod, namespace, container, pod_uid, vgpu,
// pod_name, pod_namespace, container_name, dra_claim_name,
// dra_claim_namespace, dra_driver_name, dra_pool_name, dra_device_name,
// dra_mig_profile, dra_mig_device_uuid, hpc_job. Prometheus' own `job` and
// `instance` are target identity and stay tags.
const std::vector<std::string>& DefaultAttributionLabels();

// How one scrape target's samples become points.
struct PromMappingOptions {
  std::string measurement = "prometheus";
  // Tags every point of the target gets (cluster=use1-a).
  std::vector<Tag> extra_tags;
  // Labels stored as string fields instead of tags.
  std::vector<std::string> attribution_labels = DefaultAttributionLabels();
  // NaN and +-Inf are stored by default: the chunk codecs keep every float
  // bit for bit, and a NaN the exporter wrote (a summary quantile with no
  // observations) says something that a missing value does not. False drops
  // those samples.
  bool keep_non_finite = true;
};

// What MapSamples did, for logs and tests.
struct PromMappingStats {
  size_t fields = 0;              // metric fields written into points
  size_t points = 0;              // points appended
  size_t dropped_non_finite = 0;  // NaN/Inf samples left out (!keep_non_finite)
  size_t dropped_timestamp = 0;   // sample timestamps beyond the int64 nanosecond range
  // A metric repeated within one point: the same series at the same instant
  // with different attribution (dcgm-exporter repeats a shared GPU's series
  // once per pod). The first value is kept; the attribution of all of them is
  // (see MapSamples).
  size_t duplicate_fields = 0;
  size_t renamed_labels = 0;  // labels stored as exported_<name>
  // Attribution labels whose name is also a metric name in the same point:
  // the metric wins and the label is left out.
  size_t dropped_attribution = 0;
};

// The mapping into points that view their strings, for a caller that
// writes them at once (Db::Write of PointRefs): remote write, and through
// MapSamples every other. A series' labels are mapped once (AddSeries: tags
// sorted, attribution labels set apart, renames), then each of its samples
// only finds its point (AddSample). Points come in the order of their first
// sample; a point's fields in sample order, then its attribution fields.
// The label and name strings given must outlive the points.
//
// Thread safety: one builder per thread.
class PromPointBuilder {
 public:
  explicit PromPointBuilder(const PromMappingOptions& options);
  PromPointBuilder(const PromPointBuilder&) = delete;
  PromPointBuilder& operator=(const PromPointBuilder&) = delete;

  using Label = std::pair<std::string_view, std::string_view>;
  // The labels of the samples that follow (of one metric: `name`); returns
  // the series' number.
  size_t AddSeries(std::string_view name, std::span<const Label> labels);
  // The same labels as series `like` had (its tags, attribution, renames
  // already done), for another metric: a request sends one series a metric
  // of each GPU, all with the GPU's labels.
  void AddSeriesLike(size_t like, std::string_view name);
  // A sample of the last series added; `timestamp_ms` absent: the scrape
  // time given to Finish's caller through `default_ns`.
  void AddSample(double value, std::optional<int64_t> timestamp_ms, int64_t default_ns);
  // A stale marker of the last series (its metric ended at `timestamp_ms`):
  // the point's bool field StaleFieldOf(name) (engine/gpulse.h), true,
  // without the series' attribution labels, which name what ended, not
  // what runs at that time.
  void AddStaleMarker(int64_t timestamp_ms);
  // The points, valid until the builder is destroyed; the attribution
  // fields are added by the first call.
  std::span<const PointRef> Finish();
  const PromMappingStats& stats() const { return stats_; }
  size_t series_count() const { return series_.size(); }

 private:
  struct Series {
    std::string_view name;
    size_t first_tag = 0, tags = 0;    // in tags_
    size_t first_attr = 0, attrs = 0;  // in attrs_
    uint64_t hash = 0;                 // of the tags
  };
  struct Group {
    size_t series = 0;  // whose tags the point has
    int64_t ts = 0;
    uint32_t next = UINT32_MAX;  // the next group of the same hash bucket
  };
  struct Sample {
    uint32_t group;
    uint32_t series;
    double value;
    bool stale = false;
  };
  bool SameTags(const Series& a, const Series& b) const;
  void Add(double value, int64_t ts, bool stale);

  const PromMappingOptions options_;           // a copy: the points view its measurement
  std::vector<std::string_view> attribution_;  // sorted
  std::vector<Series> series_;
  std::vector<Label> tags_;          // each series' tags, sorted by key
  std::vector<Label> attrs_;         // each series' attribution labels
  std::deque<std::string> renamed_;  // exported_<name> keys
  std::vector<Group> groups_;
  std::unordered_map<uint64_t, uint32_t> by_hash_;  // the first group of each hash
  std::vector<Sample> samples_;
  // The points' storage.
  std::vector<TagRef> point_tags_;
  std::vector<FieldRef> point_fields_;
  std::vector<PointRef> points_;
  std::deque<std::string> joined_;  // attribution values joined by ','
  std::deque<std::string> stale_fields_;
  PromMappingStats stats_;
  size_t pending_renames_ = 0;  // of the last series, until a sample of it is kept
  bool finished_ = false;
};

// Appends to *points one point per distinct (tag set, timestamp) among
// `samples`, in the order of each group's first sample, tags sorted by key,
// metric fields in sample order followed by the attribution fields. Samples
// without a timestamp take `scrape_time_ns`.
//
// When one point gathers several values of an attribution label (a GPU
// shared by several pods), its string field holds the distinct values in
// order of first appearance, joined by ','. Kubernetes names never contain
// a comma, so the list splits back unambiguously.
void MapSamples(const std::vector<PromSample>& samples, int64_t scrape_time_ns,
                const PromMappingOptions& options, std::vector<Point>* points,
                PromMappingStats* stats = nullptr);

// Records, once per measurement, that a measurement holds Prometheus data
// (engine/gpulse.h, kPrometheusMeasurementKind), so that PromQL names its
// fields as the metrics they were. Writers of Prometheus data (the
// scraper, remote write, `import --format prom`) note each measurement
// before they write to it.
//
// Thread safety: Note may be called from any thread.
class PromMeasurements {
 public:
  explicit PromMeasurements(Db* db) : db_(db) {}
  Status Note(std::string_view measurement);

 private:
  Db* const db_;
  Mutex mu_;
  std::set<std::string, std::less<>> noted_ GPULSE_GUARDED_BY(mu_);
};

// Records what scrapes say of each metric family (# TYPE and # HELP) in the
// data directory (engine/gpulse.h, kPrometheusMetadataKind), for
// /api/v1/metadata. A family is written again only when what it says
// changes.
//
// Thread safety: Note may be called from any thread.
class PromMetadataNotes {
 public:
  explicit PromMetadataNotes(Db* db) : db_(db) {}
  Status Note(const std::vector<PromMetadata>& metadata);

 private:
  Db* const db_;
  Mutex mu_;
  std::map<std::string, std::string, std::less<>> noted_ GPULSE_GUARDED_BY(mu_);
  bool loaded_ GPULSE_GUARDED_BY(mu_) = false;
};

}  // namespace gpulse::ingest
