#include "query/fleet/ledger_days.h"

#include <algorithm>

namespace gpulse::query {

namespace {
constexpr int64_t kHourNs = 3'600'000'000'000;
constexpr int64_t kDayNs = 24 * kHourNs;
}  // namespace

std::array<LedgerSpan::Input, 6> LedgerSpan::Inputs() const {
  return {{{"gpu", day_ns, to_ns},
           {"node", from_ns, to_ns},
           // A window is written at its start (and again when it is closed).
           {"maintenance", INT64_MIN, to_ns},
           {"job_step", day_ns - 2 * kDayNs, read_whole_day_steps ? day_ns + kDayNs : to_ns},
           {"sched", day_ns - 3 * kDayNs, to_ns},
           {"cost", day_ns - kDayNs, to_ns}}};
}

std::array<LedgerSpan::Input, 2> MedianInputs(int64_t day_ns) {
  return {{{"job_step", day_ns - kHourNs, day_ns + kDayNs},
           {"sched", day_ns - 2 * kDayNs, day_ns + kDayNs}}};
}

void LedgerSpan::SortJobs() {
  std::sort(jobs.begin(), jobs.end());
  size_t kept = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (kept > 0 && jobs[kept - 1].hash == jobs[i].hash) {
      Job& into = jobs[kept - 1];
      into.decided_ns = std::max(into.decided_ns, jobs[i].decided_ns);
      into.first_ns = std::min(into.first_ns, jobs[i].first_ns);
      into.recorded = into.recorded && jobs[i].recorded;
    } else {
      jobs[kept++] = jobs[i];
    }
  }
  jobs.resize(kept);
}

size_t LedgerSpan::Cohorts::Bytes() const {
  return sizeof(Cohorts) + presence.capacity() * sizeof(presence[0]) +
         class_minutes.capacity() * sizeof(class_minutes[0]) +
         cohort_class_minutes.capacity() * sizeof(cohort_class_minutes[0]) +
         software_failures.capacity() * sizeof(software_failures[0]) +
         software_failure_class.capacity() * sizeof(software_failure_class[0]);
}

size_t LedgerSpan::Bytes() const {
  size_t total = sizeof(LedgerSpan) + rows.capacity() * sizeof(Row);
  for (const Row& r : rows) {
    total += r.failed_attempts.capacity() * sizeof(r.failed_attempts[0]);
    if (r.cohorts != nullptr) total += r.cohorts->Bytes();
  }
  for (const auto& [dimension, value] : names) total += sizeof(names[0]) + value.capacity();
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

std::vector<LedgerDays::Found> LedgerDays::FindDay(const void* db, const std::string& shape,
                                                   int64_t day_ns) {
  std::vector<Found> out;
  MutexLock l(&mu_);
  for (auto it = spans_.lower_bound({db, shape, day_ns});
       it != spans_.end() && std::get<0>(it->first) == db && std::get<1>(it->first) == shape &&
       std::get<2>(it->first) < day_ns + kDayNs;
       ++it) {
    lru_.splice(lru_.begin(), lru_, it->second.use);
    out.push_back(it->second.found);
  }
  return out;
}

void LedgerDays::EraseLocked(std::map<Key, Kept>::iterator it) {
  bytes_ -= it->second.found.span->Bytes();
  lru_.erase(it->second.use);
  spans_.erase(it);
}

void LedgerDays::Put(Found found, const void* db, const std::string& shape) {
  const size_t bytes = found.span->Bytes();
  if (bytes > budget_) return;
  Key key{db, shape, found.span->from_ns};
  MutexLock l(&mu_);
  if (const auto it = spans_.find(key); it != spans_.end()) EraseLocked(it);
  while (bytes_ + bytes > budget_ && !lru_.empty()) EraseLocked(spans_.find(lru_.back()));
  lru_.push_front(key);
  spans_.emplace(std::move(key), Kept{std::move(found), lru_.begin()});
  bytes_ += bytes;
}

void LedgerDays::Erase(const void* db, const std::string& shape, int64_t from_ns) {
  MutexLock l(&mu_);
  if (const auto it = spans_.find({db, shape, from_ns}); it != spans_.end()) EraseLocked(it);
}

size_t LedgerDays::bytes() const {
  MutexLock l(&mu_);
  return bytes_;
}

std::optional<LedgerDays::Medians> LedgerDays::FindMedians(const MediansKey& key) {
  MutexLock l(&mu_);
  const auto it = medians_.find(key);
  if (it == medians_.end()) return std::nullopt;
  return it->second;
}

void LedgerDays::PutMedians(const MediansKey& key, Medians medians) {
  MutexLock l(&mu_);
  if (medians_.size() >= kMaxMedians && !medians_.contains(key)) medians_.clear();
  medians_[key] = std::move(medians);
}

}  // namespace gpulse::query
