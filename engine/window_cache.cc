#include "engine/window_cache.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace gpulse::engine {

namespace {

uint64_t BytesOf(const storage::Column& c) {
  uint64_t b = c.ts.size() * sizeof(int64_t) + c.floats.size() * sizeof(double) +
               c.ints.size() * sizeof(int64_t) + c.uints.size() * sizeof(uint64_t) + c.bools.size();
  for (const std::string& s : c.strings) b += sizeof(std::string) + s.size();
  return b + 128;  // the object, its control block and the table slot
}

uint64_t BytesOf(const storage::RollupColumn& r) {
  uint64_t b = r.size() * (3 * 8 + 5 * 16) + 128;
  for (const storage::Sketch& s : r.sketch) {
    b += sizeof(storage::Sketch) + (s.positive().size() + s.negative().size()) * 16;
  }
  return b;
}

uint64_t BytesOf(const storage::TallyColumn& r) {
  uint64_t b = r.size() * (6 * 8) + r.value_count.size() * 8 + 128;
  for (const std::string& v : r.values) b += sizeof(std::string) + v.size();
  return b;
}

// Bytes an offset from the smallest value needs for a range of `span`: 1,
// 2 or 4, or 0 when it needs all 8 (not worth packing).
uint8_t WidthFor(uint64_t span) {
  if (span <= UINT8_MAX) return 1;
  if (span <= UINT16_MAX) return 2;
  if (span <= UINT32_MAX) return 4;
  return 0;
}

template <typename T>
void Narrow(const std::vector<T>& v, uint64_t base, uint8_t width, std::vector<uint8_t>* out) {
  out->resize(v.size() * width);
  uint8_t* p = out->data();
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t off = static_cast<uint64_t>(v[i]) - base;
    switch (width) {
      case 1:
        p[i] = static_cast<uint8_t>(off);
        break;
      case 2: {
        const uint16_t x = static_cast<uint16_t>(off);
        std::memcpy(p + 2 * i, &x, 2);
        break;
      }
      default: {
        const uint32_t x = static_cast<uint32_t>(off);
        std::memcpy(p + 4 * i, &x, 4);
        break;
      }
    }
  }
}

template <typename U, typename T>
void Widen(const uint8_t* p, size_t n, uint64_t base, T* out) {
  if constexpr (sizeof(U) == 1) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(base + p[i]);
  } else {
    for (size_t i = 0; i < n; ++i) {
      U x;
      std::memcpy(&x, p + sizeof(U) * i, sizeof(U));
      out[i] = static_cast<T>(base + x);
    }
  }
}

template <typename T>
void Unnarrow(const uint8_t* narrow, size_t n, uint64_t base, uint8_t width, std::vector<T>* out) {
  out->resize(n);
  switch (width) {
    case 1:
      return Widen<uint8_t>(narrow, n, base, out->data());
    case 2:
      return Widen<uint16_t>(narrow, n, base, out->data());
    default:
      return Widen<uint32_t>(narrow, n, base, out->data());
  }
}

template <typename T>
bool PackIntegers(const std::vector<T>& v, uint64_t* base, uint8_t* width,
                  std::vector<uint8_t>* narrow) {
  if (v.empty()) return false;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const uint8_t w = WidthFor(static_cast<uint64_t>(*hi) - static_cast<uint64_t>(*lo));
  if (w == 0) return false;
  *base = static_cast<uint64_t>(*lo);
  *width = w;
  Narrow(v, *base, w, narrow);
  return true;
}

}  // namespace

PackedWindow::PackedWindow(storage::Column column) : rest_(std::move(column)) {
  size_ = rest_.ts.size();
  if (rest_.type == storage::FieldType::kInt &&
      PackIntegers(rest_.ints, &base_, &width_, &narrow_)) {
    rest_.ints = {};
  } else if (rest_.type == storage::FieldType::kUint &&
             PackIntegers(rest_.uints, &base_, &width_, &narrow_)) {
    rest_.uints = {};
  }
  // Times pack only with the values: a window whose values stay as decoded
  // (floats, strings, bools, wide integers) is handed over in place.
  if (width_ == 0 || size_ < 2) return;
  // Differences as unsigned: a window may span more than INT64_MAX.
  const uint64_t step = static_cast<uint64_t>(rest_.ts[1]) - static_cast<uint64_t>(rest_.ts[0]);
  for (size_t i = 2; i < size_; ++i) {
    if (static_cast<uint64_t>(rest_.ts[i]) - static_cast<uint64_t>(rest_.ts[i - 1]) != step) return;
  }
  steady_ = true;
  first_ = static_cast<uint64_t>(rest_.ts[0]);
  step_ = step;
  rest_.ts = {};
}

