#include "query/runtime/inputs.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "query/runtime/eval.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

bool IsNumber(FieldType t) {
  return t == FieldType::kFloat || t == FieldType::kInt || t == FieldType::kUint;
}

// AnswerColumn's type (inputs.h); null for no value at all.
std::optional<FieldType> AnswerType(const std::vector<QueryValue>& values) {
  std::optional<FieldType> number, other;
  for (const QueryValue& v : values) {
    switch (v.index()) {
      case 1:
      case 2:
      case 3: {
        const FieldType t = v.index() == 1   ? FieldType::kFloat
                            : v.index() == 2 ? FieldType::kInt
                                             : FieldType::kUint;
        number = !number || *number == t ? t : FieldType::kFloat;
        break;
      }
      case 4:
        if (!other) other = FieldType::kBool;
        break;
      case 5:
        if (!other) other = FieldType::kString;
        break;
      default:
        break;
    }
  }
  return other ? other : number;
}

// Appends v at time t to col as col's type. Nulls, and values of another
// type that do not convert (a string among numbers), are left out.
void AppendAnswer(Column* col, int64_t t, const QueryValue& v) {
  switch (col->type) {
    case FieldType::kFloat: {
      double d = 0;
      if (!ToDouble(v, &d)) return;
      col->floats.push_back(d);
      break;
    }
    case FieldType::kInt:
      if (v.index() != 2) return;
      col->ints.push_back(std::get<int64_t>(v));
      break;
    case FieldType::kUint:
      if (v.index() != 3) return;
      col->uints.push_back(std::get<uint64_t>(v));
      break;
    case FieldType::kBool:
      if (v.index() != 4) return;
      col->bools.push_back(std::get<bool>(v) ? 1 : 0);
      break;
    case FieldType::kString:
      if (v.index() != 5) return;
      col->strings.push_back(std::get<std::string>(v));
      break;
  }
  col->ts.push_back(t);
}

// Puts a column's points in time order (stable: equal times keep their
// order). A subquery's rows may come in any order (ORDER BY time DESC).
void SortColumn(Column* col) {
  if (std::is_sorted(col->ts.begin(), col->ts.end())) return;
  std::vector<size_t> order(col->ts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return col->ts[a] < col->ts[b]; });
  Column sorted;
  sorted.type = col->type;
  for (size_t i : order) storage::AppendPoints(*col, i, i + 1, &sorted);
  *col = std::move(sorted);
}

}  // namespace

Column AnswerColumn(const std::vector<int64_t>& times, const std::vector<QueryValue>& values) {
  Column col;
  col.type = AnswerType(values).value_or(FieldType::kFloat);
  col.ts.reserve(times.size());
  for (size_t r = 0; r < times.size() && r < values.size(); ++r) {
    AppendAnswer(&col, times[r], values[r]);
  }
  SortColumn(&col);
  return col;
}

bool OfOneType(const std::vector<QueryValue>& values) {
  size_t kind = 0;
  for (const QueryValue& v : values) {
    if (v.index() == 0) continue;
    if (kind != 0 && v.index() != kind) return false;
    kind = v.index();
  }
  return true;
}

ColumnSeries ToColumns(ResultSeries&& rs) {
  ColumnSeries c;
  c.name = std::move(rs.name);
  c.tags = std::move(rs.tags);
  c.columns = std::move(rs.columns);
  const size_t width = c.columns.empty() ? 0 : c.columns.size() - 1;
  // Rows whose time is not an integer are left out.
  std::vector<int64_t> times;
  std::vector<std::vector<QueryValue>> values(width);
  for (auto& row : rs.values) {
    if (row.empty() || row[0].index() != 2) continue;
    times.push_back(std::get<int64_t>(row[0]));
    for (size_t k = 0; k < width; ++k) {
      values[k].push_back(k + 1 < row.size() ? std::move(row[k + 1]) : QueryValue{});
    }
  }
  for (size_t k = 0; k < width; ++k) c.values.push_back(AnswerColumn(times, values[k]));
  return c;
}

