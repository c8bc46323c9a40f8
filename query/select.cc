#include "query/select.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "query/aggregate.h"
#include "query/buckets.h"
#include "query/cells.h"
#include "query/condition.h"
#include "query/eval.h"
#include "query/format.h"
#include "query/functions.h"
#include "query/inputs.h"
#include "query/parallel.h"
#include "query/query_memory.h"
#include "query/regex.h"
#include "storage/key_layout.h"

namespace gpulse::query {

// ---------------------------------------------------------------------------
// ExecContext

ExecContext::ExecContext(Db* db, const QueryOptions& options, int64_t now_ns)
    : db_(db),
      options_(options),
      now_ns_(now_ns),
      deadline_(std::chrono::steady_clock::now() + options.limits.timeout) {}

Status ExecContext::Poll() {
  if (stopped()) return stop_status();
  const auto now = std::chrono::steady_clock::now();
  bool cancelled = false;
  if (options_.cancelled && now >= next_cancel_check_) {
    next_cancel_check_ = now + kCancelCheckInterval;
    cancelled = options_.cancelled();
  }
  if (cancelled) {
    Stop(Status::Cancelled("query cancelled"));
  } else if (now > deadline_) {
    Stop(Status::ResourceExhausted("query ran past its time limit (timeout " +
                                   std::to_string(options_.limits.timeout.count()) + " ms)"));
  }
  return stopped() ? stop_status() : Status::Ok();
}

void ExecContext::Stop(Status why) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_.load()) return;
  stop_status_ = std::move(why);
  stopped_.store(true);
}

Status ExecContext::stop_status() {
  std::lock_guard<std::mutex> l(mu_);
  return stop_status_;
}

void ExecContext::NoteDamage(const Status& why) {
  std::lock_guard<std::mutex> l(mu_);
  ++damage_count_;
  if (damage_.size() < 5) damage_.push_back(why.message());
}

std::vector<std::string> ExecContext::DamageNotes() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  if (damage_count_ == 0) return out;
  out.push_back("damaged stored data was left out of this answer (" +
                std::to_string(damage_count_) +
                " series read failed; `gpulse verify` lists and can drop the damaged parts)");
  for (const std::string& d : damage_) out.push_back("damaged: " + d);
  return out;
}

void ExecContext::CountPoints(uint64_t n) {
  const uint64_t total = points_read.fetch_add(n) + n;
  if (total > options_.limits.max_points) {
    Stop(Status::ResourceExhausted("query read more than " +
                                   std::to_string(options_.limits.max_points) +
                                   " stored values (limit max_points)"));
  }
}

Status ExecContext::Charge(uint64_t bytes, const char* what) {
  if (options_.memory == nullptr) return Status::Ok();
  Status st = options_.memory->Charge(bytes, what);
  if (!st.ok()) Stop(st);
  return st;
}

