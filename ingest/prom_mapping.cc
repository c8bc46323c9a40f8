// Groups samples by (tag set, timestamp) into points; see prom_mapping.h for
// the rules and docs/prometheus-mapping.md for why.

#include "ingest/prom_mapping.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace gpulse::ingest {

namespace {

using LabelView = std::pair<std::string_view, std::string_view>;

// One point being assembled.
struct Group {
  size_t point = 0;                              // index in the output vector
  std::unordered_set<std::string_view> metrics;  // field names so far
  // Attribution label -> its distinct values joined by ','.
  std::vector<std::pair<std::string_view, std::string>> attribution;
};

bool HasKey(const std::vector<LabelView>& tags, std::string_view key) {
  return std::any_of(tags.begin(), tags.end(), [&](const LabelView& t) { return t.first == key; });
}

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

void AddAttribution(Group* group, std::string_view name, std::string_view value) {
  for (auto& [have, list] : group->attribution) {
    if (have == name) return AddDistinct(&list, value);
  }
  group->attribution.emplace_back(name, std::string(value));
}

// The canonical key of a group: sorted tags, then the timestamp. NUL cannot
// occur in a Prometheus name and ends each element.
void GroupKey(const std::vector<LabelView>& tags, int64_t ts, std::string* key) {
  key->clear();
  for (const auto& [k, v] : tags) {
    key->append(k);
    key->push_back('\0');
    key->append(v);
    key->push_back('\0');
  }
  char bytes[sizeof(ts)];
  std::memcpy(bytes, &ts, sizeof(ts));
  key->append(bytes, sizeof(bytes));
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

void MapSamples(const std::vector<PromSample>& samples, int64_t scrape_time_ns,
                const PromMappingOptions& options, std::vector<Point>* points,
                PromMappingStats* stats) {
  PromMappingStats local;
  PromMappingStats& st = stats != nullptr ? *stats : local;
  st = PromMappingStats();
  const std::unordered_set<std::string_view> attribution(options.attribution_labels.begin(),
                                                         options.attribution_labels.end());
  std::unordered_map<std::string, Group> groups;
  std::vector<Group*> order;        // groups in order of their first sample
  std::deque<std::string> renamed;  // storage for exported_<name> keys
  std::vector<LabelView> tags;
  std::vector<LabelView> attrs;
  std::string key;

  for (const PromSample& s : samples) {
    if (!options.keep_non_finite && !std::isfinite(s.value)) {
      ++st.dropped_non_finite;
      continue;
    }
    int64_t ts = scrape_time_ns;
    if (s.timestamp_ms && __builtin_mul_overflow(*s.timestamp_ms, int64_t{1'000'000}, &ts)) {
      ++st.dropped_timestamp;
      continue;
    }
    tags.clear();
    attrs.clear();
    for (const Tag& t : options.extra_tags) tags.emplace_back(t.key, t.value);
    for (const auto& [name, value] : s.labels) {
      if (value.empty()) continue;
      if (attribution.count(name) != 0) {
        attrs.emplace_back(name, value);
        continue;
      }
      std::string_view tag_key = name;
      if (HasKey(tags, tag_key)) {
        std::string k(name);
        while (HasKey(tags, k)) k.insert(0, "exported_");
        tag_key = renamed.emplace_back(std::move(k));
        ++st.renamed_labels;
      }
      tags.emplace_back(tag_key, value);
    }
    std::sort(tags.begin(), tags.end());
    GroupKey(tags, ts, &key);

    auto [it, inserted] = groups.try_emplace(key);
    Group& group = it->second;
    if (inserted) {
      group.point = points->size();
      order.push_back(&group);
      Point& p = points->emplace_back();
      p.measurement = options.measurement;
      for (const auto& [k, v] : tags) p.tags.push_back(Tag{std::string(k), std::string(v)});
      p.timestamp_ns = ts;
      ++st.points;
    }
    if (group.metrics.insert(s.name).second) {
      (*points)[group.point].fields.push_back(Field{std::string(s.name), s.value});
      ++st.fields;
    } else {
      ++st.duplicate_fields;
    }
    for (const auto& [name, value] : attrs) AddAttribution(&group, name, value);
  }

  for (Group* group : order) {
    Point& p = (*points)[group->point];
    for (auto& [name, list] : group->attribution) {
      if (group->metrics.count(name) != 0) {
        ++st.dropped_attribution;
        continue;
      }
      p.fields.push_back(Field{std::string(name), std::move(list)});
    }
  }
}

}  // namespace gpulse::ingest
