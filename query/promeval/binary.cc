#include "query/promeval/binary.h"

#include <cmath>
#include <unordered_map>

namespace gpulse::query::promeval {

namespace {

using promql::BinaryOp;
using promql::Cardinality;

// l op r; false when a comparison filters the pair out (*out is then l).
bool Apply(BinaryOp op, double l, double r, double* out) {
  *out = l;
  switch (op) {
    case BinaryOp::kAdd:
      *out = l + r;
      return true;
    case BinaryOp::kSub:
      *out = l - r;
      return true;
    case BinaryOp::kMul:
      *out = l * r;
      return true;
    case BinaryOp::kDiv:
      *out = l / r;
      return true;
    case BinaryOp::kMod:
      *out = std::fmod(l, r);
      return true;
    case BinaryOp::kPow:
      *out = std::pow(l, r);
      return true;
    case BinaryOp::kAtan2:
      *out = std::atan2(l, r);
      return true;
    case BinaryOp::kEql:
      return l == r;
    case BinaryOp::kNeq:
      return l != r;
    case BinaryOp::kGtr:
      return l > r;
    case BinaryOp::kLss:
      return l < r;
    case BinaryOp::kGte:
      return l >= r;
    case BinaryOp::kLte:
      return l <= r;
    default:
      return false;
  }
}

// Arithmetic drops the metric name (but atan2, as in Prometheus), and so
// does a comparison with bool.
bool DropsName(const promql::Expr& e) {
  switch (e.op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
    case BinaryOp::kMod:
    case BinaryOp::kPow:
      return true;
    default:
      return e.return_bool;
  }
}

void ScalarScalar(const promql::Expr& e, const Value& lhs, const Value& rhs, size_t steps,
                  Value* out) {
  *out = ScalarValue(0, steps);
  for (size_t k = 0; k < steps; ++k) {
    double v;
    const bool keep = Apply(e.op, lhs.series[0].values[k], rhs.series[0].values[k], &v);
    out->series[0].values[k] = promql::IsComparison(e.op) ? (keep ? 1 : 0) : v;
  }
}

// A vector and a scalar, the scalar on the left when `swapped`.
void VectorScalar(const promql::Expr& e, Value vec, const Value& scalar, bool swapped, size_t steps,
                  Value* out) {
  out->type = ValueType::kVector;
  for (StepSeries& s : vec.series) {
    for (size_t k = 0; k < steps; ++k) {
      if (!s.has[k]) continue;
      double l = s.values[k], r = scalar.series[0].values[k];
      if (swapped) std::swap(l, r);
      double v;
      bool keep = Apply(e.op, l, r, &v);
      // A comparison keeps the vector's value, whichever side it is on.
      if (promql::IsComparison(e.op) && swapped) v = r;
      if (e.return_bool) {
        v = keep ? 1 : 0;
        keep = true;
      }
      s.has[k] = keep ? 1 : 0;
      s.values[k] = v;
    }
    if (DropsName(e)) DropLabel(&s.labels, kMetricName);
    out->series.push_back(std::move(s));
  }
}

// The labels two series are paired by.
std::string Signature(const promql::VectorMatching& m, const Labels& labels) {
  if (m.on) return LabelsKey(KeepLabels(labels, m.labels));
  Labels rest = DropLabels(labels, m.labels);
  DropLabel(&rest, kMetricName);
  return LabelsKey(rest);
}

std::vector<size_t> SignatureIds(const promql::VectorMatching& m,
                                 const std::vector<StepSeries>& series,
                                 std::unordered_map<std::string, size_t>* ids) {
  std::vector<size_t> out;
  for (const StepSeries& s : series) {
    out.push_back(ids->emplace(Signature(m, s.labels), ids->size()).first->second);
  }
  return out;
}

// and, or, unless.
void SetOperation(const promql::Expr& e, Value lhs, Value rhs, size_t steps, Value* out) {
  std::unordered_map<std::string, size_t> ids;
  const std::vector<size_t> left = SignatureIds(e.matching, lhs.series, &ids);
  const std::vector<size_t> right = SignatureIds(e.matching, rhs.series, &ids);
  // Which signatures a side has at a step.
  const auto present = [&](const std::vector<StepSeries>& side, const std::vector<size_t>& sig,
                           size_t k, std::vector<uint8_t>* in) {
    in->assign(ids.size(), 0);
    for (size_t s = 0; s < side.size(); ++s) {
      if (side[s].has[k]) (*in)[sig[s]] = 1;
    }
  };
  std::vector<uint8_t> in_right, in_left;
  for (size_t k = 0; k < steps; ++k) {
    present(rhs.series, right, k, &in_right);
    if (e.op == BinaryOp::kOr) {
      present(lhs.series, left, k, &in_left);
      for (size_t s = 0; s < rhs.series.size(); ++s) {
        if (in_left[right[s]]) rhs.series[s].has[k] = 0;
      }
      continue;
    }
    for (size_t s = 0; s < lhs.series.size(); ++s) {
      const bool matched = in_right[left[s]] != 0;
      if (matched != (e.op == BinaryOp::kAnd)) lhs.series[s].has[k] = 0;
    }
  }
  out->type = ValueType::kVector;
  out->series = std::move(lhs.series);
  if (e.op == BinaryOp::kOr) {
    for (StepSeries& s : rhs.series) out->series.push_back(std::move(s));
  }
}

// The labels of the result of a pair, `many` from the "many" side (or the
// left in one-to-one matching), `one` from the other.
Labels ResultLabels(const promql::Expr& e, const Labels& many, const Labels& one) {
  Labels out = many;
  if (DropsName(e)) DropLabel(&out, kMetricName);
  const promql::VectorMatching& m = e.matching;
  if (m.card == Cardinality::kOneToOne)
    out = m.on ? KeepLabels(out, m.labels) : DropLabels(out, m.labels);
  for (const std::string& name : m.include) SetLabel(&out, name, LabelValue(one, name));
  return out;
}

Status VectorVector(const promql::Expr& e, Value lhs, Value rhs, size_t steps, Value* out) {
  out->type = ValueType::kVector;
  const promql::VectorMatching& m = e.matching;
  const bool swapped = m.card == Cardinality::kOneToMany;
  Value& many = swapped ? rhs : lhs;
  Value& one = swapped ? lhs : rhs;
  std::unordered_map<std::string, size_t> ids;
  const std::vector<size_t> many_sig = SignatureIds(m, many.series, &ids);
  const std::vector<size_t> one_sig = SignatureIds(m, one.series, &ids);
  std::vector<std::vector<size_t>> ones(ids.size());  // signature -> "one" side series
  for (size_t s = 0; s < one.series.size(); ++s) ones[one_sig[s]].push_back(s);
  std::unordered_map<uint64_t, size_t> pair_out;  // (many, one) -> out series
  std::vector<int64_t> matched_at(ids.size(), -1);
  for (size_t k = 0; k < steps; ++k) {
    for (size_t s = 0; s < many.series.size(); ++s) {
      const StepSeries& ms = many.series[s];
      if (!ms.has[k]) continue;
      const size_t sig = many_sig[s];
      size_t partner = SIZE_MAX;
      for (size_t o : ones[sig]) {
        if (!one.series[o].has[k]) continue;
        if (partner != SIZE_MAX) {
          return Status::InvalidArgument(
              "found duplicate series for the match group " +
              LabelsText(m.on ? KeepLabels(one.series[o].labels, m.labels)
                              : DropLabels(one.series[o].labels, m.labels)) +
              " on the " + (swapped ? "left" : "right") +
              " hand-side of the operation: many-to-many matching not allowed: matching labels "
              "must be unique on one side");
        }
        partner = o;
      }
      if (partner == SIZE_MAX) continue;
      double l = ms.values[k], r = one.series[partner].values[k];
      if (swapped) std::swap(l, r);
      double v;
      bool keep = Apply(e.op, l, r, &v);
      if (e.return_bool) {
        v = keep ? 1 : 0;
        keep = true;
      }
      if (!keep) continue;
      if (m.card == Cardinality::kOneToOne) {
        if (matched_at[sig] == static_cast<int64_t>(k)) {
          return Status::InvalidArgument(
              "multiple matches for labels: many-to-one matching must be explicit "
              "(group_left/group_right)");
        }
        matched_at[sig] = static_cast<int64_t>(k);
      }
      const uint64_t pair = (static_cast<uint64_t>(s) << 32) | partner;
      auto it = pair_out.find(pair);
      if (it == pair_out.end()) {
        it = pair_out.emplace(pair, out->series.size()).first;
        out->series.push_back(
            EmptySeries(ResultLabels(e, ms.labels, one.series[partner].labels), steps));
      }
      out->series[it->second].has[k] = 1;
      out->series[it->second].values[k] = v;
    }
  }
  if (!MergeEqualLabels(&out->series)) {
    return Status::InvalidArgument(
        "multiple matches for labels: grouping labels must ensure unique results");
  }
  return Status::Ok();
}

}  // namespace

Status Binary(const promql::Expr& e, Value lhs, Value rhs, size_t steps, Value* out) {
  const bool lscalar = lhs.type == ValueType::kScalar, rscalar = rhs.type == ValueType::kScalar;
  if (lscalar && rscalar) {
    ScalarScalar(e, lhs, rhs, steps, out);
    return Status::Ok();
  }
  if (rscalar) {
    VectorScalar(e, std::move(lhs), rhs, false, steps, out);
  } else if (lscalar) {
    VectorScalar(e, std::move(rhs), lhs, true, steps, out);
  } else if (promql::IsSetOperator(e.op)) {
    SetOperation(e, std::move(lhs), std::move(rhs), steps, out);
  } else {
    return VectorVector(e, std::move(lhs), std::move(rhs), steps, out);
  }
  if (!MergeEqualLabels(&out->series)) {
    return Status::InvalidArgument("vector cannot contain metrics with the same labelset");
  }
  return Status::Ok();
}

}  // namespace gpulse::query::promeval