namespace {

// Series a rollup plan reads in one Input::ScanRollups call.
constexpr size_t kTierChunk = 16;
// Series a raw fold reads in one Input::Scan call.
constexpr size_t kRawChunk = 32;

// ---------------------------------------------------------------------------
// Small helpers

FunctionKind KindOf(const Expr& call) {
  const FunctionInfo* f = LookupFunction(call.text);
  return f ? f->kind : FunctionKind::kMath;
}

bool IsAggregateCall(const Expr& e) {
  if (e.kind != ExprKind::kCall) return false;
  const FunctionKind k = KindOf(e);
  return k == FunctionKind::kAggregate || k == FunctionKind::kSelector;
}

bool HasAggregate(const Expr& e) {
  if (IsAggregateCall(e)) return true;
  for (const auto& c : e.children) {
    if (HasAggregate(*c)) return true;
  }
  return false;
}

bool HasTransformation(const Expr& e) {
  if (e.kind == ExprKind::kCall && KindOf(e) == FunctionKind::kTransformation) return true;
  for (const auto& c : e.children) {
    if (HasTransformation(*c)) return true;
  }
  return false;
}

// The column name InfluxQL gives an expression: its alias, the field, the
// outermost function, or the fields joined by '_'.
std::string DefaultName(const Expr& e) {
  if (e.kind == ExprKind::kVarRef) return e.text;
  if (e.kind == ExprKind::kCall) return e.text;
  std::string out;
  std::function<bool(const Expr&)> find_call = [&](const Expr& x) {
    if (x.kind == ExprKind::kCall) {
      out = x.text;
      return true;
    }
    for (const auto& c : x.children) {
      if (find_call(*c)) return true;
    }
    return false;
  };
  if (find_call(e)) return out;
  std::function<void(const Expr&)> refs = [&](const Expr& x) {
    if (x.kind == ExprKind::kVarRef) out += (out.empty() ? "" : "_") + x.text;
    for (const auto& c : x.children) refs(*c);
  };
  refs(e);
  return out.empty() ? "expr" : out;
}

// ---------------------------------------------------------------------------
// The plan of one SELECT over one measurement.

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

// tag = 'value' terms joined by AND at the top of the condition.
void CollectEq(const Expr& e, const Plan& plan, std::vector<TagMatcher>* out) {
  if (e.kind == ExprKind::kBinary && e.binary_op == BinaryOp::kAnd) {
    CollectEq(*e.children[0], plan, out);
    CollectEq(*e.children[1], plan, out);
    return;
  }
  if (e.kind == ExprKind::kBinary && e.binary_op == BinaryOp::kEq &&
      e.children[0]->kind == ExprKind::kVarRef && e.children[1]->kind == ExprKind::kString &&
      !plan.IsField(*e.children[0]) && !e.children[1]->text.empty()) {
    out->push_back({e.children[0]->text, e.children[1]->text});
  }
}

// The regex `e` holds, compiled; the error names where it stands.
Status CompileRegexAt(const Expr& e, Regex* out) {
  Result<Regex> re = CompileRegex(e.text);
  if (!re.ok()) return ErrorAt(e, re.status().message());
  *out = std::move(*re);
  return Status::Ok();
}

Status CompileRegexes(const Expr& e, Plan* plan) {
  if (e.kind == ExprKind::kBinary &&
      (e.binary_op == BinaryOp::kEqRegex || e.binary_op == BinaryOp::kNeqRegex) &&
      e.children[0]->kind == ExprKind::kVarRef && plan->IsField(*e.children[0])) {
    const FieldType t = plan->all_fields->at(e.children[0]->text);
    if (t != FieldType::kString) {
      const std::string type = storage::FieldTypeName(t);
      return ErrorAt(e, "'" + e.children[0]->text +
                            (type[0] == 'i' || type[0] == 'u' ? "' is an " : "' is a ") + type +
                            " field; =~ and !~ match strings (tags and string fields)");
    }
  }
  if (e.kind == ExprKind::kRegex) {
    Regex re;
    GPULSE_RETURN_IF_ERROR(CompileRegexAt(e, &re));
    plan->regexes.emplace(&e, std::move(re));
  }
  for (const auto& c : e.children) GPULSE_RETURN_IF_ERROR(CompileRegexes(*c, plan));
  return Status::Ok();
}

// --- Row evaluation (conditions, raw values) -------------------------------

struct RowRef {
  const InSeries* series;
  const std::vector<Column>* cols;
  const std::vector<std::vector<int32_t>>* pos;  // per field, per row
  size_t row;
};

QueryValue EvalRow(const Expr& e, const Plan& plan, const RowRef& r, int64_t now_ns) {
  switch (e.kind) {
    case ExprKind::kVarRef: {
      if (plan.IsField(e)) {
        for (size_t f = 0; f < plan.fields.size(); ++f) {
          if (plan.fields[f] != e.text) continue;
          const int32_t p = (*r.pos)[f][r.row];
          return p < 0 ? QueryValue{} : CellOf((*r.cols)[f], static_cast<size_t>(p));
        }
        return std::monostate{};
      }
      return TagValue(r.series->tags, e.text);
    }
    case ExprKind::kInteger:
      return e.int_value;
    case ExprKind::kFloat:
      return e.float_value;
    case ExprKind::kString:
      return e.text;
    case ExprKind::kBool:
      return e.bool_value;
    case ExprKind::kDuration: {
      Result<int64_t> ns = DurationNanos(e);
      return ns.ok() ? QueryValue(*ns) : QueryValue{};
    }
    case ExprKind::kUnary: {
      QueryValue v = EvalRow(*e.children[0], plan, r, now_ns);
      if (e.unary_op == UnaryOp::kNot) return v.index() == 0 ? QueryValue{} : !IsTrue(v);
      return ApplyBinary(BinaryOp::kSub, int64_t{0}, v);
    }
    case ExprKind::kIn: {
      QueryValue v = EvalRow(*e.children[0], plan, r, now_ns);
      bool found = false;
      for (size_t i = 1; i < e.children.size() && !found; ++i) {
        found = IsTrue(ApplyBinary(BinaryOp::kEq, v, EvalRow(*e.children[i], plan, r, now_ns)));
      }
      return found != e.negated;
    }
    case ExprKind::kBinary: {
      if (e.binary_op == BinaryOp::kAnd || e.binary_op == BinaryOp::kOr) {
        const bool a = IsTrue(EvalRow(*e.children[0], plan, r, now_ns));
        if (e.binary_op == BinaryOp::kAnd && !a) return false;
        if (e.binary_op == BinaryOp::kOr && a) return true;
        return IsTrue(EvalRow(*e.children[1], plan, r, now_ns));
      }
      QueryValue a = EvalRow(*e.children[0], plan, r, now_ns);
      if (e.binary_op == BinaryOp::kEqRegex || e.binary_op == BinaryOp::kNeqRegex) {
        auto it = plan.regexes.find(e.children[1].get());
        if (a.index() != 5 || it == plan.regexes.end()) return e.binary_op == BinaryOp::kNeqRegex;
        const bool m = RegexSearch(*it->second, std::get<std::string>(a));
        return m == (e.binary_op == BinaryOp::kEqRegex);
      }
      return ApplyBinary(e.binary_op, a, EvalRow(*e.children[1], plan, r, now_ns));
    }
    case ExprKind::kCall: {
      if (e.text == "now") return now_ns;
      std::vector<QueryValue> args;
      for (const auto& c : e.children) args.push_back(EvalRow(*c, plan, r, now_ns));
      Result<QueryValue> v = ApplyMath(e.text, args);
      return v.ok() ? *v : QueryValue{};
    }
    default:
      return std::monostate{};
  }
}

// Whether `e` names a field of the measurement anywhere.
bool NamesField(const Expr& e, const Plan& plan) {
  if (e.kind == ExprKind::kVarRef && plan.IsField(e)) return true;
  for (const auto& c : e.children) {
    if (NamesField(*c, plan)) return true;
  }
  return false;
}

// Whether the condition holds for every row of a series (true), none
// (false), or depends on field values (nullopt): tags are known per series.
std::optional<bool> TagTruth(const Expr& e, const Plan& plan, const InSeries& s) {
  if (e.kind == ExprKind::kBinary &&
      (e.binary_op == BinaryOp::kAnd || e.binary_op == BinaryOp::kOr)) {
    const auto a = TagTruth(*e.children[0], plan, s);
    const auto b = TagTruth(*e.children[1], plan, s);
    if (e.binary_op == BinaryOp::kAnd) {
      if ((a && !*a) || (b && !*b)) return false;
      if (a && b) return true;
      return std::nullopt;
    }
    if ((a && *a) || (b && *b)) return true;
    if (a && b) return false;
    return std::nullopt;
  }
  if (e.kind == ExprKind::kUnary && e.unary_op == UnaryOp::kNot) {
    const auto a = TagTruth(*e.children[0], plan, s);
    if (a) return !*a;
    return std::nullopt;
  }
  // A leaf condition: known when it names no field.
  if (NamesField(e, plan)) return std::nullopt;
  static const std::vector<Column> kNoCols;
  static const std::vector<std::vector<int32_t>> kNoPos;
  RowRef r{&s, &kNoCols, &kNoPos, 0};
  return IsTrue(EvalRow(e, plan, r, 0));
}

// Whether `e` is `field op constant` or `constant op field` with a
// comparison op, setting *field to the field's name.
bool FieldTest(const Expr& e, const Plan& plan, std::string* field) {
  if (e.kind != ExprKind::kBinary) return false;
  switch (e.binary_op) {
    case BinaryOp::kEq:
    case BinaryOp::kNeq:
    case BinaryOp::kLt:
    case BinaryOp::kLte:
    case BinaryOp::kGt:
    case BinaryOp::kGte:
      break;
    default:
      return false;
  }
  const auto constant = [](const Expr& x) {
    return x.kind == ExprKind::kInteger || x.kind == ExprKind::kFloat;
  };
  const Expr& a = *e.children[0];
  const Expr& b = *e.children[1];
  const Expr* ref = nullptr;
  if (a.kind == ExprKind::kVarRef && constant(b)) ref = &a;
  if (b.kind == ExprKind::kVarRef && constant(a)) ref = &b;
  if (ref == nullptr || !plan.IsField(*ref)) return false;
  *field = ref->text;
  return true;
}

// Splits an AND tree into field tests of one field (into *tests) and terms
// that name no field; false when any term is something else.
bool SplitFieldTests(const Expr& e, const Plan& plan, std::string* field,
                     std::vector<const Expr*>* tests) {
  if (e.kind == ExprKind::kBinary && e.binary_op == BinaryOp::kAnd) {
    return SplitFieldTests(*e.children[0], plan, field, tests) &&
           SplitFieldTests(*e.children[1], plan, field, tests);
  }
  std::string name;
  if (FieldTest(e, plan, &name)) {
    if (!field->empty() && *field != name) return false;
    *field = name;
    tests->push_back(&e);
    return true;
  }
  return !NamesField(e, plan);
}

// --- Planning ----------------------------------------------------------------

Status CheckAggregateArgs(const Expr& call, Plan* plan, const std::string& field, AggSpec* spec) {
  double pct = 0;
  if (!LookupAggregate(call.text, &spec->kind, &pct)) {
    return ErrorAt(call, call.text + "() is not available yet");
  }
  spec->percentile = pct;
  const auto known = plan->all_fields->find(field);
  spec->type = known != plan->all_fields->end() ? known->second : FieldType::kFloat;
  if (known != plan->all_fields->end() && !AcceptsType(spec->kind, spec->type)) {
    return ErrorAt(call, call.text + "() cannot take the " + storage::FieldTypeName(spec->type) +
                             " field '" + field + "'");
  }
  const size_t n = call.children.size();
  if (spec->kind == AggKind::kPercentile && call.text == "percentile") {
    const Expr& p = *call.children[1];
    if (p.kind == ExprKind::kInteger) {
      spec->percentile = static_cast<double>(p.int_value);
    } else if (p.kind == ExprKind::kFloat) {
      spec->percentile = p.float_value;
    } else {
      return ErrorAt(p, "percentile() takes a number from 0 to 100 as its second argument");
    }
    if (spec->percentile < 0 || spec->percentile > 100) {
      return ErrorAt(p, "percentile() takes a number from 0 to 100 as its second argument");
    }
  }
  if (spec->kind == AggKind::kTop || spec->kind == AggKind::kBottom) {
    if (n != 2 || call.children[1]->kind != ExprKind::kInteger || call.children[1]->int_value < 1) {
      return ErrorAt(call, call.text + "() takes a field and a count of at least 1, as in " +
                               call.text + "(util, 3)");
    }
    spec->n = call.children[1]->int_value;
  }
  if (spec->kind == AggKind::kIntegral && n == 2) {
    if (call.children[1]->kind != ExprKind::kDuration) {
      return ErrorAt(*call.children[1],
                     "integral() takes a duration unit, as in integral(power_w, 1h)");
    }
    Result<int64_t> unit = DurationNanos(*call.children[1]);
    if (!unit.ok()) return unit.status();
    if (*unit <= 0) return ErrorAt(*call.children[1], "integral() needs a positive unit");
    spec->unit_ns = *unit;
  }
  return Status::Ok();
}

// Walks a field expression of an aggregate query: registers its aggregate
// calls as slots and checks that no field is used outside one.
Status PlanAggregates(const Expr& e, Plan* plan) {
  if (IsAggregateCall(e)) {
    const Expr& arg = *e.children[0];
    if (arg.kind != ExprKind::kVarRef) {
      return ErrorAt(arg, e.text + "() takes a field name as its first argument");
    }
    AggSlot slot;
    GPULSE_RETURN_IF_ERROR(CheckAggregateArgs(e, plan, arg.text, &slot.spec));
    slot.field = plan->IsField(arg) ? plan->FieldIndex(arg.text) : -1;
    plan->slot_of[&e] = static_cast<int>(plan->slots.size());
    plan->slots.push_back(slot);
    return Status::Ok();
  }
  if (e.kind == ExprKind::kVarRef) {
    return ErrorAt(e, "mixing aggregate and non-aggregate queries is not supported: '" + e.text +
                          "' needs an aggregate such as mean(" + e.text + ")");
  }
  if (e.kind == ExprKind::kWildcard || e.kind == ExprKind::kRegex) {
    return ErrorAt(e, "a wildcard is only valid as the argument of a function here");
  }
  if (e.kind == ExprKind::kCall && KindOf(e) == FunctionKind::kTransformation) {
    GPULSE_RETURN_IF_ERROR(PlanAggregates(*e.children[0], plan));
    return Status::Ok();  // the second argument is a literal
  }
  for (const auto& c : e.children) GPULSE_RETURN_IF_ERROR(PlanAggregates(*c, plan));
  return Status::Ok();
}

bool IsArithmetic(BinaryOp op) {
  return op == BinaryOp::kAdd || op == BinaryOp::kSub || op == BinaryOp::kMul ||
         op == BinaryOp::kDiv || op == BinaryOp::kMod;
}

Status PlanRawRefs(const Expr& e, Plan* plan) {
  if (e.kind == ExprKind::kBinary && IsArithmetic(e.binary_op)) {
    for (const auto& c : e.children) {
      if (c->kind == ExprKind::kVarRef && !plan->IsField(*c)) {
        return ErrorAt(*c, "'" + c->text + "' is a tag (or names nothing); only fields and " +
                               "numbers take part in arithmetic");
      }
    }
  }
  if (e.kind == ExprKind::kVarRef) {
    if (plan->IsField(e)) plan->FieldIndex(e.text);
    return Status::Ok();
  }
  if (e.kind == ExprKind::kCall) {
    const FunctionKind k = KindOf(e);
    if (k == FunctionKind::kTransformation) {
      plan->transformed = true;
      return PlanRawRefs(*e.children[0], plan);
    }
    if (k == FunctionKind::kDomain) return ErrorAt(e, e.text + "() is not available yet");
  }
  for (const auto& c : e.children) GPULSE_RETURN_IF_ERROR(PlanRawRefs(*c, plan));
  return Status::Ok();
}

void FieldRefsOf(const Expr& e, Plan* plan) {
  if (e.kind == ExprKind::kVarRef && plan->IsField(e)) plan->FieldIndex(e.text);
  for (const auto& c : e.children) FieldRefsOf(*c, plan);
}

std::unique_ptr<Expr> MakeRef(const std::string& name, Position pos, VarType type) {
  auto r = std::make_unique<Expr>();
  r->kind = ExprKind::kVarRef;
  r->text = name;
  r->pos = pos;
  r->var_type = type;
  return r;
}

// The starts of buckets first..last (both bucket starts, first <= last):
// fixed widths by arithmetic into a vector sized once, calendar buckets
// one Next() at a time.
void AppendBucketStarts(const Bucketer& bucketer, int64_t first, int64_t last,
                        std::vector<int64_t>* out) {
  if (bucketer.Fixed()) {
    const int64_t width = bucketer.Width();
    const auto n =
        static_cast<size_t>((static_cast<uint64_t>(last) - static_cast<uint64_t>(first)) /
                            static_cast<uint64_t>(width)) +
        1;
    out->reserve(out->size() + n);
    for (size_t i = 0; i < n; ++i) out->push_back(first + static_cast<int64_t>(i) * width);
    return;
  }
  for (int64_t b = first; b <= last; b = bucketer.Next(b)) out->push_back(b);
}

void SetRange(const TimeRange& range, Plan* plan) {
  plan->lo = range.lo;
  plan->hi = range.hi;
  plan->has_lo = range.has_lo;
  plan->has_hi = range.has_hi;
}

Status BuildPlan(ExecContext* ctx, const SelectStatement& s, Input* input,
                 const std::string& measurement, Plan* plan) {
  plan->measurement = measurement;
  std::vector<FieldInfo> fields;
  GPULSE_RETURN_IF_ERROR(input->Fields(measurement, &fields));
  auto all_fields = std::make_shared<std::map<std::string, FieldType>>();
  for (const FieldInfo& f : fields) (*all_fields)[f.name] = f.type;
  plan->all_fields = std::move(all_fields);
  GPULSE_RETURN_IF_ERROR(input->TagKeys(measurement, &plan->tag_keys));

  // Output expressions, with * and /regex/ expanded.
  for (const SelectField& f : s.fields) {
    const Expr& e = *f.expr;
    if (IsTimeRef(e)) continue;  // time is always the first column
    if (e.kind == ExprKind::kWildcard || e.kind == ExprKind::kRegex) {
      Regex re;
      if (e.kind == ExprKind::kRegex) GPULSE_RETURN_IF_ERROR(CompileRegexAt(e, &re));
      std::set<std::pair<std::string, VarType>> names;
      if (e.var_type != VarType::kTag) {
        for (const auto& [name, _] : *plan->all_fields) names.insert({name, VarType::kField});
      }
      if (e.var_type != VarType::kField) {
        for (const std::string& k : plan->tag_keys) names.insert({k, VarType::kTag});
      }
      for (const auto& [name, type] : names) {
        if (re && !RegexSearch(*re, name)) continue;
        plan->owned.push_back(MakeRef(name, e.pos, type));
        plan->outputs.push_back({plan->owned.back().get(), name});
      }
      continue;
    }
    if (e.kind == ExprKind::kCall && !e.children.empty() &&
        (e.children[0]->kind == ExprKind::kWildcard || e.children[0]->kind == ExprKind::kRegex)) {
      Regex re;
      if (e.children[0]->kind == ExprKind::kRegex) {
        GPULSE_RETURN_IF_ERROR(CompileRegexAt(*e.children[0], &re));
      }
      AggKind kind;
      double pct;
      const bool agg = LookupAggregate(e.text, &kind, &pct);
      for (const auto& [name, type] : *plan->all_fields) {
        if (re && !RegexSearch(*re, name)) continue;
        if (agg && !AcceptsType(kind, type)) continue;
        auto c = Clone(e);
        c->children[0] = MakeRef(name, e.children[0]->pos, VarType::kField);
        plan->owned.push_back(std::move(c));
        plan->outputs.push_back(
            {plan->owned.back().get(), (f.alias.empty() ? e.text : f.alias) + "_" + name});
      }
      continue;
    }
    plan->outputs.push_back({&e, f.alias.empty() ? DefaultName(e) : f.alias});
  }
  if (plan->outputs.empty()) {
    return Status::InvalidArgument("SELECT names no field of " + measurement);
  }
  // Duplicate names get _1, _2, as InfluxDB does.
  std::map<std::string, int> seen;
  for (OutExpr& o : plan->outputs) {
    const int n = seen[o.name]++;
    if (n > 0) o.name += "_" + std::to_string(n);
  }

  for (const OutExpr& o : plan->outputs) {
    if (HasAggregate(*o.expr)) plan->aggregate = true;
    if (HasTransformation(*o.expr)) plan->transformed = true;
  }
  if (plan->aggregate) {
    for (const OutExpr& o : plan->outputs) GPULSE_RETURN_IF_ERROR(PlanAggregates(*o.expr, plan));
    for (const AggSlot& slot : plan->slots) {
      if (IsMultiRow(slot.spec.kind) && plan->outputs.size() > 1) {
        return Status::InvalidArgument(
            "top(), bottom() and distinct() must be the only expression of their SELECT");
      }
    }
    const Expr& only = *plan->outputs[0].expr;
    plan->multirow = plan->slots.size() == 1 && IsMultiRow(plan->slots[0].spec.kind);
    plan->lone_selector = plan->outputs.size() == 1 && plan->slots.size() == 1 &&
                          IsAggregateCall(only) && IsSelector(plan->slots[0].spec.kind);
  } else {
    for (const OutExpr& o : plan->outputs) GPULSE_RETURN_IF_ERROR(PlanRawRefs(*o.expr, plan));
  }

  // WHERE.
  if (s.condition) {
    TimeRange range;
    std::unique_ptr<Expr> rest;
    GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, ctx->now_ns(), &range, &rest));
    SetRange(range, plan);
    plan->owned_condition = std::move(rest);
    if (plan->owned_condition) {
      plan->condition = plan->owned_condition.get();
      GPULSE_RETURN_IF_ERROR(CompileRegexes(*plan->condition, plan));
      FieldRefsOf(*plan->condition, plan);
      CollectEq(*plan->condition, *plan, &plan->eq);
      plan->tags_only = !NamesField(*plan->condition, *plan);
    }
  }

  // GROUP BY.
  std::set<std::string> dims;
  for (const auto& d : s.dimensions) {
    if (d->kind == ExprKind::kCall && d->text == "time") {
      if (!plan->aggregate) {
        return ErrorAt(*d, "GROUP BY time() needs an aggregate function such as mean(util)");
      }
      if (plan->bucketer) return ErrorAt(*d, "GROUP BY has more than one time()");
      int64_t offset = 0;
      if (d->children.size() == 2) {
        const Expr& o = *d->children[1];
        const bool neg = o.kind == ExprKind::kUnary;
        Result<int64_t> ns = DurationNanos(neg ? *o.children[0] : o);
        if (!ns.ok()) return ns.status();
        offset = neg ? -*ns : *ns;
      }
      Result<Bucketer> b = Bucketer::Make(d->children[0]->duration, offset, s.timezone);
      if (!b.ok()) return ErrorAt(*d, b.status().message());
      plan->bucketer = *b;
      plan->interval_text = DurationToString(d->children[0]->duration);
    } else if (d->kind == ExprKind::kWildcard) {
      dims.insert(plan->tag_keys.begin(), plan->tag_keys.end());
    } else if (d->kind == ExprKind::kRegex) {
      Regex re;
      GPULSE_RETURN_IF_ERROR(CompileRegexAt(*d, &re));
      for (const std::string& k : plan->tag_keys) {
        if (RegexSearch(*re, k)) dims.insert(k);
      }
    } else if (d->kind == ExprKind::kVarRef) {
      dims.insert(d->text);
    }
  }
  plan->dims.assign(dims.begin(), dims.end());
  for (const std::string& d : plan->dims) {
    int f = -1;
    const auto field = plan->all_fields->find(d);
    if (!plan->tag_keys.count(d) && field != plan->all_fields->end()) {
      if (field->second != FieldType::kString) {
        return Status::InvalidArgument("GROUP BY " + d +
                                       ": only tags and string fields can group a query");
      }
      f = plan->FieldIndex(d);
      plan->field_dims = true;
    }
    plan->dim_field.push_back(f);
  }

  // A lone selector answers with its point's time, unless GROUP BY time
  // makes the bucket's start the row's time.
  if (plan->lone_selector && !plan->bucketer) plan->slots[0].spec.need_time = true;

  if (plan->aggregate && plan->condition && !plan->field_dims && !plan->slots.empty()) {
    std::string field;
    std::vector<const Expr*> tests;
    if (SplitFieldTests(*plan->condition, *plan, &field, &tests) && !tests.empty()) {
      const int f = plan->FieldIndex(field);
      if (f >= 0 && plan->field_types[static_cast<size_t>(f)] != FieldType::kString &&
          std::all_of(plan->slots.begin(), plan->slots.end(),
                      [&](const AggSlot& slot) { return slot.field == f; })) {
        plan->filter_field = f;
        for (const Expr* test : tests) {
          const bool field_left = test->children[0]->kind == ExprKind::kVarRef;
          const Expr& constant = *test->children[field_left ? 1 : 0];
          plan->field_tests.push_back({test->binary_op, field_left,
                                       constant.kind == ExprKind::kInteger
                                           ? QueryValue(constant.int_value)
                                           : QueryValue(constant.float_value)});
        }
      }
    }
  }

  plan->fill = s.fill == FillKind::kUnset ? FillKind::kNull : s.fill;
  if (s.fill_value) {
    const Expr* v = s.fill_value.get();
    const bool neg = v->kind == ExprKind::kUnary;
    if (neg) v = v->children[0].get();
    plan->fill_value = v->kind == ExprKind::kInteger
                           ? QueryValue(neg ? -v->int_value : v->int_value)
                           : QueryValue(neg ? -v->float_value : v->float_value);
  }
  return Status::Ok();
}

// --- Running -------------------------------------------------------------------

using GroupKey = std::vector<std::string>;

// The aggregate states of one group: one per slot and bucket. With a known
// range of buckets they sit in one array indexed by bucket number (no map
// lookup per run, one free at the end); otherwise in a map by bucket start.
// With plan.use_cells they are `cells` instead, and the States methods are
// not used.
class GroupAcc {
 public:
  Cells cells;

  using States = std::unique_ptr<AggState>*;  // plan.slots.size() of them

  // The states of bucket number i of plan.dense_buckets (non-empty).
  States GetDense(const Plan& plan, size_t i) {
    const size_t ns = plan.slots.size();
    if (dense_.empty()) dense_.resize(plan.dense_buckets.size() * ns);
    States states = &dense_[i * ns];
    if (!states[0]) Fill(plan, states);
    return states;
  }

  States Get(const Plan& plan, int64_t bucket) {
    if (!plan.dense_buckets.empty()) return GetDense(plan, plan.BucketIndex(bucket));
    auto [it, inserted] = sparse_.try_emplace(bucket);
    if (inserted) {
      it->second.resize(plan.slots.size());
      Fill(plan, it->second.data());
    }
    return it->second.data();
  }

  States Find(const Plan& plan, int64_t bucket) {
    if (!plan.dense_buckets.empty()) {
      if (dense_.empty()) return nullptr;
      States states = &dense_[plan.BucketIndex(bucket) * plan.slots.size()];
      return states[0] ? states : nullptr;
    }
    auto it = sparse_.find(bucket);
    return it == sparse_.end() ? nullptr : it->second.data();
  }

