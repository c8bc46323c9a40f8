#include "query/plan/condition.h"

#include <algorithm>

#include "query/runtime/eval.h"

namespace gpulse::query {

Status ErrorAt(const Expr& e, const std::string& what) {
  return Status::InvalidArgument("line " + std::to_string(e.pos.line) + ", column " +
                                 std::to_string(e.pos.column) + ": " + what);
}

std::unique_ptr<Expr> Clone(const Expr& e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->pos = e.pos;
  c->text = e.text;
  c->var_type = e.var_type;
  c->int_value = e.int_value;
  c->float_value = e.float_value;
  c->bool_value = e.bool_value;
  c->negated = e.negated;
  c->duration = e.duration;
  c->binary_op = e.binary_op;
  c->unary_op = e.unary_op;
  c->height = e.height;
  for (const auto& child : e.children) c->children.push_back(Clone(*child));
  return c;
}

Source CloneSource(const Source& s) {
  Source copy;
  copy.measurement = s.measurement;
  if (s.subquery) copy.subquery = CloneSelect(*s.subquery);
  return copy;
}

std::unique_ptr<SelectStatement> CloneSelect(const SelectStatement& s) {
  auto c = std::make_unique<SelectStatement>();
  c->pos = s.pos;
  for (const SelectField& f : s.fields) c->fields.push_back({Clone(*f.expr), f.alias});
  for (const Source& src : s.sources) c->sources.push_back(CloneSource(src));
  if (s.condition) c->condition = Clone(*s.condition);
  for (const auto& d : s.dimensions) c->dimensions.push_back(Clone(*d));
  c->fill = s.fill;
  if (s.fill_value) c->fill_value = Clone(*s.fill_value);
  c->order = s.order;
  c->limit = s.limit;
  c->offset = s.offset;
  c->slimit = s.slimit;
  c->soffset = s.soffset;
  c->timezone = s.timezone;
  return c;
}

namespace {

std::unique_ptr<Expr> CloneOrNull(const std::unique_ptr<Expr>& e) {
  return e == nullptr ? nullptr : Clone(*e);
}

}  // namespace

std::unique_ptr<NorthstarStatement> CloneNorthstar(const NorthstarStatement& s) {
  auto c = std::make_unique<NorthstarStatement>();
  c->pos = s.pos;
  for (const auto& d : s.dimensions) c->dimensions.push_back(Clone(*d));
  c->condition = CloneOrNull(s.condition);
  c->over = CloneOrNull(s.over);
  c->every = CloneOrNull(s.every);
  c->every_offset = CloneOrNull(s.every_offset);
  c->timezone = s.timezone;
  return c;
}

std::unique_ptr<RolloutsStatement> CloneRollouts(const RolloutsStatement& s) {
  auto c = std::make_unique<RolloutsStatement>();
  c->pos = s.pos;
  c->condition = CloneOrNull(s.condition);
  c->over = CloneOrNull(s.over);
  return c;
}

std::unique_ptr<CreateAlertStatement> CloneCreateAlert(const CreateAlertStatement& s) {
  auto c = std::make_unique<CreateAlertStatement>();
  c->pos = s.pos;
  c->name = s.name;
  if (s.source != nullptr && s.source->kind == StatementKind::kSelect) {
    c->source = CloneSelect(static_cast<const SelectStatement&>(*s.source));
  } else if (s.source != nullptr && s.source->kind == StatementKind::kRollouts) {
    c->source = CloneRollouts(static_cast<const RolloutsStatement&>(*s.source));
  } else if (s.source != nullptr) {
    // The parser gives CREATE ALERT a NORTHSTAR, ROLLOUTS or SELECT, nothing else.
    c->source = CloneNorthstar(static_cast<const NorthstarStatement&>(*s.source));
  }
  c->kpi = s.kpi;
  c->kpi_over = CloneOrNull(s.kpi_over);
  c->when = CloneOrNull(s.when);
  c->baseline_history = CloneOrNull(s.baseline_history);
  c->for_duration = CloneOrNull(s.for_duration);
  c->severity = s.severity;
  c->owner = s.owner;
  c->webhook = s.webhook;
  c->action = s.action;
  return c;
}

std::unique_ptr<Expr> MakeVarRef(std::string name, VarType type) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::kVarRef;
  e->text = std::move(name);
  e->var_type = type;
  return e;
}

std::unique_ptr<Expr> MakeInteger(int64_t value) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::kInteger;
  e->int_value = value;
  return e;
}

std::unique_ptr<Expr> MakeBinary(BinaryOp op, std::unique_ptr<Expr> a, std::unique_ptr<Expr> b) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::kBinary;
  e->binary_op = op;
  e->pos = a->pos;
  e->height = 1 + std::max(a->height, b->height);
  e->children.push_back(std::move(a));
  e->children.push_back(std::move(b));
  return e;
}

std::unique_ptr<Expr> MakeCall(std::string name, std::vector<std::unique_ptr<Expr>> args) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::kCall;
  e->text = std::move(name);
  for (auto& a : args) {
    e->height = std::max(e->height, 1 + a->height);
    e->children.push_back(std::move(a));
  }
  return e;
}

