#include "query/exec/answer.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <string>
#include <utility>

#include "query/exec/rows.h"
#include "query/runtime/eval.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

// Whether a group's answer can be read straight from its cells: every
// output a cell aggregate alone, over the plan's bucket grid, with FILL(null)
// or FILL(none) and rows in time order. Then `slots` holds each output's slot.
bool CellOutputs(const SelectStatement& s, const Plan& plan, std::vector<size_t>* slots) {
  const bool reorders =
      s.order == SortOrder::kDesc || s.offset.value_or(0) > 0 || (s.limit && *s.limit > 0);
  if (!plan.use_cells || !plan.bucketer || plan.multirow || plan.transformed || reorders ||
      (plan.fill != FillKind::kNull && plan.fill != FillKind::kNone)) {
    return false;
  }
  for (const OutExpr& o : plan.outputs) {
    auto it = plan.slot_of.find(o.expr);
    if (it == plan.slot_of.end()) return false;
    slots->push_back(static_cast<size_t>(it->second));
  }
  return true;
}

// AnswerGroup for a subquery whose outputs are cell aggregates alone, over
// the plan's bucket grid with FILL(null) or FILL(none) and rows in time
// order: typed columns straight from the cells (a fleet's day at 15-minute
// grain is tens of thousands of rows, and per-bucket vectors of values cost
// more than the fold). Null answers are in no column, as AnswerColumn leaves
// them; the row count is that of the general path.
void CellColumns(const Plan& plan, const GroupKey& key, GroupAcc& acc,
                 const std::vector<size_t>& slots, GroupAnswer* out) {
  if (acc.cells.empty()) return;  // no point: no rows
  const size_t ns = plan.slots.size(), nb = plan.grid.count;
  ColumnSeries cs;
  cs.name = plan.measurement;
  cs.tags = TagsOf(plan, key);
  cs.columns.push_back("time");
  for (const OutExpr& o : plan.outputs) cs.columns.push_back(o.name);
  cs.values.resize(slots.size());
  for (size_t k = 0; k < slots.size(); ++k) {
    acc.cells.AppendResults(plan.specs, plan.grid, slots[k], &cs.values[k]);
  }
  size_t present = nb;
  if (plan.fill == FillKind::kNone) {
    present = 0;
    for (size_t i = 0; i < nb; ++i) present += acc.cells.Present(ns, i) ? 1 : 0;
  }
  out->rows = present;
  if (out->rows > 0) out->columns = std::move(cs);
}

// AnswerGroup into ResultSeries::by_column straight from the cells, when
// CellOutputs holds (`slots` is what it gave): the general path's rows (every
// bucket of the range with FILL(null), those with a value with FILL(none))
// without a QueryValue per cell, which cost more than the fold in an answer
// of many rows.
void CellAnswerByColumn(const Plan& plan, const GroupKey& key, GroupAcc& acc,
                        const std::vector<int64_t>& all_buckets, const std::vector<size_t>& slots,
                        GroupAnswer* out) {
  if (acc.cells.empty()) return;  // no point: no rows
  // Each output's column over the whole grid at once. all_buckets is the
  // grid itself with FILL(null) (both come from the range's first and last
  // buckets), and with FILL(none) a superset of this group's buckets with a
  // point.
  ResultSeries rs;
  rs.by_column.resize(slots.size());
  bool any = false;
  for (size_t k = 0; k < slots.size(); ++k) {
    acc.cells.AppendResults(plan.specs, plan.grid, slots[k], &rs.by_column[k]);
    any = any || !rs.by_column[k].ts.empty();
  }
  // Without a value in any column, a bucket may still have points (of a
  // slot no output shows): FILL(null) gives it a row of nulls.
  for (size_t i = 0; i < plan.grid.count && !any; ++i) {
    any = acc.cells.Present(plan.slots.size(), i);
  }
  if (!any) return;
  if (plan.fill == FillKind::kNull) {
    rs.row_times = all_buckets;
  } else if (rs.by_column.size() == 1) {
    rs.row_times = rs.by_column[0].ts;
  } else {
    // FILL(none): the buckets where any column has a value.
    std::vector<int64_t> merged;
    for (const Column& c : rs.by_column) {
      merged.clear();
      std::set_union(rs.row_times.begin(), rs.row_times.end(), c.ts.begin(), c.ts.end(),
                     std::back_inserter(merged));
      rs.row_times.swap(merged);
    }
  }
  if (rs.row_times.empty()) return;
  rs.name = plan.measurement;
  rs.tags = TagsOf(plan, key);
  rs.columns.reserve(plan.outputs.size() + 1);
  rs.columns.push_back("time");
  for (const OutExpr& o : plan.outputs) rs.columns.push_back(o.name);
  out->rows = rs.row_times.size();
  out->series = std::move(rs);
}

