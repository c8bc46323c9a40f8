// The fleet's calendar: when a group's normal does not apply. Planned
// maintenance windows (the `maintenance` measurement: one point per node
// and window, at its start, with its `end`) and known seasonal windows
// (CREATE SEASON: holidays, launch weeks, stored as definitions) are left
// out of every baseline's history, and alerts that compare with a baseline
// are held back inside them (docs/metric-framework.md).
//
// Thread safety: a loaded Calendar is immutable.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/gpulse.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// The definition kind seasons are stored under (Db::PutDefinition).
inline constexpr std::string_view kSeasonDefinitionKind = "season";

struct Season {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // exclusive
};

// CREATE SEASON: checks the bounds (start before end, at most a year apart)
// and stores the season with its bounds as absolute times, so that a season
// given as now() - 1d means the day it was created. A season of the same
// name is replaced.
Status CreateSeason(Db* db, const CreateSeasonStatement& statement, int64_t now_ns);

// A longest maintenance window looked for: windows are read from this far
// before the range.
inline constexpr int64_t kMaxMaintenanceNs = 7 * 86400LL * 1'000'000'000;

class Calendar {
 public:
  // Reads the seasons and the maintenance windows that may touch [lo, hi)
  // (of the series of `database` when it is not empty).
  Status Load(Db* db, const std::string& database, int64_t lo, int64_t hi);

  // Whether planned maintenance held `node` at any moment of [lo, hi].
  bool NodeInMaintenance(const std::string& node, int64_t lo, int64_t hi) const;
  // Whether a group (its tags) names a node in maintenance during [lo, hi].
  bool GroupInMaintenance(const std::vector<Tag>& group, int64_t lo, int64_t hi) const;
  // The season overlapping [lo, hi], or null.
  const Season* SeasonAt(int64_t lo, int64_t hi) const;

  const std::vector<Season>& seasons() const { return seasons_; }

 private:
  std::vector<Season> seasons_;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> maintenance_;  // by node
};

// Every stored season, by name.
Status ListSeasons(Db* db, std::vector<Season>* out);

}  // namespace gpulse::query
