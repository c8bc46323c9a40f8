#include "query/promeval/value.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <unordered_map>

namespace gpulse::query::promeval {

namespace {

auto FindLabel(const Labels& labels, std::string_view name) {
  return std::lower_bound(labels.begin(), labels.end(), name,
                          [](const Label& l, std::string_view n) { return l.name < n; });
}

bool Named(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::string_view LabelValue(const Labels& labels, std::string_view name) {
  const auto it = FindLabel(labels, name);
  return it != labels.end() && it->name == name ? std::string_view(it->value) : std::string_view();
}

void SetLabel(Labels* labels, std::string_view name, std::string_view value) {
  auto it = std::lower_bound(labels->begin(), labels->end(), name,
                             [](const Label& l, std::string_view n) { return l.name < n; });
  const bool found = it != labels->end() && it->name == name;
  if (value.empty()) {
    if (found) labels->erase(it);
  } else if (found) {
    it->value = value;
  } else {
    labels->insert(it, Label{std::string(name), std::string(value)});
  }
}

void DropLabel(Labels* labels, std::string_view name) { SetLabel(labels, name, {}); }

Labels KeepLabels(const Labels& labels, const std::vector<std::string>& names) {
  Labels out;
  for (const Label& l : labels) {
    if (Named(names, l.name)) out.push_back(l);
  }
  return out;
}

Labels DropLabels(const Labels& labels, const std::vector<std::string>& names) {
  Labels out;
  for (const Label& l : labels) {
    if (!Named(names, l.name)) out.push_back(l);
  }
  return out;
}

std::string LabelsKey(const Labels& labels) {
  std::string key;
  for (const Label& l : labels) {
    key += l.name;
    key += '\xff';
    key += l.value;
    key += '\xff';
  }
  return key;
}

size_t LabelsPtrHash::operator()(const Labels* labels) const {
  size_t h = 0;
  for (const Label& l : *labels) {
    for (const std::string* s : {&l.name, &l.value}) {
      h = (h ^ std::hash<std::string>()(*s)) * 0x9E3779B97F4A7C15ull + (h >> 29);
    }
  }
  return h;
}

std::string LabelsText(const Labels& labels) {
  std::string text = "{";
  for (const Label& l : labels) {
    if (text.size() > 1) text += ", ";
    text += l.name + "=\"" + l.value + "\"";
  }
  return text + "}";
}

StepSeries EmptySeries(Labels labels, size_t steps) {
  StepSeries s;
  s.labels = std::move(labels);
  s.values.assign(steps, 0);
  s.has.assign(steps, 0);
  return s;
}

Value ScalarValue(double v, size_t steps) {
  Value out;
  out.type = ValueType::kScalar;
  out.series.push_back(EmptySeries({}, steps));
  out.series[0].values.assign(steps, v);
  out.series[0].has.assign(steps, 1);
  return out;
}

bool MergeEqualLabels(std::vector<StepSeries>* series) {
  // Each label set's first series, by its labels where it now lies.
  std::unordered_map<const Labels*, size_t, LabelsPtrHash, LabelsPtrEqual> first;
  first.reserve(series->size());
  size_t kept = 0;
  for (size_t i = 0; i < series->size(); ++i) {
    StepSeries& s = (*series)[i];
    const auto it = first.find(&s.labels);
    if (it == first.end()) {
      if (kept != i) (*series)[kept] = std::move(s);
      first.emplace(&(*series)[kept].labels, kept);
      ++kept;
      continue;
    }
    StepSeries& into = (*series)[it->second];
    for (size_t k = 0; k < s.has.size(); ++k) {
      if (!s.has[k]) continue;
      if (into.has[k]) return false;
      into.has[k] = 1;
      into.values[k] = s.values[k];
    }
  }
  series->resize(kept);
  return true;
}

bool IsLabelName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

double StaleMarker() { return std::bit_cast<double>(kStaleMarkerBits); }

bool IsStale(double v) { return std::bit_cast<uint64_t>(v) == kStaleMarkerBits; }

std::string FormatPromFloat(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[400];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

}  // namespace gpulse::query::promeval
