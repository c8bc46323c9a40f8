#include "query/plan/plan.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "query/runtime/eval.h"
#include "query/runtime/format.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

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

// The column name InfluxQL gives an expression: the field, the function, or
// for an expression of several, the names of its fields and functions (not
// of a function's arguments) in order, joined by '_': mean(util) / max(util)
// is mean_max, util + temp_c util_temp_c, mean(util) * 2 mean.
std::string DefaultName(const Expr& e) {
  std::string out;
  std::function<void(const Expr&)> names = [&](const Expr& x) {
    if (x.kind == ExprKind::kVarRef || x.kind == ExprKind::kCall) {
      out += (out.empty() ? "" : "_") + x.text;
      return;
    }
    for (const auto& c : x.children) names(*c);
  };
  names(e);
  return out.empty() ? "expr" : out;
}

// ---------------------------------------------------------------------------
// The plan of one SELECT over one measurement.

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

// Whether `e` is `field op constant` or `constant op field` with a
// comparison op, setting *field to the field's name.
bool FieldTest(const Expr& e, const Plan& plan, std::string* field) {
  if (e.kind != ExprKind::kBinary || !IsComparison(e.binary_op)) return false;
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
  if (IsAggregateCall(e) && e.text == "count" && e.children.size() == 1 &&
      e.children[0]->kind == ExprKind::kCall && e.children[0]->text == "distinct") {
    // count(distinct(f)): how many distinct values f has.
    const Expr& inner = *e.children[0];
    if (inner.children.size() != 1 || inner.children[0]->kind != ExprKind::kVarRef) {
      return ErrorAt(inner, "distinct() takes a field name");
    }
    const Expr& arg = *inner.children[0];
    AggSlot slot;
    slot.spec.kind = AggKind::kCountDistinct;
    const auto known = plan->all_fields->find(arg.text);
    slot.spec.type = known != plan->all_fields->end() ? known->second : FieldType::kFloat;
    slot.field = plan->IsField(arg) ? plan->FieldIndex(arg.text) : -1;
    plan->slot_of[&e] = static_cast<int>(plan->slots.size());
    plan->slots.push_back(slot);
    return Status::Ok();
  }
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

}  // namespace

FunctionKind KindOf(const Expr& call) {
  const FunctionInfo* f = LookupFunction(call.text);
  return f ? f->kind : FunctionKind::kMath;
}

// Whether `e` names a field of the measurement anywhere.
bool NamesField(const Expr& e, const Plan& plan) {
  if (e.kind == ExprKind::kVarRef && plan.IsField(e)) return true;
  for (const auto& c : e.children) {
    if (NamesField(*c, plan)) return true;
  }
  return false;
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

namespace {

// The output expressions, with * and /regex/ expanded; duplicate names
// get _1, _2, as InfluxDB does.
Status PlanOutputs(const SelectStatement& s, const std::string& measurement, Plan* plan) {
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
  return Status::Ok();
}

// Aggregate or raw: the aggregate calls become slots, or the raw
// expressions' fields are read.
Status PlanKind(Plan* plan) {
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
  return Status::Ok();
}

// WHERE: the time range, and the condition without its time terms.
Status PlanWhere(ExecContext* ctx, const SelectStatement& s, Plan* plan) {
  if (!s.condition) return Status::Ok();
  TimeRange range;
  std::unique_ptr<Expr> rest;
  GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, ctx->now_ns(), &range, &rest));
  SetRange(range, plan);
  plan->owned_condition = std::move(rest);
  if (!plan->owned_condition) return Status::Ok();
  plan->condition = plan->owned_condition.get();
  GPULSE_RETURN_IF_ERROR(CompileRegexes(*plan->condition, plan));
  FieldRefsOf(*plan->condition, plan);
  CollectEq(*plan->condition, *plan, &plan->eq);
  plan->tags_only = !NamesField(*plan->condition, *plan);
  return Status::Ok();
}

// GROUP BY: time() into a Bucketer, tags and string fields into dims.
Status PlanGroupBy(const SelectStatement& s, Plan* plan) {
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
  return Status::Ok();
}

// A condition of tags and comparisons of the one field every aggregate
// folds: the comparisons are kept as Plan::field_tests.
void PlanFieldTests(Plan* plan) {
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
}

void PlanFill(const SelectStatement& s, Plan* plan) {
  plan->fill = s.fill == FillKind::kUnset ? FillKind::kNull : s.fill;
  if (s.fill_value) {
    const Expr* v = s.fill_value.get();
    const bool neg = v->kind == ExprKind::kUnary;
    if (neg) v = v->children[0].get();
    plan->fill_value = v->kind == ExprKind::kInteger
                           ? QueryValue(neg ? -v->int_value : v->int_value)
                           : QueryValue(neg ? -v->float_value : v->float_value);
  }
}

}  // namespace

Status BuildPlan(ExecContext* ctx, const SelectStatement& s, Input* input,
                 const std::string& measurement, Plan* plan) {
  plan->measurement = measurement;
  std::vector<FieldInfo> fields;
  GPULSE_RETURN_IF_ERROR(input->Fields(measurement, &fields));
  auto all_fields = std::make_shared<std::map<std::string, FieldType>>();
  for (const FieldInfo& f : fields) {
    // Prometheus' stale markers are PromQL's (engine/gpulse.h).
    if (!IsStaleField(f.name)) (*all_fields)[f.name] = f.type;
  }
  plan->all_fields = std::move(all_fields);
  GPULSE_RETURN_IF_ERROR(input->TagKeys(measurement, &plan->tag_keys));

  GPULSE_RETURN_IF_ERROR(PlanOutputs(s, measurement, plan));
  GPULSE_RETURN_IF_ERROR(PlanKind(plan));
  GPULSE_RETURN_IF_ERROR(PlanWhere(ctx, s, plan));
  GPULSE_RETURN_IF_ERROR(PlanGroupBy(s, plan));
  // A lone selector answers with its point's time, unless GROUP BY time
  // makes the bucket's start the row's time.
  if (plan->lone_selector && !plan->bucketer) plan->slots[0].spec.need_time = true;
  PlanFieldTests(plan);
  PlanFill(s, plan);
  return Status::Ok();
}

std::string RangeText(const Plan& plan) {
  auto t = [](int64_t ns) { return FormatValue(QueryValue(ns), true, TimeFormat::kRfc3339); };
  return "[" + (plan.has_lo ? t(plan.lo) : std::string("-inf")) + ", " +
         (plan.has_hi ? t(plan.hi) : std::string("+inf")) + ")";
}

int64_t FloorMod(int64_t x, int64_t m) {
  const int64_t r = x % m;
  return r < 0 ? r + m : r;
}

}  // namespace gpulse::query