  // fn(bucket start, states) for every bucket with states, in time order.
  // (With cells, states is null.)
  template <typename Fn>
  void ForEach(const Plan& plan, Fn fn) {
    const size_t ns = plan.slots.size();
    if (plan.use_cells) {
      for (size_t i = 0; i < plan.grid.count && !cells.empty(); ++i) {
        if (cells.Present(ns, i))
          fn(plan.grid.first + static_cast<int64_t>(i) * plan.grid.width, nullptr);
      }
      return;
    }
    if (!plan.dense_buckets.empty()) {
      for (size_t i = 0; i < plan.dense_buckets.size() && !dense_.empty(); ++i) {
        if (dense_[i * ns]) fn(plan.dense_buckets[i], &dense_[i * ns]);
      }
      return;
    }
    for (auto& [b, states] : sparse_) fn(b, states.data());
  }

 private:
  static void Fill(const Plan& plan, States states) {
    for (size_t k = 0; k < plan.slots.size(); ++k) states[k] = NewAggState(plan.slots[k].spec);
  }

  std::vector<std::unique_ptr<AggState>> dense_;
  std::map<int64_t, std::vector<std::unique_ptr<AggState>>> sparse_;
};

using GroupMap = std::map<GroupKey, GroupAcc>;

// Compare(x, k) of a value of a numeric column and a test's constant (an
// integer or a float), on their own types: two integers exactly, else as
// doubles, as Compare does.
template <typename T>
int CompareToConstant(T x, const QueryValue& k) {
  if constexpr (std::is_same_v<T, int64_t>) {
    if (k.index() == 2) {
      const int64_t y = std::get<int64_t>(k);
      return x < y ? -1 : (x > y ? 1 : 0);
    }
  }
  const double a = static_cast<double>(x);
  const double b = k.index() == 2 ? static_cast<double>(std::get<int64_t>(k)) : std::get<double>(k);
  if (std::isnan(a) || std::isnan(b)) return 2;
  return a < b ? -1 : (a > b ? 1 : 0);
}

template <typename T>
void KeepPassingTyped(const std::vector<T>& values, size_t begin, size_t end,
                      const std::vector<Plan::FieldTestSpec>& tests, std::vector<uint32_t>* kept) {
  for (size_t i = begin; i < end; ++i) {
    bool pass = true;
    for (const Plan::FieldTestSpec& test : tests) {
      int c = CompareToConstant(values[i], test.constant);
      if (!test.field_left && c != 2) c = -c;
      if (!ComparisonHolds(test.op, c).value_or(false)) {
        pass = false;
        break;
      }
    }
    if (pass) kept->push_back(static_cast<uint32_t>(i));
  }
}

// The positions in [begin, end) of col's points that pass every test: on
// the column's own type for numbers (no QueryValue a point), through
// ApplyBinary for the rest.
void KeepPassing(const Column& col, size_t begin, size_t end,
                 const std::vector<Plan::FieldTestSpec>& tests, std::vector<uint32_t>* kept) {
  switch (col.type) {
    case FieldType::kFloat:
      return KeepPassingTyped(col.floats, begin, end, tests, kept);
    case FieldType::kInt:
      return KeepPassingTyped(col.ints, begin, end, tests, kept);
    case FieldType::kUint:
      return KeepPassingTyped(col.uints, begin, end, tests, kept);
    default:
      break;
  }
  for (size_t i = begin; i < end; ++i) {
    const QueryValue v = CellOf(col, i);
    bool pass = true;
    for (const Plan::FieldTestSpec& test : tests) {
      if (!IsTrue(test.field_left ? ApplyBinary(test.op, v, test.constant)
                                  : ApplyBinary(test.op, test.constant, v))) {
        pass = false;
        break;
      }
    }
    if (pass) kept->push_back(static_cast<uint32_t>(i));
  }
}

// Folds positions idx (ascending, into col) into the states of group g,
// bucket by bucket.
void FoldIndexes(const Plan& plan, GroupAcc* g, size_t slot, const Column& col,
                 const std::vector<uint32_t>& idx) {
  size_t i = 0;
  if (plan.use_cells) {
    // Runs of consecutive positions, each folded whole.
    while (i < idx.size()) {
      size_t j = i + 1;
      while (j < idx.size() && idx[j] == idx[j - 1] + 1) ++j;
      g->cells.AddRange(plan.specs, plan.grid, slot, col, idx[i],
                        static_cast<size_t>(idx[j - 1]) + 1);
      i = j;
    }
    return;
  }
  while (i < idx.size()) {
    size_t j = idx.size();
    int64_t b = INT64_MIN;
    if (plan.bucketer) {
      b = plan.bucketer->Start(col.ts[idx[i]]);
      const int64_t next = plan.bucketer->Next(b);
      j = i + 1;
      while (j < idx.size() && col.ts[idx[j]] < next) ++j;
    }
    g->Get(plan, b)[slot]->AddIndexes(col, idx.data() + i, j - i);
    i = j;
  }
}

// Joins a series' columns on time: the sorted union of their timestamps, and
// for each field its position at each row (-1: no point there).
void Join(const std::vector<Column>& cols, std::vector<int64_t>* ts,
          std::vector<std::vector<int32_t>>* pos) {
  ts->clear();
  const Column* first = nullptr;
  bool same = true;
  for (const Column& c : cols) {
    if (c.ts.empty()) continue;
    if (!first) {
      first = &c;
    } else if (c.ts != first->ts) {
      same = false;
    }
  }
  pos->assign(cols.size(), {});
  if (!first) return;
  if (same) {
    *ts = first->ts;
  } else {
    for (const Column& c : cols) ts->insert(ts->end(), c.ts.begin(), c.ts.end());
    std::sort(ts->begin(), ts->end());
    ts->erase(std::unique(ts->begin(), ts->end()), ts->end());
  }
  for (size_t f = 0; f < cols.size(); ++f) {
    std::vector<int32_t>& p = (*pos)[f];
    p.assign(ts->size(), -1);
    const Column& c = cols[f];
    size_t k = 0;
    for (size_t r = 0; r < ts->size() && k < c.ts.size(); ++r) {
      if (c.ts[k] == (*ts)[r]) p[r] = static_cast<int32_t>(k++);
    }
  }
}

GroupKey TagKeyOf(const Plan& plan, const InSeries& s) {
  GroupKey key;
  key.reserve(plan.dims.size());
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    key.push_back(plan.dim_field[d] < 0 ? TagValue(s.tags, plan.dims[d]) : std::string());
  }
  return key;
}

std::vector<Tag> TagsOf(const Plan& plan, const GroupKey& key) {
  std::vector<Tag> tags;
  for (size_t d = 0; d < plan.dims.size(); ++d) tags.push_back({plan.dims[d], key[d]});
  return tags;
}

// Evaluates an output expression over the rows of one output series.
using LeafFn = std::function<Result<std::vector<QueryValue>>(const Expr&)>;

Result<std::vector<QueryValue>> EvalColumn(const Expr& e, const std::vector<int64_t>& times,
                                           const LeafFn& leaf) {
  const size_t n = times.size();
  switch (e.kind) {
    case ExprKind::kVarRef:
      return leaf(e);
    case ExprKind::kInteger:
      return std::vector<QueryValue>(n, e.int_value);
    case ExprKind::kFloat:
      return std::vector<QueryValue>(n, e.float_value);
    case ExprKind::kString:
      return std::vector<QueryValue>(n, e.text);
    case ExprKind::kBool:
      return std::vector<QueryValue>(n, e.bool_value);
    case ExprKind::kUnary: {
      auto v = EvalColumn(*e.children[0], times, leaf);
      if (!v.ok()) return v;
      for (QueryValue& x : *v) {
        x = e.unary_op == UnaryOp::kNot ? QueryValue(!IsTrue(x))
                                        : ApplyBinary(BinaryOp::kSub, int64_t{0}, x);
      }
      return v;
    }
    case ExprKind::kBinary: {
      if (e.binary_op == BinaryOp::kEqRegex || e.binary_op == BinaryOp::kNeqRegex) {
        return ErrorAt(e, "=~ and !~ belong in WHERE");
      }
      auto a = EvalColumn(*e.children[0], times, leaf);
      if (!a.ok()) return a;
      auto b = EvalColumn(*e.children[1], times, leaf);
      if (!b.ok()) return b;
      for (size_t i = 0; i < n; ++i) (*a)[i] = ApplyBinary(e.binary_op, (*a)[i], (*b)[i]);
      return a;
    }
    case ExprKind::kCall: {
      const FunctionKind k = KindOf(e);
      if (k == FunctionKind::kAggregate || k == FunctionKind::kSelector) return leaf(e);
      if (k == FunctionKind::kTransformation) {
        auto v = EvalColumn(*e.children[0], times, leaf);
        if (!v.ok()) return v;
        int64_t arg2 = 0;
        if (e.children.size() == 2) {
          const Expr& a = *e.children[1];
          if (a.kind == ExprKind::kDuration) {
            Result<int64_t> ns = DurationNanos(a);
            if (!ns.ok()) return ns.status();
            arg2 = *ns;
          } else if (a.kind == ExprKind::kInteger) {
            arg2 = a.int_value;
          } else {
            return ErrorAt(a, e.text + "() takes a duration or an integer as its second argument");
          }
          if (e.text == "increase") return ErrorAt(a, "increase() takes one argument");
        }
        return ApplyTransformation(e.text, times, *v, arg2);
      }
      if (k == FunctionKind::kMath) {
        std::vector<std::vector<QueryValue>> args;
        for (const auto& c : e.children) {
          auto v = EvalColumn(*c, times, leaf);
          if (!v.ok()) return v;
          args.push_back(std::move(*v));
        }
        std::vector<QueryValue> out(n);
        std::vector<QueryValue> row(args.size());
        for (size_t i = 0; i < n; ++i) {
          for (size_t a = 0; a < args.size(); ++a) row[a] = args[a][i];
          Result<QueryValue> v = ApplyMath(e.text, row);
          if (!v.ok()) return ErrorAt(e, v.status().message());
          out[i] = std::move(*v);
        }
        return out;
      }
      return ErrorAt(e, e.text + "() is not available yet");
    }
    default:
      return ErrorAt(e, e.ToString() + " cannot be selected");
  }
}

// ORDER BY, OFFSET and LIMIT on one series' rows.
void OrderAndLimit(const SelectStatement& s, ResultSeries* rs) {
  if (s.order == SortOrder::kDesc) std::reverse(rs->values.begin(), rs->values.end());
  const size_t off = static_cast<size_t>(std::max<int64_t>(0, s.offset.value_or(0)));
  if (off > 0) {
    rs->values.erase(rs->values.begin(),
                     rs->values.begin() + static_cast<ptrdiff_t>(std::min(off, rs->values.size())));
  }
  if (s.limit && *s.limit > 0 && rs->values.size() > static_cast<size_t>(*s.limit)) {
    rs->values.resize(static_cast<size_t>(*s.limit));
  }
}

std::string RangeText(const Plan& plan) {
  auto t = [](int64_t ns) { return FormatValue(QueryValue(ns), true, TimeFormat::kRfc3339); };
  return "[" + (plan.has_lo ? t(plan.lo) : std::string("-inf")) + ", " +
         (plan.has_hi ? t(plan.hi) : std::string("+inf")) + ")";
}

// --- Aggregate queries --------------------------------------------------------

// Folds every point of a series' columns (indexed like plan.fields) into
// group g, run by run per bucket.
// Folds points [begin, end) of `col` into slot `slot` of g.
void FoldSlotRange(const Plan& plan, GroupAcc* g, size_t slot, const Column& col, size_t begin,
                   size_t end) {
  if (plan.use_cells) {
    g->cells.AddRange(plan.specs, plan.grid, slot, col, begin, end);
    return;
  }
  size_t i0 = begin;
  while (i0 < end) {
    int64_t b = INT64_MIN;
    size_t i1 = end;
    if (plan.bucketer) {
      b = plan.bucketer->Start(col.ts[i0]);
      const int64_t next = plan.bucketer->Next(b);
      // Runs are mostly short (a 5m bucket of minute samples): scan a
      // few points before falling back to a binary search.
      i1 = i0 + 1;
      const size_t scan_end = std::min(end, i0 + 16);
      while (i1 < scan_end && col.ts[i1] < next) ++i1;
      if (i1 == scan_end && i1 < end && col.ts[i1] < next) {
        i1 = static_cast<size_t>(std::lower_bound(col.ts.begin() + static_cast<ptrdiff_t>(i1),
                                                  col.ts.begin() + static_cast<ptrdiff_t>(end),
                                                  next) -
                                 col.ts.begin());
      }
    }
    g->Get(plan, b)[slot]->AddRange(col, i0, i1);
    i0 = i1;
  }
}

// Folds every point of `cols` (a series' fields, as Read gives them) into
// the slots that aggregate them.
void FoldColumns(const Plan& plan, GroupAcc* g, const std::vector<Column>& cols) {
  for (size_t slot = 0; slot < plan.slots.size(); ++slot) {
    const int f = plan.slots[slot].field;
    if (f < 0) continue;
    const Column& col = cols[static_cast<size_t>(f)];
    FoldSlotRange(plan, g, slot, col, 0, col.size());
  }
}

int64_t FloorMod(int64_t x, int64_t m) {
  const int64_t r = x % m;
  return r < 0 ? r + m : r;
}

// Why no tier can answer the query whatever its buckets; empty when one can.
std::string TierObstacle(const Plan& plan, const Input& input) {
  if (input.Tiers() == 0) return "no tiers (a subquery's answer, or Options::tiers empty)";
  if (plan.field_dims) return "GROUP BY a string field needs the rows";
  if (plan.condition && NamesField(*plan.condition, plan)) {
    return "the WHERE condition names a field";
  }
  if (!plan.has_lo || !plan.has_hi) return "the time range is not bounded on both sides";
  for (const AggSlot& slot : plan.slots) {
    if (slot.field < 0) continue;
    if (!storage::HasRollups(slot.spec.type)) return "tiers hold numeric fields only";
    switch (slot.spec.kind) {
      case AggKind::kCount:
      case AggKind::kSum:
      case AggKind::kMean:
      case AggKind::kFirst:
      case AggKind::kLast:
        break;
      case AggKind::kMin:
      case AggKind::kMax:
      case AggKind::kSpread:
      case AggKind::kMedian:
      case AggKind::kPercentile:
        // A lone selector answers its point's time, unless GROUP BY time
        // answers bucket starts.
        if (slot.spec.need_time && !plan.bucketer) {
          return "the selected point's own time needs the rows";
        }
        break;
      default:
        return "tiers keep count, sum, mean, min, max, spread, first, last and quantiles only";
    }
  }
  return {};
}

// Whether tier buckets of `width` tile the query's GROUP BY time buckets
// (the range's ends need not be on the tier's grid: the parts of the range
// before the first and after the last whole tier bucket are read raw).
bool Tiles(const Plan& plan, int64_t width) {
  if (!plan.bucketer) return true;
  if (plan.bucketer->Fixed()) {
    return plan.bucketer->Width() % width == 0 &&
           FloorMod(plan.bucketer->Start(plan.lo), width) == 0;
  }
  if (plan.dense_buckets.empty()) return false;
  for (int64_t b : plan.dense_buckets) {
    if (FloorMod(b, width) != 0) return false;
  }
  return true;
}

