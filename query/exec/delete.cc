#include "query/exec/delete.h"

#include <algorithm>

#include "query/plan/condition.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

// The first reference in `e` to a field of the measurement (a delete
// selects series, so a field condition has no meaning), or null.
const Expr* FieldReference(const Expr& e, const std::vector<FieldInfo>& fields) {
  if (e.kind == ExprKind::kVarRef && e.var_type != VarType::kTag) {
    const bool is_field = e.var_type == VarType::kField ||
                          std::any_of(fields.begin(), fields.end(),
                                      [&](const FieldInfo& f) { return f.name == e.text; });
    if (is_field) return &e;
  }
  for (const auto& c : e.children) {
    if (const Expr* found = FieldReference(*c, fields)) return found;
  }
  return nullptr;
}

Status Measurements(Db* db, const DeleteStatement& s, std::vector<std::string>* out) {
  SourceFilter from;
  GPULSE_RETURN_IF_ERROR(from.Compile(s.sources));
  std::vector<std::string> all;
  GPULSE_RETURN_IF_ERROR(db->ListMeasurements(&all));
  for (const std::string& m : all) {
    if (from.Names(m)) out->push_back(m);
  }
  return Status::Ok();
}

}  // namespace

Status RunDelete(Db* db, const DeleteStatement& s, const QueryOptions& options, int64_t now_ns,
                 std::vector<std::string>* notes) {
  const std::string what = s.what == DeleteKind::kDelete ? "DELETE" : "DROP SERIES";
  TimeRange range;
  std::unique_ptr<Expr> tags;
  if (s.condition) GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, now_ns, &range, &tags));
  if (s.what != DeleteKind::kDelete && (range.has_lo || range.has_hi)) {
    return ErrorAt(*s.condition,
                   "DROP SERIES drops whole series; DELETE deletes the points of a time range");
  }
  // The database is the executor's: the one FROM names, or the query's
  // (statement_reach.h); options.database says which.
  std::vector<std::string> measurements;
  GPULSE_RETURN_IF_ERROR(Measurements(db, s, &measurements));
  // A field named in the condition is the likelier mistake, so it is named
  // before the shape of the condition is checked.
  for (const std::string& m : measurements) {
    if (!tags) break;
    std::vector<FieldInfo> fields;
    GPULSE_RETURN_IF_ERROR(db->ListFields(m, &fields));
    if (const Expr* ref = FieldReference(*tags, fields)) {
      return ErrorAt(
          *ref, ref->text + " is a field of " + m + "; " + what + " selects series by their tags");
    }
  }
  TagCondition condition;
  GPULSE_RETURN_IF_ERROR(condition.CompileTagsOnly(tags.get(), what));
  std::vector<Series> chosen;
  for (const std::string& m : measurements) {
    std::vector<TagMatcher> scope;
    if (!options.database.empty()) scope.push_back({"db", options.database});
    std::vector<Series> series;
    GPULSE_RETURN_IF_ERROR(db->ListSeries(m, scope, &series));
    for (Series& x : series) {
      // The condition sees the tags a query under the scope sees.
      std::vector<Tag> visible = x.tags;
      if (!options.database.empty()) {
        std::erase_if(visible, [](const Tag& t) { return t.key == "db"; });
      }
      if (condition.Matches(visible)) chosen.push_back(std::move(x));
    }
  }
  if (s.what == DeleteKind::kDelete) {
    GPULSE_RETURN_IF_ERROR(db->Delete(chosen, range.lo, range.hi));
  } else {
    GPULSE_RETURN_IF_ERROR(db->DropSeries(chosen));
  }
  const std::string count = std::to_string(chosen.size()) + " series";
  notes->push_back(s.what == DeleteKind::kDelete ? "DELETE: points deleted from " + count
                                                 : what + ": " + count + " dropped");
  return Status::Ok();
}

}  // namespace gpulse::query
