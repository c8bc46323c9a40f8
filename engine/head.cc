#include "engine/head.h"

#include "engine/column_ops.h"

namespace gpulse::engine {

namespace {
// Fixed cost of a column in the head: the map node and the column's vectors.
constexpr uint64_t kEntryOverhead = sizeof(Head::Entry) + 64;
}  // namespace

void Head::Append(uint32_t series_id, uint32_t field_id, FieldType type, int64_t ts,
                  const FieldValue& value) {
  auto [it, inserted] = entries_.try_emplace(Key(series_id, field_id));
  Entry& entry = it->second;
  if (inserted) {
    entry.series_id = series_id;
    entry.field_id = field_id;
    entry.column.type = type;
    bytes_ += kEntryOverhead;
  }
  std::vector<int64_t>& times = entry.column.ts;
  if (!times.empty() && times.back() == ts) {
    ReplaceLastValue(&entry.column, value);
    return;
  }
  if (!times.empty() && ts < times.back()) entry.sorted = false;
  AppendValue(&entry.column, ts, value);
  bytes_ += HeadBytesPerValue(value);
  ++values_;
  if (ts < min_ts_) min_ts_ = ts;
  if (ts > max_ts_) max_ts_ = ts;
}

void Head::CopyRange(uint32_t series_id, uint32_t field_id, int64_t start, int64_t end,
                     Column* out) const {
  const auto it = entries_.find(Key(series_id, field_id));
  if (it == entries_.end()) return;
  const Entry& entry = it->second;
  if (entry.sorted) {
    AppendRange(entry.column, start, end, out);
    return;
  }
  Column copy = entry.column;
  SortAndDedup(&copy);
  AppendRange(copy, start, end, out);
}

void Head::Seal() {
  for (auto& [key, entry] : entries_) {
    if (!entry.sorted) {
      SortAndDedup(&entry.column);
      entry.sorted = true;
    }
  }
}

}  // namespace gpulse::engine