// When the range reaches before what the retention keeps of the data chosen
// (raw or plan->tier), a note says so.
void NoteRetention(ExecContext* ctx, const Plan& plan) {
  const int64_t since = ctx->db()->RetainedSince(plan.tier, ctx->now_ns(), ctx->options().database);
  if (since == INT64_MIN || plan.lo >= since) return;
  const std::string kind =
      plan.tier < 0 ? "raw points" : std::string(storage::kTiers[plan.tier].name) + " rows";
  std::string note = "the range reaches back before what the retention keeps of the " + kind +
                     " (from " + FormatValue(QueryValue(since), true, TimeFormat::kRfc3339) +
                     " on)";
  note += plan.tier < 0 ? "; GROUP BY time(1h) or coarser reads the tiers, which may keep more"
                        : "; coarser GROUP BY time buckets read a tier that may keep more";
  if (std::find(ctx->notes.begin(), ctx->notes.end(), note) == ctx->notes.end()) {
    ctx->notes.push_back(note);
  }
}

// count(f) GROUP BY f (and tags, and time) of one string field f with a
// tag-only WHERE and a bounded range: what tier tallies answer. f's place
// among the dims, or -1.
int TallyDim(const Plan& plan) {
  if (!plan.field_dims || plan.slots.empty() || !plan.has_lo || !plan.has_hi) return -1;
  if (plan.condition && NamesField(*plan.condition, plan)) return -1;
  int field = -1;
  for (const AggSlot& slot : plan.slots) {
    if (slot.field < 0 || slot.spec.kind != AggKind::kCount ||
        slot.spec.type != FieldType::kString || (field >= 0 && slot.field != field)) {
      return -1;
    }
    field = slot.field;
  }
  int dim = -1;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    if (plan.dim_field[d] < 0) continue;
    if (plan.dim_field[d] != field || dim >= 0) return -1;
    dim = static_cast<int>(d);
  }
  return dim;
}

// Picks the coarsest tier whose buckets tile the query's (or the one FROM
// names); plan->tier stays -1 for raw. An error only for a forced tier that
// cannot answer.
Status ChooseTier(ExecContext* ctx, const Input& input, Plan* plan) {
  const std::string& forced = plan->forced_tier;
  if (forced == "raw") {
    plan->tier_why = "FROM names it";
    return Status::Ok();
  }
  int forced_index = -1;
  if (!forced.empty() && forced != "autogen") {
    for (size_t t = 0; t < storage::kTierCount; ++t) {
      if (forced == storage::kTiers[t].name) forced_index = static_cast<int>(t);
    }
    if (forced_index < 0) {
      return Status::InvalidArgument("no tier (retention policy) named \"" + forced +
                                     "\": raw, 5m, 1h, 1d, or autogen for the automatic choice");
    }
    if (!(input.Tiers() & (1u << forced_index))) {
      return Status::InvalidArgument("tier " + forced + " is not kept (storage.tiers)");
    }
  }
  // Samples per value of a string field: the tallies, when the range lies
  // on the tier's grid (no raw ends: they would need the rows).
  if (const int dim = input.Tiers() != 0 ? TallyDim(*plan) : -1; dim >= 0) {
    for (int t = static_cast<int>(storage::kTierCount) - 1; t >= 0; --t) {
      if ((forced_index >= 0 && t != forced_index) || !(input.Tiers() & (1u << t))) continue;
      const int64_t w = storage::kTiers[t].width_ns;
      if (FloorMod(plan->lo, w) != 0 || FloorMod(plan->hi, w) != 0 || !Tiles(*plan, w)) continue;
      plan->tier = t;
      plan->tally = true;
      plan->tally_dim = static_cast<size_t>(dim);
      plan->tier_why =
          "count() of a string field by its values: the coarsest tier's tallies whose buckets "
          "tile the GROUP BY time buckets, with the range on its grid";
      NoteRetention(ctx, *plan);
      return Status::Ok();
    }
  }
  const std::string obstacle = TierObstacle(*plan, input);
  if (!obstacle.empty()) {
    if (forced_index >= 0) {
      return Status::InvalidArgument("tier " + forced + " cannot answer this query: " + obstacle);
    }
    plan->tier_why = obstacle;
    if (input.Tiers() != 0) NoteRetention(ctx, *plan);
    return Status::Ok();
  }
  // Raw points the retention deleted: a tier answers even when the range's
  // raw ends would be large.
  const bool raw_short =
      ctx->db()->RetainedSince(-1, ctx->now_ns(), ctx->options().database) > plan->lo;
  for (int t = static_cast<int>(storage::kTierCount) - 1; t >= 0; --t) {
    if (forced_index >= 0 && t != forced_index) continue;
    if (!(input.Tiers() & (1u << t))) continue;
    // The raw edges of a range off the tier's grid: a finer tier is better
    // when they are more than an eighth of the range.
    const int64_t w = storage::kTiers[t].width_ns;
    const double edges = static_cast<double>(FloorMod(w - FloorMod(plan->lo, w), w)) +
                         static_cast<double>(FloorMod(plan->hi, w));
    const double span = static_cast<double>(plan->hi) - static_cast<double>(plan->lo);
    if (forced_index < 0 && edges * 8 > span && !raw_short) continue;
    if (Tiles(*plan, w)) {
      plan->tier = t;
      plan->tier_why = forced_index >= 0 ? "FROM names it"
                                         : "the coarsest tier whose buckets tile the GROUP BY "
                                           "time buckets, with the range's ends on its grid or "
                                           "within an eighth of the range of it";
      if (FloorMod(plan->lo, w) != 0 || FloorMod(plan->hi, w) != 0) {
        plan->tier_why += "; the range's ends off the grid are read raw";
      }
      break;
    }
  }
  if (plan->tier < 0) {
    if (forced_index >= 0) {
      return Status::InvalidArgument("tier " + forced +
                                     " cannot answer this query: its buckets do not tile the "
                                     "GROUP BY time buckets");
    }
    plan->tier_why =
        "no tier's buckets tile the GROUP BY time buckets with the range's ends near its grid";
    NoteRetention(ctx, *plan);
    return Status::Ok();
  }
  if (raw_short) plan->tier_why += "; raw points before the range's start are past retention";
  NoteRetention(ctx, *plan);
  for (const AggSlot& slot : plan->slots) {
    if (slot.field >= 0 &&
        (slot.spec.kind == AggKind::kMedian || slot.spec.kind == AggKind::kPercentile)) {
      const std::string note = std::string("approximate: quantiles from the ") +
                               storage::kTiers[plan->tier].name +
                               " tier's sketches, within 1% of the exact value (FROM \"raw\"." +
                               plan->measurement + " for the exact one)";
      if (std::find(ctx->notes.begin(), ctx->notes.end(), note) == ctx->notes.end()) {
        ctx->notes.push_back(note);
      }
      break;
    }
  }
  return Status::Ok();
}

// The rollup parts the slots need.
uint32_t RollupPartsFor(const Plan& plan) {
  uint32_t parts = 0;
  for (const AggSlot& slot : plan.slots) {
    switch (slot.spec.kind) {
      case AggKind::kSum:
      case AggKind::kMean:
        parts |= storage::kRollupSum;
        break;
      case AggKind::kMin:
      case AggKind::kMax:
      case AggKind::kSpread:
        parts |= storage::kRollupMinMax;
        break;
      case AggKind::kFirst:
      case AggKind::kLast:
        parts |= storage::kRollupFirstLast;
        break;
      case AggKind::kMedian:
      case AggKind::kPercentile:
        parts |= storage::kRollupSketch | storage::kRollupMinMax;
        break;
      default:
        break;
    }
  }
  return parts;
}

// One group's rows of an aggregate query: its buckets' answers, FILL, the
// output expressions, ORDER BY and LIMIT, into out->series (or, with
// as_columns, out->columns); out->rows stays 0 when the group has none. A
// group's rows depend on it alone, so costly ones (percentiles) are
// answered on the worker threads.
struct GroupAnswer {
  size_t rows = 0;
  ResultSeries series;
  ColumnSeries columns;
};

// Whether a group's answer can be read straight from its cells: every
// output a cell aggregate alone, over the plan's bucket grid, with FILL(null)
// or FILL(none) and rows in time order. Then `slots` holds each output's slot.
bool CellOutputs(const SelectStatement& s, const Plan& plan, std::vector<size_t>* slots) {
  const bool reorders =
      s.order == SortOrder::kDesc || s.offset.value_or(0) > 0 || (s.limit && *s.limit > 0);
  if (!plan.use_cells || !plan.bucketer || plan.multirow || plan.transformed || reorders ||
      (plan.fill != FillKind::kNull && plan.fill != FillKind::kNone)) {
    return false;
  }
  for (const OutExpr& o : plan.outputs) {
    auto it = plan.slot_of.find(o.expr);
    if (it == plan.slot_of.end()) return false;
    slots->push_back(static_cast<size_t>(it->second));
  }
  return true;
}

// AnswerGroup for a subquery whose outputs are cell aggregates alone, over
// the plan's bucket grid with FILL(null) or FILL(none) and rows in time
// order: typed columns straight from the cells (a fleet's day at 15-minute
// grain is tens of thousands of rows, and per-bucket vectors of values cost
// more than the fold). Null answers are in no column, as AnswerColumn leaves
// them; the row count is that of the general path.
void CellColumns(const Plan& plan, const GroupKey& key, GroupAcc& acc,
                 const std::vector<size_t>& slots, GroupAnswer* out) {
  if (acc.cells.empty()) return;  // no point: no rows
  const size_t ns = plan.slots.size(), nb = plan.grid.count;
  ColumnSeries cs;
  cs.name = plan.measurement;
  cs.tags = TagsOf(plan, key);
  cs.columns.push_back("time");
  for (const OutExpr& o : plan.outputs) cs.columns.push_back(o.name);
  cs.values.resize(slots.size());
  for (size_t k = 0; k < slots.size(); ++k) {
    acc.cells.AppendResults(plan.specs, plan.grid, slots[k], &cs.values[k]);
  }
  size_t present = nb;
  if (plan.fill == FillKind::kNone) {
    present = 0;
    for (size_t i = 0; i < nb; ++i) present += acc.cells.Present(ns, i) ? 1 : 0;
  }
  out->rows = present;
  if (out->rows > 0) out->columns = std::move(cs);
}

// AnswerGroup into ResultSeries::by_column straight from the cells, when
// CellOutputs holds (`slots` is what it gave): the general path's rows (every
// bucket of the range with FILL(null), those with a value with FILL(none))
// without a QueryValue per cell, which cost more than the fold in an answer
// of many rows.
void CellAnswerByColumn(const Plan& plan, const GroupKey& key, GroupAcc& acc,
                        const std::vector<int64_t>& all_buckets, const std::vector<size_t>& slots,
                        GroupAnswer* out) {
  if (acc.cells.empty()) return;  // no point: no rows
  // Each output's column over the whole grid at once. all_buckets is the
  // grid itself with FILL(null) (both come from the range's first and last
  // buckets), and with FILL(none) a superset of this group's buckets with a
  // point.
  ResultSeries rs;
  rs.by_column.resize(slots.size());
  bool any = false;
  for (size_t k = 0; k < slots.size(); ++k) {
    acc.cells.AppendResults(plan.specs, plan.grid, slots[k], &rs.by_column[k]);
    any = any || !rs.by_column[k].ts.empty();
  }
  // Without a value in any column, a bucket may still have points (of a
  // slot no output shows): FILL(null) gives it a row of nulls.
  for (size_t i = 0; i < plan.grid.count && !any; ++i) {
    any = acc.cells.Present(plan.slots.size(), i);
  }
  if (!any) return;
  if (plan.fill == FillKind::kNull) {
    rs.row_times = all_buckets;
  } else if (rs.by_column.size() == 1) {
    rs.row_times = rs.by_column[0].ts;
  } else {
    // FILL(none): the buckets where any column has a value.
    std::vector<int64_t> merged;
    for (const Column& c : rs.by_column) {
      merged.clear();
      std::set_union(rs.row_times.begin(), rs.row_times.end(), c.ts.begin(), c.ts.end(),
                     std::back_inserter(merged));
      rs.row_times.swap(merged);
    }
  }
  if (rs.row_times.empty()) return;
  rs.name = plan.measurement;
  rs.tags = TagsOf(plan, key);
  rs.columns.reserve(plan.outputs.size() + 1);
  rs.columns.push_back("time");
  for (const OutExpr& o : plan.outputs) rs.columns.push_back(o.name);
  out->rows = rs.row_times.size();
  out->series = std::move(rs);
}

// How a statement's groups are answered: the same for every group, so
// worked out once.
struct AnswerShape {
  bool as_columns = false;         // typed columns, for an outer query
  bool by_column = false;          // in ResultSeries::by_column, for a caller that reads them so
  bool from_cells = false;         // CellOutputs holds: straight from the cells
  std::vector<size_t> cell_slots;  // then, each output's slot
};