// How a statement's groups are answered: the same for every group, so

// ORDER BY time DESC, OFFSET or LIMIT: the rows are reordered or cut.
bool Reorders(const SelectStatement& s) {
  return s.order == SortOrder::kDesc || s.offset.value_or(0) > 0 || (s.limit && *s.limit > 0);
}

// The buckets a group answers for: every bucket of the range, or with
// FILL(none) those where it has points; without GROUP BY time one bucket,
// INT64_MIN. Empty when the group has no point at all.
std::vector<int64_t> GroupBuckets(const Plan& plan, GroupAcc& acc,
                                  const std::vector<int64_t>& all_buckets) {
  bool any = false;
  std::vector<int64_t> with_states;
  acc.ForEach(plan, [&](int64_t b, GroupAcc::States states) {
    with_states.push_back(b);
    // A bucket with cells has a point.
    for (size_t k = 0; k < plan.slots.size(); ++k) any = any || !states || !states[k]->empty();
  });
  if (!any) return {};
  std::vector<int64_t> buckets;
  if (!plan.bucketer) {
    buckets.push_back(INT64_MIN);
  } else if (plan.fill == FillKind::kNone) {
    for (int64_t b : with_states) {
      if (std::binary_search(all_buckets.begin(), all_buckets.end(), b)) buckets.push_back(b);
    }
  } else {
    buckets = all_buckets;
  }
  return buckets;
}

// Each slot's answer in each bucket, each bucket's row time, and which
// buckets had no point.
struct SlotValues {
  std::vector<std::vector<QueryValue>> values;  // [slot][bucket]
  std::vector<bool> empty;                      // [bucket]
  std::vector<int64_t> times;                   // [bucket]
};

SlotValues ValuesOf(const Plan& plan, GroupAcc& acc, const std::vector<int64_t>& buckets) {
  const size_t nb = buckets.size(), ns = plan.slots.size();
  SlotValues v;
  v.values.assign(ns, std::vector<QueryValue>(nb));
  v.empty.assign(nb, true);
  v.times.assign(nb, 0);
  std::vector<std::vector<QueryValue>>& slot_vals = v.values;
  std::vector<bool>& empty_bucket = v.empty;
  std::vector<int64_t>& times = v.times;
  for (size_t bi = 0; bi < nb; ++bi) {
    const int64_t b = buckets[bi];
    times[bi] = plan.bucketer ? b : (plan.has_lo ? plan.lo : 0);
    if (plan.use_cells) {
      const size_t i = plan.bucketer ? plan.BucketIndex(b) : 0;
      if (!acc.cells.Present(ns, i)) continue;
      empty_bucket[bi] = false;
      for (size_t k = 0; k < ns; ++k) {
        int64_t selected = INT64_MIN;
        slot_vals[k][bi] = acc.cells.Result(plan.specs[k], ns, k, i, &selected);
        if (plan.lone_selector && !plan.bucketer && selected != INT64_MIN) times[bi] = selected;
      }
      continue;
    }
    GroupAcc::States states = acc.Find(plan, b);
    if (!states) continue;
    for (size_t k = 0; k < ns; ++k) {
      AggState& state = *states[k];
      if (!state.empty()) empty_bucket[bi] = false;
      slot_vals[k][bi] = state.Result();
      if (plan.lone_selector && !plan.bucketer && state.SelectedTime() != INT64_MIN) {
        times[bi] = state.SelectedTime();
      }
    }
  }
  return v;
}