size_t PackedWindow::IndexOf(int64_t t) const {
  if (!steady_) {
    return static_cast<size_t>(std::lower_bound(rest_.ts.begin(), rest_.ts.end(), t) -
                               rest_.ts.begin());
  }
  storage::PackedRun run;
  Packed(&run);
  return run.IndexOf(t);
}

bool PackedWindow::Packed(storage::PackedRun* out) const {
  if (!steady_) return false;
  out->type = rest_.type;
  out->first = first_;
  out->step = step_;
  out->base = base_;
  out->width = width_;
  out->offsets = narrow_.data();
  out->size = size_;
  return true;
}

const storage::Column& PackedWindow::View(storage::Column* scratch) const {
  return Unpack(scratch, 0, size_);
}

const storage::Column& PackedWindow::View(storage::Column* scratch, int64_t lo, int64_t hi) const {
  if (width_ == 0) return rest_;
  const size_t b = IndexOf(lo);
  return Unpack(scratch, b, std::max(b, IndexOf(hi)));
}

const storage::Column& PackedWindow::Unpack(storage::Column* scratch, size_t b, size_t e) const {
  if (width_ == 0) return rest_;  // nothing packed: handed over in place
  scratch->type = rest_.type;
  scratch->ts.resize(e - b);
  int64_t* ts = scratch->ts.data();
  if (steady_) {
    // Unsigned: wraps where int64 would overflow past the last time, and
    // gives back each time exactly (they all fit in int64).
    uint64_t t = first_ + b * step_;
    for (size_t i = 0; i < e - b; ++i, t += step_) ts[i] = static_cast<int64_t>(t);
  } else {
    std::copy(rest_.ts.begin() + static_cast<std::ptrdiff_t>(b),
              rest_.ts.begin() + static_cast<std::ptrdiff_t>(e), ts);
  }
  scratch->floats.clear();
  scratch->bools.clear();
  scratch->strings.clear();
  const uint8_t* from = narrow_.data() + b * width_;
  if (rest_.type == storage::FieldType::kInt) {
    Unnarrow(from, e - b, base_, width_, &scratch->ints);
    scratch->uints.clear();
  } else {
    Unnarrow(from, e - b, base_, width_, &scratch->uints);
    scratch->ints.clear();
  }
  return *scratch;
}

uint64_t PackedWindow::bytes() const { return BytesOf(rest_) + narrow_.size(); }

uint64_t WindowCache::epoch() const {
  MutexLock l(&mu_);
  return epoch_;
}

std::shared_ptr<const PackedWindow> WindowCache::Lookup(const WindowKey& key) {
  return std::static_pointer_cast<const PackedWindow>(Find(key));
}

std::shared_ptr<const storage::RollupColumn> WindowCache::LookupRollups(const WindowKey& key) {
  return std::static_pointer_cast<const storage::RollupColumn>(Find(key));
}

std::shared_ptr<const storage::TallyColumn> WindowCache::LookupTallies(const WindowKey& key) {
  return std::static_pointer_cast<const storage::TallyColumn>(Find(key));
}

template <typename Fn>
void WindowCache::FindMany(std::span<const WindowKey> keys, Fn&& put) {
  MutexLock l(&mu_);
  for (size_t k = 0; k < keys.size(); ++k) {
    const size_t i = LookedUpLocked(keys[k]);
    if (i != SIZE_MAX) put(k, slots_[i].value);
  }
}

void WindowCache::Lookup(std::span<const WindowKey> keys,
                         std::shared_ptr<const PackedWindow>* out) {
  FindMany(keys, [&](size_t k, const std::shared_ptr<const void>& v) {
    out[k] = std::static_pointer_cast<const PackedWindow>(v);
  });
}

void WindowCache::LookupRollups(std::span<const WindowKey> keys,
                                std::shared_ptr<const storage::RollupColumn>* out) {
  FindMany(keys, [&](size_t k, const std::shared_ptr<const void>& v) {
    out[k] = std::static_pointer_cast<const storage::RollupColumn>(v);
  });
}

void WindowCache::LookupTallies(std::span<const WindowKey> keys,
                                std::shared_ptr<const storage::TallyColumn>* out) {
  FindMany(keys, [&](size_t k, const std::shared_ptr<const void>& v) {
    out[k] = std::static_pointer_cast<const storage::TallyColumn>(v);
  });
}

std::shared_ptr<const void> WindowCache::Find(const WindowKey& key) {
  MutexLock l(&mu_);
  const size_t i = LookedUpLocked(key);
  return i == SIZE_MAX ? nullptr : slots_[i].value;
}

size_t WindowCache::LookedUpLocked(const WindowKey& key) {
  const size_t hash = KeyHash()(key);
  sketch_.Add(hash);
  const size_t i = IndexLocked(key, hash);
  if (i == SIZE_MAX) {
    ++misses_;
    return SIZE_MAX;
  }
  ++hits_;
  slots_[i].referenced = true;
  return i;
}