// One group's rows: as typed columns for an outer query, in
// ResultSeries::by_column when the caller reads them so, else in rows.
Status AnswerGroup(const SelectStatement& s, const Plan& plan, const GroupKey& key, GroupAcc& acc,
                   const std::vector<int64_t>& all_buckets, const AnswerShape& shape,
                   GroupAnswer* out) {
  const bool as_columns = shape.as_columns, by_column = shape.by_column;
  if (as_columns && shape.from_cells) {
    CellColumns(plan, key, acc, shape.cell_slots, out);
    return Status::Ok();
  }
  if (by_column && shape.from_cells) {
    CellAnswerByColumn(plan, key, acc, all_buckets, shape.cell_slots, out);
    return Status::Ok();
  }
  bool any = false;
  std::vector<int64_t> with_states;
  acc.ForEach(plan, [&](int64_t b, GroupAcc::States states) {
    with_states.push_back(b);
    // A bucket with cells has a point.
    for (size_t k = 0; k < plan.slots.size(); ++k) any = any || !states || !states[k]->empty();
  });
  if (!any) return Status::Ok();

  std::vector<int64_t> buckets;
  if (plan.bucketer) {
    if (plan.fill == FillKind::kNone) {
      for (int64_t b : with_states) {
        if (std::binary_search(all_buckets.begin(), all_buckets.end(), b)) buckets.push_back(b);
      }
    } else {
      buckets = all_buckets;
    }
  } else {
    buckets.push_back(INT64_MIN);
  }

  ResultSeries rs;
  rs.name = plan.measurement;
  rs.tags = TagsOf(plan, key);
  rs.columns.push_back("time");
  for (const OutExpr& o : plan.outputs) rs.columns.push_back(o.name);

  // Slot results per bucket; `filled` marks buckets without points.
  const size_t nb = buckets.size(), ns = plan.slots.size();
  std::vector<std::vector<QueryValue>> slot_vals(ns, std::vector<QueryValue>(nb));
  std::vector<bool> empty_bucket(nb, true);
  std::vector<int64_t> times(nb);
  for (size_t bi = 0; bi < nb; ++bi) {
    const int64_t b = buckets[bi];
    times[bi] = plan.bucketer ? b : (plan.has_lo ? plan.lo : 0);
    if (plan.use_cells) {
      const size_t i = plan.bucketer ? plan.BucketIndex(b) : 0;
      if (!acc.cells.Present(ns, i)) continue;
      empty_bucket[bi] = false;
      for (size_t k = 0; k < ns; ++k) {
        int64_t selected = INT64_MIN;
        slot_vals[k][bi] = acc.cells.Result(plan.specs[k], ns, k, i, &selected);
        if (plan.lone_selector && !plan.bucketer && selected != INT64_MIN) times[bi] = selected;
      }
      continue;
    }
    GroupAcc::States states = acc.Find(plan, b);
    if (!states) continue;
    for (size_t k = 0; k < ns; ++k) {
      AggState& state = *states[k];
      if (!state.empty()) empty_bucket[bi] = false;
      slot_vals[k][bi] = state.Result();
      if (plan.lone_selector && !plan.bucketer && state.SelectedTime() != INT64_MIN) {
        times[bi] = state.SelectedTime();
      }
    }
  }
  // FILL for buckets without points.
  if (plan.bucketer && plan.fill != FillKind::kNull && plan.fill != FillKind::kNone) {
    for (size_t k = 0; k < ns; ++k) {
      std::vector<QueryValue>& v = slot_vals[k];
      if (plan.fill == FillKind::kValue) {
        for (size_t bi = 0; bi < nb; ++bi) {
          if (empty_bucket[bi]) v[bi] = plan.fill_value;
        }
      } else if (plan.fill == FillKind::kPrevious) {
        for (size_t bi = 1; bi < nb; ++bi) {
          if (empty_bucket[bi] && v[bi].index() == 0) v[bi] = v[bi - 1];
        }
      } else if (plan.fill == FillKind::kLinear) {
        size_t prev = SIZE_MAX;
        for (size_t bi = 0; bi < nb; ++bi) {
          if (v[bi].index() == 0) continue;
          if (prev != SIZE_MAX && bi > prev + 1) {
            double a = 0, c = 0;
            if (ToDouble(v[prev], &a) && ToDouble(v[bi], &c)) {
              for (size_t m = prev + 1; m < bi; ++m) {
                const double x = a + (c - a) * static_cast<double>(times[m] - times[prev]) /
                                         static_cast<double>(times[bi] - times[prev]);
                v[m] = v[bi].index() == 2 && v[prev].index() == 2
                           ? QueryValue(static_cast<int64_t>(x))
                           : QueryValue(x);
              }
            }
          }
          prev = bi;
        }
      }
    }
  }

  if (plan.multirow) {
    // top/bottom/distinct: several rows per bucket.
    for (size_t bi = 0; bi < nb; ++bi) {
      GroupAcc::States states = acc.Find(plan, buckets[bi]);
      if (!states) continue;
      std::vector<std::pair<int64_t, QueryValue>> rows;
      states[0]->Rows(&rows);
      for (auto& [t, v] : rows) {
        rs.values.push_back(
            {QueryValue(t == INT64_MIN || plan.bucketer ? times[bi] : t), std::move(v)});
      }
    }
  } else {
    std::vector<std::vector<QueryValue>> cols;
    const LeafFn leaf = [&](const Expr& e) -> Result<std::vector<QueryValue>> {
      auto it = plan.slot_of.find(&e);
      if (it == plan.slot_of.end()) return ErrorAt(e, "internal: no slot for " + e.ToString());
      return slot_vals[static_cast<size_t>(it->second)];
    };
    for (const OutExpr& o : plan.outputs) {
      // An output that is an aggregate alone takes its slot's values (no
      // other expression names that call).
      if (auto it = plan.slot_of.find(o.expr); it != plan.slot_of.end()) {
        cols.push_back(std::move(slot_vals[static_cast<size_t>(it->second)]));
        continue;
      }
      auto v = EvalColumn(*o.expr, times, leaf);
      if (!v.ok()) return v.status();
      cols.push_back(std::move(*v));
    }
    const bool drop_empty = plan.fill == FillKind::kNone || plan.transformed;
    const bool reorders =
        s.order == SortOrder::kDesc || s.offset.value_or(0) > 0 || (s.limit && *s.limit > 0);
    if (as_columns && !reorders) {
      // Straight into typed columns: no row vectors. A row whose outputs
      // are all null is in no column.
      size_t kept = nb;
      for (size_t bi = 0; bi < nb && drop_empty; ++bi) {
        if (std::all_of(cols.begin(), cols.end(),
                        [&](const auto& c) { return c[bi].index() == 0; })) {
          --kept;
        }
      }
      if (kept == 0) return Status::Ok();
      ColumnSeries cs;
      cs.name = std::move(rs.name);
      cs.tags = std::move(rs.tags);
      cs.columns = std::move(rs.columns);
      for (const auto& c : cols) cs.values.push_back(AnswerColumn(times, c));
      out->rows = kept;
      out->columns = std::move(cs);
      return Status::Ok();
    }
    const bool strictly_increasing =
        std::adjacent_find(times.begin(), times.end(), std::greater_equal<int64_t>()) ==
        times.end();
    if (by_column && !reorders && strictly_increasing &&
        std::all_of(cols.begin(), cols.end(), OfOneType)) {
      // Typed columns (ResultSeries::by_column), without the rows whose
      // outputs are all null; a column whose values mix types (FILL(0) among
      // means) keeps the rows.
      rs.row_times.reserve(nb);
      for (size_t bi = 0; bi < nb; ++bi) {
        if (!drop_empty || std::any_of(cols.begin(), cols.end(),
                                       [&](const auto& c) { return c[bi].index() != 0; })) {
          rs.row_times.push_back(times[bi]);
        }
      }
      if (rs.row_times.empty()) return Status::Ok();
      rs.by_column.reserve(cols.size());
      for (const auto& c : cols) rs.by_column.push_back(AnswerColumn(times, c));
      out->rows = rs.row_times.size();
      out->series = std::move(rs);
      return Status::Ok();
    }
    for (size_t bi = 0; bi < nb; ++bi) {
      std::vector<QueryValue> row;
      row.reserve(cols.size() + 1);
      row.emplace_back(times[bi]);
      bool all_null = true;
      for (auto& c : cols) {
        all_null = all_null && c[bi].index() == 0;
        row.push_back(std::move(c[bi]));
      }
      if (drop_empty && all_null) continue;
      rs.values.push_back(std::move(row));
    }
  }
  OrderAndLimit(s, &rs);
  if (rs.values.empty()) return Status::Ok();
  out->rows = rs.values.size();
  if (as_columns) {
    out->columns = ToColumns(std::move(rs));
  } else {
    out->series = std::move(rs);
  }
  return Status::Ok();
}

