// Kept plans: the executor keeps, for a SELECT's next run, its plan of each
// measurement and the series list the plan matched, both read from the
// catalog at a version; a run finds them again while the catalog is still
// at that version. The cache is the executor's (ExecContext::plan_cache),
// not the tree's: it knows a statement by its id, and holds the plans of the
// statements run last, each until its tree is destroyed (the executor has
// SelectStatement's destructor tell it: OnSelectDestroyed). Planning and listing afresh cost a
// query for a node's hour 30 of its 74 k server instructions, and more on a CPU whose caches hold
// other work (docs/performance.md, session 15).
//
// Thread safety: PlanCache may be used from any thread (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "query/plan/plan.h"
#include "query/runtime/inputs.h"
#include "query/syntax/ast.h"
#include "storage/mutex.h"

namespace gpulse::query {

struct SeriesCharge;

// A plan of a statement over one measurement, kept for the statement's next
// run: BuildPlan's work and the series list, both read from the catalog at
// catalog_version (read before either).
struct KeptPlan {
  std::string measurement, database;
  uint64_t catalog_version = 0;
  std::shared_ptr<const Plan> plan;  // forced_tier set
  // The WHERE calls no now(): the plan's time range holds for every run.
  bool fixed_range = false;
  // Null when the list is longer than kMaxKeptSeries, or kept lists hold
  // kMaxKeptSeriesTotal already.
  std::shared_ptr<const std::vector<InSeries>> series;
  std::shared_ptr<const SeriesCharge> charge;  // series' share of kept_series_total

  // Whether this is the plan over `m` under this database and retention policy.
  bool Of(const std::string& m, const std::string& db, const std::string& rp) const {
    return measurement == m && database == db && plan->forced_tier == rp;
  }
};

// A statement keeps plans for this many measurements (FROM /regex/ or a
// list), the last used.
inline constexpr size_t kMaxKeptPlans = 8;
// Longer series lists are listed again each run: the tree may be kept by a
// ParseCache of 256 texts, and listing is then a small part of the query.
inline constexpr size_t kMaxKeptSeries = 1024;
// And all kept lists together hold at most this many series (about 25 MB
// of tags at a fleet's five tags a series).
inline constexpr size_t kMaxKeptSeriesTotal = 64 * 1024;

class PlanCache {
 public:
  // The kept plan of `s` for this measurement, retention policy and
  // database when the catalog is still at `version`; else an empty one.
  KeptPlan Find(const SelectStatement& s, const std::string& measurement,
                const std::string& retention_policy, const std::string& database, uint64_t version);

  // Keeps `plan` and its series list for the next run of `s`.
  void Keep(const SelectStatement& s, const std::string& measurement, const std::string& database,
            uint64_t version, const Plan& plan,
            const std::shared_ptr<const std::vector<InSeries>>& series);

  // Lets the plans of statement `id` go (its tree was destroyed).
  void Forget(uint64_t id);

  // The statements whose plans are kept, the last run: at most this many.
  static constexpr size_t kMaxStatements = 1024;

 private:
  struct Entry {
    uint64_t statement;
    std::vector<KeptPlan> kept;  // the most recently used last
  };
  Mutex mu_;
  std::list<Entry> entries_ GPULSE_GUARDED_BY(mu_);  // the most recently run first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> by_statement_ GPULSE_GUARDED_BY(mu_);
};

// Series held in the series lists of kept plans, every statement of the
// process together: at most kMaxKeptSeriesTotal (a list that would pass that
// is listed again at each run instead).
size_t KeptPlanSeries();

}  // namespace gpulse::query