size_t WindowCache::IndexLocked(const WindowKey& key, size_t hash) const {
  if (slots_.empty()) return SIZE_MAX;
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask; slots_[i].used; i = (i + 1) & mask) {
    if (slots_[i].key == key) return i;
  }
  return SIZE_MAX;
}

void WindowCache::Insert(const WindowKey& key, storage::Column column, uint64_t epoch) {
  if (capacity_ == 0) return;
  auto packed = std::make_shared<const PackedWindow>(std::move(column));
  const uint64_t bytes = packed->bytes();
  if (bytes > capacity_ / 8) return;
  Put(key, std::move(packed), bytes, epoch);
}

void WindowCache::InsertRollups(const WindowKey& key,
                                std::shared_ptr<const storage::RollupColumn> rows, uint64_t epoch) {
  const uint64_t bytes = BytesOf(*rows);
  if (capacity_ == 0 || bytes > capacity_ / 8) return;
  Put(key, std::move(rows), bytes, epoch);
}

void WindowCache::InsertTallies(const WindowKey& key,
                                std::shared_ptr<const storage::TallyColumn> rows, uint64_t epoch) {
  const uint64_t bytes = BytesOf(*rows);
  if (capacity_ == 0 || bytes > capacity_ / 8) return;
  Put(key, std::move(rows), bytes, epoch);
}

void WindowCache::Put(const WindowKey& key, std::shared_ptr<const void> value, uint64_t bytes,
                      uint64_t epoch) {
  MutexLock l(&mu_);
  if (epoch != epoch_) return;
  const size_t hash = KeyHash()(key);
  if (const size_t i = IndexLocked(key, hash); i != SIZE_MAX) {
    EraseLocked(i);  // a newer decode of a window kept: always in
  } else if (bytes_ + bytes > capacity_ && count_ > 0) {
    // Full: in only if asked for more often lately than what would go first.
    const size_t victim = VictimLocked();
    if (sketch_.Estimate(hash) <= sketch_.Estimate(KeyHash()(slots_[victim].key))) {
      ++refused_;
      return;
    }
    EraseLocked(victim);
  }
  while (bytes_ + bytes > capacity_ && count_ > 0) EraseLocked(VictimLocked());
  if ((count_ + 1) * 10 > slots_.size() * 7) GrowLocked();
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].used) i = (i + 1) & mask;
  slots_[i] = Slot{key, true, true, bytes, std::move(value)};
  ++count_;
  bytes_ += bytes;
}

void WindowCache::GrowLocked() {
  const size_t size = std::max<size_t>(64, slots_.size() * 2);
  std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(size));
  const size_t mask = slots_.size() - 1;
  for (Slot& s : old) {
    if (!s.used) continue;
    size_t i = KeyHash()(s.key) & mask;
    while (slots_[i].used) i = (i + 1) & mask;
    slots_[i] = std::move(s);
  }
  hand_ = 0;
  // Room for the keys the table may hold before it grows again; the counts
  // so far are forgotten (the table doubles rarely, while it first fills).
  const size_t keys = slots_.size() * 7 / 10;
  if (sketch_.counters() < keys * 4) sketch_.Resize(keys);
}

size_t WindowCache::VictimLocked() {
  const size_t mask = slots_.size() - 1;
  while (true) {
    hand_ = (hand_ + 1) & mask;
    Slot& s = slots_[hand_];
    if (!s.used) continue;
    if (s.referenced) {
      s.referenced = false;
      continue;
    }
    return hand_;
  }
}

void WindowCache::EraseLocked(size_t i) {
  const size_t mask = slots_.size() - 1;
  bytes_ -= slots_[i].bytes;
  --count_;
  // Backward shift: an entry further along the probe run moves into the
  // hole unless its home slot lies after the hole (cyclically) up to it.
  for (size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
    const size_t home = KeyHash()(slots_[j].key) & mask;
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    slots_[i] = std::move(slots_[j]);
    i = j;
  }
  slots_[i] = Slot{};
}

void WindowCache::Invalidate(const std::vector<WindowKey>& keys) {
  MutexLock l(&mu_);
  ++epoch_;
  for (const WindowKey& k : keys) {
    if (const size_t i = IndexLocked(k); i != SIZE_MAX) EraseLocked(i);
  }
}

void WindowCache::Clear() {
  MutexLock l(&mu_);
  ++epoch_;
  slots_.clear();
  count_ = 0;
  hand_ = 0;
  bytes_ = 0;
}

WindowCache::Stats WindowCache::stats() const {
  MutexLock l(&mu_);
  return Stats{hits_, misses_, bytes_, count_, refused_};
}

}  // namespace gpulse::engine