// `columns`, when not null, takes the answer instead of `out`, as columns
// (a subquery's answer).
Status RunAggregate(ExecContext* ctx, const SelectStatement& s, Input* input, Plan* plan,
                    const std::vector<InSeries>& series, std::vector<ResultSeries>* out,
                    std::vector<ColumnSeries>* columns) {
  const size_t hw = HardwareThreads();
  std::vector<GroupMap> partial(std::min<size_t>(hw, 8));
  const std::vector<std::string>& fields = plan->fields;
  size_t workers = 1;
  // The groups' states are charged as groups appear (and, for aggregates
  // that keep every value, as values fold), and given back once the answer
  // is built from them.
  ScopedCharge states_charge(ctx->memory());
  std::vector<uint64_t> worker_points(partial.size(), 0);
  const auto count_points = [&](size_t w, uint64_t n) {
    ctx->CountPoints(n);
    worker_points[w] += n;
  };
  if (plan->bucketer && plan->has_lo && plan->has_hi && plan->lo < plan->hi) {
    const int64_t first = plan->bucketer->Start(plan->lo);
    const int64_t last = plan->bucketer->Start(plan->hi - 1);
    const double estimate = (static_cast<double>(last) - static_cast<double>(first)) /
                                static_cast<double>(plan->bucketer->MinWidth()) +
                            1;
    if (estimate <= static_cast<double>(ctx->options().limits.max_rows)) {
      AppendBucketStarts(*plan->bucketer, first, last, &plan->dense_buckets);
    }
  }

  GPULSE_RETURN_IF_ERROR(ChooseTier(ctx, *input, plan));
  if (ctx->explain) {
    ctx->plan_lines.push_back(std::string("  tier: ") +
                              (plan->tier < 0
                                   ? "raw (chunks, sealed head and head merged)"
                                   : storage::kTiers[plan->tier].name +
                                         std::string(plan->tally ? " tallies" : " rollups")) +
                              ": " + plan->tier_why);
  }
  std::vector<std::string> slot_fields;
  if (plan->tier >= 0) {
    for (const AggSlot& slot : plan->slots) {
      if (slot.field >= 0) slot_fields.push_back(fields[static_cast<size_t>(slot.field)]);
    }
    std::sort(slot_fields.begin(), slot_fields.end());
    slot_fields.erase(std::unique(slot_fields.begin(), slot_fields.end()), slot_fields.end());
  }
  // For each of the plan's fields, the slots that fold it (a run of field f
  // visits those, not every slot: count(*) over 100,000 fields has as many).
  std::vector<std::vector<size_t>> slots_of_plan_field(fields.size());
  for (size_t slot = 0; slot < plan->slots.size(); ++slot) {
    const int f = plan->slots[slot].field;
    if (f >= 0) slots_of_plan_field[static_cast<size_t>(f)].push_back(slot);
  }
  // For each of slot_fields, the slots that aggregate it.
  std::vector<std::vector<size_t>> slots_of_field(slot_fields.size());
  for (size_t slot = 0; slot < plan->slots.size() && plan->tier >= 0; ++slot) {
    const int f = plan->slots[slot].field;
    if (f < 0) continue;
    const auto k =
        std::lower_bound(slot_fields.begin(), slot_fields.end(), fields[static_cast<size_t>(f)]) -
        slot_fields.begin();
    slots_of_field[static_cast<size_t>(k)].push_back(slot);
  }
  const uint32_t rollup_parts = RollupPartsFor(*plan);
  // Fixed buckets over a known range (dense_buckets from a bucket start):
  // a tier row's bucket number is one division.
  const bool fixed_dense =
      plan->bucketer && plan->bucketer->Fixed() && !plan->dense_buckets.empty();
  plan->use_cells = !plan->tally && !plan->multirow && (fixed_dense || !plan->bucketer) &&
                    std::all_of(plan->slots.begin(), plan->slots.end(),
                                [](const AggSlot& slot) { return IsCellAggregate(slot.spec); });
  if (plan->use_cells) {
    if (plan->bucketer) {
      plan->grid = {plan->dense_buckets.front(), plan->bucketer->Width(),
                    plan->dense_buckets.size()};
    } else {
      // One bucket holding all time.
      plan->grid = {INT64_MIN, INT64_MAX, 1};
    }
    for (const AggSlot& slot : plan->slots) plan->specs.push_back(slot.spec);
  }

  std::atomic<uint64_t> untallied{0};  // tally counts of values past a bucket's top
  // Counts, integer extremes and integer sums come out the same whatever
  // the order the series fold in: then threads take series as they come
  // free (Split::kDynamic); else each takes a block, merged in order.
  const bool any_order =
      std::all_of(plan->slots.begin(), plan->slots.end(), [](const AggSlot& slot) {
        const AggSpec& spec = slot.spec;
        if (spec.kind == AggKind::kCount) return true;
        const bool integer = spec.type == FieldType::kInt || spec.type == FieldType::kUint;
        const bool exact = spec.kind == AggKind::kMin || spec.kind == AggKind::kMax ||
                           spec.kind == AggKind::kSpread || spec.kind == AggKind::kSum;
        return integer && exact && !spec.need_time;
      });
  // Folds tier rows [begin, end) of slot_fields[k] into g.
  const auto fold_rollups = [&](GroupAcc* g, size_t k, const RollupColumn& r, size_t begin,
                                size_t end) {
    if (plan->use_cells) {
      for (size_t slot : slots_of_field[k]) {
        g->cells.AddRollups(plan->specs, plan->grid, slot, r, begin, end,
                            storage::kTiers[plan->tier].width_ns);
      }
      return;
    }
    if (fixed_dense) {
      // Bucket numbers by one division, no Start/Next per row (tier rows
      // are often one a bucket).
      const int64_t first = plan->dense_buckets.front();
      const int64_t width = plan->bucketer->Width();
      size_t i0 = begin;
      while (i0 < end) {
        const int64_t d = r.bucket[i0] - first;
        const int64_t idx = d >= 0 ? d / width : -1;
        const int64_t next = first + (idx + 1) * width;
        size_t i1 = i0 + 1;
        while (i1 < end && r.bucket[i1] < next) ++i1;
        if (idx >= 0 && static_cast<size_t>(idx) < plan->dense_buckets.size()) {
          GroupAcc::States states = g->GetDense(*plan, static_cast<size_t>(idx));
          for (size_t slot : slots_of_field[k]) states[slot]->AddRollups(r, i0, i1);
        }
        i0 = i1;
      }
      return;
    }
    for (size_t slot : slots_of_field[k]) {
      size_t i0 = begin;
      while (i0 < end) {
        int64_t b = INT64_MIN;
        size_t i1 = end;
        if (plan->bucketer) {
          b = plan->bucketer->Start(r.bucket[i0]);
          const int64_t next = plan->bucketer->Next(b);
          i1 = i0 + 1;
          while (i1 < end && r.bucket[i1] < next) ++i1;
        }
        g->Get(*plan, b)[slot]->AddRollups(r, i0, i1);
        i0 = i1;
      }
    }
  };
  // A rollup plan: whole tier buckets fold rollup rows, read for a chunk of
  // series at a time (one pass over the catalog and the window cache a
  // chunk, where one a series costs each series a lookup by key); the
  // range's ends before the first and after the last whole tier bucket
  // fold raw points, a series at a time.
  const bool rollups = plan->tier >= 0 && !plan->tally;
  // The whole tier buckets [lo_t, hi_t); raw points before and after them,
  // or all of them when no bucket is whole.
  int64_t lo_t = 0, hi_t = 0;
  std::array<std::pair<int64_t, int64_t>, 2> edges{};
  if (rollups) {
    const int64_t tw = storage::kTiers[plan->tier].width_ns;
    lo_t = FloorMod(plan->lo, tw) == 0
               ? plan->lo
               : storage::NextWindowStart(storage::WindowStart(plan->lo, tw), tw);
    hi_t = storage::WindowStart(plan->hi, tw);
    edges = lo_t < hi_t
                ? std::array<std::pair<int64_t, int64_t>, 2>{{{plan->lo, lo_t}, {hi_t, plan->hi}}}
                : std::array<std::pair<int64_t, int64_t>, 2>{{{plan->lo, plan->hi}, {0, 0}}};
  }
  const auto fold_tier = [&](size_t w, size_t c) -> Status {
    constexpr size_t kChunk = kTierChunk;
    std::array<const InSeries*, kChunk> chosen{};
    std::array<GroupAcc*, kChunk> group{};
    std::array<uint64_t, kChunk> points{};
    size_t n = 0;
    for (size_t i = c * kChunk; i < std::min(series.size(), (c + 1) * kChunk); ++i) {
      const InSeries& in = series[i];
      if (plan->condition) {
        const std::optional<bool> truth = TagTruth(*plan->condition, *plan, in);
        if (truth && !*truth) continue;
      }
      for (const auto& [a, z] : edges) {
        if (a >= z) continue;
        std::vector<Column> edge;
        GPULSE_RETURN_IF_ERROR(input->Read(in, fields, a, z, &edge));
        for (const Column& col : edge) points[n] += col.size();
        if (!group[n]) group[n] = &partial[w][TagKeyOf(*plan, in)];
        FoldColumns(*plan, group[n], edge);
      }
      chosen[n++] = &in;
    }
    if (lo_t < hi_t && n > 0) {
      GPULSE_RETURN_IF_ERROR(input->ScanRollups(
          std::span<const InSeries* const>(chosen.data(), n), slot_fields,
          static_cast<size_t>(plan->tier), lo_t, hi_t, rollup_parts,
          [&](size_t s, size_t k, const RollupColumn& r, size_t begin, size_t end) {
            if (!group[s]) group[s] = &partial[w][TagKeyOf(*plan, *chosen[s])];
            points[s] += end - begin;
            fold_rollups(group[s], k, r, begin, end);
          }));
    }
    uint64_t read = 0, total = 0;
    for (size_t s = 0; s < n; ++s) {
      read += points[s] > 0;
      total += points[s];
    }
    if (total > 0) {
      ctx->series_read.fetch_add(read);
      count_points(w, total);
    }
    return Status::Ok();
  };
  // What a group's states hold, and whether the states keep every value
  // folded (a percentile sorts them at the end).
  const size_t buckets_a_group = std::max<size_t>(plan->dense_buckets.size(), 1);
  const uint64_t group_bytes =
      sizeof(GroupAcc) + 64 +
      buckets_a_group * plan->slots.size() * (plan->use_cells ? 16 : sizeof(void*) + 64);
  const bool keeps_values =
      std::any_of(plan->slots.begin(), plan->slots.end(), [](const AggSlot& slot) {
        switch (slot.spec.kind) {
          case AggKind::kMedian:
          case AggKind::kMode:
          case AggKind::kPercentile:
          case AggKind::kDistinct:
          case AggKind::kTop:
          case AggKind::kBottom:
            return true;
          default:
            return false;
        }
      });
  const auto charging = [&](auto fold) {
    return [&, fold](size_t w, size_t i) -> Status {
      const size_t groups_before = partial[w].size();
      const uint64_t points_before = worker_points[w];
      GPULSE_RETURN_IF_ERROR(fold(w, i));
      uint64_t bytes = (partial[w].size() - groups_before) * group_bytes;
      if (keeps_values) bytes += (worker_points[w] - points_before) * sizeof(double);
      return bytes == 0 ? Status::Ok()
                        : states_charge.Charge(bytes, "the groups' aggregate states");
    };
  };
  Status st;
  if (rollups) {
    st = ParallelFor(ctx, (series.size() + kTierChunk - 1) / kTierChunk, &workers,
                     charging(fold_tier), /*min_per_worker=*/1,
                     any_order ? Split::kDynamic : Split::kBlocks);
  } else {
    // One series that is not read with others (below): its tally rows, the
    // points of its field that pass the field's comparisons, or rows
    // joined across fields.
    const auto fold_series = [&](size_t w, size_t i, std::optional<bool> truth) -> Status {
      const InSeries& in = series[i];
      if (plan->tally) {
        // Each value's count in each tier bucket goes to the group of that
        // value; counts past a bucket's top values (`other`) go to none.
        const std::string& field = fields[static_cast<size_t>(plan->slots[0].field)];
        const GroupKey base = TagKeyOf(*plan, in);
        uint64_t rows = 0;
        GPULSE_RETURN_IF_ERROR(input->ScanTallies(
            in, std::span<const std::string>(&field, 1), static_cast<size_t>(plan->tier), plan->lo,
            plan->hi, [&](size_t, const storage::TallyColumn& r, size_t begin, size_t end) {
              rows += end - begin;
              for (size_t i = begin; i < end; ++i) {
                const int64_t b = plan->bucketer ? plan->bucketer->Start(r.bucket[i]) : INT64_MIN;
                for (uint32_t v = r.begin[i]; v < r.begin[i + 1]; ++v) {
                  GroupKey key = base;
                  key[plan->tally_dim] = r.values[v];
                  GroupAcc::States states = partial[w][key].Get(*plan, b);
                  for (size_t slot = 0; slot < plan->slots.size(); ++slot) {
                    states[slot]->AddCount(r.value_count[v]);
                  }
                }
                untallied.fetch_add(r.other[i], std::memory_order_relaxed);
              }
            }));
        if (rows > 0) {
          ctx->series_read.fetch_add(1);
          count_points(w, rows);
        }
        return Status::Ok();
      }
      GroupMap& groups = partial[w];
      if (!truth && plan->filter_field >= 0) {
        // The tags pass; the points of the one field that pass its
        // comparisons fold, read in place.
        uint64_t points = 0;
        GroupAcc* g = nullptr;
        thread_local std::vector<uint32_t> kept;
        GPULSE_RETURN_IF_ERROR(input->Scan(
            in, fields, plan->lo, plan->hi,
            [&](size_t f, const Column& col, size_t begin, size_t end) {
              points += end - begin;
              if (static_cast<int>(f) != plan->filter_field) return;
              kept.clear();
              KeepPassing(col, begin, end, plan->field_tests, &kept);
              if (kept.empty()) return;
              if (g == nullptr) g = &groups[TagKeyOf(*plan, in)];
              for (size_t slot = 0; slot < plan->slots.size(); ++slot) {
                FoldIndexes(*plan, g, slot, col, kept);
              }
            },
            nullptr));
        if (points > 0) {
          ctx->series_read.fetch_add(1);
          count_points(w, points);
        }
        return Status::Ok();
      }

      std::vector<Column> cols;
      GPULSE_RETURN_IF_ERROR(input->Read(in, fields, plan->lo, plan->hi, &cols));
      uint64_t points = 0;
      for (const Column& c : cols) points += c.size();
      if (points == 0) return Status::Ok();
      ctx->series_read.fetch_add(1);
      count_points(w, points);

      // Rows: the condition on fields, and string-field groups, per row.
      std::vector<int64_t> ts;
      std::vector<std::vector<int32_t>> pos;
      Join(cols, &ts, &pos);
      const GroupKey base = TagKeyOf(*plan, in);
      std::map<GroupKey, std::vector<std::vector<uint32_t>>> picked;  // group -> slot -> positions
      for (size_t r = 0; r < ts.size(); ++r) {
        RowRef row{&in, &cols, &pos, r};
        if (!truth && !IsTrue(EvalRow(*plan->condition, *plan, row, ctx->now_ns()))) continue;
        GroupKey key = base;
        for (size_t d = 0; d < plan->dims.size(); ++d) {
          const int f = plan->dim_field[d];
          if (f < 0) continue;
          const int32_t p = pos[static_cast<size_t>(f)][r];
          key[d] =
              p < 0 ? std::string() : cols[static_cast<size_t>(f)].strings[static_cast<size_t>(p)];
        }
        auto& lists = picked[key];
        lists.resize(plan->slots.size());
        for (size_t slot = 0; slot < plan->slots.size(); ++slot) {
          const int f = plan->slots[slot].field;
          if (f < 0) continue;
          const int32_t p = pos[static_cast<size_t>(f)][r];
          if (p >= 0) lists[slot].push_back(static_cast<uint32_t>(p));
        }
      }
      for (auto& [key, lists] : picked) {
        GroupAcc& g = groups[key];
        for (size_t slot = 0; slot < lists.size(); ++slot) {
          const int f = plan->slots[slot].field;
          if (f >= 0 && !lists[slot].empty()) {
            FoldIndexes(*plan, &g, slot, cols[static_cast<size_t>(f)], lists[slot]);
          }
        }
      }
      return Status::Ok();
    };
    // A chunk of series in order. Those whose every point counts (their
    // tags pass, no field is grouped by) fold their runs in place, read
    // together: one store iterator for the lot, where one a series cost a
    // fleet-wide fold at 100,000 series more than the fold itself
    // (docs/performance.md, session 19). The others go one by one between
    // them, so that each worker still folds its series in order.
    // Chunks as large as kRawChunk on a wide fold, of single series on a
    // narrow one (where a worker's share is a few series, each maybe long).
    const size_t chunk = std::clamp<size_t>(series.size() / 64, 1, kRawChunk);
    const auto fold_chunk = [&](size_t w, size_t c) -> Status {
      // The visitors capture one pointer, which std::function keeps inline:
      // no allocation per chunk.
      struct Batch {
        const Plan* plan;
        const std::vector<std::vector<size_t>>* slots_of;
        GroupMap* groups;
        std::array<const InSeries*, kRawChunk> in{};
        std::array<GroupAcc*, kRawChunk> g{};
        std::array<uint64_t, kRawChunk> points{};
        size_t n = 0;
        GroupAcc* Group(size_t s) {
          if (g[s] == nullptr) g[s] = &(*groups)[TagKeyOf(*plan, *in[s])];
          return g[s];
        }
      } batch{plan, &slots_of_plan_field, &partial[w]};
      // Cells fold the read cache's packed windows as they are.
      const Db::SeriesPackedVisitor packed = [b = &batch](size_t s, size_t f,
                                                          const storage::PackedRun& run,
                                                          size_t begin, size_t end) {
        b->points[s] += end - begin;
        GroupAcc* g = b->Group(s);
        for (size_t slot : (*b->slots_of)[f]) {
          g->cells.AddPacked(b->plan->specs, b->plan->grid, slot, run, begin, end);
        }
      };
      const Db::SeriesRunVisitor runs = [b = &batch](size_t s, size_t f, const Column& col,
                                                     size_t begin, size_t end) {
        b->points[s] += end - begin;
        GroupAcc* g = b->Group(s);
        for (size_t slot : (*b->slots_of)[f]) FoldSlotRange(*b->plan, g, slot, col, begin, end);
      };
      const auto scan_batch = [&]() -> Status {
        if (batch.n == 0) return Status::Ok();
        GPULSE_RETURN_IF_ERROR(
            input->Scan(std::span<const InSeries* const>(batch.in.data(), batch.n), fields,
                        plan->lo, plan->hi, runs, plan->use_cells ? &packed : nullptr));
        for (size_t s = 0; s < batch.n; ++s) {
          if (batch.points[s] > 0) {
            ctx->series_read.fetch_add(1);
            count_points(w, batch.points[s]);
          }
          batch.g[s] = nullptr;
          batch.points[s] = 0;
        }
        batch.n = 0;
        return Status::Ok();
      };
      for (size_t i = c * chunk; i < std::min(series.size(), (c + 1) * chunk); ++i) {
        std::optional<bool> truth = true;
        if (plan->condition) truth = TagTruth(*plan->condition, *plan, series[i]);
        if (truth && !*truth) continue;
        if (truth && !plan->tally && !plan->field_dims) {
          batch.in[batch.n++] = &series[i];
          continue;
        }
        GPULSE_RETURN_IF_ERROR(scan_batch());
        GPULSE_RETURN_IF_ERROR(fold_series(w, i, truth));
      }
      return scan_batch();
    };
    st = ParallelFor(ctx, (series.size() + chunk - 1) / chunk, &workers, charging(fold_chunk),
                     /*min_per_worker=*/(8 + chunk - 1) / chunk,
                     any_order ? Split::kDynamic : Split::kBlocks);
  }
  GPULSE_RETURN_IF_ERROR(st);
  if (untallied > 0) {
    ctx->notes.push_back(std::to_string(untallied.load()) + " samples of values beyond the " +
                         std::to_string(storage::kTallyTop) +
                         " most frequent of their tier bucket are in no group (FROM \"raw\"." +
                         plan->measurement + " counts them)");
  }

  // Merge the workers' groups in worker order: series order under
  // Split::kBlocks; under kDynamic the order does not change the answer. A
  // group only this worker saw moves over whole, its map node spliced (with
  // per-series groups that is all of them); the groups both saw stay behind
  // in partial[w] and merge state by state.
  GroupMap groups = std::move(partial[0]);
  for (size_t w = 1; w < partial.size(); ++w) {
    groups.merge(partial[w]);
    for (auto& [key, acc] : partial[w]) {
      GroupAcc& into = groups.at(key);
      if (plan->use_cells) {
        into.cells.Merge(plan->specs, plan->grid, &acc.cells);
        continue;
      }
      acc.ForEach(*plan, [&](int64_t b, GroupAcc::States states) {
        GroupAcc::States mine = into.Get(*plan, b);
        for (size_t k = 0; k < plan->slots.size(); ++k) mine[k]->Merge(states[k].get());
      });
    }
  }

  // The buckets every group answers for.
  std::vector<int64_t> all_buckets;
  if (plan->bucketer && !groups.empty()) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (auto it = groups.begin(); it != groups.end() && !(plan->has_lo && plan->has_hi); ++it) {
      it->second.ForEach(*plan, [&](int64_t b, GroupAcc::States) {
        first = std::min(first, b);
        last = std::max(last, b);
      });
    }
    if (plan->has_lo) first = plan->bucketer->Start(plan->lo);
    if (plan->has_hi) last = plan->bucketer->Start(plan->hi - 1);
    if (first <= last && plan->fill != FillKind::kNone) {
      const double estimate = (static_cast<double>(last) - static_cast<double>(first)) /
                                  static_cast<double>(plan->bucketer->MinWidth()) +
                              1;
      if (estimate * static_cast<double>(groups.size()) >
          static_cast<double>(ctx->options().limits.max_rows)) {
        return Status::ResourceExhausted(
            "GROUP BY time(" + plan->interval_text + ") over " + RangeText(*plan) +
            " makes about " + std::to_string(static_cast<uint64_t>(estimate)) +
            " buckets for each of " + std::to_string(groups.size()) + " groups, more than " +
            std::to_string(ctx->options().limits.max_rows) +
            " rows (limit max_rows); narrow the time range or widen the interval");
      }
      AppendBucketStarts(*plan->bucketer, first, last, &all_buckets);
    } else if (first <= last) {
      for (auto& [key, acc] : groups) {
        acc.ForEach(*plan, [&](int64_t b, GroupAcc::States) {
          if (b >= first && b <= last) all_buckets.push_back(b);
        });
      }
      std::sort(all_buckets.begin(), all_buckets.end());
      all_buckets.erase(std::unique(all_buckets.begin(), all_buckets.end()), all_buckets.end());
    }
  }
  if (ctx->explain) {
    ctx->plan_lines.push_back("  groups: " + std::to_string(groups.size()) +
                              (plan->bucketer
                                   ? ", buckets per group: " + std::to_string(all_buckets.size()) +
                                         " of time(" + plan->interval_text + ")"
                                   : ""));
  }

  // Each group's rows, then in group order. On the worker threads when the
  // answers are costly (a percentile selects among many values), else on
  // this thread: cheap answers are mostly allocation, and threads that
  // allocate wait on each other in the server's one malloc arena (measured:
  // max per node at 5-minute grain over a fleet-day 3.1-3.5 ms serial,
  // 4.2-5.1 ms on two threads).
  const bool costly = std::any_of(plan->slots.begin(), plan->slots.end(), [](const auto& slot) {
    const AggKind k = slot.spec.kind;
    return k == AggKind::kMedian || k == AggKind::kMode || k == AggKind::kPercentile;
  });
  AnswerShape shape;
  shape.as_columns = columns != nullptr;
  shape.by_column = columns == nullptr && ctx->answers_by_column;
  shape.from_cells =
      (shape.as_columns || shape.by_column) && CellOutputs(s, *plan, &shape.cell_slots);
  std::vector<std::pair<const GroupKey*, GroupAcc*>> order;
  order.reserve(groups.size());
  for (auto& [key, acc] : groups) order.emplace_back(&key, &acc);
  // Appends a group's answer; past max_rows the statement fails there (on
  // this thread, before the groups after it are answered).
  uint64_t rows_out = 0;
  auto take = [&](GroupAnswer& a) -> Status {
    if (a.rows == 0) return Status::Ok();
    rows_out += a.rows;
    if (rows_out > ctx->options().limits.max_rows) {
      return Status::ResourceExhausted("the answer has more than " +
                                       std::to_string(ctx->options().limits.max_rows) +
                                       " rows (limit max_rows)");
    }
    uint64_t bytes = 0;
    if (columns != nullptr) {
      for (const Column& c : a.columns.values) bytes += ColumnBytes(c);
    } else {
      bytes = SeriesBytes(a.series);
    }
    GPULSE_RETURN_IF_ERROR(ctx->Charge(bytes, "the answer's rows"));
    if (columns != nullptr) {
      columns->push_back(std::move(a.columns));
    } else {
      out->push_back(std::move(a.series));
    }
    return Status::Ok();
  };
  if (!costly) {
    for (const auto& [key, acc] : order) {
      GroupAnswer a;
      GPULSE_RETURN_IF_ERROR(AnswerGroup(s, *plan, *key, *acc, all_buckets, shape, &a));
      GPULSE_RETURN_IF_ERROR(take(a));
    }
    return Status::Ok();
  }
  std::vector<GroupAnswer> answers(order.size());
  GPULSE_RETURN_IF_ERROR(ParallelFor(
      ctx, order.size(), &workers,
      [&](size_t, size_t i) -> Status {
        return AnswerGroup(s, *plan, *order[i].first, *order[i].second, all_buckets, shape,
                           &answers[i]);
      },
      /*min_per_worker=*/1, Split::kDynamic));
  for (GroupAnswer& a : answers) GPULSE_RETURN_IF_ERROR(take(a));
  return Status::Ok();
}

