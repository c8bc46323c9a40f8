// Groups samples by (tag set, timestamp) into points; see prom_mapping.h for
// the rules and docs/prometheus-mapping.md for why.

#include "ingest/prom_mapping.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace gpulse::ingest {

namespace {

// Adds `value` to a ','-joined list unless it is there already.
void AddDistinct(std::string* list, std::string_view value) {
  std::string_view rest = *list;
  while (true) {
    size_t comma = rest.find(',');
    if (rest.substr(0, comma) == value) return;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  list->push_back(',');
  list->append(value);
}

}  // namespace

const std::vector<std::string>& DefaultAttributionLabels() {
  static const std::vector<std::string> kLabels = {
      // Kubernetes (--kubernetes), and as --use-old-namespace names them.
      "pod",
      "namespace",
      "container",
      "pod_uid",
      "vgpu",
      "pod_name",
      "pod_namespace",
      "container_name",
      // Dynamic resource allocation: present only while a claim holds the GPU.
      "dra_claim_name",
      "dra_claim_namespace",
      "dra_driver_name",
      "dra_pool_name",
      "dra_device_name",
      "dra_mig_profile",
      "dra_mig_device_uuid",
      // HPC (Slurm) job mapping.
      "hpc_job",
  };
  return kLabels;
}

PromPointBuilder::PromPointBuilder(const PromMappingOptions& options) : options_(options) {
  attribution_.assign(options.attribution_labels.begin(), options.attribution_labels.end());
  std::sort(attribution_.begin(), attribution_.end());
}

size_t PromPointBuilder::AddSeries(std::string_view name, std::span<const Label> labels) {
  pending_renames_ = 0;  // the series before kept no sample: its renames are not counted
  Series series;
  series.name = name;
  series.first_tag = tags_.size();
  series.first_attr = attrs_.size();
  for (const Tag& t : options_.extra_tags) tags_.emplace_back(t.key, t.value);
  const auto has_key = [&](std::string_view key) {
    return std::any_of(tags_.begin() + static_cast<ptrdiff_t>(series.first_tag), tags_.end(),
                       [&](const Label& t) { return t.first == key; });
  };
  // Labels come sorted by name (remote write's rule, and a scrape's habit):
  // while each is past the one before and no tag was added first, none can
  // repeat a key, and the search for one is skipped.
  bool ascending = options_.extra_tags.empty();
  const Label* before = nullptr;
  for (const Label& entry : labels) {
    const auto& [label, value] = entry;
    ascending = ascending && (before == nullptr || label > before->first);
    before = &entry;
    if (value.empty()) continue;
    if (std::binary_search(attribution_.begin(), attribution_.end(), label)) {
      attrs_.emplace_back(label, value);
      continue;
    }
    std::string_view key = label;
    if (!ascending && has_key(key)) {
      std::string k(label);
      while (has_key(k)) k.insert(0, "exported_");
      key = renamed_.emplace_back(std::move(k));
      ++pending_renames_;
    }
    tags_.emplace_back(key, value);
  }
  const auto first = tags_.begin() + static_cast<ptrdiff_t>(series.first_tag);
  std::sort(first, tags_.end());
  series.tags = tags_.size() - series.first_tag;
  series.attrs = attrs_.size() - series.first_attr;
  uint64_t h = 1469598103934665603ull;
  const std::hash<std::string_view> hash;
  for (auto it = first; it != tags_.end(); ++it) {
    h = (h ^ hash(it->first)) * 1099511628211ull;
    h = (h ^ hash(it->second)) * 1099511628211ull;
  }
  series.hash = h;
  series_.push_back(series);
  return series_.size() - 1;
}

void PromPointBuilder::AddSeriesLike(size_t like, std::string_view name) {
  pending_renames_ = 0;  // counted with the label set's first series
  Series series = series_[like];
  series.name = name;
  series_.push_back(series);
}

bool PromPointBuilder::SameTags(const Series& a, const Series& b) const {
  if (a.tags != b.tags) return false;
  if (a.first_tag == b.first_tag) return true;  // AddSeriesLike's
  return std::equal(tags_.begin() + static_cast<ptrdiff_t>(a.first_tag),
                    tags_.begin() + static_cast<ptrdiff_t>(a.first_tag + a.tags),
                    tags_.begin() + static_cast<ptrdiff_t>(b.first_tag));
}

void PromPointBuilder::AddSample(double value, std::optional<int64_t> timestamp_ms,
                                 int64_t default_ns) {
  if (!options_.keep_non_finite && !std::isfinite(value)) {
    ++stats_.dropped_non_finite;
    return;
  }
  int64_t ts = default_ns;
  if (timestamp_ms && __builtin_mul_overflow(*timestamp_ms, int64_t{1'000'000}, &ts)) {
    ++stats_.dropped_timestamp;
    return;
  }
  Add(value, ts, false);
}

void PromPointBuilder::AddStaleMarker(int64_t timestamp_ms) {
  int64_t ts = 0;
  if (__builtin_mul_overflow(timestamp_ms, int64_t{1'000'000}, &ts)) {
    ++stats_.dropped_timestamp;
    return;
  }
  Add(0, ts, true);
}

void PromPointBuilder::Add(double value, int64_t ts, bool stale) {
  // A series' renames count once a sample of it is kept, as the samples'.
  stats_.renamed_labels += pending_renames_;
  pending_renames_ = 0;
  const auto s = static_cast<uint32_t>(series_.size() - 1);
  const Series& series = series_[s];
  const uint64_t key = series.hash ^ (static_cast<uint64_t>(ts) * 0x9E3779B97F4A7C15ull);
  auto [it, inserted] = by_hash_.try_emplace(key, static_cast<uint32_t>(groups_.size()));
  uint32_t g = it->second;
  if (!inserted) {
    // The bucket's groups, until one has these tags and this time.
    while (true) {
      const Group& group = groups_[g];
      if (group.ts == ts && SameTags(series_[group.series], series)) break;
      if (group.next == UINT32_MAX) {
        groups_[g].next = static_cast<uint32_t>(groups_.size());
        g = groups_[g].next;
        inserted = true;
        break;
      }
      g = group.next;
    }
  }
  if (inserted) {
    groups_.push_back(Group{s, ts, UINT32_MAX});
    ++stats_.points;
  }
  samples_.push_back(Sample{g, s, value, stale});
}

std::span<const PointRef> PromPointBuilder::Finish() {
  if (finished_) return points_;
  finished_ = true;
  const size_t n = groups_.size();
  // Room for each point's fields: its samples, and its attribution labels.
  std::vector<uint32_t> start(n + 1, 0);
  std::vector<std::vector<std::pair<std::string_view, std::string>>> attribution(n);
  for (const Sample& smp : samples_) {
    ++start[smp.group + 1];
    if (smp.stale) continue;
    const Series& series = series_[smp.series];
    for (size_t a = 0; a < series.attrs; ++a) {
      const Label& attr = attrs_[series.first_attr + a];
      auto& lists = attribution[smp.group];
      auto list = std::find_if(lists.begin(), lists.end(),
                               [&](const auto& l) { return l.first == attr.first; });
      if (list == lists.end()) {
        lists.emplace_back(attr.first, std::string(attr.second));
        ++start[smp.group + 1];
      } else {
        AddDistinct(&list->second, attr.second);
      }
    }
  }
  for (size_t g = 0; g < n; ++g) start[g + 1] += start[g];
  point_fields_.resize(start[n]);
  std::vector<uint32_t> filled(start.begin(), start.end() - 1);
  std::unordered_map<std::string_view, std::string_view> stale_names;
  for (const Sample& smp : samples_) {
    std::string_view name = series_[smp.series].name;
    if (smp.stale) {
      auto [it, added] = stale_names.try_emplace(name);
      if (added) it->second = stale_fields_.emplace_back(StaleFieldOf(name));
      name = it->second;
    }
    const FieldRef* first = point_fields_.data() + start[smp.group];
    const FieldRef* end = point_fields_.data() + filled[smp.group];
    // A metric seen twice in one point keeps its first value.
    if (std::any_of(first, end, [&](const FieldRef& f) { return f.key == name; })) {
      ++stats_.duplicate_fields;
      continue;
    }
    point_fields_[filled[smp.group]++] =
        smp.stale ? FieldRef{name, true} : FieldRef{name, smp.value};
    ++stats_.fields;
  }
  point_tags_.clear();
  for (size_t g = 0; g < n; ++g) {
    const Series& series = series_[groups_[g].series];
    for (size_t t = 0; t < series.tags; ++t) {
      const auto& [k, v] = tags_[series.first_tag + t];
      point_tags_.push_back(TagRef{k, v});
    }
  }
  points_.clear();
  size_t tag_at = 0;
  for (size_t g = 0; g < n; ++g) {
    const FieldRef* first = point_fields_.data() + start[g];
    for (auto& entry : attribution[g]) {
      // An attribution label named as a metric of the point: the metric wins.
      const FieldRef* end = point_fields_.data() + filled[g];
      if (std::any_of(first, end, [&](const FieldRef& f) { return f.key == entry.first; })) {
        ++stats_.dropped_attribution;
        continue;
      }
      point_fields_[filled[g]++] =
          FieldRef{entry.first, std::string_view(joined_.emplace_back(std::move(entry.second)))};
    }
    const size_t tags = series_[groups_[g].series].tags;
    PointRef p;
    p.measurement = options_.measurement;
    p.tags = std::span<const TagRef>(point_tags_.data() + tag_at, tags);
    p.fields = std::span<const FieldRef>(first, filled[g] - start[g]);
    p.timestamp_ns = groups_[g].ts;
    points_.push_back(p);
    tag_at += tags;
  }
  return points_;
}

void MapSamples(const std::vector<PromSample>& samples, int64_t scrape_time_ns,
                const PromMappingOptions& options, std::vector<Point>* points,
                PromMappingStats* stats) {
  PromPointBuilder builder(options);
  for (const PromSample& s : samples) {
    builder.AddSeries(s.name, s.labels);
    builder.AddSample(s.value, s.timestamp_ms, scrape_time_ns);
  }
  for (const PointRef& ref : builder.Finish()) {
    Point& p = points->emplace_back();
    p.measurement = std::string(ref.measurement);
    for (const TagRef& t : ref.tags)
      p.tags.push_back(Tag{std::string(t.key), std::string(t.value)});
    for (const FieldRef& f : ref.fields) {
      if (const auto* text = std::get_if<std::string_view>(&f.value)) {
        p.fields.push_back(Field{std::string(f.key), std::string(*text)});
      } else {
        p.fields.push_back(Field{std::string(f.key), std::get<double>(f.value)});
      }
    }
    p.timestamp_ns = ref.timestamp_ns;
  }
  if (stats != nullptr) *stats = builder.stats();
}

Status PromMeasurements::Note(std::string_view measurement) {
  MutexLock l(&mu_);
  if (noted_.find(measurement) != noted_.end()) return Status::Ok();
  std::vector<std::pair<std::string, std::string>> known;
  GPULSE_RETURN_IF_ERROR(db_->ListDefinitions(kPrometheusMeasurementKind, &known));
  for (auto& [name, text] : known) noted_.insert(std::move(name));
  if (noted_.find(measurement) != noted_.end()) return Status::Ok();
  GPULSE_RETURN_IF_ERROR(db_->PutDefinition(kPrometheusMeasurementKind, measurement, ""));
  noted_.emplace(measurement);
  return Status::Ok();
}

Status PromMetadataNotes::Note(const std::vector<PromMetadata>& metadata) {
  MutexLock l(&mu_);
  if (!loaded_) {
    std::vector<std::pair<std::string, std::string>> known;
    GPULSE_RETURN_IF_ERROR(db_->ListDefinitions(kPrometheusMetadataKind, &known));
    for (auto& [name, text] : known) noted_[std::move(name)] = std::move(text);
    loaded_ = true;
  }
  for (const PromMetadata& m : metadata) {
    std::string text = m.type + "\n" + m.unit + "\n" + m.help;
    const auto it = noted_.find(m.name);
    if (it != noted_.end() && it->second == text) continue;
    GPULSE_RETURN_IF_ERROR(db_->PutDefinition(kPrometheusMetadataKind, m.name, text));
    noted_[m.name] = std::move(text);
  }
  return Status::Ok();
}

}  // namespace gpulse::ingest