// FILL(value), FILL(previous) and FILL(linear) for the buckets without points.
void ApplyFill(const Plan& plan, SlotValues* sv) {
  if (!plan.bucketer || plan.fill == FillKind::kNull || plan.fill == FillKind::kNone) return;
  const size_t nb = sv->times.size();
  const std::vector<int64_t>& times = sv->times;
  for (std::vector<QueryValue>& v : sv->values) {
    if (plan.fill == FillKind::kValue) {
      for (size_t bi = 0; bi < nb; ++bi) {
        if (sv->empty[bi]) v[bi] = plan.fill_value;
      }
    } else if (plan.fill == FillKind::kPrevious) {
      for (size_t bi = 1; bi < nb; ++bi) {
        if (sv->empty[bi] && v[bi].index() == 0) v[bi] = v[bi - 1];
      }
    } else if (plan.fill == FillKind::kLinear) {
      size_t prev = SIZE_MAX;
      for (size_t bi = 0; bi < nb; ++bi) {
        if (v[bi].index() == 0) continue;
        double a = 0, c = 0;
        if (prev != SIZE_MAX && bi > prev + 1 && ToDouble(v[prev], &a) && ToDouble(v[bi], &c)) {
          for (size_t m = prev + 1; m < bi; ++m) {
            const double x = a + (c - a) * static_cast<double>(times[m] - times[prev]) /
                                     static_cast<double>(times[bi] - times[prev]);
            v[m] = v[bi].index() == 2 && v[prev].index() == 2 ? QueryValue(static_cast<int64_t>(x))
                                                              : QueryValue(x);
          }
        }
        prev = bi;
      }
    }
  }
}

// top(), bottom() and distinct(): several rows per bucket.
void MultiRows(const Plan& plan, GroupAcc& acc, const std::vector<int64_t>& buckets,
               const std::vector<int64_t>& times, ResultSeries* rs) {
  for (size_t bi = 0; bi < buckets.size(); ++bi) {
    GroupAcc::States states = acc.Find(plan, buckets[bi]);
    if (!states) continue;
    std::vector<std::pair<int64_t, QueryValue>> rows;
    states[0]->Rows(&rows);
    for (auto& [t, v] : rows) {
      // top and bottom answer their points' own times, distinct the bucket's.
      rs->values.push_back({QueryValue(t == INT64_MIN ? times[bi] : t), std::move(v)});
    }
  }
}

// Each output's values per bucket: an aggregate alone takes its slot's
// values (no other expression names that call), an expression is
// evaluated over them.
Status OutputColumns(const Plan& plan, SlotValues* sv, std::vector<std::vector<QueryValue>>* cols) {
  const LeafFn leaf = [&](const Expr& e) -> Result<std::vector<QueryValue>> {
    auto it = plan.slot_of.find(&e);
    if (it == plan.slot_of.end()) return ErrorAt(e, "internal: no slot for " + e.ToString());
    return sv->values[static_cast<size_t>(it->second)];
  };
  for (const OutExpr& o : plan.outputs) {
    if (auto it = plan.slot_of.find(o.expr); it != plan.slot_of.end()) {
      cols->push_back(std::move(sv->values[static_cast<size_t>(it->second)]));
      continue;
    }
    auto v = EvalColumn(*o.expr, sv->times, leaf);
    if (!v.ok()) return v.status();
    cols->push_back(std::move(*v));
  }
  return Status::Ok();
}

// Straight into typed columns for an outer query: no row vectors. A row
// whose outputs are all null (and dropped) is in no column.
void AnswerAsColumns(ResultSeries&& rs, const std::vector<int64_t>& times,
                     const std::vector<std::vector<QueryValue>>& cols, bool drop_empty,
                     GroupAnswer* out) {
  size_t kept = times.size();
  for (size_t bi = 0; bi < times.size() && drop_empty; ++bi) {
    if (std::all_of(cols.begin(), cols.end(), [&](const auto& c) { return c[bi].index() == 0; })) {
      --kept;
    }
  }
  if (kept == 0) return;
  ColumnSeries cs;
  cs.name = std::move(rs.name);
  cs.tags = std::move(rs.tags);
  cs.columns = std::move(rs.columns);
  for (const auto& c : cols) cs.values.push_back(AnswerColumn(times, c));
  out->rows = kept;
  out->columns = std::move(cs);
}

