#include "engine/head.h"

#include "engine/column_ops.h"

namespace gpulse::engine {

namespace {
// Fixed cost of a column in the head: the map node and the column's vectors.
constexpr uint64_t kEntryOverhead = sizeof(Head::Entry) + 64;
}  // namespace

void Head::Append(uint32_t series_id, uint32_t field_id, FieldType type, int64_t ts,
                  const FieldValue& value) {
  if (series_id >= series_.size()) series_.resize(series_id + 1);
  std::vector<Entry>& columns = series_[series_id];
  Entry* found = nullptr;
  for (Entry& e : columns) {
    if (e.field_id == field_id) {
      found = &e;
      break;
    }
  }
  if (found == nullptr) {
    found = &columns.emplace_back();
    found->series_id = series_id;
    found->field_id = field_id;
    found->column.type = type;
    bytes_ += kEntryOverhead;
  }
  Entry& entry = *found;
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
  const Entry* found = Find(series_id, field_id);
  if (found == nullptr) return;
  const Entry& entry = *found;
  if (entry.sorted) {
    AppendRange(entry.column, start, end, out);
    return;
  }
  Column copy = entry.column;
  SortAndDedup(&copy);
  AppendRange(copy, start, end, out);
}

const Head::Entry* Head::Find(uint32_t series_id, uint32_t field_id) const {
  if (series_id >= series_.size()) return nullptr;
  for (const Entry& e : series_[series_id]) {
    if (e.field_id == field_id) return &e;
  }
  return nullptr;
}

void Head::Seal() {
  for (std::vector<Entry>& columns : series_) {
    for (Entry& entry : columns) {
      if (!entry.sorted) {
        SortAndDedup(&entry.column);
        entry.sorted = true;
      }
    }
  }
}

}  // namespace gpulse::engine
