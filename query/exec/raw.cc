#include "query/exec/raw.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "query/exec/fold.h"
#include "query/exec/rows.h"
#include "query/runtime/eval.h"
#include "query/runtime/parallel.h"
#include "query/runtime/query_memory.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

struct RowAt {
  int64_t t;
  uint32_t series;
  uint32_t row;
};

struct SeriesRows {
  std::vector<Column> cols;
  std::vector<int64_t> ts;
  std::vector<std::vector<int32_t>> pos;
  std::vector<uint32_t> rows;      // joined rows that passed the condition
  std::vector<GroupKey> row_keys;  // per kept row, when grouping by a string field
};

// A raw SELECT's points over a range, read and joined: each series' rows
// that passed the condition, and each group's rows in time order.
struct RawRows {
  std::vector<SeriesRows> per;  // by position in the series list
  std::map<GroupKey, std::vector<RowAt>> groups;
  uint64_t rows = 0;
};

// Reads `series` over [plan.lo, plan.hi) into *raw, charging the columns and
// joins to `reading`. Past max_rows it fails when `max_rows` is set (a
// streamed answer holds a window's rows, not the answer's).
Status ReadRaw(ExecContext* ctx, Input* input, const Plan& plan,
               const std::vector<InSeries>& series, bool max_rows, ScopedCharge* reading,
               RawRows* raw) {
  raw->per.assign(series.size(), SeriesRows());
  raw->groups.clear();
  std::vector<char> kept(series.size(), 0);
  size_t workers = 1;
  std::atomic<uint64_t> rows_total{0};
  const uint64_t most_rows = max_rows ? ctx->options().limits.max_rows : UINT64_MAX;
  Status st = ParallelFor(
      ctx, series.size(), &workers,
      [&](size_t, size_t i) -> Status {
        const InSeries& in = series[i];
        std::optional<bool> truth = true;
        if (plan.condition) truth = TagTruth(*plan.condition, plan, in);
        if (truth && !*truth) return Status::Ok();
        SeriesRows& sr = raw->per[i];
        GPULSE_RETURN_IF_ERROR(input->Read(in, plan.fields, plan.lo, plan.hi, &sr.cols));
        uint64_t points = 0;
        for (const Column& c : sr.cols) points += c.size();
        if (points == 0) return Status::Ok();
        ctx->series_read.fetch_add(1);
        ctx->CountPoints(points);
        uint64_t bytes = 0;
        for (const Column& c : sr.cols) bytes += ColumnBytes(c);
        Join(sr.cols, &sr.ts, &sr.pos);
        bytes += sr.ts.size() * (sizeof(int64_t) + sizeof(RowAt) +
                                 sr.cols.size() * sizeof(int32_t) + sizeof(uint32_t));
        if (Status charged = reading->Charge(bytes, "the raw points read"); !charged.ok()) {
          ctx->Stop(charged);
          return charged;
        }
        for (size_t r = 0; r < sr.ts.size(); ++r) {
          RowRef row{&in, &sr.cols, &sr.pos, r};
          if (!truth && !IsTrue(EvalRow(*plan.condition, plan, row, ctx->now_ns()))) continue;
          sr.rows.push_back(static_cast<uint32_t>(r));
          if (plan.field_dims) {
            GroupKey key = TagKeyOf(plan, in);
            for (size_t d = 0; d < plan.dims.size(); ++d) {
              const int f = plan.dim_field[d];
              if (f < 0) continue;
              const int32_t p = sr.pos[static_cast<size_t>(f)][r];
              key[d] = p < 0 ? std::string()
                             : sr.cols[static_cast<size_t>(f)].strings[static_cast<size_t>(p)];
            }
            sr.row_keys.push_back(std::move(key));
          }
        }
        kept[i] = !sr.rows.empty();
        if (rows_total.fetch_add(sr.rows.size()) + sr.rows.size() > most_rows) {
          return Status::ResourceExhausted(
              "the answer has more than " + std::to_string(most_rows) +
              " rows (limit max_rows); narrow the time range or add LIMIT");
        }
        return Status::Ok();
      },
      /*min_per_worker=*/8, Split::kDynamic);
  GPULSE_RETURN_IF_ERROR(st);
  for (size_t i = 0; i < series.size(); ++i) {
    if (!kept[i]) continue;
    const SeriesRows& sr = raw->per[i];
    const GroupKey base = TagKeyOf(plan, series[i]);
    for (size_t k = 0; k < sr.rows.size(); ++k) {
      const uint32_t r = sr.rows[k];
      raw->groups[plan.field_dims ? sr.row_keys[k] : base].push_back(
          {sr.ts[r], static_cast<uint32_t>(i), r});
    }
  }
  for (auto& [key, rows] : raw->groups) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const RowAt& a, const RowAt& b) { return a.t < b.t; });
    raw->rows += rows.size();
  }
  return Status::Ok();
}