namespace {

class DbInput final : public Input {
 public:
  explicit DbInput(ExecContext* ctx) : ctx_(ctx), database_(ctx->options().database) {}

  Status Measurements(std::vector<std::string>* out) override {
    if (database_.empty()) return ctx_->db()->ListMeasurements(out);
    std::vector<Series> all;
    GPULSE_RETURN_IF_ERROR(ctx_->db()->ListSeries("", {{"db", database_}}, &all));
    std::set<std::string> names;
    for (const Series& s : all) names.insert(s.measurement);
    out->assign(names.begin(), names.end());
    return Status::Ok();
  }

  Status ListSeries(const std::string& measurement, const std::vector<TagMatcher>& eq,
                    std::vector<InSeries>* out) override {
    std::vector<TagMatcher> matchers = eq;
    if (!database_.empty()) matchers.push_back({"db", database_});
    // In key order (Db::ListSeries), whatever order they were first written
    // in: ties in time then break the same way on every run.
    std::vector<Series> found;
    std::vector<SeriesId> ids;
    GPULSE_RETURN_IF_ERROR(ctx_->db()->ListSeries(measurement, matchers, &found, &ids));
    out->reserve(found.size());
    // The reads go by id: the tags are only what the query sees, moved
    // out of the listing.
    for (size_t i = 0; i < found.size(); ++i) {
      InSeries& in = out->emplace_back();
      in.id = ids[i];
      in.tags = std::move(found[i].tags);
      if (!database_.empty()) {
        std::erase_if(in.tags, [](const Tag& t) { return t.key == "db"; });
      }
    }
    return Status::Ok();
  }

  // Like the field catalog, the tag keys are the measurement's across
  // databases: which names are tags does not depend on the database asked.
  Status TagKeys(const std::string& measurement, std::set<std::string>* out) override {
    std::vector<std::string> keys;
    GPULSE_RETURN_IF_ERROR(ctx_->db()->ListTagKeys(measurement, &keys));
    for (std::string& k : keys) {
      if (database_.empty() || k != "db") out->insert(std::move(k));
    }
    return Status::Ok();
  }

  Status Fields(const std::string& measurement, std::vector<FieldInfo>* out) override {
    return ctx_->db()->ListFields(measurement, out);
  }

  // Reads go by the ids ListSeries gave, which stay valid for the life of
  // the data directory: a series dropped since it was listed reads as
  // having no points.
  // A series whose stored data is damaged (Corruption) is left out (a scan
  // may have handed over its runs before the damaged window), and the
  // answer says so: the other series are still answered.
  Status Read(const InSeries& s, std::span<const std::string> fields, int64_t lo, int64_t hi,
              std::vector<Column>* out) override {
    Status st = ctx_->db()->ReadSeries(s.id, fields, lo, hi, out);
    if (!st.IsCorruption()) return st;
    ctx_->NoteDamage(st);
    out->assign(fields.size(), Column());
    return Status::Ok();
  }

  Status Scan(const InSeries& s, std::span<const std::string> fields, int64_t lo, int64_t hi,
              const Db::PointRunVisitor& fn, const Db::PackedRunVisitor* packed) override {
    return Damaged(ctx_->db()->ScanSeries(s.id, fields, lo, hi, fn, packed));
  }

  Status Scan(std::span<const InSeries* const> series, std::span<const std::string> fields,
              int64_t lo, int64_t hi, const Db::SeriesRunVisitor& fn,
              const Db::SeriesPackedVisitor* packed) override {
    std::vector<SeriesId> ids(series.size());
    for (size_t s = 0; s < series.size(); ++s) ids[s] = series[s]->id;
    return Damaged(ctx_->db()->ScanSeries(ids, fields, lo, hi, fn, packed));
  }

