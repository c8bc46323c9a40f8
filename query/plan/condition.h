// Conditions shared by the statements that take a WHERE: splitting the time
// range out of it, and matching series on tag comparisons (SHOW, DELETE,
// DROP SERIES). Also the small tree helpers the planners share.
//
// Thread safety: pure functions; a compiled TagCondition is read-only and
// may be shared by threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/syntax/ast.h"
#include "query/syntax/regex.h"

namespace gpulse::query {

// [lo, hi) from the time terms of a WHERE; has_lo / has_hi say which bound a
// term set (unset bounds are the int64 ends).
struct TimeRange {
  int64_t lo = INT64_MIN;
  int64_t hi = INT64_MAX;
  bool has_lo = false;
  bool has_hi = false;
};

// Splits the time terms out of a condition: the top-level AND terms that
// compare `time` narrow *range; what remains is returned in *rest (null when
// nothing; when `rest` is null only the range is computed, with nothing
// copied). A time term under OR or NOT, or a != on time, is an error.
Status ExtractTime(const Expr& e, int64_t now_ns, TimeRange* range, std::unique_ptr<Expr>* rest);

// Which measurements FROM `sources` names (measurements and regexes; none:
// all), with its regexes compiled once.
class SourceFilter {
 public:
  // InvalidArgument for a bad regex.
  Status Compile(const std::vector<Source>& sources);
  bool Names(const std::string& m) const;

 private:
  bool all_ = true;
  std::vector<std::string> names_;
  std::vector<Regex> regexes_;
};

// InvalidArgument "line L, column C: what", at the expression.
Status ErrorAt(const Expr& e, const std::string& what);
std::unique_ptr<Expr> Clone(const Expr& e);
// A copy of a FROM entry (its subquery too).
Source CloneSource(const Source& s);
// A copy of a SELECT's tree (its subqueries too), without kept plans.
std::unique_ptr<SelectStatement> CloneSelect(const SelectStatement& s);
std::unique_ptr<NorthstarStatement> CloneNorthstar(const NorthstarStatement& s);
std::unique_ptr<RolloutsStatement> CloneRollouts(const RolloutsStatement& s);
// A copy of a CREATE ALERT (its NORTHSTAR or SELECT source too): a compiled
// rule owns its tree while the parsed list stays the caller's.
std::unique_ptr<CreateAlertStatement> CloneCreateAlert(const CreateAlertStatement& s);
// Trees made in code, as the parser makes them, for the statements that run
// other statements inside themselves (BASELINE, SHOW KPIS, ANOMALIES): no
// text is written to be parsed again.
std::unique_ptr<Expr> MakeVarRef(std::string name, VarType type = VarType::kAny);
std::unique_ptr<Expr> MakeInteger(int64_t value);
std::unique_ptr<Expr> MakeBinary(BinaryOp op, std::unique_ptr<Expr> a, std::unique_ptr<Expr> b);
std::unique_ptr<Expr> MakeCall(std::string name, std::vector<std::unique_ptr<Expr>> args);
// A duration of `amount` `unit`s ("d", "h", "m"...).
std::unique_ptr<Expr> MakeDuration(int64_t amount, std::string unit);
// `condition AND time >= lo AND time < hi` (nanoseconds); `condition` may be
// null.
std::unique_ptr<Expr> WithTimeRange(std::unique_ptr<Expr> condition, int64_t lo, int64_t hi);
bool IsTimeRef(const Expr& e);
bool IsComparison(BinaryOp op);
bool MentionsTime(const Expr& e);
// Whether now() is called anywhere in `e`.
bool CallsNow(const Expr& e);
// The value of tag `key`, empty when the tags have none.
std::string TagValue(const std::vector<Tag>& tags, std::string_view key);

// A condition over tags only: comparisons (=, !=, =~, !~, IN) of a tag with
// a string, joined by AND, OR and NOT. A missing tag compares as ''.
class TagCondition {
 public:
  // Compiles the regexes of `e` (null: matches every series); `e` must
  // outlive this. InvalidArgument for a bad regex.
  Status Compile(const Expr* e);
  // Compile, and InvalidArgument (with the position) when `e` holds anything
  // but tag comparisons; `what` names the statement in the message.
  Status CompileTagsOnly(const Expr* e, const std::string& what);
  bool Matches(const std::vector<Tag>& tags) const { return !root_ || Eval(*root_, tags); }

 private:
  Status CompileRegexes(const Expr& e);
  std::string Text(const Expr& e, const std::vector<Tag>& tags) const;
  bool Eval(const Expr& e, const std::vector<Tag>& tags) const;

  const Expr* root_ = nullptr;
  std::map<const Expr*, Regex> regexes_;
};

}  // namespace gpulse::query
