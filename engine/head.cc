#include "engine/head.h"

#include <algorithm>
#include <bit>
#include <new>

#include "engine/column_ops.h"

namespace gpulse::engine {

// A run of a column's points, its slots right after this header.
struct Head::Block {
  struct Slot {
    int64_t ts;
    uint64_t word;
  };
  Block* next = nullptr;
  uint32_t size = 0;
  uint32_t capacity = 0;

  Slot* slots() { return reinterpret_cast<Slot*>(this + 1); }
  const Slot* slots() const { return reinterpret_cast<const Slot*>(this + 1); }
  int64_t last_ts() const { return slots()[size - 1].ts; }
};

namespace {

using Slot = Head::Block::Slot;
static_assert(sizeof(Head::Block) == 16 && sizeof(Slot) == 16);

// Blocks double from kFirstSlots to kMostSlots: a column of one point takes
// 80 bytes, and a full one leaves at most 63 slots (1 KiB) unused.
constexpr uint32_t kFirstSlots = 4;
constexpr uint32_t kMostSlots = 64;
// Slabs double from 4 KiB to 256 KiB, so a small head stays small and a
// full one takes few allocations.
constexpr size_t kFirstSlabBytes = 4 << 10;
constexpr size_t kMostSlabBytes = 256 << 10;

// Fixed cost of a column in the head: its entry and the series' share of
// the entry vector.
constexpr uint64_t kEntryOverhead = sizeof(Head::Entry) + 16;

// Appends `n` typed values read from slots.
template <typename Read>
void AppendTyped(const Slot* slots, uint32_t n, FieldType type, Read&& string_at, Column* out) {
  for (uint32_t i = 0; i < n; ++i) out->ts.push_back(slots[i].ts);
  switch (type) {
    case FieldType::kFloat:
      for (uint32_t i = 0; i < n; ++i) out->floats.push_back(std::bit_cast<double>(slots[i].word));
      break;
    case FieldType::kInt:
      for (uint32_t i = 0; i < n; ++i) out->ints.push_back(static_cast<int64_t>(slots[i].word));
      break;
    case FieldType::kUint:
      for (uint32_t i = 0; i < n; ++i) out->uints.push_back(slots[i].word);
      break;
    case FieldType::kBool:
      for (uint32_t i = 0; i < n; ++i) out->bools.push_back(slots[i].word != 0);
      break;
    case FieldType::kString:
      for (uint32_t i = 0; i < n; ++i) out->strings.push_back(string_at(slots[i].word));
      break;
  }
}

}  // namespace

uint64_t Head::Word(const FieldValueRef& value) {
  switch (value.index()) {
    case 0:
      return std::bit_cast<uint64_t>(*std::get_if<double>(&value));
    case 1:
      return static_cast<uint64_t>(*std::get_if<int64_t>(&value));
    case 2:
      return *std::get_if<uint64_t>(&value);
    case 3:
      return *std::get_if<bool>(&value) ? 1 : 0;
    default: {
      const std::string_view text = *std::get_if<std::string_view>(&value);
      strings_.emplace_back(text);
      // A string longer than the inline buffer also takes its bytes on the heap.
      bytes_ += sizeof(std::string) + (text.size() > 15 ? text.size() + 1 : 0);
      return strings_.size() - 1;
    }
  }
}

Head::Block* Head::Grow(Entry* entry) {
  const uint32_t slots =
      entry->last == nullptr ? kFirstSlots : std::min(kMostSlots, 2 * entry->last->capacity);
  const size_t need = sizeof(Block) + slots * sizeof(Slot);
  if (slab_left_ < need) {
    slab_size_ = slab_size_ == 0 ? kFirstSlabBytes : std::min(kMostSlabBytes, 2 * slab_size_);
    // Not value-initialised: a slot is written before it is read.
    slabs_.push_back(std::make_unique_for_overwrite<std::byte[]>(slab_size_));
    slab_free_ = slabs_.back().get();
    slab_left_ = slab_size_;
    bytes_ += slab_size_;
  }
  Block* block = new (slab_free_) Block;
  block->capacity = slots;
  slab_free_ += need;
  slab_left_ -= need;
  if (entry->last == nullptr) {
    entry->first = block;
  } else {
    entry->last->next = block;
  }
  entry->last = block;
  return block;
}

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
    found->type = type;
    bytes_ += kEntryOverhead;
  }
  Entry& entry = *found;
  if (entry.size > 0 && ts == entry.last_ts) {
    // The same time written again: the new value replaces the last.
    entry.last->slots()[entry.last->size - 1].word = Word(value);
    return;
  }
  if (entry.size > 0 && ts < entry.last_ts) entry.sorted = false;
  Block* block = entry.last;
  if (block == nullptr || block->size == block->capacity) block = Grow(&entry);
  block->slots()[block->size++] = Slot{ts, Word(value)};
  ++entry.size;
  entry.last_ts = ts;
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
    if (entry.last != nullptr) __builtin_prefetch(entry.last->slots() + entry.last->size, 1);
  }
}