std::unique_ptr<Expr> MakeDuration(int64_t amount, std::string unit) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::kDuration;
  e->duration.push_back({amount, std::move(unit)});
  return e;
}

std::unique_ptr<Expr> WithTimeRange(std::unique_ptr<Expr> condition, int64_t lo, int64_t hi) {
  std::unique_ptr<Expr> range =
      MakeBinary(BinaryOp::kAnd, MakeBinary(BinaryOp::kGte, MakeVarRef("time"), MakeInteger(lo)),
                 MakeBinary(BinaryOp::kLt, MakeVarRef("time"), MakeInteger(hi)));
  if (condition == nullptr) return range;
  return MakeBinary(BinaryOp::kAnd, std::move(condition), std::move(range));
}

bool IsTimeRef(const Expr& e) { return e.kind == ExprKind::kVarRef && e.text == "time"; }

bool IsComparison(BinaryOp op) {
  return op == BinaryOp::kEq || op == BinaryOp::kNeq || op == BinaryOp::kLt ||
         op == BinaryOp::kLte || op == BinaryOp::kGt || op == BinaryOp::kGte;
}

bool MentionsTime(const Expr& e) {
  if (IsTimeRef(e)) return true;
  for (const auto& c : e.children) {
    if (MentionsTime(*c)) return true;
  }
  return false;
}

bool CallsNow(const Expr& e) {
  if (e.kind == ExprKind::kCall && e.text == "now") return true;
  for (const auto& c : e.children) {
    if (CallsNow(*c)) return true;
  }
  return false;
}

Status SourceFilter::Compile(const std::vector<Source>& sources) {
  all_ = sources.empty();
  for (const Source& src : sources) {
    if (!src.measurement.regex) {
      names_.push_back(src.measurement.name);
      continue;
    }
    Result<Regex> re = CompileRegex(*src.measurement.regex);
    if (!re.ok()) return re.status();
    regexes_.push_back(std::move(*re));
  }
  return Status::Ok();
}

bool SourceFilter::Names(const std::string& m) const {
  if (all_) return true;
  for (const std::string& n : names_) {
    if (n == m) return true;
  }
  for (const Regex& re : regexes_) {
    if (RegexSearch(*re, m)) return true;
  }
  return false;
}

std::string TagValue(const std::vector<Tag>& tags, std::string_view key) {
  for (const Tag& t : tags) {
    if (t.key == key) return t.value;
  }
  return std::string();
}

Status ExtractTime(const Expr& e, int64_t now_ns, TimeRange* range, std::unique_ptr<Expr>* rest) {
  if (e.kind == ExprKind::kBinary && e.binary_op == BinaryOp::kAnd) {
    std::unique_ptr<Expr> left, right;
    GPULSE_RETURN_IF_ERROR(ExtractTime(*e.children[0], now_ns, range, rest ? &left : nullptr));
    GPULSE_RETURN_IF_ERROR(ExtractTime(*e.children[1], now_ns, range, rest ? &right : nullptr));
    if (rest == nullptr) return Status::Ok();
    if (left && right) {
      auto both = std::make_unique<Expr>();
      both->kind = ExprKind::kBinary;
      both->binary_op = BinaryOp::kAnd;
      both->pos = e.pos;
      both->children.push_back(std::move(left));
      both->children.push_back(std::move(right));
      *rest = std::move(both);
    } else {
      *rest = left ? std::move(left) : std::move(right);
    }
    return Status::Ok();
  }
  if (e.kind == ExprKind::kBinary && IsComparison(e.binary_op) &&
      (IsTimeRef(*e.children[0]) || IsTimeRef(*e.children[1]))) {
    const bool time_left = IsTimeRef(*e.children[0]);
    const Expr& other = time_left ? *e.children[1] : *e.children[0];
    Result<int64_t> t = EvalTime(other, now_ns);
    if (!t.ok()) return t.status();
    BinaryOp op = e.binary_op;
    if (!time_left) {  // '2024-01-01' < time reads as time > '2024-01-01'
      if (op == BinaryOp::kLt)
        op = BinaryOp::kGt;
      else if (op == BinaryOp::kLte)
        op = BinaryOp::kGte;
      else if (op == BinaryOp::kGt)
        op = BinaryOp::kLt;
      else if (op == BinaryOp::kGte)
        op = BinaryOp::kLte;
    }
    auto raise_lo = [&](int64_t v) {
      range->lo = range->has_lo ? std::max(range->lo, v) : v;
      range->has_lo = true;
    };
    auto lower_hi = [&](int64_t v) {
      range->hi = range->has_hi ? std::min(range->hi, v) : v;
      range->has_hi = true;
    };
    const int64_t v = *t;
    switch (op) {
      case BinaryOp::kGte:
        raise_lo(v);
        break;
      case BinaryOp::kGt:
        raise_lo(v == INT64_MAX ? v : v + 1);
        break;
      case BinaryOp::kLt:
        lower_hi(v);
        break;
      case BinaryOp::kLte:
        lower_hi(v == INT64_MAX ? v : v + 1);
        break;
      case BinaryOp::kEq:
        raise_lo(v);
        lower_hi(v == INT64_MAX ? v : v + 1);
        break;
      default:
        return ErrorAt(e, "time can be compared with =, <, <=, > and >=, not !=");
    }
    return Status::Ok();
  }
  if (MentionsTime(e)) {
    return ErrorAt(e, "conditions on time must be joined to the rest with AND, not OR or NOT");
  }
  if (rest != nullptr) *rest = Clone(e);
  return Status::Ok();
}