// --- Raw queries ----------------------------------------------------------------

// A row of a group's answer: (series, joined row) at its time.
struct RowAt {
  int64_t t;
  uint32_t series;
  uint32_t row;
};

struct SeriesRows {
  std::vector<Column> cols;
  std::vector<int64_t> ts;
  std::vector<std::vector<int32_t>> pos;
  std::vector<uint32_t> rows;      // joined rows that passed the condition
  std::vector<GroupKey> row_keys;  // per kept row, when grouping by a string field
};

// A raw SELECT's points over a range, read and joined: each series' rows
// that passed the condition, and each group's rows in time order.
struct RawRows {
  std::vector<SeriesRows> per;  // by position in the series list
  std::map<GroupKey, std::vector<RowAt>> groups;
  uint64_t rows = 0;
};

// Reads `series` over [plan.lo, plan.hi) into *raw, charging the columns and
// joins to `reading`. Past max_rows it fails when `max_rows` is set (a
// streamed answer holds a window's rows, not the answer's).
Status ReadRaw(ExecContext* ctx, Input* input, const Plan& plan,
               const std::vector<InSeries>& series, bool max_rows, ScopedCharge* reading,
               RawRows* raw) {
  raw->per.assign(series.size(), SeriesRows());
  raw->groups.clear();
  std::vector<char> kept(series.size(), 0);
  size_t workers = 1;
  std::atomic<uint64_t> rows_total{0};
  const uint64_t most_rows = max_rows ? ctx->options().limits.max_rows : UINT64_MAX;
  Status st = ParallelFor(
      ctx, series.size(), &workers,
      [&](size_t, size_t i) -> Status {
        const InSeries& in = series[i];
        std::optional<bool> truth = true;
        if (plan.condition) truth = TagTruth(*plan.condition, plan, in);
        if (truth && !*truth) return Status::Ok();
        SeriesRows& sr = raw->per[i];
        GPULSE_RETURN_IF_ERROR(input->Read(in, plan.fields, plan.lo, plan.hi, &sr.cols));
        uint64_t points = 0;
        for (const Column& c : sr.cols) points += c.size();
        if (points == 0) return Status::Ok();
        ctx->series_read.fetch_add(1);
        ctx->CountPoints(points);
        uint64_t bytes = 0;
        for (const Column& c : sr.cols) bytes += ColumnBytes(c);
        Join(sr.cols, &sr.ts, &sr.pos);
        bytes += sr.ts.size() * (sizeof(int64_t) + sizeof(RowAt) +
                                 sr.cols.size() * sizeof(int32_t) + sizeof(uint32_t));
        if (Status charged = reading->Charge(bytes, "the raw points read"); !charged.ok()) {
          ctx->Stop(charged);
          return charged;
        }
        for (size_t r = 0; r < sr.ts.size(); ++r) {
          RowRef row{&in, &sr.cols, &sr.pos, r};
          if (!truth && !IsTrue(EvalRow(*plan.condition, plan, row, ctx->now_ns()))) continue;
          sr.rows.push_back(static_cast<uint32_t>(r));
          if (plan.field_dims) {
            GroupKey key = TagKeyOf(plan, in);
            for (size_t d = 0; d < plan.dims.size(); ++d) {
              const int f = plan.dim_field[d];
              if (f < 0) continue;
              const int32_t p = sr.pos[static_cast<size_t>(f)][r];
              key[d] = p < 0 ? std::string()
                             : sr.cols[static_cast<size_t>(f)].strings[static_cast<size_t>(p)];
            }
            sr.row_keys.push_back(std::move(key));
          }
        }
        kept[i] = !sr.rows.empty();
        if (rows_total.fetch_add(sr.rows.size()) + sr.rows.size() > most_rows) {
          return Status::ResourceExhausted(
              "the answer has more than " + std::to_string(most_rows) +
              " rows (limit max_rows); narrow the time range or add LIMIT");
        }
        return Status::Ok();
      },
      /*min_per_worker=*/8, Split::kDynamic);
  GPULSE_RETURN_IF_ERROR(st);
  for (size_t i = 0; i < series.size(); ++i) {
    if (!kept[i]) continue;
    const SeriesRows& sr = raw->per[i];
    const GroupKey base = TagKeyOf(plan, series[i]);
    for (size_t k = 0; k < sr.rows.size(); ++k) {
      const uint32_t r = sr.rows[k];
      raw->groups[plan.field_dims ? sr.row_keys[k] : base].push_back(
          {sr.ts[r], static_cast<uint32_t>(i), r});
    }
  }
  for (auto& [key, rows] : raw->groups) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const RowAt& a, const RowAt& b) { return a.t < b.t; });
    raw->rows += rows.size();
  }
  return Status::Ok();
}

// Appends to *out each group's answer for its rows in [t_lo, t_hi), charged
// as the answer's.
Status AnswerRaw(ExecContext* ctx, const SelectStatement& s, const Plan& plan,
                 const std::vector<InSeries>& series, const RawRows& raw, int64_t t_lo,
                 int64_t t_hi, std::vector<ResultSeries>* out) {
  const auto before = [](const RowAt& r, int64_t t) { return r.t < t; };
  for (const auto& [key, all] : raw.groups) {
    const auto first = std::lower_bound(all.begin(), all.end(), t_lo, before);
    const auto last = std::lower_bound(first, all.end(), t_hi, before);
    const std::span<const RowAt> rows(first, last);
    if (rows.empty()) continue;
    std::vector<int64_t> times(rows.size());
    for (size_t k = 0; k < rows.size(); ++k) times[k] = rows[k].t;
    const LeafFn leaf = [&](const Expr& e) -> Result<std::vector<QueryValue>> {
      std::vector<QueryValue> v(rows.size());
      if (e.kind != ExprKind::kVarRef) return ErrorAt(e, "internal: unexpected " + e.ToString());
      if (plan.IsField(e)) {
        const auto known = plan.field_index.find(e.text);
        if (known == plan.field_index.end()) return v;
        const int f = known->second;
        for (size_t k = 0; k < rows.size(); ++k) {
          const SeriesRows& sr = raw.per[rows[k].series];
          const int32_t p = sr.pos[static_cast<size_t>(f)][rows[k].row];
          if (p >= 0) v[k] = CellOf(sr.cols[static_cast<size_t>(f)], static_cast<size_t>(p));
        }
      } else {
        for (size_t k = 0; k < rows.size(); ++k) {
          std::string tv = TagValue(series[rows[k].series].tags, e.text);
          if (!tv.empty()) v[k] = std::move(tv);
        }
      }
      return v;
    };
    // Charged before the rows are built: a group's rows are the answer's,
    // held until it is sent.
    GPULSE_RETURN_IF_ERROR(
        ctx->Charge(RowsBytes(rows.size(), plan.outputs.size() + 1), "the answer's rows"));
    std::vector<std::vector<QueryValue>> cols;
    std::vector<bool> is_field_col;
    for (const OutExpr& o : plan.outputs) {
      auto v = EvalColumn(*o.expr, times, leaf);
      if (!v.ok()) return v.status();
      cols.push_back(std::move(*v));
      is_field_col.push_back(!(o.expr->kind == ExprKind::kVarRef && !plan.IsField(*o.expr)));
    }
    ResultSeries rs;
    rs.name = plan.measurement;
    rs.tags = TagsOf(plan, key);
    rs.columns.push_back("time");
    for (const OutExpr& o : plan.outputs) rs.columns.push_back(o.name);
    for (size_t k = 0; k < rows.size(); ++k) {
      bool any_field = false;
      std::vector<QueryValue> row;
      row.reserve(cols.size() + 1);
      row.emplace_back(times[k]);
      for (size_t c = 0; c < cols.size(); ++c) {
        if (is_field_col[c] && cols[c][k].index() != 0) any_field = true;
        row.push_back(std::move(cols[c][k]));
      }
      if (any_field) rs.values.push_back(std::move(row));
    }
    OrderAndLimit(s, &rs);
    if (!rs.values.empty()) out->push_back(std::move(rs));
  }
  return Status::Ok();
}

Status RunRawWhole(ExecContext* ctx, const SelectStatement& s, Input* input, const Plan& plan,
                   const std::vector<InSeries>& series, std::vector<ResultSeries>* out) {
  // The columns read and their joins are held until the answer is built.
  ScopedCharge reading(ctx->memory());
  RawRows raw;
  GPULSE_RETURN_IF_ERROR(ReadRaw(ctx, input, plan, series, /*max_rows=*/true, &reading, &raw));
  return AnswerRaw(ctx, s, plan, series, raw, INT64_MIN, INT64_MAX, out);
}

// [first, last] of the points of `series` in [plan.lo, plan.hi): where the
// query bounds no side of its range, the data's own. first > last: none.
Status RawExtent(ExecContext* ctx, Input* input, const Plan& plan,
                 const std::vector<InSeries>& series, int64_t* first, int64_t* last) {
  std::mutex mu;
  *first = INT64_MAX;
  *last = INT64_MIN;
  size_t workers = 1;
  // kRawChunk series a call: the Db's input reads their chunks' headers
  // with one store iterator, decoding only chunks a bound of the range cuts.
  std::vector<const InSeries*> all(series.size());
  for (size_t i = 0; i < series.size(); ++i) all[i] = &series[i];
  return ParallelFor(
      ctx, (series.size() + kRawChunk - 1) / kRawChunk, &workers,
      [&](size_t, size_t c) -> Status {
        int64_t f = INT64_MAX, l = INT64_MIN;
        const size_t begin = c * kRawChunk, end = std::min(series.size(), begin + kRawChunk);
        GPULSE_RETURN_IF_ERROR(
            input->TimeExtent(std::span<const InSeries* const>(all.data() + begin, end - begin),
                              plan.fields, plan.lo, plan.hi, &f, &l));
        std::lock_guard<std::mutex> lock(mu);
        *first = std::min(*first, f);
        *last = std::max(*last, l);
        return Status::Ok();
      },
      /*min_per_worker=*/2, Split::kDynamic);
}

// Clips [*lo, *hi) to the data's extent in it; *empty when there is none.
Status ClipToData(ExecContext* ctx, Input* input, const Plan& plan,
                  const std::vector<InSeries>& series, int64_t* lo, int64_t* hi, bool* empty) {
  int64_t first = 0, last = 0;
  GPULSE_RETURN_IF_ERROR(RawExtent(ctx, input, plan, series, &first, &last));
  *empty = first > last;
  *lo = std::max(*lo, first);
  *hi = std::min(*hi, last + 1);  // last < INT64_MAX: no point is stored there
  return Status::Ok();
}

// A raw SELECT with LIMIT (and no SLIMIT or SOFFSET) answers the first
// OFFSET + LIMIT rows of each group: it reads a window at the start of the
// range (at its end under ORDER BY time DESC), a minute a row wide at first
// and four times wider each time, until every group its series can form has
// its LIMIT rows there or the window is the whole range. The rows of a group
// that has them in the window are the range's first ones, so the answer is
// the whole range's. `SELECT * FROM gpu LIMIT 3` reads minutes, not the
// store (it was refused for its memory or its rows).
Status RunRaw(ExecContext* ctx, const SelectStatement& s, Input* input, Plan* plan,
              const std::vector<InSeries>& series, std::vector<ResultSeries>* out) {
  if (!s.limit || *s.limit <= 0 || s.slimit || s.soffset || plan->field_dims || series.empty()) {
    return RunRawWhole(ctx, s, input, *plan, series, out);
  }
  int64_t lo = plan->lo, hi = plan->hi;
  if (!plan->has_lo || !plan->has_hi) {
    bool empty = false;
    GPULSE_RETURN_IF_ERROR(ClipToData(ctx, input, *plan, series, &lo, &hi, &empty));
    if (empty) return Status::Ok();
  }
  std::set<GroupKey> groups;
  for (const InSeries& in : series) groups.insert(TagKeyOf(*plan, in));
  const size_t limit = static_cast<size_t>(*s.limit);
  const __int128 rows =
      static_cast<__int128>(*s.limit) + std::max<int64_t>(0, s.offset.value_or(0));
  const bool desc = s.order == SortOrder::kDesc;
  constexpr int64_t kRowNs = 60'000'000'000;  // a minute a row: the GPU-minute grain
  for (__int128 width = rows * kRowNs;; width *= 4) {
    const bool whole = width >= static_cast<__int128>(hi) - lo;
    Plan window = *plan;
    window.has_lo = window.has_hi = true;
    window.lo = whole || !desc ? lo : static_cast<int64_t>(hi - width);
    window.hi = whole || desc ? hi : static_cast<int64_t>(lo + width);
    std::vector<ResultSeries> got;
    GPULSE_RETURN_IF_ERROR(RunRawWhole(ctx, s, input, window, series, &got));
    size_t complete = 0;
    for (const ResultSeries& rs : got) {
      complete += (rs.by_column.empty() ? rs.values.size() : rs.row_times.size()) >= limit;
    }
    if (whole || complete >= groups.size()) {
      *out = std::move(got);
      return Status::Ok();
    }
    GPULSE_RETURN_IF_ERROR(ctx->Poll());
  }
}

