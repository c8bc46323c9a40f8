#include "query/promeval/aggregate.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "query/promeval/functions.h"

namespace gpulse::query::promeval {

namespace {

using promql::AggregateOp;

Labels GroupLabels(const promql::Expr& e, const Labels& labels) {
  if (!e.without) return KeepLabels(labels, e.grouping);
  Labels out = DropLabels(labels, e.grouping);
  DropLabel(&out, kMetricName);
  return out;
}

// One group's running state at one step.
struct Acc {
  double value = 0;
  double mean = 0;
  double count = 0;
};

void Fold(AggregateOp op, double v, Acc* a) {
  if (a->count == 0) {
    a->value = op == AggregateOp::kGroup                                  ? 1
               : op == AggregateOp::kStddev || op == AggregateOp::kStdvar ? 0
                                                                          : v;
    a->mean = v;
    a->count = 1;
    return;
  }
  ++a->count;
  switch (op) {
    case AggregateOp::kSum:
      a->value += v;
      break;
    case AggregateOp::kAvg:
      if (std::isinf(a->mean)) {
        if (std::isinf(v) && (a->mean > 0) == (v > 0)) break;
        if (!std::isinf(v) && !std::isnan(v)) break;
      }
      a->mean += v / a->count - a->mean / a->count;
      break;
    case AggregateOp::kMax:
      if (a->value < v || std::isnan(a->value)) a->value = v;
      break;
    case AggregateOp::kMin:
      if (a->value > v || std::isnan(a->value)) a->value = v;
      break;
    case AggregateOp::kStddev:
    case AggregateOp::kStdvar: {
      const double delta = v - a->mean;
      a->mean += delta / a->count;
      a->value += delta * (v - a->mean);
      break;
    }
    default:
      break;
  }
}

double Result(AggregateOp op, const Acc& a) {
  switch (op) {
    case AggregateOp::kAvg:
      return a.mean;
    case AggregateOp::kCount:
      return a.count;
    case AggregateOp::kStdvar:
      return a.value / a.count;
    case AggregateOp::kStddev:
      return std::sqrt(a.value / a.count);
    default:
      return a.value;
  }
}

// Series to their groups, in order of first appearance.
std::vector<size_t> AssignGroups(const promql::Expr& e, const std::vector<StepSeries>& in,
                                 std::vector<Labels>* groups) {
  std::unordered_map<std::string, size_t> index;
  std::vector<size_t> group_of;
  for (const StepSeries& s : in) {
    Labels labels = GroupLabels(e, s.labels);
    const auto [it, fresh] = index.emplace(LabelsKey(labels), groups->size());
    if (fresh) groups->push_back(std::move(labels));
    group_of.push_back(it->second);
  }
  return group_of;
}

void Simple(const promql::Expr& e, const std::vector<StepSeries>& in, size_t steps,
            std::vector<StepSeries>* out) {
  std::vector<Labels> groups;
  const std::vector<size_t> group_of = AssignGroups(e, in, &groups);
  std::vector<std::vector<Acc>> acc(groups.size(), std::vector<Acc>(steps));
  for (size_t s = 0; s < in.size(); ++s) {
    std::vector<Acc>& a = acc[group_of[s]];
    for (size_t k = 0; k < steps; ++k) {
      if (in[s].has[k]) Fold(e.aggregate, in[s].values[k], &a[k]);
    }
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    StepSeries series = EmptySeries(std::move(groups[g]), steps);
    for (size_t k = 0; k < steps; ++k) {
      if (acc[g][k].count == 0) continue;
      series.has[k] = 1;
      series.values[k] = Result(e.aggregate, acc[g][k]);
    }
    out->push_back(std::move(series));
  }
}

// topk and bottomk: the k best of each group at each step, with their own
// labels. NaN ranks last for both.
Status Select(const promql::Expr& e, const Value& param, const std::vector<StepSeries>& in,
              size_t steps, std::vector<StepSeries>* out) {
  std::vector<Labels> groups;
  const std::vector<size_t> group_of = AssignGroups(e, in, &groups);
  const bool top = e.aggregate == AggregateOp::kTopk;
  const auto better = [top](double a, double b) {
    if (std::isnan(b)) return !std::isnan(a);
    if (std::isnan(a)) return false;
    return top ? a > b : a < b;
  };
  std::vector<StepSeries> chosen(in.size());
  std::vector<std::vector<size_t>> members(groups.size());
  for (size_t k = 0; k < steps; ++k) {
    const double kf = param.series[0].values[k];
    if (std::isnan(kf) || std::fabs(kf) >= 9.2e18) {
      return Status::InvalidArgument("Scalar value " + FormatPromFloat(kf) + " overflows int64");
    }
    const int64_t n = static_cast<int64_t>(kf);
    if (n < 1) continue;
    for (auto& m : members) m.clear();
    for (size_t s = 0; s < in.size(); ++s) {
      if (in[s].has[k]) members[group_of[s]].push_back(s);
    }
    for (std::vector<size_t>& m : members) {
      const size_t take = std::min(m.size(), static_cast<size_t>(n));
      std::partial_sort(
          m.begin(), m.begin() + static_cast<ptrdiff_t>(take), m.end(),
          [&](size_t a, size_t b) { return better(in[a].values[k], in[b].values[k]); });
      for (size_t i = 0; i < take; ++i) {
        StepSeries& c = chosen[m[i]];
        if (c.has.empty()) c = EmptySeries(in[m[i]].labels, steps);
        c.has[k] = 1;
        c.values[k] = in[m[i]].values[k];
      }
    }
  }
  for (StepSeries& c : chosen) {
    if (!c.has.empty()) out->push_back(std::move(c));
  }
  return Status::Ok();
}

void QuantileOf(const promql::Expr& e, const Value& param, const std::vector<StepSeries>& in,
                size_t steps, std::vector<StepSeries>* out) {
  std::vector<Labels> groups;
  const std::vector<size_t> group_of = AssignGroups(e, in, &groups);
  std::vector<StepSeries> result;
  for (Labels& g : groups) result.push_back(EmptySeries(std::move(g), steps));
  std::vector<std::vector<double>> values(groups.size());
  for (size_t k = 0; k < steps; ++k) {
    for (auto& v : values) v.clear();
    for (size_t s = 0; s < in.size(); ++s) {
      if (in[s].has[k]) values[group_of[s]].push_back(in[s].values[k]);
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      if (values[g].empty()) continue;
      result[g].has[k] = 1;
      result[g].values[k] = Quantile(param.series[0].values[k], &values[g]);
    }
  }
  for (StepSeries& r : result) out->push_back(std::move(r));
}

// count_values: how many series have each value, the value a label.
Status CountValues(const promql::Expr& e, const Value& param, const std::vector<StepSeries>& in,
                   size_t steps, std::vector<StepSeries>* out) {
  const std::string& label = param.text;
  if (!IsLabelName(label)) return Status::InvalidArgument("invalid label name \"" + label + "\"");
  std::unordered_map<std::string, size_t> index;
  for (const StepSeries& s : in) {
    for (size_t k = 0; k < steps; ++k) {
      if (!s.has[k]) continue;
      Labels labels = s.labels;
      SetLabel(&labels, label, FormatPromFloat(s.values[k]));
      if (e.without) {
        labels = DropLabels(labels, e.grouping);
        DropLabel(&labels, kMetricName);
      } else {
        std::vector<std::string> by = e.grouping;
        by.push_back(label);
        labels = KeepLabels(labels, by);
      }
      const auto [it, fresh] = index.emplace(LabelsKey(labels), out->size());
      if (fresh) out->push_back(EmptySeries(std::move(labels), steps));
      StepSeries& o = (*out)[it->second];
      o.values[k] = o.has[k] ? o.values[k] + 1 : 1;
      o.has[k] = 1;
    }
  }
  return Status::Ok();
}

}  // namespace

Status Aggregate(const promql::Expr& e, const Value* param, std::vector<StepSeries> in,
                 size_t steps, std::vector<StepSeries>* out) {
  switch (e.aggregate) {
    case AggregateOp::kTopk:
    case AggregateOp::kBottomk:
      return Select(e, *param, in, steps, out);
    case AggregateOp::kQuantile:
      QuantileOf(e, *param, in, steps, out);
      return Status::Ok();
    case AggregateOp::kCountValues:
      return CountValues(e, *param, in, steps, out);
    default:
      Simple(e, in, steps, out);
      return Status::Ok();
  }
}

}  // namespace gpulse::query::promeval
