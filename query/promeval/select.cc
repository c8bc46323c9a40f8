#include "query/promeval/select.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "query/runtime/parallel.h"
#include "storage/column.h"

namespace gpulse::query::promeval {

namespace {

int64_t NanosOf(int64_t ms) {
  if (ms >= INT64_MAX / kNanosPerMilli) return INT64_MAX;
  if (ms <= INT64_MIN / kNanosPerMilli) return INT64_MIN;
  return ms * kNanosPerMilli;
}

// The exclusive end in nanoseconds of a range that ends at `ms`, included.
int64_t EndNanos(int64_t ms) { return ms == INT64_MAX ? INT64_MAX : NanosOf(ms + 1); }

bool IsNumeric(FieldType type) { return type != FieldType::kString; }

// A stored series cut by the values of its label fields: one RawSeries per
// distinct set of them.
class Splitter {
 public:
  Splitter(const StoredMetric& metric, const std::vector<Tag>& tags,
           const std::vector<const Matcher*>& label_matchers)
      : metric_(metric), label_matchers_(label_matchers) {
    for (const Tag& t : tags) base_.push_back(Label{t.key, t.value});
    SetLabel(&base_, kMetricName, metric.name);
  }

  // The series point `i` goes to, or nullptr when its labels are not selected.
  RawSeries* SeriesFor(const std::vector<std::string_view>& label_values) {
    std::string key;
    for (std::string_view v : label_values) {
      key.append(v);
      key += '\xff';
    }
    const auto [it, fresh] = index_.emplace(std::move(key), -1);
    if (!fresh) return it->second < 0 ? nullptr : &out_[static_cast<size_t>(it->second)];
    Labels labels = base_;
    for (size_t j = 0; j < label_values.size(); ++j) {
      const std::string& name = metric_.label_fields[j];
      if (LabelValue(base_, name).empty()) SetLabel(&labels, name, label_values[j]);
    }
    for (const Matcher* m : label_matchers_) {
      if (!m->Matches(LabelValue(labels, m->name()))) return nullptr;
    }
    it->second = static_cast<int64_t>(out_.size());
    out_.push_back(RawSeries{std::move(labels), {}, {}});
    return &out_.back();
  }

  std::deque<RawSeries>& series() { return out_; }