// Typed columns in ResultSeries::by_column, without the rows whose outputs
// are all null (when dropped). False when the rows' times do not strictly
// increase or a column mixes types (FILL(0) among means): rows then.
bool AnswerByColumn(ResultSeries&& rs, const std::vector<int64_t>& times,
                    const std::vector<std::vector<QueryValue>>& cols, bool drop_empty,
                    GroupAnswer* out) {
  const bool strictly_increasing =
      std::adjacent_find(times.begin(), times.end(), std::greater_equal<int64_t>()) == times.end();
  if (!strictly_increasing || !std::all_of(cols.begin(), cols.end(), OfOneType)) return false;
  rs.row_times.reserve(times.size());
  for (size_t bi = 0; bi < times.size(); ++bi) {
    if (!drop_empty ||
        std::any_of(cols.begin(), cols.end(), [&](const auto& c) { return c[bi].index() != 0; })) {
      rs.row_times.push_back(times[bi]);
    }
  }
  if (rs.row_times.empty()) return true;
  rs.by_column.reserve(cols.size());
  for (const auto& c : cols) rs.by_column.push_back(AnswerColumn(times, c));
  out->rows = rs.row_times.size();
  out->series = std::move(rs);
  return true;
}

// The rows, each its time and its outputs' values.
void AppendRows(const std::vector<int64_t>& times, std::vector<std::vector<QueryValue>>* cols,
                bool drop_empty, ResultSeries* rs) {
  for (size_t bi = 0; bi < times.size(); ++bi) {
    std::vector<QueryValue> row;
    row.reserve(cols->size() + 1);
    row.emplace_back(times[bi]);
    bool all_null = true;
    for (auto& c : *cols) {
      all_null = all_null && c[bi].index() == 0;
      row.push_back(std::move(c[bi]));
    }
    if (drop_empty && all_null) continue;
    rs->values.push_back(std::move(row));
  }
}

}  // namespace

AnswerShape AnswerShapeOf(const SelectStatement& s, const Plan& plan, bool as_columns,
                          bool by_column) {
  AnswerShape shape;
  shape.as_columns = as_columns;
  shape.by_column = !as_columns && by_column;
  shape.from_cells =
      (shape.as_columns || shape.by_column) && CellOutputs(s, plan, &shape.cell_slots);
  return shape;
}

Status AnswerGroup(const SelectStatement& s, const Plan& plan, const GroupKey& key, GroupAcc& acc,
                   const std::vector<int64_t>& all_buckets, const AnswerShape& shape,
                   GroupAnswer* out) {
  if (shape.as_columns && shape.from_cells) {
    CellColumns(plan, key, acc, shape.cell_slots, out);
    return Status::Ok();
  }
  if (shape.by_column && shape.from_cells) {
    CellAnswerByColumn(plan, key, acc, all_buckets, shape.cell_slots, out);
    return Status::Ok();
  }
  const std::vector<int64_t> buckets = GroupBuckets(plan, acc, all_buckets);
  if (buckets.empty()) return Status::Ok();
  ResultSeries rs;
  rs.name = plan.measurement;
  rs.tags = TagsOf(plan, key);
  rs.columns.push_back("time");
  for (const OutExpr& o : plan.outputs) rs.columns.push_back(o.name);
  SlotValues values = ValuesOf(plan, acc, buckets);
  ApplyFill(plan, &values);
  if (plan.multirow) {
    MultiRows(plan, acc, buckets, values.times, &rs);
  } else {
    std::vector<std::vector<QueryValue>> cols;
    GPULSE_RETURN_IF_ERROR(OutputColumns(plan, &values, &cols));
    const bool drop_empty = plan.fill == FillKind::kNone || plan.transformed;
    if (shape.as_columns && !Reorders(s)) {
      AnswerAsColumns(std::move(rs), values.times, cols, drop_empty, out);
      return Status::Ok();
    }
    if (shape.by_column && !Reorders(s) &&
        AnswerByColumn(std::move(rs), values.times, cols, drop_empty, out)) {
      return Status::Ok();
    }
    AppendRows(values.times, &cols, drop_empty, &rs);
  }
  OrderAndLimit(s, &rs);
  if (rs.values.empty()) return Status::Ok();
  out->rows = rs.values.size();
  if (shape.as_columns) {
    out->columns = ToColumns(std::move(rs));
  } else {
    out->series = std::move(rs);
  }
  return Status::Ok();
}

}  // namespace gpulse::query