Status TagCondition::Compile(const Expr* e) {
  root_ = e;
  return e ? CompileRegexes(*e) : Status::Ok();
}

namespace {

// Whether `e` is a tag comparison tree; *bad is the first node that is not.
bool TagsOnly(const Expr& e, const Expr** bad) {
  const auto is_ref = [](const Expr& x) { return x.kind == ExprKind::kVarRef; };
  // A value must be a 'string': an unquoted word would be read as another
  // tag, and compare with '' where the series has no such tag.
  const auto is_text = [](const Expr& x) { return x.kind == ExprKind::kString; };
  switch (e.kind) {
    case ExprKind::kUnary:
      if (e.unary_op == UnaryOp::kNot) return TagsOnly(*e.children[0], bad);
      break;
    case ExprKind::kIn: {
      bool ok = is_ref(*e.children[0]);
      for (size_t i = 1; ok && i < e.children.size(); ++i) {
        ok = e.children[i]->kind == ExprKind::kString;
      }
      if (ok) return true;
      break;
    }
    case ExprKind::kBinary:
      switch (e.binary_op) {
        case BinaryOp::kAnd:
        case BinaryOp::kOr:
          return TagsOnly(*e.children[0], bad) && TagsOnly(*e.children[1], bad);
        case BinaryOp::kEq:
        case BinaryOp::kNeq:
          if (is_ref(*e.children[0]) && is_text(*e.children[1])) return true;
          break;
        case BinaryOp::kEqRegex:
        case BinaryOp::kNeqRegex:
          if (is_ref(*e.children[0]) && e.children[1]->kind == ExprKind::kRegex) return true;
          break;
        default:
          break;
      }
      break;
    default:
      break;
  }
  *bad = &e;
  return false;
}

}  // namespace

Status TagCondition::CompileTagsOnly(const Expr* e, const std::string& what) {
  const Expr* bad = nullptr;
  if (e && !TagsOnly(*e, &bad)) {
    return ErrorAt(*bad, what +
                             " takes tag comparisons with 'quoted' values (=, !=, =~, !~, "
                             "IN) joined by AND, OR and NOT, and a time range; not " +
                             bad->ToString());
  }
  return Compile(e);
}

Status TagCondition::CompileRegexes(const Expr& e) {
  if (e.kind == ExprKind::kRegex) {
    Result<Regex> re = CompileRegex(e.text);
    if (!re.ok()) return ErrorAt(e, re.status().message());
    regexes_.emplace(&e, std::move(*re));
  }
  for (const auto& c : e.children) GPULSE_RETURN_IF_ERROR(CompileRegexes(*c));
  return Status::Ok();
}

std::string TagCondition::Text(const Expr& e, const std::vector<Tag>& tags) const {
  if (e.kind == ExprKind::kVarRef) return TagValue(tags, e.text);
  return e.text;
}

bool TagCondition::Eval(const Expr& e, const std::vector<Tag>& tags) const {
  switch (e.kind) {
    case ExprKind::kUnary:
      return e.unary_op == UnaryOp::kNot ? !Eval(*e.children[0], tags) : false;
    case ExprKind::kIn: {
      const std::string v = Text(*e.children[0], tags);
      bool found = false;
      for (size_t i = 1; i < e.children.size(); ++i) found = found || v == e.children[i]->text;
      return found != e.negated;
    }
    case ExprKind::kBinary:
      switch (e.binary_op) {
        case BinaryOp::kAnd:
          return Eval(*e.children[0], tags) && Eval(*e.children[1], tags);
        case BinaryOp::kOr:
          return Eval(*e.children[0], tags) || Eval(*e.children[1], tags);
        case BinaryOp::kEq:
          return Text(*e.children[0], tags) == Text(*e.children[1], tags);
        case BinaryOp::kNeq:
          return Text(*e.children[0], tags) != Text(*e.children[1], tags);
        case BinaryOp::kEqRegex:
        case BinaryOp::kNeqRegex: {
          auto it = regexes_.find(e.children[1].get());
          if (it == regexes_.end()) return false;
          const bool m = RegexSearch(*it->second, Text(*e.children[0], tags));
          return m == (e.binary_op == BinaryOp::kEqRegex);
        }
        default:
          return false;
      }
    default:
      return false;
  }
}

}  // namespace gpulse::query