// A streamed raw SELECT reads its range a span at a time: a day, aligned as
// the store's chunk windows are (so that each stored window is decoded once),
// or a half, a quarter... of one where a day's points would hold more than a
// quarter of the query's budget, judging from the last span (the first
// assumes a value a minute per series and field, the GPU-minute grain, at
// kReadBytesAValue). Each span's rows are answered and sent in slices of
// about kSliceRows rows.
constexpr int64_t kMinuteNs = 60'000'000'000;
constexpr int64_t kDayNs = 1440 * kMinuteNs;
constexpr int64_t kLeastSpanNs = 1'000'000'000;
constexpr uint64_t kReadBytesAValue = 32;  // its column's 16, the join's and the row's
constexpr uint64_t kSliceRows = 50'000;
// A range bounded on both sides but longer than this many days is clipped to
// the data's extent first.
constexpr int64_t kExtentAfterSpans = 64;

// Sends a span's rows to ctx->emit in time slices of about kSliceRows rows
// (later slices first under ORDER BY time DESC), each slice's charge given
// back once it is sent.
Status EmitRawSpan(ExecContext* ctx, const SelectStatement& s, const Plan& plan,
                   const std::vector<InSeries>& series, const RawRows& raw, int64_t lo,
                   int64_t hi) {
  const uint64_t slices = std::max<uint64_t>(1, (raw.rows + kSliceRows - 1) / kSliceRows);
  const int64_t width = std::max<int64_t>(1, (hi - lo) / static_cast<int64_t>(slices) + 1);
  const bool desc = s.order == SortOrder::kDesc;
  for (int64_t edge = desc ? hi : lo; desc ? edge > lo : edge < hi;) {
    int64_t a, b;
    if (desc) {
      b = edge;
      a = edge - lo > width ? edge - width : lo;
      edge = a;
    } else {
      a = edge;
      b = hi - edge > width ? edge + width : hi;
      edge = b;
    }
    const uint64_t held_before = ctx->memory() != nullptr ? ctx->memory()->held() : 0;
    std::vector<ResultSeries> pieces;
    GPULSE_RETURN_IF_ERROR(AnswerRaw(ctx, s, plan, series, raw, a, b, &pieces));
    for (const ResultSeries& piece : pieces) {
      if (!ctx->emit(piece)) return Status::Cancelled("the client stopped reading the answer");
    }
    pieces.clear();
    if (ctx->memory() != nullptr) ctx->memory()->ReleaseTo(held_before);  // the rows were sent
    GPULSE_RETURN_IF_ERROR(ctx->Poll());
  }
  return Status::Ok();
}

// A raw SELECT whose answer goes to ctx->emit: read a span of the range at a
// time (later ones first under ORDER BY time DESC), its rows sent in slices
// and let go before the next span is read, so that the query holds one
// span's points however long its range.
Status StreamRaw(ExecContext* ctx, const SelectStatement& s, Input* input, const Plan& plan,
                 const std::vector<InSeries>& series) {
  int64_t lo = plan.lo, hi = plan.hi;
  // Where the query leaves a side open, or its range would take many spans
  // (`time > 0`), the data's own extent bounds it: no span over empty time
  // reads every series.
  if (!plan.has_lo || !plan.has_hi ||
      static_cast<__int128>(hi) - lo > static_cast<__int128>(kExtentAfterSpans) * kDayNs) {
    bool empty = false;
    GPULSE_RETURN_IF_ERROR(ClipToData(ctx, input, plan, series, &lo, &hi, &empty));
    if (empty) return Status::Ok();
  }
  const bool desc = s.order == SortOrder::kDesc;
  const uint64_t budget = ctx->memory() != nullptr ? ctx->memory()->limit() : UINT64_MAX;
  const uint64_t values_a_day =
      static_cast<uint64_t>(series.size()) * std::max<size_t>(plan.fields.size(), 1) * 1440;
  // The span: a day divided by 2^halvings.
  int halvings = 0;
  while (halvings < 40 && (kDayNs >> halvings) > kLeastSpanNs &&
         (values_a_day >> halvings) * kReadBytesAValue > budget / 4) {
    ++halvings;
  }
  for (int64_t edge = desc ? hi : lo; desc ? edge > lo : edge < hi;) {
    const int64_t span = std::max(kDayNs >> halvings, kLeastSpanNs);
    // From `edge` to the span boundary past it (before it, descending):
    // after the span widens, the first window is the rest of a wider span,
    // so that no time is read twice. In 128 bits: the boundary may lie
    // past either end of int64.
    Plan window = plan;
    window.has_lo = window.has_hi = true;
    if (desc) {
      const __int128 start = static_cast<__int128>(edge - 1) - FloorMod(edge - 1, span);
      window.hi = edge;
      window.lo = static_cast<int64_t>(std::max<__int128>(lo, start));
      edge = window.lo;
    } else {
      const __int128 end = static_cast<__int128>(edge) - FloorMod(edge, span) + span;
      window.lo = edge;
      window.hi = static_cast<int64_t>(std::min<__int128>(hi, end));
      edge = window.hi;
    }
    uint64_t held = 0;
    {
      ScopedCharge reading(ctx->memory());
      RawRows raw;
      GPULSE_RETURN_IF_ERROR(
          ReadRaw(ctx, input, window, series, /*max_rows=*/false, &reading, &raw));
      held = ctx->memory() != nullptr ? ctx->memory()->held() : 0;
      GPULSE_RETURN_IF_ERROR(EmitRawSpan(ctx, s, window, series, raw, window.lo, window.hi));
    }
    GPULSE_RETURN_IF_ERROR(ctx->Poll());
    // The next span: half as wide when this one's points held more than a
    // quarter of the budget, twice as wide (up to a day) when less than a
    // sixteenth.
    if (held > budget / 4 && (kDayNs >> (halvings + 1)) >= kLeastSpanNs) {
      ++halvings;
    } else if (held < budget / 16 && halvings > 0) {
      --halvings;
    }
  }
  return Status::Ok();
}

// Series held in kept lists, all statements together, and what a kept list
// holds of that count (given back when the last copy of the list goes).
std::atomic<size_t> kept_series_total{0};
struct SeriesCharge {
  explicit SeriesCharge(size_t n) : n(n) {}
  ~SeriesCharge() { kept_series_total.fetch_sub(n, std::memory_order_relaxed); }
  SeriesCharge(const SeriesCharge&) = delete;
  SeriesCharge& operator=(const SeriesCharge&) = delete;
  const size_t n;
};

// A plan of a statement over one measurement, kept for the statement's next
// run: BuildPlan's work and the series list, both read from the catalog at
// catalog_version (read before either). Planning and listing afresh cost a
// query for a node's hour 30 of its 74 k server instructions, and more on a
// CPU whose caches hold other work (docs/performance.md, session 15).
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
constexpr size_t kMaxKeptPlans = 8;
// Longer series lists are listed again each run: the tree may be kept by a
// ParseCache of 256 texts, and listing is then a small part of the query.
constexpr size_t kMaxKeptSeries = 1024;
// And all kept lists together hold at most this many series (about 25 MB
// of tags at a fleet's five tags a series).
constexpr size_t kMaxKeptSeriesTotal = 64 * 1024;

}  // namespace

struct SelectPlans {
  std::vector<KeptPlan> kept;  // the most recently used last
};

namespace {

// The kept plan of `s` for this measurement, retention policy and database
// when the catalog is still at `version`; else an empty one.
KeptPlan FindKeptPlan(const SelectStatement& s, const std::string& measurement,
                      const std::string& retention_policy, const std::string& database,
                      uint64_t version) {
  std::lock_guard<std::mutex> l(s.plans_mu);
  if (!s.plans) return {};
  std::vector<KeptPlan>& kept = s.plans->kept;
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

void KeepPlan(const SelectStatement& s, const std::string& measurement, const std::string& database,
              uint64_t version, const Plan& plan,
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
  std::lock_guard<std::mutex> l(s.plans_mu);
  if (!s.plans) s.plans = std::make_shared<SelectPlans>();
  std::vector<KeptPlan>& kept = s.plans->kept;
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

// Runs `s` over the measurements `from` names in `input`. With keep_plans
// (the input is the Db's), plans are kept in `s` and reused. The answer goes
// to `out`, or as columns to `columns` when it is not null.
Status RunOnInput(ExecContext* ctx, const SelectStatement& s, Input* input, const Measurement& from,
                  bool keep_plans, std::vector<ResultSeries>* out,
                  std::vector<ColumnSeries>* columns) {
  std::vector<std::string> names;
  if (from.regex) {
    std::vector<std::string> all;
    GPULSE_RETURN_IF_ERROR(input->Measurements(&all));
    Result<Regex> re = CompileRegex(*from.regex);
    if (!re.ok()) return re.status();
    for (const std::string& n : all) {
      if (RegexSearch(**re, n)) names.push_back(n);
    }
  } else {
    names.push_back(from.name);
  }
  for (const std::string& m : names) {
    // A kept plan of this statement answers when the catalog is as it was
    // when the plan was made; else the plan is made, and kept.
    uint64_t version = 0;
    if (keep_plans) GPULSE_RETURN_IF_ERROR(ctx->db()->CatalogVersion(m, &version));
    const KeptPlan kept =
        keep_plans ? FindKeptPlan(s, m, from.retention_policy, ctx->options().database, version)
                   : KeptPlan();
    Plan plan;
    if (kept.plan) {
      plan = *kept.plan;
      if (!kept.fixed_range) {  // now() moved
        TimeRange range;
        GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, ctx->now_ns(), &range, nullptr));
        SetRange(range, &plan);
      }
    } else {
      plan.forced_tier = from.retention_policy;
      GPULSE_RETURN_IF_ERROR(BuildPlan(ctx, s, input, m, &plan));
    }
    std::shared_ptr<const std::vector<InSeries>> listed = kept.series;
    if (!listed) {
      auto fresh = std::make_shared<std::vector<InSeries>>();
      GPULSE_RETURN_IF_ERROR(input->ListSeries(m, plan.eq, fresh.get()));
      if (plan.tags_only) {
        std::erase_if(*fresh, [&](const InSeries& in) {
          return !TagTruth(*plan.condition, plan, in).value_or(true);
        });
      }
      listed = std::move(fresh);
    }
    if (keep_plans && !kept.plan) {
      KeepPlan(s, m, ctx->options().database, version, plan, listed);
    }
    // Every listed series passes a condition of tags: the runs test none.
    if (plan.tags_only) plan.condition = nullptr;
    const std::vector<InSeries>& series = *listed;
    if (series.size() > ctx->options().limits.max_series) {
      return Status::ResourceExhausted("the query matches " + std::to_string(series.size()) +
                                       " series of " + m + ", more than " +
                                       std::to_string(ctx->options().limits.max_series) +
                                       " (limit max_series); add a tag condition");
    }
    if (ctx->explain) {
      std::string fields;
      for (size_t f = 0; f < plan.fields.size(); ++f) {
        fields += (f ? ", " : "") + plan.fields[f] + " (" +
                  storage::FieldTypeName(plan.field_types[f]) + ")";
      }
      std::string eq;
      for (const TagMatcher& t : plan.eq)
        eq += (eq.empty() ? "" : " AND ") + t.key + " = '" + t.value + "'";
      ctx->plan_lines.push_back("measurement " + m + ": " + std::to_string(series.size()) +
                                " series after the tag index" +
                                (eq.empty() ? "" : " (" + eq + ")"));
      ctx->plan_lines.push_back("  fields read: " + (fields.empty() ? "none" : fields));
      ctx->plan_lines.push_back("  time range: " + RangeText(plan));
      ctx->plan_lines.push_back(std::string("  kind: ") +
                                (plan.aggregate
                                     ? "aggregate, " + std::to_string(plan.slots.size()) +
                                           " aggregate state(s) per group and bucket"
                                     : "raw rows"));
      if (!plan.aggregate) {
        ctx->plan_lines.push_back("  tier: raw (chunks, sealed head and head merged)");
      }
    }
    if (plan.aggregate) {
      GPULSE_RETURN_IF_ERROR(RunAggregate(ctx, s, input, &plan, series, out, columns));
    } else if (columns != nullptr) {
      std::vector<ResultSeries> rows;
      GPULSE_RETURN_IF_ERROR(RunRaw(ctx, s, input, &plan, series, &rows));
      for (ResultSeries& rs : rows) columns->push_back(ToColumns(std::move(rs)));
    } else if (ctx->emit && !ctx->explain && !s.limit && !s.offset && !s.slimit && !s.soffset) {
      // LIMIT, OFFSET and their series forms count across the whole answer:
      // such a statement is answered whole.
      GPULSE_RETURN_IF_ERROR(StreamRaw(ctx, s, input, plan, series));
    } else {
      GPULSE_RETURN_IF_ERROR(RunRaw(ctx, s, input, &plan, series, out));
    }
  }
  return Status::Ok();
}

// SOFFSET / SLIMIT over a statement's series.
template <typename T>
void SeriesOffsetAndLimit(const SelectStatement& s, std::vector<T>* series) {
  const size_t soff = static_cast<size_t>(std::max<int64_t>(0, s.soffset.value_or(0)));
  if (soff > 0) {
    series->erase(series->begin(),
                  series->begin() + static_cast<ptrdiff_t>(std::min(soff, series->size())));
  }
  if (s.slimit && *s.slimit > 0 && series->size() > static_cast<size_t>(*s.slimit)) {
    series->resize(static_cast<size_t>(*s.slimit));
  }
}

// RunSelect, its answer as rows (`out`) or, when `columns` is not null, as
// columns (a subquery's).
Status RunSelectInto(ExecContext* ctx, const SelectStatement& s, std::vector<ResultSeries>* out,
                     std::vector<ColumnSeries>* columns, std::vector<std::string>* notes) {
  std::vector<ResultSeries> series;
  std::vector<ColumnSeries> series_columns;
  std::vector<ColumnSeries>* into = columns != nullptr ? &series_columns : nullptr;
  for (const Source& src : s.sources) {
    if (src.subquery) {
      std::vector<ColumnSeries> inner;
      GPULSE_RETURN_IF_ERROR(RunSelectInto(ctx, *src.subquery, nullptr, &inner, notes));
      const std::unique_ptr<Input> input = AnswerInput(std::move(inner));
      std::vector<std::string> names;
      GPULSE_RETURN_IF_ERROR(input->Measurements(&names));
      for (const std::string& n : names) {
        Measurement m;
        m.name = n;
        GPULSE_RETURN_IF_ERROR(RunOnInput(ctx, s, input.get(), m, false, &series, into));
      }
    } else {
      const std::unique_ptr<Input> input = DbSeriesInput(ctx);
      GPULSE_RETURN_IF_ERROR(RunOnInput(ctx, s, input.get(), src.measurement,
                                        ctx->keep_plans && !ctx->explain, &series, into));
    }
  }
  if (columns != nullptr) {
    SeriesOffsetAndLimit(s, &series_columns);
    for (ColumnSeries& cs : series_columns) columns->push_back(std::move(cs));
    return Status::Ok();
  }
  SeriesOffsetAndLimit(s, &series);
  for (ResultSeries& rs : series) out->push_back(std::move(rs));
  return Status::Ok();
}

}  // namespace

Status RunSelect(ExecContext* ctx, const SelectStatement& s, std::vector<ResultSeries>* out,
                 std::vector<std::string>* notes) {
  return RunSelectInto(ctx, s, out, nullptr, notes);
}

size_t KeptPlanSeries() { return kept_series_total.load(std::memory_order_relaxed); }

}  // namespace gpulse::query