// Appends to *out each group's answer for its rows in [t_lo, t_hi), charged
// as the answer's.
Status AnswerRaw(ExecContext* ctx, const SelectStatement& s, const Plan& plan,
                 const std::vector<InSeries>& series, const RawRows& raw, int64_t t_lo,
                 int64_t t_hi, std::vector<ResultSeries>* out) {
  const auto before = [](const RowAt& r, int64_t t) { return r.t < t; };
  for (const auto& [key, all] : raw.groups) {
    const auto first = std::lower_bound(all.begin(), all.end(), t_lo, before);
    const auto last = std::lower_bound(first, all.end(), t_hi, before);
    const std::span<const RowAt> rows(first, last);
    if (rows.empty()) continue;
    std::vector<int64_t> times(rows.size());
    for (size_t k = 0; k < rows.size(); ++k) times[k] = rows[k].t;
    const LeafFn leaf = [&](const Expr& e) -> Result<std::vector<QueryValue>> {
      std::vector<QueryValue> v(rows.size());
      if (e.kind != ExprKind::kVarRef) return ErrorAt(e, "internal: unexpected " + e.ToString());
      if (plan.IsField(e)) {
        const auto known = plan.field_index.find(e.text);
        if (known == plan.field_index.end()) return v;
        const int f = known->second;
        for (size_t k = 0; k < rows.size(); ++k) {
          const SeriesRows& sr = raw.per[rows[k].series];
          const int32_t p = sr.pos[static_cast<size_t>(f)][rows[k].row];
          if (p >= 0) v[k] = CellOf(sr.cols[static_cast<size_t>(f)], static_cast<size_t>(p));
        }
      } else {
        for (size_t k = 0; k < rows.size(); ++k) {
          std::string tv = TagValue(series[rows[k].series].tags, e.text);
          if (!tv.empty()) v[k] = std::move(tv);
        }
      }
      return v;
    };
    // Charged before the rows are built: a group's rows are the answer's,
    // held until it is sent.
    GPULSE_RETURN_IF_ERROR(
        ctx->Charge(RowsBytes(rows.size(), plan.outputs.size() + 1), "the answer's rows"));
    std::vector<std::vector<QueryValue>> cols;
    std::vector<bool> is_field_col;
    for (const OutExpr& o : plan.outputs) {
      auto v = EvalColumn(*o.expr, times, leaf);
      if (!v.ok()) return v.status();
      cols.push_back(std::move(*v));
      is_field_col.push_back(!(o.expr->kind == ExprKind::kVarRef && !plan.IsField(*o.expr)));
    }
    ResultSeries rs;
    rs.name = plan.measurement;
    rs.tags = TagsOf(plan, key);
    rs.columns.push_back("time");
    for (const OutExpr& o : plan.outputs) rs.columns.push_back(o.name);
    for (size_t k = 0; k < rows.size(); ++k) {
      bool any_field = false;
      std::vector<QueryValue> row;
      row.reserve(cols.size() + 1);
      row.emplace_back(times[k]);
      for (size_t c = 0; c < cols.size(); ++c) {
        if (is_field_col[c] && cols[c][k].index() != 0) any_field = true;
        row.push_back(std::move(cols[c][k]));
      }
      if (any_field) rs.values.push_back(std::move(row));
    }
    OrderAndLimit(s, &rs);
    if (!rs.values.empty()) out->push_back(std::move(rs));
  }
  return Status::Ok();
}

Status RunRawWhole(ExecContext* ctx, const SelectStatement& s, Input* input, const Plan& plan,
                   const std::vector<InSeries>& series, std::vector<ResultSeries>* out) {
  // The columns read and their joins are held until the answer is built.
  ScopedCharge reading(ctx->memory());
  RawRows raw;
  GPULSE_RETURN_IF_ERROR(ReadRaw(ctx, input, plan, series, /*max_rows=*/true, &reading, &raw));
  return AnswerRaw(ctx, s, plan, series, raw, INT64_MIN, INT64_MAX, out);
}