  Status TimeExtent(std::span<const InSeries* const> series, std::span<const std::string> fields,
                    int64_t lo, int64_t hi, int64_t* first, int64_t* last) override {
    std::vector<SeriesId> ids(series.size());
    for (size_t s = 0; s < series.size(); ++s) ids[s] = series[s]->id;
    int64_t f = INT64_MAX, l = INT64_MIN;
    const Status st = Damaged(ctx_->db()->TimeExtent(ids, fields, lo, hi, &f, &l));
    *first = std::min(*first, f);
    *last = std::max(*last, l);
    return st;
  }

  // A Corruption noted for the answer, and the read carried on.
  Status Damaged(Status st) {
    if (!st.IsCorruption()) return st;
    ctx_->NoteDamage(st);
    return Status::Ok();
  }

  // Tier scans likewise: the Db reads every other series and field past a
  // damaged block and then says Corruption.
  uint32_t Tiers() const override { return ctx_->db()->KeptTiers(); }
  Status ScanRollups(const InSeries& s, std::span<const std::string> fields, size_t tier,
                     int64_t lo, int64_t hi, uint32_t parts, const Db::RollupVisitor& fn) override {
    return Damaged(ctx_->db()->ScanRollups(s.id, fields, tier, lo, hi, parts, fn));
  }
  Status ScanRollups(std::span<const InSeries* const> series, std::span<const std::string> fields,
                     size_t tier, int64_t lo, int64_t hi, uint32_t parts,
                     const Db::SeriesRollupVisitor& fn) override {
    std::vector<SeriesId> ids(series.size());
    for (size_t s = 0; s < series.size(); ++s) ids[s] = series[s]->id;
    return Damaged(ctx_->db()->ScanRollups(ids, fields, tier, lo, hi, parts, fn));
  }
  Status ScanTallies(const InSeries& s, std::span<const std::string> fields, size_t tier,
                     int64_t lo, int64_t hi, const Db::TallyVisitor& fn) override {
    return Damaged(ctx_->db()->ScanTallies(s.id, fields, tier, lo, hi, fn));
  }

 private:
  ExecContext* ctx_;
  std::string database_;
};

// A subquery's answer as an input: each result series is a series, its
// columns (but time) are fields, its null cells are absent points.
class ResultInput final : public Input {
 public:
  // A field's type is its columns' when they agree, float when they do not
  // (numbers of several kinds), float for a field with no values at all.
  explicit ResultInput(std::vector<ColumnSeries> series) : series_(std::move(series)) {
    std::map<std::string, std::map<std::string, std::optional<FieldType>>> seen;
    for (const ColumnSeries& s : series_) {
      auto& fields = fields_[s.name];
      for (size_t c = 1; c < s.columns.size() && c - 1 < s.values.size(); ++c) {
        const Column& col = s.values[c - 1];
        auto it = std::find_if(fields.begin(), fields.end(),
                               [&](const FieldInfo& f) { return f.name == s.columns[c]; });
        if (it == fields.end()) {
          fields.push_back({s.columns[c], FieldType::kFloat});
          it = fields.end() - 1;
        }
        if (col.ts.empty()) continue;
        std::optional<FieldType>& type = seen[s.name][s.columns[c]];
        if (!type) {
          type = col.type;
        } else if (*type != col.type) {
          type = FieldType::kFloat;
        }
        it->type = *type;
      }
    }
  }

  Status Measurements(std::vector<std::string>* out) override {
    for (const auto& [name, _] : fields_) out->push_back(name);
    return Status::Ok();
  }

  Status ListSeries(const std::string& measurement, const std::vector<TagMatcher>& eq,
                    std::vector<InSeries>* out) override {
    for (size_t i = 0; i < series_.size(); ++i) {
      const ColumnSeries& s = series_[i];
      if (s.name != measurement) continue;
      bool match = true;
      for (const TagMatcher& m : eq) {
        auto it = std::find_if(s.tags.begin(), s.tags.end(),
                               [&](const Tag& t) { return t.key == m.key; });
        if (it == s.tags.end() || it->value != m.value) match = false;
      }
      if (!match) continue;
      InSeries in;  // in.series stays empty: Read and Scan find it by `source`
      in.tags = s.tags;
      in.source = i;
      out->push_back(std::move(in));
    }
    return Status::Ok();
  }

