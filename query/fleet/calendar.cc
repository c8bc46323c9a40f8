// The fleet's calendar (calendar.h).

#include "query/fleet/calendar.h"

#include <algorithm>

#include "query/plan/condition.h"
#include "query/runtime/eval.h"
#include "query/runtime/format.h"
#include "query/syntax/parser.h"
#include "storage/column.h"

namespace gpulse::query {

namespace {

constexpr int64_t kMaxSeasonNs = 366 * 86400LL * 1'000'000'000;

}  // namespace

Status CreateSeason(Db* db, const CreateSeasonStatement& s, int64_t now_ns) {
  const Result<int64_t> start = EvalTime(*s.start, now_ns);
  if (!start.ok()) return start.status();
  const Result<int64_t> end = EvalTime(*s.end, now_ns);
  if (!end.ok()) return end.status();
  constexpr int64_t kFar = INT64_MAX / 4;  // past any year a season can mean
  if (*start < -kFar || *start > kFar || *end < -kFar || *end > kFar) {
    return ErrorAt(*s.start, "a season lies outside the years gpulse handles");
  }
  if (*end <= *start) return ErrorAt(*s.end, "a season ends after it starts");
  if (*end - *start > kMaxSeasonNs) return ErrorAt(*s.end, "a season lasts at most a year");
  // Stored with absolute bounds, as it will be read back.
  const std::string text = "CREATE SEASON " + QuoteIdent(s.name) + " FROM '" + Rfc3339(*start) +
                           "' TO '" + Rfc3339(*end) + "'";
  return db->PutDefinition(kSeasonDefinitionKind, s.name, text);
}

Status ListSeasons(Db* db, std::vector<Season>* out) {
  out->clear();
  std::vector<std::pair<std::string, std::string>> stored;
  GPULSE_RETURN_IF_ERROR(db->ListDefinitions(kSeasonDefinitionKind, &stored));
  for (const auto& [name, text] : stored) {
    Result<std::unique_ptr<Statement>> parsed = ParseStatement(text);
    if (!parsed.ok() || (*parsed)->kind != StatementKind::kCreateSeason) {
      return Status::Corruption("season '" + name + "' is stored as [" + text +
                                "], which is not a CREATE SEASON statement");
    }
    const auto& s = static_cast<const CreateSeasonStatement&>(**parsed);
    const Result<int64_t> start = EvalTime(*s.start, 0);
    const Result<int64_t> end = EvalTime(*s.end, 0);
    if (!start.ok() || !end.ok()) return Status::Corruption("season '" + name + "': bad bounds");
    out->push_back({name, *start, *end});
  }
  return Status::Ok();
}

Status Calendar::Load(Db* db, const std::string& database, int64_t lo, int64_t hi) {
  GPULSE_RETURN_IF_ERROR(ListSeasons(db, &seasons_));
  std::vector<TagMatcher> match;
  if (!database.empty()) match.push_back({"db", database});
  std::vector<Series> series;
  GPULSE_RETURN_IF_ERROR(db->ListSeries("maintenance", match, &series));
  const std::string fields[] = {"end"};
  for (const Series& s : series) {
    const auto node =
        std::find_if(s.tags.begin(), s.tags.end(), [](const Tag& t) { return t.key == "node"; });
    if (node == s.tags.end()) continue;
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(db->ReadSeries(s, fields, lo - kMaxMaintenanceNs, hi, &cols));
    for (size_t i = 0; i < cols[0].size(); ++i) {
      // `end` is ns since the epoch; a value no clock can mean is skipped.
      const double end = storage::NumberAt(cols[0], i);
      if (!(end > static_cast<double>(lo)) || !(end < 9.2e18)) continue;
      maintenance_[node->value].emplace_back(cols[0].ts[i], static_cast<int64_t>(end));
    }
  }
  return Status::Ok();
}

bool Calendar::NodeInMaintenance(const std::string& node, int64_t lo, int64_t hi) const {
  const auto it = maintenance_.find(node);
  if (it == maintenance_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](const auto& w) { return w.first <= hi && w.second > lo; });
}

bool Calendar::GroupInMaintenance(const std::vector<Tag>& group, int64_t lo, int64_t hi) const {
  for (const Tag& t : group) {
    if (t.key == "node") return NodeInMaintenance(t.value, lo, hi);
  }
  return false;
}

const Season* Calendar::SeasonAt(int64_t lo, int64_t hi) const {
  for (const Season& s : seasons_) {
    if (s.start_ns <= hi && s.end_ns > lo) return &s;
  }
  return nullptr;
}

}  // namespace gpulse::query