void Head::AppendSlots(const Block& block, uint32_t from, uint32_t to, Column* out) const {
  if (from >= to) return;
  AppendTyped(
      block.slots() + from, to - from, out->type,
      [this](uint64_t word) -> const std::string& { return strings_[word]; }, out);
}

void Head::AppendColumn(const Entry& entry, Column* out) const {
  for (const Block* b = entry.first; b != nullptr; b = b->next) AppendSlots(*b, 0, b->size, out);
}

void Head::CopyRange(uint32_t series_id, uint32_t field_id, int64_t start, int64_t end,
                     Column* out) const {
  const Entry* found = Find(series_id, field_id);
  if (found == nullptr || found->size == 0) return;
  const Entry& entry = *found;
  if (!entry.sorted) {
    Column copy;
    copy.type = entry.type;
    AppendColumn(entry, &copy);
    SortAndDedup(&copy);
    AppendRange(copy, start, end, out);
    return;
  }
  const auto before = [](const Slot& s, int64_t t) { return s.ts < t; };
  for (const Block* b = entry.first; b != nullptr; b = b->next) {
    if (b->size == 0 || b->last_ts() < start) continue;
    const Slot* slots = b->slots();
    const Slot* from = std::lower_bound(slots, slots + b->size, start, before);
    const Slot* to = std::lower_bound(from, slots + b->size, end, before);
    AppendSlots(*b, static_cast<uint32_t>(from - slots), static_cast<uint32_t>(to - slots), out);
    if (to != slots + b->size) return;  // the rest lies at or after `end`
  }
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
  for (Entry& e : series_[series_id]) {
    if (e.size == 0) continue;
    // Kept slots move forward along the chain, keeping their order.
    Block* out = e.first;
    uint32_t kept_in_out = 0;
    uint32_t kept = 0;
    for (Block* b = e.first; b != nullptr; b = b->next) {
      for (uint32_t i = 0; i < b->size; ++i) {
        const Slot slot = b->slots()[i];
        if (slot.ts >= first && slot.ts <= last) continue;
        if (kept_in_out == out->capacity) {
          out->size = kept_in_out;
          out = out->next;
          kept_in_out = 0;
        }
        out->slots()[kept_in_out++] = slot;
        ++kept;
      }
    }
    out->size = kept_in_out;
    // The blocks past `out` are empty now: they leave the chain, their slab
    // room with them, until the head goes.
    out->next = nullptr;
    e.last = out;
    values_ -= e.size - kept;
    e.size = kept;
    if (kept == 0) {
      e.sorted = true;
    } else {
      e.last_ts = out->last_ts();
    }
  }
}

void Head::Seal() {
  std::vector<Slot> slots;
  for (std::vector<Entry>& columns : series_) {
    for (Entry& entry : columns) {
      if (entry.sorted) continue;
      slots.clear();
      for (const Block* b = entry.first; b != nullptr; b = b->next) {
        slots.insert(slots.end(), b->slots(), b->slots() + b->size);
      }
      std::stable_sort(slots.begin(), slots.end(),
                       [](const Slot& a, const Slot& b) { return a.ts < b.ts; });
      // Of each run of equal timestamps the last (the latest write) stays;
      // the survivors fit in the chain they came from, from its first block.
      Block* out = entry.first;
      uint32_t in_out = 0, kept = 0;
      for (size_t i = 0; i < slots.size(); ++i) {
        if (i + 1 < slots.size() && slots[i + 1].ts == slots[i].ts) continue;
        if (in_out == out->capacity) {
          out->size = in_out;
          out = out->next;
          in_out = 0;
        }
        out->slots()[in_out++] = slots[i];
        ++kept;
      }
      out->size = in_out;
      out->next = nullptr;
      entry.last = out;
      values_ -= entry.size - kept;
      entry.size = kept;
      entry.last_ts = out->last_ts();
      entry.sorted = true;
    }
  }
}

}  // namespace gpulse::engine
