// The plan of one SELECT over one measurement: the fields it reads, its
// aggregate slots and outputs, its groups and buckets, its time range and
// condition, and the tier that answers it. BuildPlan makes one from the
// statement and the catalog; ChooseTier (tier_choice.h) picks its tier;
// execution (exec/) runs it.
//
// Thread safety: a plan is made by one thread, then read by many.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/gpulse.h"
#include "query/plan/agg_spec.h"
#include "query/plan/buckets.h"
#include "query/plan/condition.h"
#include "query/runtime/context.h"
#include "query/runtime/inputs.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"
#include "query/syntax/functions.h"
#include "query/syntax/regex.h"

namespace gpulse::query {

struct AggSlot {
  AggSpec spec;
  int field = -1;  // index into Plan::fields; -1: the field does not exist
};

struct OutExpr {
  const Expr* expr;
  std::string name;
};

// BuildPlan's part of a plan (all but the time range and the members
// RunAggregate sets) depends only on the statement and the catalog, and is
// kept in the statement for its next run (KeepPlan): a run copies it, so the
// members are values or pointers to what nobody changes.
struct Plan {
  std::string measurement;
  std::vector<std::string> fields;  // read from each series
  std::vector<FieldType> field_types;
  // Each of `fields` to its index: a plan of count(*) over a point of
  // 100,000 fields looked each one up among the others (seconds).
  std::unordered_map<std::string, int> field_index;
  // Of the measurement, shared with the kept plan's copies.
  std::shared_ptr<const std::map<std::string, FieldType>> all_fields;
  std::set<std::string> tag_keys;  // seen on the measurement's series; BuildPlan's only

  bool aggregate = false;
  bool lone_selector = false;
  bool multirow = false;
  bool transformed = false;
  std::vector<AggSlot> slots;
  std::map<const Expr*, int> slot_of;  // aggregate call -> slot
  std::vector<OutExpr> outputs;
  std::vector<std::shared_ptr<const Expr>> owned;  // expansions of * and /regex/

  std::vector<std::string> dims;  // GROUP BY names, sorted
  std::vector<int> dim_field;     // per dim: field index of a string field, or -1 (a tag)
  bool field_dims = false;
  std::optional<Bucketer> bucketer;
  std::string interval_text;
  // Every bucket start of [lo, hi) when both bounds are given and the count
  // is within the row limit: states then live in arrays (GroupAcc).
  std::vector<int64_t> dense_buckets;
  // Every aggregate folds into a fixed-size cell and the buckets are
  // fixed-width dense_buckets (or there is no GROUP BY time): groups keep
  // Cells (cells.h), not AggStates. Set by RunAggregate.
  bool use_cells = false;
  BucketGrid grid;
  std::vector<AggSpec> specs;  // slots[k].spec

  size_t BucketIndex(int64_t start) const {
    if (bucketer->Fixed()) {
      return static_cast<size_t>((start - dense_buckets[0]) / bucketer->Width());
    }
    return static_cast<size_t>(std::lower_bound(dense_buckets.begin(), dense_buckets.end(), start) -
                               dense_buckets.begin());
  }

  int64_t lo = INT64_MIN, hi = INT64_MAX;  // [lo, hi)
  bool has_lo = false, has_hi = false;
  const Expr* condition = nullptr;  // without its time terms; null when none
  std::shared_ptr<const Expr> owned_condition;
  // The condition names no field, so it holds for a whole series or not at
  // all: the series list keeps only those it holds for, and a run sets
  // `condition` to null (RunOnInput).
  bool tags_only = false;
  // The condition is tag terms and comparisons of one field with constants,
  // all ANDed, and every aggregate is of that field (count(x) WHERE x > 0):
  // a series whose tags pass keeps the points of the field that pass each
  // comparison, no join of rows needed. The comparisons, and the field.
  struct FieldTestSpec {
    BinaryOp op;
    bool field_left;  // field op constant (else constant op field)
    QueryValue constant;
  };
  std::vector<FieldTestSpec> field_tests;
  int filter_field = -1;
  std::vector<TagMatcher> eq;  // tag = 'v' terms ANDed at the top: the index finds them
  std::map<const Expr*, Regex> regexes;

  FillKind fill = FillKind::kNull;
  QueryValue fill_value;

  // The tier that answers (an index into storage::kTiers), -1 for raw;
  // forced_tier is the FROM's retention policy, when it names one.
  int tier = -1;
  std::string forced_tier;
  std::string tier_why;
  // The tier answers from tallies: count(f) GROUP BY f of a string field f
  // (tally_dim: f's place among dims).
  bool tally = false;
  size_t tally_dim = 0;

  int FieldIndex(const std::string& name) {
    if (const auto known = field_index.find(name); known != field_index.end()) return known->second;
    auto it = all_fields->find(name);
    if (it == all_fields->end()) return -1;
    fields.push_back(name);
    field_types.push_back(it->second);
    const int index = static_cast<int>(fields.size() - 1);
    field_index.emplace(name, index);
    return index;
  }
  bool IsField(const Expr& ref) const {
    return ref.var_type != VarType::kTag && all_fields->count(ref.text) > 0;
  }
};

// Reads the measurement's fields and tag keys from `input` and plans `s`
// over it: outputs (with * and /regex/ expanded), aggregate slots, WHERE
// (the time range apart), GROUP BY and FILL. The range is the statement's
// at ctx->now_ns(). Errors name the expression at fault.
Status BuildPlan(ExecContext* ctx, const SelectStatement& s, Input* input,
                 const std::string& measurement, Plan* plan);

// The plan's time range set from `range`.
void SetRange(const TimeRange& range, Plan* plan);

// The kind of a function call (kMath for a name not in the table).
FunctionKind KindOf(const Expr& call);

// Whether `e` names a field of the measurement anywhere.
bool NamesField(const Expr& e, const Plan& plan);

// The starts of buckets first..last (both bucket starts, first <= last),
// appended to *out.
void AppendBucketStarts(const Bucketer& bucketer, int64_t first, int64_t last,
                        std::vector<int64_t>* out);

// The plan's time range as "[start, end)", for errors and EXPLAIN.
std::string RangeText(const Plan& plan);

// x mod m in [0, m), for m > 0.
int64_t FloorMod(int64_t x, int64_t m);

}  // namespace gpulse::query