// [first, last] of the points of `series` in [plan.lo, plan.hi): where the
// query bounds no side of its range, the data's own. first > last: none.
Status RawExtent(ExecContext* ctx, Input* input, const Plan& plan,
                 const std::vector<InSeries>& series, int64_t* first, int64_t* last) {
  std::mutex mu;
  *first = INT64_MAX;
  *last = INT64_MIN;
  size_t workers = 1;
  // kRawChunk series a call: the Db's input reads their chunks' headers
  // with one store iterator, decoding only chunks a bound of the range cuts.
  std::vector<const InSeries*> all(series.size());
  for (size_t i = 0; i < series.size(); ++i) all[i] = &series[i];
  return ParallelFor(
      ctx, (series.size() + kRawChunk - 1) / kRawChunk, &workers,
      [&](size_t, size_t c) -> Status {
        int64_t f = INT64_MAX, l = INT64_MIN;
        const size_t begin = c * kRawChunk, end = std::min(series.size(), begin + kRawChunk);
        GPULSE_RETURN_IF_ERROR(
            input->TimeExtent(std::span<const InSeries* const>(all.data() + begin, end - begin),
                              plan.fields, plan.lo, plan.hi, &f, &l));
        std::lock_guard<std::mutex> lock(mu);
        *first = std::min(*first, f);
        *last = std::max(*last, l);
        return Status::Ok();
      },
      /*min_per_worker=*/2, Split::kDynamic);
}

// Clips [*lo, *hi) to the data's extent in it; *empty when there is none.
Status ClipToData(ExecContext* ctx, Input* input, const Plan& plan,
                  const std::vector<InSeries>& series, int64_t* lo, int64_t* hi, bool* empty) {
  int64_t first = 0, last = 0;
  GPULSE_RETURN_IF_ERROR(RawExtent(ctx, input, plan, series, &first, &last));
  *empty = first > last;
  *lo = std::max(*lo, first);
  *hi = std::min(*hi, last + 1);  // last < INT64_MAX: no point is stored there
  return Status::Ok();
}

// A raw SELECT with LIMIT (and no SLIMIT or SOFFSET) answers the first

// A streamed raw SELECT reads its range a span at a time: a day, aligned as
// the store's chunk windows are (so that each stored window is decoded once),
// or a half, a quarter... of one where a day's points would hold more than a
// quarter of the query's budget, judging from the last span (the first
// assumes a value a minute per series and field, the GPU-minute grain, at
// kReadBytesAValue). Each span's rows are answered and sent in slices of
// about kSliceRows rows.
constexpr int64_t kMinuteNs = 60'000'000'000;
constexpr int64_t kDayNs = 1440 * kMinuteNs;
constexpr int64_t kLeastSpanNs = 1'000'000'000;
constexpr uint64_t kReadBytesAValue = 32;  // its column's 16, the join's and the row's
constexpr uint64_t kSliceRows = 50'000;
// A range bounded on both sides but longer than this many days is clipped to
// the data's extent first.
constexpr int64_t kExtentAfterSpans = 64;

// Sends a span's rows to ctx->emit in time slices of about kSliceRows rows
// (later slices first under ORDER BY time DESC), each slice's charge given
// back once it is sent.
Status EmitRawSpan(ExecContext* ctx, const SelectStatement& s, const Plan& plan,
                   const std::vector<InSeries>& series, const RawRows& raw, int64_t lo,
                   int64_t hi) {
  const uint64_t slices = std::max<uint64_t>(1, (raw.rows + kSliceRows - 1) / kSliceRows);
  const int64_t width = std::max<int64_t>(1, (hi - lo) / static_cast<int64_t>(slices) + 1);
  const bool desc = s.order == SortOrder::kDesc;
  for (int64_t edge = desc ? hi : lo; desc ? edge > lo : edge < hi;) {
    int64_t a, b;
    if (desc) {
      b = edge;
      a = edge - lo > width ? edge - width : lo;
      edge = a;
    } else {
      a = edge;
      b = hi - edge > width ? edge + width : hi;
      edge = b;
    }
    const uint64_t held_before = ctx->memory() != nullptr ? ctx->memory()->held() : 0;
    std::vector<ResultSeries> pieces;
    GPULSE_RETURN_IF_ERROR(AnswerRaw(ctx, s, plan, series, raw, a, b, &pieces));
    for (const ResultSeries& piece : pieces) {
      if (!ctx->emit(piece)) return Status::Cancelled("the client stopped reading the answer");
    }
    pieces.clear();
    if (ctx->memory() != nullptr) ctx->memory()->ReleaseTo(held_before);  // the rows were sent
    GPULSE_RETURN_IF_ERROR(ctx->Poll());
  }
  return Status::Ok();
}

}  // namespace

