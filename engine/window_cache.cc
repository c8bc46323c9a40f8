#include "engine/window_cache.h"

namespace gpulse::engine {

namespace {

uint64_t BytesOf(const storage::Column& c) {
  uint64_t b = c.ts.size() * sizeof(int64_t) + c.floats.size() * sizeof(double) +
               c.ints.size() * sizeof(int64_t) + c.uints.size() * sizeof(uint64_t) + c.bools.size();
  for (const std::string& s : c.strings) b += sizeof(std::string) + s.size();
  return b + 128;  // the entry, the list and map nodes
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

}  // namespace

uint64_t WindowCache::epoch() const {
  std::lock_guard<std::mutex> l(mu_);
  return epoch_;
}

std::shared_ptr<const storage::Column> WindowCache::Lookup(const WindowKey& key) {
  return std::static_pointer_cast<const storage::Column>(Find(key));
}

std::shared_ptr<const storage::RollupColumn> WindowCache::LookupRollups(const WindowKey& key) {
  return std::static_pointer_cast<const storage::RollupColumn>(Find(key));
}

std::shared_ptr<const storage::TallyColumn> WindowCache::LookupTallies(const WindowKey& key) {
  return std::static_pointer_cast<const storage::TallyColumn>(Find(key));
}

std::shared_ptr<const void> WindowCache::Find(const WindowKey& key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->value;
}

void WindowCache::Insert(const WindowKey& key, storage::Column column, uint64_t epoch) {
  const uint64_t bytes = BytesOf(column);
  if (capacity_ == 0 || bytes > capacity_ / 8) return;
  Put(key, std::make_shared<const storage::Column>(std::move(column)), bytes, epoch);
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

void WindowCache::Put(const WindowKey& key, std::shared_ptr<const void> shared, uint64_t bytes,
                      uint64_t epoch) {
  std::lock_guard<std::mutex> l(mu_);
  if (epoch != epoch_) return;
  if (auto it = map_.find(key); it != map_.end()) EraseLocked(it->second);
  lru_.push_front(Entry{key, std::move(shared), bytes});
  map_[key] = lru_.begin();
  bytes_ += bytes;
  while (bytes_ > capacity_ && !lru_.empty()) EraseLocked(std::prev(lru_.end()));
}

void WindowCache::Invalidate(const std::vector<WindowKey>& keys) {
  std::lock_guard<std::mutex> l(mu_);
  ++epoch_;
  for (const WindowKey& k : keys) {
    if (auto it = map_.find(k); it != map_.end()) EraseLocked(it->second);
  }
}

void WindowCache::Clear() {
  std::lock_guard<std::mutex> l(mu_);
  ++epoch_;
  lru_.clear();
  map_.clear();
  bytes_ = 0;
}

WindowCache::Stats WindowCache::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return Stats{hits_, misses_, bytes_, map_.size()};
}

void WindowCache::EraseLocked(std::list<Entry>::iterator it) {
  bytes_ -= it->bytes;
  map_.erase(it->key);
  lru_.erase(it);
}

}  // namespace gpulse::engine