  Status TagKeys(const std::string& measurement, std::set<std::string>* out) override {
    for (const ColumnSeries& s : series_) {
      if (s.name != measurement) continue;
      for (const Tag& t : s.tags) out->insert(t.key);
    }
    return Status::Ok();
  }

  Status Fields(const std::string& measurement, std::vector<FieldInfo>* out) override {
    auto it = fields_.find(measurement);
    if (it != fields_.end()) *out = it->second;
    return Status::Ok();
  }

  Status Read(const InSeries& in, std::span<const std::string> fields, int64_t lo, int64_t hi,
              std::vector<Column>* out) override {
    out->assign(fields.size(), Column{});
    for (size_t f = 0; f < fields.size(); ++f) {
      FieldType type;
      const Column* col = Find(in, fields[f], &type);
      if (col == nullptr) continue;
      Column& into = (*out)[f];
      into.type = type;
      const auto [begin, end] = Span(*col, lo, hi);
      if (col->type == type) {
        storage::AppendPoints(*col, begin, end, &into);
        continue;
      }
      // The series disagree on the field's type, which is then float:
      // numbers convert; strings and bools do not, and are left out.
      if (type != FieldType::kFloat || !IsNumber(col->type)) continue;
      for (size_t i = begin; i < end; ++i) {
        into.ts.push_back(col->ts[i]);
        into.floats.push_back(storage::NumberAt(*col, i));
      }
    }
    return Status::Ok();
  }

  // The columns in place, when they have their field's type (no copy).
  Status Scan(const InSeries& in, std::span<const std::string> fields, int64_t lo, int64_t hi,
              const Db::PointRunVisitor& fn, const Db::PackedRunVisitor* packed) override {
    for (size_t f = 0; f < fields.size(); ++f) {
      FieldType type;
      const Column* col = Find(in, fields[f], &type);
      if (col != nullptr && col->type != type) return Input::Scan(in, fields, lo, hi, fn, packed);
    }
    for (size_t f = 0; f < fields.size(); ++f) {
      FieldType type;
      const Column* col = Find(in, fields[f], &type);
      if (col == nullptr) continue;
      const auto [begin, end] = Span(*col, lo, hi);
      if (begin < end) fn(f, *col, begin, end);
    }
    return Status::Ok();
  }

 private:
  // Series in's column of `field` and the field's type; null when it has none.
  const Column* Find(const InSeries& in, const std::string& field, FieldType* type) const {
    const ColumnSeries& s = series_[in.source];
    auto types = fields_.find(s.name);
    if (types == fields_.end()) return nullptr;
    auto ti = std::find_if(types->second.begin(), types->second.end(),
                           [&](const FieldInfo& x) { return x.name == field; });
    auto ci = std::find(s.columns.begin(), s.columns.end(), field);
    if (ti == types->second.end() || ci == s.columns.end() || ci == s.columns.begin()) {
      return nullptr;
    }
    const size_t k = static_cast<size_t>(ci - s.columns.begin()) - 1;
    if (k >= s.values.size()) return nullptr;
    *type = ti->type;
    return &s.values[k];
  }

  // The positions of col's points with lo <= ts < hi.
  static std::pair<size_t, size_t> Span(const Column& col, int64_t lo, int64_t hi) {
    const auto b = std::lower_bound(col.ts.begin(), col.ts.end(), lo);
    const auto e = std::lower_bound(b, col.ts.end(), hi);
    return {static_cast<size_t>(b - col.ts.begin()), static_cast<size_t>(e - col.ts.begin())};
  }

  std::vector<ColumnSeries> series_;
  std::map<std::string, std::vector<FieldInfo>> fields_;
};

}  // namespace

std::unique_ptr<Input> DbSeriesInput(ExecContext* ctx) { return std::make_unique<DbInput>(ctx); }

std::unique_ptr<Input> AnswerInput(std::vector<ColumnSeries> series) {
  return std::make_unique<ResultInput>(std::move(series));
}

}  // namespace gpulse::query
