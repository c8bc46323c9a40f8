#include "engine/head.h"

#include <algorithm>

#include "engine/column_ops.h"

namespace gpulse::engine {

namespace {

// Fixed cost of a column in the head: the entry and its vectors' headers.
constexpr uint64_t kEntryOverhead = sizeof(Head::Entry) + 64;

// Bytes of one slot of a column of `type`: a timestamp and a value.
uint64_t SlotBytes(FieldType type) {
  switch (type) {
    case FieldType::kBool:
      return sizeof(int64_t) + sizeof(uint8_t);
    case FieldType::kString:
      return sizeof(int64_t) + sizeof(std::string);
    default:
      return 2 * sizeof(int64_t);
  }
}

// Grows a full column by a quarter (at least 16 slots) instead of the
// vector's doubling, which would leave up to half of a large head unused;
// returns the bytes added. The head is charged for capacity, not size, so
// its memory bound holds for the memory really taken.
uint64_t GrowIfFull(Column* column) {
  const size_t size = column->ts.size();
  if (size < column->ts.capacity()) return 0;
  const size_t capacity = size + std::max<size_t>(16, size / 4);
  column->ts.reserve(capacity);
  switch (column->type) {
    case FieldType::kFloat:
      column->floats.reserve(capacity);
      break;
    case FieldType::kInt:
      column->ints.reserve(capacity);
      break;
    case FieldType::kUint:
      column->uints.reserve(capacity);
      break;
    case FieldType::kBool:
      column->bools.reserve(capacity);
      break;
    case FieldType::kString:
      column->strings.reserve(capacity);
      break;
  }
  return (capacity - size) * SlotBytes(column->type);
}

}  // namespace

void Head::Append(uint32_t series_id, uint32_t field_id, FieldType type, int64_t ts,
                  const FieldValueRef& value, size_t position_hint) {
  if (series_id >= series_.size()) series_.resize(series_id + 1);
  std::vector<Entry>& columns = series_[series_id];
  Entry* found = nullptr;
  if (position_hint < columns.size() && columns[position_hint].field_id == field_id) {
    found = &columns[position_hint];
  } else {
    for (Entry& e : columns) {
      if (e.field_id == field_id) {
        found = &e;
        break;
      }
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
  bytes_ += GrowIfFull(&entry.column);
  // The hot path of every write: push the value into the vector of its type
  // directly (the catalog guarantees the type), without AppendValue's visit.
  Column& column = entry.column;
  switch (column.type) {
    case FieldType::kFloat:
      column.floats.push_back(*std::get_if<double>(&value));
      column.ts.push_back(ts);
      break;
    case FieldType::kInt:
      column.ints.push_back(*std::get_if<int64_t>(&value));
      column.ts.push_back(ts);
      break;
    case FieldType::kUint:
      column.uints.push_back(*std::get_if<uint64_t>(&value));
      column.ts.push_back(ts);
      break;
    default:
      AppendValue(&column, ts, value);
      break;
  }
  // A string longer than the inline buffer also takes its bytes on the heap.
  if (const auto* text = std::get_if<std::string_view>(&value); text && text->size() > 15) {
    bytes_ += text->size() + 1;
  }
  ++values_;
  if (ts < min_ts_) min_ts_ = ts;
  if (ts > max_ts_) max_ts_ = ts;
}

void Head::PrefetchEntries(uint32_t series_id) const {
  if (series_id >= series_.size()) return;
  const std::vector<Entry>& columns = series_[series_id];
  const char* first = reinterpret_cast<const char*>(columns.data());
  const char* last = reinterpret_cast<const char*>(columns.data() + columns.size());
  for (const char* line = first; line < last; line += 64) __builtin_prefetch(line, 1);
}

void Head::PrefetchEnds(uint32_t series_id) const {
  if (series_id >= series_.size()) return;
  for (const Entry& entry : series_[series_id]) {
    const Column& column = entry.column;
    if (column.ts.empty()) continue;
    __builtin_prefetch(&column.ts.back(), 1);
    switch (column.type) {
      case FieldType::kFloat:
        __builtin_prefetch(column.floats.data() + column.floats.size(), 1);
        break;
      case FieldType::kInt:
        __builtin_prefetch(column.ints.data() + column.ints.size(), 1);
        break;
      case FieldType::kUint:
        __builtin_prefetch(column.uints.data() + column.uints.size(), 1);
        break;
      default:
        break;
    }
  }
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

void Head::Erase(uint32_t series_id, int64_t first, int64_t last) {
  if (series_id >= series_.size()) return;
  for (Entry& e : series_[series_id]) values_ -= EraseRange(&e.column, first, last);
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
