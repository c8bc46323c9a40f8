#include "query/plan/plan_cache.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "query/plan/condition.h"

namespace gpulse::query {

namespace {

// Series held in kept lists, all statements together, and what a kept list
// holds of that count (given back when the last copy of the list goes).
std::atomic<size_t> kept_series_total{0};

}  // namespace

struct SeriesCharge {
  explicit SeriesCharge(size_t n) : n(n) {}
  ~SeriesCharge() { kept_series_total.fetch_sub(n, std::memory_order_relaxed); }
  SeriesCharge(const SeriesCharge&) = delete;
  SeriesCharge& operator=(const SeriesCharge&) = delete;
  const size_t n;
};

KeptPlan PlanCache::Find(const SelectStatement& s, const std::string& measurement,
                         const std::string& retention_policy, const std::string& database,
                         uint64_t version) {
  MutexLock l(&mu_);
  const auto entry = by_statement_.find(s.id);
  if (entry == by_statement_.end()) return {};
  entries_.splice(entries_.begin(), entries_, entry->second);
  std::vector<KeptPlan>& kept = entry->second->kept;
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    if (!it->Of(measurement, database, retention_policy)) continue;
    if (it->catalog_version != version) {
      // Versions only grow: a newer plan (another run saw a later catalog)
      // stays for the runs that will see it too.
      if (it->catalog_version < version) kept.erase(it);
      return {};
    }
    std::rotate(it, it + 1, kept.end());
    return kept.back();
  }
  return {};
}

void PlanCache::Keep(const SelectStatement& s, const std::string& measurement,
                     const std::string& database, uint64_t version, const Plan& plan,
                     const std::shared_ptr<const std::vector<InSeries>>& series) {
  auto copy = std::make_shared<Plan>(plan);
  copy->tag_keys.clear();
  KeptPlan k;
  k.measurement = measurement;
  k.database = database;
  k.catalog_version = version;
  k.plan = std::move(copy);
  k.fixed_range = !s.condition || !CallsNow(*s.condition);
  const size_t n = series->size();
  if (n <= kMaxKeptSeries) {
    if (kept_series_total.fetch_add(n, std::memory_order_relaxed) + n <= kMaxKeptSeriesTotal) {
      k.series = series;
      k.charge = std::make_shared<const SeriesCharge>(n);
    } else {
      kept_series_total.fetch_sub(n, std::memory_order_relaxed);  // full: listed each run
    }
  }
  MutexLock l(&mu_);
  auto entry = by_statement_.find(s.id);
  if (entry == by_statement_.end()) {
    if (entries_.size() >= kMaxStatements) {
      by_statement_.erase(entries_.back().statement);
      entries_.pop_back();
    }
    entries_.push_front({s.id, {}});
    entry = by_statement_.emplace(s.id, entries_.begin()).first;
  } else {
    entries_.splice(entries_.begin(), entries_, entry->second);
  }
  std::vector<KeptPlan>& kept = entry->second->kept;
  const auto same = std::find_if(kept.begin(), kept.end(), [&](const KeptPlan& old) {
    return old.Of(measurement, database, plan.forced_tier);
  });
  if (same != kept.end()) {
    if (same->catalog_version > version) return;  // a run saw a later catalog
    kept.erase(same);
  }
  if (kept.size() >= kMaxKeptPlans) kept.erase(kept.begin());
  kept.push_back(std::move(k));
}

void PlanCache::Forget(uint64_t id) {
  std::list<Entry> gone;  // destroyed after the lock is let go
  {
    MutexLock l(&mu_);
    const auto entry = by_statement_.find(id);
    if (entry == by_statement_.end()) return;
    gone.splice(gone.begin(), entries_, entry->second);
    by_statement_.erase(entry);
  }
}

size_t KeptPlanSeries() { return kept_series_total.load(std::memory_order_relaxed); }

}  // namespace gpulse::query
