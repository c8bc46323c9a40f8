#include "query/exec/fold.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "query/runtime/eval.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

// Compare(x, k) of a value of a numeric column and a test's constant (an
// integer or a float), on their own types: two integers exactly, else as
// doubles, as Compare does.
template <typename T>
int CompareToConstant(T x, const QueryValue& k) {
  if constexpr (std::is_same_v<T, int64_t>) {
    if (k.index() == 2) {
      const int64_t y = std::get<int64_t>(k);
      return x < y ? -1 : (x > y ? 1 : 0);
    }
  }
  const double a = static_cast<double>(x);
  const double b = k.index() == 2 ? static_cast<double>(std::get<int64_t>(k)) : std::get<double>(k);
  if (std::isnan(a) || std::isnan(b)) return 2;
  return a < b ? -1 : (a > b ? 1 : 0);
}

template <typename T>
void KeepPassingTyped(const std::vector<T>& values, size_t begin, size_t end,
                      const std::vector<Plan::FieldTestSpec>& tests, std::vector<uint32_t>* kept) {
  for (size_t i = begin; i < end; ++i) {
    bool pass = true;
    for (const Plan::FieldTestSpec& test : tests) {
      int c = CompareToConstant(values[i], test.constant);
      if (!test.field_left && c != 2) c = -c;
      if (!ComparisonHolds(test.op, c).value_or(false)) {
        pass = false;
        break;
      }
    }
    if (pass) kept->push_back(static_cast<uint32_t>(i));
  }
}

}  // namespace

void KeepPassing(const Column& col, size_t begin, size_t end,
                 const std::vector<Plan::FieldTestSpec>& tests, std::vector<uint32_t>* kept) {
  switch (col.type) {
    case FieldType::kFloat:
      return KeepPassingTyped(col.floats, begin, end, tests, kept);
    case FieldType::kInt:
      return KeepPassingTyped(col.ints, begin, end, tests, kept);
    case FieldType::kUint:
      return KeepPassingTyped(col.uints, begin, end, tests, kept);
    default:
      break;
  }
  for (size_t i = begin; i < end; ++i) {
    const QueryValue v = CellOf(col, i);
    bool pass = true;
    for (const Plan::FieldTestSpec& test : tests) {
      if (!IsTrue(test.field_left ? ApplyBinary(test.op, v, test.constant)
                                  : ApplyBinary(test.op, test.constant, v))) {
        pass = false;
        break;
      }
    }
    if (pass) kept->push_back(static_cast<uint32_t>(i));
  }
}

void FoldIndexes(const Plan& plan, GroupAcc* g, size_t slot, const Column& col,
                 const std::vector<uint32_t>& idx) {
  size_t i = 0;
  if (plan.use_cells) {
    // Runs of consecutive positions, each folded whole.
    while (i < idx.size()) {
      size_t j = i + 1;
      while (j < idx.size() && idx[j] == idx[j - 1] + 1) ++j;
      g->cells.AddRange(plan.specs, plan.grid, slot, col, idx[i],
                        static_cast<size_t>(idx[j - 1]) + 1);
      i = j;
    }
    return;
  }
  while (i < idx.size()) {
    size_t j = idx.size();
    int64_t b = INT64_MIN;
    if (plan.bucketer) {
      b = plan.bucketer->Start(col.ts[idx[i]]);
      const int64_t next = plan.bucketer->Next(b);
      j = i + 1;
      while (j < idx.size() && col.ts[idx[j]] < next) ++j;
    }
    g->Get(plan, b)[slot]->AddIndexes(col, idx.data() + i, j - i);
    i = j;
  }
}

void Join(const std::vector<Column>& cols, std::vector<int64_t>* ts,
          std::vector<std::vector<int32_t>>* pos) {
  ts->clear();
  const Column* first = nullptr;
  bool same = true;
  for (const Column& c : cols) {
    if (c.ts.empty()) continue;
    if (!first) {
      first = &c;
    } else if (c.ts != first->ts) {
      same = false;
    }
  }
  pos->assign(cols.size(), {});
  if (!first) return;
  if (same) {
    *ts = first->ts;
  } else {
    for (const Column& c : cols) ts->insert(ts->end(), c.ts.begin(), c.ts.end());
    std::sort(ts->begin(), ts->end());
    ts->erase(std::unique(ts->begin(), ts->end()), ts->end());
  }
  for (size_t f = 0; f < cols.size(); ++f) {
    std::vector<int32_t>& p = (*pos)[f];
    p.assign(ts->size(), -1);
    const Column& c = cols[f];
    size_t k = 0;
    for (size_t r = 0; r < ts->size() && k < c.ts.size(); ++r) {
      if (c.ts[k] == (*ts)[r]) p[r] = static_cast<int32_t>(k++);
    }
  }
}

GroupKey TagKeyOf(const Plan& plan, const InSeries& s) {
  GroupKey key;
  key.reserve(plan.dims.size());
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    key.push_back(plan.dim_field[d] < 0 ? TagValue(s.tags, plan.dims[d]) : std::string());
  }
  return key;
}

std::vector<Tag> TagsOf(const Plan& plan, const GroupKey& key) {
  std::vector<Tag> tags;
  for (size_t d = 0; d < plan.dims.size(); ++d) tags.push_back({plan.dims[d], key[d]});
  return tags;
}

void FoldSlotRange(const Plan& plan, GroupAcc* g, size_t slot, const Column& col, size_t begin,
                   size_t end) {
  if (plan.use_cells) {
    g->cells.AddRange(plan.specs, plan.grid, slot, col, begin, end);
    return;
  }
  size_t i0 = begin;
  while (i0 < end) {
    int64_t b = INT64_MIN;
    size_t i1 = end;
    if (plan.bucketer) {
      b = plan.bucketer->Start(col.ts[i0]);
      const int64_t next = plan.bucketer->Next(b);
      // Runs are mostly short (a 5m bucket of minute samples): scan a
      // few points before falling back to a binary search.
      i1 = i0 + 1;
      const size_t scan_end = std::min(end, i0 + 16);
      while (i1 < scan_end && col.ts[i1] < next) ++i1;
      if (i1 == scan_end && i1 < end && col.ts[i1] < next) {
        i1 = static_cast<size_t>(std::lower_bound(col.ts.begin() + static_cast<ptrdiff_t>(i1),
                                                  col.ts.begin() + static_cast<ptrdiff_t>(end),
                                                  next) -
                                 col.ts.begin());
      }
    }
    g->Get(plan, b)[slot]->AddRange(col, i0, i1);
    i0 = i1;
  }
}

void FoldColumns(const Plan& plan, GroupAcc* g, const std::vector<Column>& cols) {
  for (size_t slot = 0; slot < plan.slots.size(); ++slot) {
    const int f = plan.slots[slot].field;
    if (f < 0) continue;
    const Column& col = cols[static_cast<size_t>(f)];
    FoldSlotRange(plan, g, slot, col, 0, col.size());
  }
}

}  // namespace gpulse::query
