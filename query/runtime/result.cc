#include "query/runtime/result.h"

#include <algorithm>

namespace gpulse {

QueryValue ResultSeries::At(size_t row, size_t column) const {
  if (by_column.empty()) return values[row][column];
  if (column == 0) return row_times[row];
  const Column& c = by_column[column - 1];
  const auto it = std::lower_bound(c.ts.begin(), c.ts.end(), row_times[row]);
  if (it == c.ts.end() || *it != row_times[row]) return QueryValue();
  return query::CellOf(c, static_cast<size_t>(it - c.ts.begin()));
}

namespace query {

QueryValue CellOf(const Column& c, size_t i) {
  switch (c.type) {
    case FieldType::kFloat:
      return c.floats[i];
    case FieldType::kInt:
      return c.ints[i];
    case FieldType::kUint:
      return c.uints[i];
    case FieldType::kBool:
      return c.bools[i] != 0;
    case FieldType::kString:
      return c.strings[i];
  }
  return std::monostate{};
}

}  // namespace query

}  // namespace gpulse