Status RunRaw(ExecContext* ctx, const SelectStatement& s, Input* input, Plan* plan,
              const std::vector<InSeries>& series, std::vector<ResultSeries>* out) {
  if (!s.limit || *s.limit <= 0 || s.slimit || s.soffset || plan->field_dims || series.empty()) {
    return RunRawWhole(ctx, s, input, *plan, series, out);
  }
  int64_t lo = plan->lo, hi = plan->hi;
  if (!plan->has_lo || !plan->has_hi) {
    bool empty = false;
    GPULSE_RETURN_IF_ERROR(ClipToData(ctx, input, *plan, series, &lo, &hi, &empty));
    if (empty) return Status::Ok();
  }
  std::set<GroupKey> groups;
  for (const InSeries& in : series) groups.insert(TagKeyOf(*plan, in));
  const size_t limit = static_cast<size_t>(*s.limit);
  const __int128 rows =
      static_cast<__int128>(*s.limit) + std::max<int64_t>(0, s.offset.value_or(0));
  const bool desc = s.order == SortOrder::kDesc;
  constexpr int64_t kRowNs = 60'000'000'000;  // a minute a row: the GPU-minute grain
  for (__int128 width = rows * kRowNs;; width *= 4) {
    const bool whole = width >= static_cast<__int128>(hi) - lo;
    Plan window = *plan;
    window.has_lo = window.has_hi = true;
    window.lo = whole || !desc ? lo : static_cast<int64_t>(hi - width);
    window.hi = whole || desc ? hi : static_cast<int64_t>(lo + width);
    std::vector<ResultSeries> got;
    GPULSE_RETURN_IF_ERROR(RunRawWhole(ctx, s, input, window, series, &got));
    size_t complete = 0;
    for (const ResultSeries& rs : got) {
      complete += (rs.by_column.empty() ? rs.values.size() : rs.row_times.size()) >= limit;
    }
    if (whole || complete >= groups.size()) {
      *out = std::move(got);
      return Status::Ok();
    }
    GPULSE_RETURN_IF_ERROR(ctx->Poll());
  }
}

Status StreamRaw(ExecContext* ctx, const SelectStatement& s, Input* input, const Plan& plan,
                 const std::vector<InSeries>& series) {
  int64_t lo = plan.lo, hi = plan.hi;
  // Where the query leaves a side open, or its range would take many spans
  // (`time > 0`), the data's own extent bounds it: no span over empty time
  // reads every series.
  if (!plan.has_lo || !plan.has_hi ||
      static_cast<__int128>(hi) - lo > static_cast<__int128>(kExtentAfterSpans) * kDayNs) {
    bool empty = false;
    GPULSE_RETURN_IF_ERROR(ClipToData(ctx, input, plan, series, &lo, &hi, &empty));
    if (empty) return Status::Ok();
  }
  const bool desc = s.order == SortOrder::kDesc;
  const uint64_t budget = ctx->memory() != nullptr ? ctx->memory()->limit() : UINT64_MAX;
  const uint64_t values_a_day =
      static_cast<uint64_t>(series.size()) * std::max<size_t>(plan.fields.size(), 1) * 1440;
  // The span: a day divided by 2^halvings.
  int halvings = 0;
  while (halvings < 40 && (kDayNs >> halvings) > kLeastSpanNs &&
         (values_a_day >> halvings) * kReadBytesAValue > budget / 4) {
    ++halvings;
  }
  for (int64_t edge = desc ? hi : lo; desc ? edge > lo : edge < hi;) {
    const int64_t span = std::max(kDayNs >> halvings, kLeastSpanNs);
    // From `edge` to the span boundary past it (before it, descending):
    // after the span widens, the first window is the rest of a wider span,
    // so that no time is read twice. In 128 bits: the boundary may lie
    // past either end of int64.
    Plan window = plan;
    window.has_lo = window.has_hi = true;
    if (desc) {
      const __int128 start = static_cast<__int128>(edge - 1) - FloorMod(edge - 1, span);
      window.hi = edge;
      window.lo = static_cast<int64_t>(std::max<__int128>(lo, start));
      edge = window.lo;
    } else {
      const __int128 end = static_cast<__int128>(edge) - FloorMod(edge, span) + span;
      window.lo = edge;
      window.hi = static_cast<int64_t>(std::min<__int128>(hi, end));
      edge = window.hi;
    }
    uint64_t held = 0;
    {
      ScopedCharge reading(ctx->memory());
      RawRows raw;
      GPULSE_RETURN_IF_ERROR(
          ReadRaw(ctx, input, window, series, /*max_rows=*/false, &reading, &raw));
      held = ctx->memory() != nullptr ? ctx->memory()->held() : 0;
      GPULSE_RETURN_IF_ERROR(EmitRawSpan(ctx, s, window, series, raw, window.lo, window.hi));
    }
    GPULSE_RETURN_IF_ERROR(ctx->Poll());
    // The next span: half as wide when this one's points held more than a
    // quarter of the budget, twice as wide (up to a day) when less than a
    // sixteenth.
    if (held > budget / 4 && (kDayNs >> (halvings + 1)) >= kLeastSpanNs) {
      ++halvings;
    } else if (held < budget / 16 && halvings > 0) {
      --halvings;
    }
  }
  return Status::Ok();
}

}  // namespace gpulse::query
