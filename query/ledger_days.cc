#include "query/ledger_days.h"

namespace gpulse::query {

size_t LedgerDay::Bytes() const {
  size_t total = sizeof(LedgerDay) + rows.capacity() * sizeof(Row);
  for (const Row& r : rows) total += r.failed_attempts.capacity() * sizeof(r.failed_attempts[0]);
  for (const auto& g : groups) {
    total += sizeof(g) + g.capacity() * sizeof(std::string);
    for (const std::string& v : g) total += v.capacity();
  }
  total += jobs.capacity() * sizeof(jobs[0]);
  return total;
}

LedgerDays& LedgerDays::Process() {
  static LedgerDays* const days = new LedgerDays(kDefaultBudgetBytes);  // never destroyed
  return *days;
}

std::optional<LedgerDays::Found> LedgerDays::Find(const Key& key) {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = days_.find(key);
  if (it == days_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.use);
  return it->second.found;
}

void LedgerDays::Put(const Key& key, Found found) {
  const size_t bytes = found.day->Bytes();
  if (bytes > budget_) return;
  std::lock_guard<std::mutex> l(mu_);
  auto it = days_.find(key);
  if (it != days_.end()) {
    bytes_ -= it->second.found.day->Bytes();
    lru_.erase(it->second.use);
    days_.erase(it);
  }
  while (bytes_ + bytes > budget_ && !lru_.empty()) {
    const auto last = days_.find(lru_.back());
    bytes_ -= last->second.found.day->Bytes();
    days_.erase(last);
    lru_.pop_back();
  }
  lru_.push_front(key);
  days_.emplace(key, Kept{std::move(found), lru_.begin()});
  bytes_ += bytes;
}

void LedgerDays::Confirm(const Key& key, const LedgerDay* day, int64_t known_until_ns,
                         uint64_t as_of) {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = days_.find(key);
  if (it == days_.end() || it->second.found.day.get() != day) return;
  Found& f = it->second.found;
  if (known_until_ns >= f.known_until_ns && as_of >= f.as_of) {
    f.known_until_ns = known_until_ns;
    f.as_of = as_of;
  }
}

std::optional<LedgerDays::Medians> LedgerDays::FindMedians(const MediansKey& key) {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = medians_.find(key);
  if (it == medians_.end()) return std::nullopt;
  return it->second;
}

void LedgerDays::PutMedians(const MediansKey& key, Medians medians) {
  std::lock_guard<std::mutex> l(mu_);
  if (medians_.size() >= kMaxMedians && !medians_.contains(key)) medians_.clear();
  medians_[key] = std::move(medians);
}

size_t LedgerDays::bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return bytes_;
}

}  // namespace gpulse::query