 private:
  const StoredMetric& metric_;
  const std::vector<const Matcher*>& label_matchers_;
  Labels base_;
  std::map<std::string, int64_t> index_;  // label values -> out_ position, -1: not selected
  std::deque<RawSeries> out_;             // a deque: SeriesFor's pointers stay valid
};

void Append(RawSeries* s, int64_t t, double v) {
  if (!s->times.empty() && s->times.back() == t) {
    s->values.back() = v;  // two points in one millisecond: the later one
    return;
  }
  s->times.push_back(t);
  s->values.push_back(v);
}

// All of a column's points to one series, the type dispatched once.
template <typename T>
void AppendAll(const Column& c, const std::vector<T>& values, size_t from, size_t to,
               RawSeries* s) {
  size_t k = s->times.size();
  s->times.resize(k + (to - from));
  s->values.resize(k + (to - from));
  for (size_t i = from; i < to; ++i) {
    const int64_t t = MillisOf(c.ts[i]);
    const double v = static_cast<double>(values[i]);
    if (k > 0 && s->times[k - 1] == t) {
      s->values[k - 1] = v;  // two points in one millisecond: the later one
      continue;
    }
    s->times[k] = t;
    s->values[k++] = v;
  }
  s->times.resize(k);
  s->values.resize(k);
}

// Points [from, to) of a column to one series, the type dispatched once.
void AppendColumn(const Column& c, size_t from, size_t to, RawSeries* s) {
  switch (c.type) {
    case FieldType::kFloat:
      return AppendAll(c, c.floats, from, to, s);
    case FieldType::kInt:
      return AppendAll(c, c.ints, from, to, s);
    case FieldType::kUint:
      return AppendAll(c, c.uints, from, to, s);
    case FieldType::kBool:
      return AppendAll(c, c.bools, from, to, s);
    case FieldType::kString:
      return;
  }
}

void AppendColumn(const Column& c, RawSeries* s) { AppendColumn(c, 0, c.size(), s); }

template <typename T>
void Convert(const std::vector<T>& from, std::vector<double>* to) {
  to->resize(from.size());
  for (size_t i = 0; i < from.size(); ++i) (*to)[i] = static_cast<double>(from[i]);
}

// A numeric column's values as floats.
void ToDoubles(const Column& c, std::vector<double>* out) {
  switch (c.type) {
    case FieldType::kFloat:
      return Convert(c.floats, out);
    case FieldType::kInt:
      return Convert(c.ints, out);
    case FieldType::kUint:
      return Convert(c.uints, out);
    case FieldType::kBool:
      return Convert(c.bools, out);
    case FieldType::kString:
      out->clear();
      return;
  }
}

// The points of the metric's column, each to the series of the label
// fields' values at its time. When the values change (another pod on the
// GPU), the series of the old ones ends there with a stale marker, as
// Prometheus ends a series that left a scrape. A stored stale marker
// (`stale`'s points) ends the series of the point before it; one at the
// time of a point comes before that point.
void SplitPoints(const Column& metric, std::span<const Column> labels, const Column& stale,
                 Splitter* splitter) {
  if (labels.empty() && stale.ts.empty()) {
    // No label fields: the stored series is one PromQL series.
    RawSeries* s = splitter->SeriesFor({});
    if (s != nullptr) AppendColumn(metric, s);
    return;
  }
  std::vector<size_t> next(labels.size(), 0);
  std::vector<std::string_view> values(labels.size()), previous_values;
  RawSeries* previous = nullptr;
  bool started = false;
  size_t next_stale = 0;
  const auto end_before = [&](int64_t ts) {
    for (; next_stale < stale.size() && stale.ts[next_stale] <= ts; ++next_stale) {
      if (previous == nullptr) continue;
      Append(previous, MillisOf(stale.ts[next_stale]), StaleMarker());
      previous = nullptr;
      started = false;
    }
  };
  for (size_t i = 0; i < metric.size(); ++i) {
    if (!IsNumeric(metric.type)) break;
    const int64_t ts = metric.ts[i];
    end_before(ts);
    for (size_t j = 0; j < labels.size(); ++j) {
      const Column& c = labels[j];
      size_t& k = next[j];
      while (k < c.size() && c.ts[k] < ts) ++k;
      values[j] = k < c.size() && c.ts[k] == ts && c.type == FieldType::kString
                      ? std::string_view(c.strings[k])
                      : std::string_view();
    }
    // Most points carry the labels of the point before them.
    const bool same = started && values == previous_values;
    RawSeries* s = same ? previous : splitter->SeriesFor(values);
    if (previous != nullptr && previous != s) Append(previous, MillisOf(ts), StaleMarker());
    previous = s;
    if (!same) previous_values = values;
    started = true;
    if (s != nullptr) Append(s, MillisOf(ts), storage::NumberAt(metric, i));
  }
  end_before(INT64_MAX);
}

}  // namespace

Result<Matcher> Matcher::Compile(const promql::LabelMatcher& m) {
  Matcher out;
  out.name_ = m.name;
  out.op_ = m.op;
  out.value_ = m.value;
  if (m.op == promql::MatchOp::kRegex || m.op == promql::MatchOp::kNotRegex) {
    auto re = CompileRegex("^(?:" + m.value + ")$");
    if (!re.ok()) return re.status();
    out.re_ = std::move(re).value();
  }
  return out;
}

bool Matcher::Matches(std::string_view value) const {
  switch (op_) {
    case promql::MatchOp::kEqual:
      return value == value_;
    case promql::MatchOp::kNotEqual:
      return value != value_;
    case promql::MatchOp::kRegex:
      return re2::RE2::FullMatch(re2::StringPiece(value.data(), value.size()), *re_);
    case promql::MatchOp::kNotRegex:
      return !re2::RE2::FullMatch(re2::StringPiece(value.data(), value.size()), *re_);
  }
  return false;
}

Status SeriesSource::Load() {
  if (loaded_) return Status::Ok();
  // Every measurement, whatever the database: under one, listing its
  // measurements would list its series (a fleet's million); a measurement
  // with none of its series just selects none.
  GPULSE_RETURN_IF_ERROR(ctx_->db()->ListMeasurements(&measurements_));
  std::vector<std::pair<std::string, std::string>> defs;
  GPULSE_RETURN_IF_ERROR(ctx_->db()->ListDefinitions(kPrometheusMeasurementKind, &defs));
  for (auto& [name, text] : defs) prometheus_.insert(name);
  loaded_ = true;
  return Status::Ok();
}

Status SeriesSource::AddMetric(const std::string& measurement, const std::string& field,
                               std::vector<StoredMetric>* out) {
  auto it = fields_.find(measurement);
  if (it == fields_.end()) {
    std::vector<FieldInfo> fields;
    GPULSE_RETURN_IF_ERROR(input_->Fields(measurement, &fields));
    it = fields_.emplace(measurement, std::move(fields)).first;
  }
  const std::vector<FieldInfo>& fields = it->second;
  const auto f = std::find_if(fields.begin(), fields.end(),
                              [&](const FieldInfo& i) { return i.name == field; });
  if (f == fields.end() || !IsNumeric(f->type) || IsStaleField(field)) return Status::Ok();
  StoredMetric metric;
  metric.name = prometheus_.count(measurement) != 0 ? field : measurement + "_" + field;
  metric.measurement = measurement;
  metric.field = field;
  const std::string stale = StaleFieldOf(field);
  for (const FieldInfo& i : fields) {
    if (i.type == FieldType::kString) metric.label_fields.push_back(i.name);
    if (i.name == stale) metric.stale_field = stale;
  }
  out->push_back(std::move(metric));
  return Status::Ok();
}

Status SeriesSource::Metrics(const std::vector<Matcher>& matchers, std::vector<StoredMetric>* out) {
  GPULSE_RETURN_IF_ERROR(Load());
  std::vector<const Matcher*> on_name;
  const Matcher* equal = nullptr;
  for (const Matcher& m : matchers) {
    if (m.name() != kMetricName) continue;
    on_name.push_back(&m);
    if (m.IsEquality()) equal = &m;
  }
  for (const std::string& measurement : measurements_) {
    const bool prom = prometheus_.count(measurement) != 0;
    if (equal != nullptr) {
      // The one field the name can be.
      const std::string& name = equal->value();
      if (prom) {
        GPULSE_RETURN_IF_ERROR(AddMetric(measurement, name, out));
      } else if (name.size() > measurement.size() + 1 && name.starts_with(measurement) &&
                 name[measurement.size()] == '_') {
        GPULSE_RETURN_IF_ERROR(AddMetric(measurement, name.substr(measurement.size() + 1), out));
      }
      continue;
    }
    std::vector<FieldInfo> fields;
    GPULSE_RETURN_IF_ERROR(input_->Fields(measurement, &fields));
    for (const FieldInfo& f : fields) {
      if (!IsNumeric(f.type) || IsStaleField(f.name)) continue;
      const std::string name = prom ? f.name : measurement + "_" + f.name;
      if (std::all_of(on_name.begin(), on_name.end(),
                      [&](const Matcher* m) { return m->Matches(name); })) {
        GPULSE_RETURN_IF_ERROR(AddMetric(measurement, f.name, out));
      }
    }
  }
  return Status::Ok();
}

bool SeriesSource::Readable(const std::vector<Tag>& tags) const {
  const QueryOptions& options = ctx_->options();
  if (!options.database.empty() || !options.readable_databases) return true;
  for (const Tag& t : tags) {
    if (t.key != "db") continue;
    const auto& names = *options.readable_databases;
    return std::find(names.begin(), names.end(), t.value) != names.end();
  }
  return false;
}

Status SeriesSource::ForEachBlock(
    std::span<const InSeries* const> series,
    const std::function<Status(size_t b, size_t begin, std::span<const InSeries* const> block)>&
        fn) {
  const size_t blocks = (series.size() + kBlock - 1) / kBlock;
  size_t workers = 0;
  return ParallelFor(
      ctx_, blocks, &workers,
      [&](size_t, size_t b) {
        const size_t begin = b * kBlock, end = std::min(series.size(), begin + kBlock);
        return fn(b, begin, series.subspan(begin, end - begin));
      },
      /*min_per_worker=*/1);
}

Status SeriesSource::ReadColumns(std::span<const InSeries* const> series,
                                 std::span<const std::string> fields, int64_t lo, int64_t hi,
                                 std::vector<std::vector<Column>>* cols) {
  cols->assign(series.size(), std::vector<Column>(fields.size()));
  return input_->Scan(
      series, fields, lo, hi,
      [&](size_t i, size_t f, const Column& col, size_t from, size_t to) {
        Column& into = (*cols)[i][f];
        if (into.ts.empty()) into.type = col.type;
        storage::AppendPoints(col, from, to, &into);
      },
      nullptr);
}

Status SeriesSource::ListSelected(const StoredMetric& metric, const std::vector<Matcher>& matchers,
                                  Selection* out) {
  std::vector<TagMatcher> equal;
  std::vector<const Matcher*> on_tags;
  for (const Matcher& m : matchers) {
    if (m.name() == kMetricName) continue;
    const bool label_field = std::find(metric.label_fields.begin(), metric.label_fields.end(),
                                       m.name()) != metric.label_fields.end();
    (label_field ? out->on_label_fields : on_tags).push_back(&m);
    if (!label_field && m.IsEquality()) equal.push_back(TagMatcher{m.name(), m.value()});
  }
  GPULSE_RETURN_IF_ERROR(input_->ListSeries(metric.measurement, equal, &out->listed));
  for (const InSeries& s : out->listed) {
    if (!Readable(s.tags)) continue;
    const bool match = std::all_of(on_tags.begin(), on_tags.end(), [&](const Matcher* m) {
      std::string_view value;
      for (const Tag& t : s.tags) {
        if (t.key == m->name()) value = t.value;
      }
      return m->Matches(value);
    });
    if (match) out->series.push_back(&s);
  }
  return Status::Ok();
}

Status SeriesSource::SelectMeasurement(std::span<const StoredMetric> metrics,
                                       const std::vector<Matcher>& matchers, int64_t lo, int64_t hi,
                                       bool labels_only, std::vector<RawSeries>* out) {
  // The metrics are fields of one measurement: they share its series and
  // its label fields, and are read together.
  Selection selection;
  GPULSE_RETURN_IF_ERROR(ListSelected(metrics[0], matchers, &selection));
  return ReadSelected(metrics, selection.series, selection.on_label_fields, lo, hi, labels_only,
                      out);
}

Status SeriesSource::ReadSelected(std::span<const StoredMetric> metrics,
                                  std::span<const InSeries* const> selected,
                                  const std::vector<const Matcher*>& on_label_fields, int64_t lo,
                                  int64_t hi, bool labels_only, std::vector<RawSeries>* out) {
  const StoredMetric& first = metrics[0];
  std::vector<std::string> fields;
  for (const StoredMetric& m : metrics) fields.push_back(m.field);
  const size_t label_columns = first.label_fields.size();
  fields.insert(fields.end(), first.label_fields.begin(), first.label_fields.end());
  // stale_column[j]: the column of metric j's stale markers, if it has any.
  std::vector<size_t> stale_column(metrics.size(), SIZE_MAX);
  for (size_t j = 0; j < metrics.size(); ++j) {
    if (metrics[j].stale_field.empty()) continue;
    stale_column[j] = fields.size();
    fields.push_back(metrics[j].stale_field);
  }
  const Column no_markers;
  // found[i][j]: series i's PromQL series of metric j.
  std::vector<std::vector<std::vector<RawSeries>>> found(selected.size());
  GPULSE_RETURN_IF_ERROR(
      ForEachBlock(selected, [&](size_t, size_t begin, std::span<const InSeries* const> block) {
        const size_t end = begin + block.size();
        if (labels_only && label_columns == 0) {
          // One label set a metric: whether it has a sample in the range is in
          // the chunk headers.
          for (size_t i = begin; i < end; ++i) {
            found[i].resize(metrics.size());
            for (size_t j = 0; j < metrics.size(); ++j) {
              int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
              GPULSE_RETURN_IF_ERROR(input_->TimeExtent(block.subspan(i - begin, 1),
                                                        std::span(&fields[j], 1), NanosOf(lo),
                                                        EndNanos(hi), &first_ns, &last_ns));
              if (first_ns > last_ns) continue;
              Splitter splitter(metrics[j], selected[i]->tags, on_label_fields);
              found[i][j].push_back(RawSeries{std::move(splitter.SeriesFor({})->labels), {}, {}});
            }
          }
          return Status::Ok();
        }
        std::vector<std::vector<Column>> cols;
        GPULSE_RETURN_IF_ERROR(ReadColumns(block, fields, NanosOf(lo), EndNanos(hi), &cols));
        for (size_t i = 0; i < block.size(); ++i) {
          std::vector<std::vector<RawSeries>>& out_i = found[begin + i];
          out_i.resize(metrics.size());
          const std::span<const Column> labels(cols[i].data() + metrics.size(), label_columns);
          for (size_t j = 0; j < metrics.size(); ++j) {
            ctx_->CountPoints(cols[i][j].size());
            GPULSE_RETURN_IF_ERROR(ctx_->Charge(cols[i][j].size() * 16, "PromQL samples"));
            Splitter splitter(metrics[j], block[i]->tags, on_label_fields);
            const size_t sc = stale_column[j];
            SplitPoints(cols[i][j], labels, sc == SIZE_MAX ? no_markers : cols[i][sc], &splitter);
            for (RawSeries& r : splitter.series()) {
              if (r.times.empty()) continue;
              if (labels_only) r.times.clear(), r.values.clear();
              out_i[j].push_back(std::move(r));
            }
          }
        }
        return Status::Ok();
      }));
  for (size_t j = 0; j < metrics.size(); ++j) {
    for (auto& per_series : found) {
      if (per_series.empty()) continue;
      for (RawSeries& r : per_series[j]) out->push_back(std::move(r));
    }
  }
  return Status::Ok();
}

Status SeriesSource::SelectMetrics(const std::vector<StoredMetric>& metrics,
                                   const std::vector<Matcher>& matchers, int64_t lo, int64_t hi,
                                   bool labels_only, std::vector<RawSeries>* out) {
  return ForEachMeasurement(metrics, [&](std::span<const StoredMetric> group) {
    return SelectMeasurement(group, matchers, lo, hi, labels_only, out);
  });
}

Status SeriesSource::ForEachMeasurement(
    std::span<const StoredMetric> metrics,
    const std::function<Status(std::span<const StoredMetric> group)>& fn) {
  // Metrics() lists a measurement's metrics together.
  for (size_t begin = 0; begin < metrics.size();) {
    size_t end = begin + 1;
    while (end < metrics.size() && metrics[end].measurement == metrics[begin].measurement) ++end;
    GPULSE_RETURN_IF_ERROR(fn(metrics.subspan(begin, end - begin)));
    begin = end;
  }
  return Status::Ok();
}

namespace {

// A stored series' metric as a PromQL series without label fields: its
// tags and __name__.
Labels LabelsOf(const InSeries& series, const StoredMetric& metric) {
  Labels labels;
  for (const Tag& t : series.tags) labels.push_back(Label{t.key, t.value});
  SetLabel(&labels, kMetricName, metric.name);
  return labels;
}

// The kept tiers no wider than the range, coarsest first: the tiers that
// could hold a window's buckets whole.
std::vector<size_t> FoldTiers(uint32_t kept, int64_t range) {
  std::vector<size_t> out;
  for (size_t t = storage::kTierCount; t-- > 0;) {
    if ((kept & (1u << t)) && storage::kTiers[t].width_ns / kNanosPerMilli <= range) {
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace

Status SeriesSource::FoldWindows(const std::vector<promql::LabelMatcher>& matchers,
                                 std::span<const int64_t> ends, int64_t range, WindowFold fold,
                                 std::vector<StepSeries>* folded, std::vector<RawSeries>* raw) {
  std::vector<Matcher> compiled;
  GPULSE_RETURN_IF_ERROR(Compile(matchers, &compiled));
  std::vector<StoredMetric> metrics;
  GPULSE_RETURN_IF_ERROR(Metrics(compiled, &metrics));
  if (ends.empty()) return Status::Ok();
  const auto [min_end, max_end] = std::minmax_element(ends.begin(), ends.end());
  const int64_t lo = Minus(*min_end, range), hi = *max_end;
  const std::vector<size_t> tiers = FoldTiers(input_->Tiers(), range);
  return ForEachMeasurement(metrics, [&](std::span<const StoredMetric> group) {
    // A string field splits a stored series into PromQL series, which the
    // evaluator folds from their samples.
    if (!group[0].label_fields.empty()) {
      return SelectMeasurement(group, compiled, lo, hi, false, raw);
    }
    return FoldMeasurement(group, compiled, ends, range, fold, tiers, folded);
  });
}

Status SeriesSource::FoldSeries(std::span<const StoredMetric> metrics,
                                std::span<const InSeries* const> block,
                                std::span<const int64_t> ends, int64_t range, WindowFold fold,
                                size_t tier, std::vector<StepSeries>* found,
                                std::vector<uint8_t>* raw_needed) {
  std::vector<std::string> fields;
  for (const StoredMetric& m : metrics) fields.push_back(m.field);
  const auto [min_end, max_end] = std::minmax_element(ends.begin(), ends.end());
  // The buckets that start in [lo, hi) hold every sample of the windows.
  const int64_t width = storage::kTiers[tier].width_ns;
  const int64_t first_ns = NanosOf(Minus(*min_end, range));
  const int64_t lo =
      first_ns < INT64_MIN + width ? INT64_MIN : first_ns - ((first_ns % width) + width) % width;
  const int64_t hi = EndNanos(*max_end);
  std::vector<std::vector<storage::RollupColumn>> rows(
      block.size(), std::vector<storage::RollupColumn>(fields.size()));
  std::vector<uint8_t> disordered(block.size() * fields.size(), 0);
  GPULSE_RETURN_IF_ERROR(input_->ScanRollups(
      block, fields, tier, lo, hi, FoldParts(fold),
      [&](size_t i, size_t f, const storage::RollupColumn& from, size_t r0, size_t r1) {
        storage::RollupColumn& into = rows[i][f];
        if (into.size() == 0) into.Reset(from.type);
        // Runs out of order, or of another type (a field written as integers
        // and then as floats): the raw samples answer.
        if (from.type != into.type) {
          disordered[i * fields.size() + f] = 1;
          return;
        }
        for (size_t r = r0; r < r1; ++r) {
          if (into.size() > 0 && from.bucket[r] <= into.bucket.back()) {
            disordered[i * fields.size() + f] = 1;
          }
          storage::AppendRollupRow(from, r, &into);
        }
      }));
  const size_t n = ends.size();
  found->assign(block.size() * metrics.size(), StepSeries());
  raw_needed->assign(block.size() * metrics.size(), 0);
  for (size_t i = 0; i < block.size(); ++i) {
    for (size_t j = 0; j < metrics.size(); ++j) {
      const storage::RollupColumn& r = rows[i][j];
      ctx_->CountPoints(r.size());
      StepSeries s = EmptySeries(LabelsOf(*block[i], metrics[j]), n);
      bool exact = !disordered[i * fields.size() + j];
      size_t from = 0;
      for (size_t k = 0; k < n && exact; ++k) {
        if (k > 0 && ends[k] < ends[k - 1]) from = 0;  // windows moved back (@)
        bool has = false;
        exact = FoldRows(r, &from, Minus(ends[k], range), ends[k], fold, &s.values[k], &has);
        s.has[k] = has ? 1 : 0;
      }
      const size_t at = i * metrics.size() + j;
      if (!exact) {
        (*raw_needed)[at] = 1;
      } else if (std::find(s.has.begin(), s.has.end(), 1) != s.has.end()) {
        (*found)[at] = std::move(s);
      }
    }
  }
  return Status::Ok();
}

Status SeriesSource::FoldMeasurement(std::span<const StoredMetric> metrics,
                                     const std::vector<Matcher>& matchers,
                                     std::span<const int64_t> ends, int64_t range, WindowFold fold,
                                     std::span<const size_t> tiers,
                                     std::vector<StepSeries>* folded) {
  Selection selection;
  GPULSE_RETURN_IF_ERROR(ListSelected(metrics[0], matchers, &selection));
  const std::vector<const InSeries*>& selected = selection.series;
  if (selected.empty()) return Status::Ok();
  // The series of a measurement share their scrapes' cadence: the first
  // says which tier's buckets the windows hold whole, if any.
  size_t tier = SIZE_MAX;
  for (size_t t : tiers) {
    std::vector<StepSeries> probe;
    std::vector<uint8_t> cut;
    GPULSE_RETURN_IF_ERROR(
        FoldSeries(metrics, std::span(selected.data(), 1), ends, range, fold, t, &probe, &cut));
    if (std::find(cut.begin(), cut.end(), 1) == cut.end()) {
      tier = t;
      break;
    }
  }
  // found[b][i * metrics + j]: series i of block b, metric j folded, from
  // the tier's rows where they answer, else from the raw samples.
  std::vector<std::vector<StepSeries>> found((selected.size() + kBlock - 1) / kBlock);
  GPULSE_RETURN_IF_ERROR(
      ForEachBlock(selected, [&](size_t b, size_t, std::span<const InSeries* const> block) {
        std::vector<uint8_t> raw_needed;
        if (tier != SIZE_MAX) {
          GPULSE_RETURN_IF_ERROR(
              FoldSeries(metrics, block, ends, range, fold, tier, &found[b], &raw_needed));
          if (std::find(raw_needed.begin(), raw_needed.end(), 1) == raw_needed.end()) {
            return Status::Ok();
          }
        } else {
          found[b].assign(block.size() * metrics.size(), StepSeries());
        }
        return FoldRawSeries(metrics, block, raw_needed, ends, range, fold, &found[b]);
      }));
  for (size_t j = 0; j < metrics.size(); ++j) {
    for (size_t i = 0; i < selected.size(); ++i) {
      StepSeries& s = found[i / kBlock][(i % kBlock) * metrics.size() + j];
      if (!s.has.empty()) folded->push_back(std::move(s));
    }
  }
  return Status::Ok();
}

Status SeriesSource::FoldRawSeries(std::span<const StoredMetric> metrics,
                                   std::span<const InSeries* const> block,
                                   const std::vector<uint8_t>& raw_needed,
                                   std::span<const int64_t> ends, int64_t range, WindowFold fold,
                                   std::vector<StepSeries>* found) {
  // The series of the block some of whose metrics need their samples.
  std::vector<size_t> rows;
  std::vector<const InSeries*> series;
  for (size_t i = 0; i < block.size(); ++i) {
    bool any = raw_needed.empty();
    for (size_t j = 0; j < metrics.size() && !any; ++j) any = raw_needed[i * metrics.size() + j];
    if (!any) continue;
    rows.push_back(i);
    series.push_back(block[i]);
  }
  std::vector<std::string> fields;
  for (const StoredMetric& m : metrics) fields.push_back(m.field);
  const auto [min_end, max_end] = std::minmax_element(ends.begin(), ends.end());
  std::vector<std::vector<Column>> cols;
  GPULSE_RETURN_IF_ERROR(
      ReadColumns(series, fields, NanosOf(Minus(*min_end, range)), EndNanos(*max_end), &cols));
  std::vector<double> values;  // one column's, as floats
  RawSeries samples;           // one column's, when two points share a millisecond
  for (size_t x = 0; x < series.size(); ++x) {
    for (size_t j = 0; j < metrics.size(); ++j) {
      const size_t at = rows[x] * metrics.size() + j;
      if (!raw_needed.empty() && !raw_needed[at]) continue;
      const Column& col = cols[x][j];
      if (!IsNumeric(col.type)) continue;
      ctx_->CountPoints(col.size());
      GPULSE_RETURN_IF_ERROR(ctx_->Charge(col.size() * 16, "PromQL samples"));
      StepSeries s = EmptySeries(LabelsOf(*series[x], metrics[j]), ends.size());
      // The column's own values where the fold takes them; as floats for a
      // sum or mean of integers.
      bool folded = false;
      if (col.type == FieldType::kFloat) {
        folded = FoldStoredSamples<double>(col.ts, col.floats, ends, range, fold, &s);
      } else if (fold == WindowFold::kSum || fold == WindowFold::kAvg) {
        ToDoubles(col, &values);
        folded = FoldStoredSamples<double>(col.ts, values, ends, range, fold, &s);
      } else if (col.type == FieldType::kInt) {
        folded = FoldStoredSamples<int64_t>(col.ts, col.ints, ends, range, fold, &s);
      } else if (col.type == FieldType::kUint) {
        folded = FoldStoredSamples<uint64_t>(col.ts, col.uints, ends, range, fold, &s);
      } else {
        folded = FoldStoredSamples<uint8_t>(col.ts, col.bools, ends, range, fold, &s);
      }
      if (!folded) {
        // Two samples of a window in one millisecond: the later, as Select
        // keeps it.
        s = EmptySeries(LabelsOf(*series[x], metrics[j]), ends.size());
        samples.times.clear();
        samples.values.clear();
        AppendColumn(col, &samples);
        FoldSamples(samples.times, samples.values, ends, range, fold, &s);
      }
      (*found)[at] =
          std::find(s.has.begin(), s.has.end(), 1) != s.has.end() ? std::move(s) : StepSeries();
    }
  }
  return Status::Ok();
}

Status SeriesSource::Compile(const std::vector<promql::LabelMatcher>& matchers,
                             std::vector<Matcher>* out) {
  for (const promql::LabelMatcher& m : matchers) {
    auto c = Matcher::Compile(m);
    if (!c.ok()) return c.status();
    out->push_back(std::move(c).value());
  }
  return Status::Ok();
}

Status SeriesSource::Select(const std::vector<promql::LabelMatcher>& matchers, int64_t lo,
                            int64_t hi, bool labels_only, std::vector<RawSeries>* out) {
  std::vector<Matcher> compiled;
  GPULSE_RETURN_IF_ERROR(Compile(matchers, &compiled));
  std::vector<StoredMetric> metrics;
  GPULSE_RETURN_IF_ERROR(Metrics(compiled, &metrics));
  return SelectMetrics(metrics, compiled, lo, hi, labels_only, out);
}

Status SeriesSource::Select(const std::vector<promql::LabelMatcher>& matchers, int64_t lo,
                            int64_t hi, std::vector<RawSeries>* out) {
  return Select(matchers, lo, hi, false, out);
}

Status SeriesSource::LabelSets(const std::vector<promql::LabelMatcher>& matchers, int64_t lo,
                               int64_t hi, std::vector<Labels>* out) {
  std::vector<RawSeries> series;
  GPULSE_RETURN_IF_ERROR(Select(matchers, lo, hi, true, &series));
  for (RawSeries& r : series) out->push_back(std::move(r.labels));
  return Status::Ok();
}

Status SeriesSource::LabelFieldValues(const std::string& measurement, const std::string& field,
                                      int64_t lo, int64_t hi, std::set<std::string>* out) {
  std::vector<InSeries> listed;
  GPULSE_RETURN_IF_ERROR(input_->ListSeries(measurement, {}, &listed));
  const std::string fields[] = {field};
  const uint32_t tiers = input_->Tiers();
  for (const InSeries& s : listed) {
    GPULSE_RETURN_IF_ERROR(ctx_->Poll());
    if (!Readable(s.tags)) continue;
    if (tiers != 0) {
      const size_t tier = static_cast<size_t>(31 - __builtin_clz(tiers));
      GPULSE_RETURN_IF_ERROR(
          input_->ScanTallies(s, fields, tier, NanosOf(lo), EndNanos(hi),
                              [&](size_t, const TallyColumn& rows, size_t begin, size_t end) {
                                for (size_t r = begin; r < end; ++r) {
                                  for (uint32_t v = rows.begin[r]; v < rows.begin[r + 1]; ++v) {
                                    out->insert(rows.values[v]);
                                  }
                                }
                              }));
      continue;
    }
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(input_->Read(s, fields, NanosOf(lo), EndNanos(hi), &cols));
    if (cols[0].type != FieldType::kString) continue;
    ctx_->CountPoints(cols[0].size());
    for (const std::string& v : cols[0].strings) out->insert(v);
  }
  return Status::Ok();
}

}  // namespace gpulse::query::promeval
