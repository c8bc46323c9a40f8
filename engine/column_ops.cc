#include "engine/column_ops.h"

#include <algorithm>
#include <numeric>

#include "engine/wal_batch.h"

namespace gpulse::engine {

namespace {

// Calls fn(vector) with the value vector that matches the column's type.
template <typename Col, typename Fn>
void WithValues(Col& column, Fn&& fn) {
  switch (column.type) {
    case FieldType::kFloat:
      fn(column.floats);
      return;
    case FieldType::kInt:
      fn(column.ints);
      return;
    case FieldType::kUint:
      fn(column.uints);
      return;
    case FieldType::kBool:
      fn(column.bools);
      return;
    case FieldType::kString:
      fn(column.strings);
      return;
  }
}

template <typename Vec>
typename Vec::value_type As(const FieldValueRef& value) {
  using T = typename Vec::value_type;
  if constexpr (std::is_same_v<T, uint8_t>) {
    return std::get<bool>(value) ? 1 : 0;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::string(std::get<std::string_view>(value));
  } else {
    return std::get<T>(value);
  }
}

}  // namespace

void AppendValue(Column* column, int64_t ts, const FieldValueRef& value) {
  column->ts.push_back(ts);
  WithValues(*column,
             [&](auto& values) { values.push_back(As<std::decay_t<decltype(values)>>(value)); });
}

void ReplaceLastValue(Column* column, const FieldValueRef& value) {
  WithValues(*column,
             [&](auto& values) { values.back() = As<std::decay_t<decltype(values)>>(value); });
}

size_t EraseRange(Column* column, int64_t first, int64_t last) {
  std::vector<int64_t>& ts = column->ts;
  size_t kept = 0;
  WithValues(*column, [&](auto& values) {
    for (size_t i = 0; i < ts.size(); ++i) {
      if (ts[i] >= first && ts[i] <= last) continue;
      if (kept != i) {
        ts[kept] = ts[i];
        values[kept] = std::move(values[i]);
      }
      ++kept;
    }
    values.resize(kept);
  });
  const size_t removed = ts.size() - kept;
  ts.resize(kept);
  return removed;
}

void SortAndDedup(Column* column) {
  const size_t n = column->ts.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return column->ts[a] < column->ts[b]; });
  // Of each run of equal timestamps keep the last (the latest write).
  std::vector<uint32_t> keep;
  keep.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (i + 1 < n && column->ts[order[i]] == column->ts[order[i + 1]]) continue;
    keep.push_back(order[i]);
  }
  std::vector<int64_t> ts(keep.size());
  for (size_t i = 0; i < keep.size(); ++i) ts[i] = column->ts[keep[i]];
  column->ts = std::move(ts);
  WithValues(*column, [&](auto& values) {
    std::decay_t<decltype(values)> sorted(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) sorted[i] = std::move(values[keep[i]]);
    values = std::move(sorted);
  });
}

void AppendRange(const Column& src, int64_t start, int64_t end, Column* dst) {
  const auto first = std::lower_bound(src.ts.begin(), src.ts.end(), start);
  const auto last = std::lower_bound(first, src.ts.end(), end);
  AppendPoints(src, first - src.ts.begin(), last - src.ts.begin(), dst);
}

void MergeNewer(const Column& newer, Column* base) {
  if (newer.ts.empty()) return;
  if (base->ts.empty() || newer.ts.front() > base->ts.back()) {
    AppendPoints(newer, 0, newer.ts.size(), base);
    return;
  }
  Column merged;
  merged.type = base->type;
  merged.ts.reserve(base->ts.size() + newer.ts.size());
  WithValues(merged, [&](auto& out) {
    WithValues(*base, [&](auto& old_values) {
      WithValues(newer, [&](const auto& new_values) {
        using V = std::decay_t<decltype(out)>;
        if constexpr (std::is_same_v<V, std::decay_t<decltype(old_values)>> &&
                      std::is_same_v<V, std::decay_t<decltype(new_values)>>) {
          size_t i = 0, j = 0;
          while (i < base->ts.size() || j < newer.ts.size()) {
            const bool take_new =
                i == base->ts.size() || (j < newer.ts.size() && newer.ts[j] <= base->ts[i]);
            if (take_new) {
              if (i < base->ts.size() && base->ts[i] == newer.ts[j]) ++i;  // replaced
              merged.ts.push_back(newer.ts[j]);
              out.push_back(new_values[j++]);
            } else {
              merged.ts.push_back(base->ts[i]);
              out.push_back(std::move(old_values[i++]));
            }
          }
        }
      });
    });
  });
  *base = std::move(merged);
}

}  // namespace gpulse::engine
