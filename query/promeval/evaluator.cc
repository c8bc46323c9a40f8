#include "query/promeval/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "query/promeval/aggregate.h"
#include "query/promeval/binary.h"
#include "query/promeval/functions.h"
#include "query/runtime/parallel.h"
#include "query/syntax/regex.h"

namespace gpulse::query::promeval {

namespace {

using promql::Expr;

const Expr& Unwrap(const Expr& e) {
  const Expr* x = &e;
  while (x->kind == Expr::Kind::kParen) x = x->args[0].get();
  return *x;
}

// The first multiple of `step` at or after t.
int64_t AlignUp(int64_t t, int64_t step) {
  int64_t q = t / step * step;
  if (q < t) q += step;
  return q;
}

const char* kSameLabels = "vector cannot contain metrics with the same labelset";

bool HasValue(const StepSeries& s) {
  return std::find(s.has.begin(), s.has.end(), 1) != s.has.end();
}

// Applies fn to every value of a vector, dropping the metric name.
template <typename F>
void MapValues(Value* v, size_t steps, F fn) {
  for (StepSeries& s : v->series) {
    DropLabel(&s.labels, kMetricName);
    for (size_t k = 0; k < steps; ++k) {
      if (s.has[k]) s.values[k] = fn(s.values[k], k);
    }
  }
}

double ScalarAt(const Value& v, size_t k) { return v.series[0].values[k]; }

// Go's regexp.Expand over a match: $1, ${1}, $name, ${name}, $$.
std::string ExpandTemplate(std::string_view tmpl, const re2::RE2& re,
                           const std::vector<re2::StringPiece>& groups) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$' || i + 1 == tmpl.size()) {
      out += tmpl[i];
      continue;
    }
    if (tmpl[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    size_t begin = i + 1, end;
    bool braced = tmpl[begin] == '{';
    if (braced) {
      ++begin;
      end = tmpl.find('}', begin);
      if (end == std::string_view::npos) {
        out += tmpl[i];
        continue;
      }
    } else {
      end = begin;
      while (end < tmpl.size() &&
             (std::isalnum(static_cast<unsigned char>(tmpl[end])) || tmpl[end] == '_')) {
        ++end;
      }
    }
    const std::string name(tmpl.substr(begin, end - begin));
    if (name.empty()) {
      out += tmpl[i];
      continue;
    }
    i = braced ? end : end - 1;
    int index = -1;
    if (std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      index = name.size() < 9 ? std::stoi(name) : -1;
    } else {
      const auto& named = re.NamedCapturingGroups();
      const auto it = named.find(name);
      if (it != named.end()) index = it->second;
    }
    if (index >= 0 && static_cast<size_t>(index) < groups.size() &&
        groups[index].data() != nullptr) {
      out.append(groups[index].data(), groups[index].size());
    }
  }
  return out;
}

}  // namespace

Labels AbsentLabels(const Expr& arg) {
  const Expr* sel = &arg;
  if (sel->kind == Expr::Kind::kMatrixSelector) sel = sel->args[0].get();
  if (sel->kind != Expr::Kind::kVectorSelector) return {};
  Labels out;
  std::vector<std::string> dropped;
  for (const promql::LabelMatcher& m : sel->matchers) {
    if (m.name == kMetricName) continue;
    if (m.op == promql::MatchOp::kEqual && LabelValue(out, m.name).empty()) {
      SetLabel(&out, m.name, m.value);
    } else {
      dropped.push_back(m.name);
    }
  }
  return DropLabels(out, dropped);
}

int64_t Evaluator::EvalTime(const Expr& modifiers, int64_t step_time) const {
  int64_t t = step_time;
  switch (modifiers.at) {
    case promql::AtKind::kNone:
      break;
    case promql::AtKind::kTimestamp:
      t = modifiers.at_ms;
      break;
    case promql::AtKind::kStart:
      t = settings_.query_start;
      break;
    case promql::AtKind::kEnd:
      t = settings_.query_end;
      break;
  }
  return Minus(t, modifiers.offset_ms);
}

Status Evaluator::Charge(const std::vector<StepSeries>& series, size_t steps) {
  return ctx_->Charge(series.size() * (steps * 9 + 64), "PromQL series");
}

Status Evaluator::Eval(const Expr& e, const Steps& steps, Value* out) {
  GPULSE_RETURN_IF_ERROR(ctx_->Poll());
  const size_t n = steps.count();
  switch (e.kind) {
    case Expr::Kind::kNumber:
      *out = ScalarValue(e.number, n);
      return Status::Ok();
    case Expr::Kind::kString:
      out->type = ValueType::kString;
      out->text = e.text;
      return Status::Ok();
    case Expr::Kind::kParen:
      return Eval(*e.args[0], steps, out);
    case Expr::Kind::kVectorSelector:
      return EvalSelector(e, steps, false, out);
    case Expr::Kind::kMatrixSelector:
    case Expr::Kind::kSubquery:
      return Status::InvalidArgument("a range vector is only a function's argument here");
    case Expr::Kind::kCall:
      return EvalCall(e, steps, out);
    case Expr::Kind::kAggregate:
      return EvalAggregate(e, steps, out);
    case Expr::Kind::kBinary:
      return EvalBinary(e, steps, out);
    case Expr::Kind::kUnary:
      GPULSE_RETURN_IF_ERROR(Eval(*e.args[0], steps, out));
      if (!e.negative) return Status::Ok();
      if (out->type == ValueType::kScalar) {
        for (double& v : out->series[0].values) v = -v;
        return Status::Ok();
      }
      MapValues(out, n, [](double v, size_t) { return -v; });
      if (!MergeEqualLabels(&out->series)) return Status::InvalidArgument(kSameLabels);
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown PromQL node");
}

Status Evaluator::EvalSelector(const Expr& e, const Steps& steps, bool sample_times, Value* out) {
  const size_t n = steps.count();
  const int64_t first = EvalTime(e, steps.start), last = EvalTime(e, steps.end);
  std::vector<RawSeries> raw;
  GPULSE_RETURN_IF_ERROR(source_->Select(
      e.matchers, Minus(std::min(first, last), settings_.lookback), std::max(first, last), &raw));
  out->type = ValueType::kVector;
  out->series.reserve(raw.size());
  for (RawSeries& r : raw) {
    StepSeries s = EmptySeries(std::move(r.labels), n);
    size_t i = 0;  // the first sample after the step's time
    for (size_t k = 0; k < n; ++k) {
      const int64_t t = EvalTime(e, steps.at(k));
      if (t < (i == 0 ? INT64_MIN : r.times[i - 1])) i = 0;  // @ in a subquery: times may repeat
      while (i < r.times.size() && r.times[i] <= t) ++i;
      if (i == 0 || r.times[i - 1] < Minus(t, settings_.lookback) || IsStale(r.values[i - 1])) {
        continue;
      }
      s.has[k] = 1;
      s.values[k] = sample_times ? static_cast<double>(r.times[i - 1]) / 1000 : r.values[i - 1];
    }
    if (HasValue(s)) out->series.push_back(std::move(s));
  }
  if (!MergeEqualLabels(&out->series)) return Status::InvalidArgument(kSameLabels);
  return Charge(out->series, n);
}

Status Evaluator::RangeSamples(const Expr& e, const Steps& steps, std::vector<RawSeries>* series,
                               const Expr** modifiers) {
  const Expr& arg = Unwrap(e);
  if (arg.kind == Expr::Kind::kMatrixSelector) {
    const Expr& sel = *arg.args[0];
    *modifiers = &sel;
    const int64_t first = EvalTime(sel, steps.start), last = EvalTime(sel, steps.end);
    return source_->Select(sel.matchers, Minus(std::min(first, last), arg.range_ms),
                           std::max(first, last), series);
  }
  if (arg.kind != Expr::Kind::kSubquery) {
    return Status::InvalidArgument("expected a range vector, got " + arg.ToString());
  }
  *modifiers = &arg;
  const int64_t step = arg.step_ms > 0 ? arg.step_ms : settings_.subquery_step;
  const int64_t first = EvalTime(arg, steps.start), last = EvalTime(arg, steps.end);
  Steps inner;
  inner.start = AlignUp(Minus(std::min(first, last), arg.range_ms), step);
  inner.end = std::max(first, last);
  inner.step = step;
  if (inner.start > inner.end) return Status::Ok();
  if ((static_cast<__int128>(inner.end) - inner.start) / step > 11'000'000) {
    return Status::ResourceExhausted("subquery " + arg.ToString() + " has over 11,000,000 steps");
  }
  Value v;
  GPULSE_RETURN_IF_ERROR(Eval(*arg.args[0], inner, &v));
  for (StepSeries& s : v.series) {
    RawSeries r;
    r.labels = std::move(s.labels);
    for (size_t k = 0; k < s.has.size(); ++k) {
      if (!s.has[k]) continue;
      r.times.push_back(inner.at(k));
      r.values.push_back(s.values[k]);
    }
    if (!r.times.empty()) series->push_back(std::move(r));
  }
  return Status::Ok();
}

Status Evaluator::EvalRange(const Expr& e, int64_t time, std::vector<RawSeries>* out) {
  const Steps at{time, time, 1};
  std::vector<RawSeries> series;
  const Expr* modifiers = nullptr;
  GPULSE_RETURN_IF_ERROR(RangeSamples(e, at, &series, &modifiers));
  const Expr& arg = Unwrap(e);
  const int64_t end = EvalTime(*modifiers, time), start = Minus(end, arg.range_ms);
  for (RawSeries& r : series) {
    RawSeries w;
    w.labels = std::move(r.labels);
    for (size_t i = 0; i < r.times.size(); ++i) {
      if (r.times[i] < start || r.times[i] > end || IsStale(r.values[i])) continue;
      w.times.push_back(r.times[i]);
      w.values.push_back(r.values[i]);
    }
    if (!w.times.empty()) out->push_back(std::move(w));
  }
  return Status::Ok();
}

Status Evaluator::EvalRangeCall(const Expr& e, const Steps& steps, Value* out) {
  const RangeFunction fn = FindRangeFunction(e.text);
  const size_t n = steps.count();
  // The range vector's position and the scalar arguments around it.
  size_t matrix_arg = 0;
  std::vector<Value> scalars;
  for (size_t a = 0; a < e.args.size(); ++a) {
    if (e.args[a]->type() == ValueType::kMatrix) {
      matrix_arg = a;
      continue;
    }
    scalars.emplace_back();
    GPULSE_RETURN_IF_ERROR(Eval(*e.args[a], steps, &scalars.back()));
  }
  // holt_winters' factors, checked where it has samples to smooth.
  const bool holt_winters = e.text == "holt_winters";
  const auto check_factors = [&](size_t k) {
    for (size_t a = 0; a < 2; ++a) {
      const double f = ScalarAt(scalars[a], k);
      if (f > 0 && f < 1) continue;
      char text[64];
      std::snprintf(text, sizeof(text), "%f", f);
      return Status::InvalidArgument(std::string("invalid ") + (a == 0 ? "smoothing" : "trend") +
                                     " factor. Expected: 0 < " + (a == 0 ? "sf" : "tf") +
                                     " < 1, got: " + text);
    }
    return Status::Ok();
  };
  const Expr& arg = Unwrap(*e.args[matrix_arg]);
  const int64_t range = arg.range_ms;
  std::vector<int64_t> ends(n);  // each step's window ends here
  std::vector<RawSeries> series;
  std::vector<StepSeries> folded;  // windows the tiers answered
  const std::optional<WindowFold> fold = FoldOf(e.text);
  if (fold && settings_.use_tiers && arg.kind == Expr::Kind::kMatrixSelector) {
    const Expr& sel = *arg.args[0];
    for (size_t k = 0; k < n; ++k) ends[k] = EvalTime(sel, steps.at(k));
    GPULSE_RETURN_IF_ERROR(
        source_->FoldWindows(sel.matchers, ends, range, *fold, &folded, &series));
  } else {
    const Expr* modifiers = nullptr;
    GPULSE_RETURN_IF_ERROR(RangeSamples(*e.args[matrix_arg], steps, &series, &modifiers));
    for (size_t k = 0; k < n; ++k) ends[k] = EvalTime(*modifiers, steps.at(k));
  }
  const bool keep_name = e.text == "last_over_time";
  std::vector<StepSeries> results(series.size());
  size_t workers = 0;
  GPULSE_RETURN_IF_ERROR(ParallelFor(ctx_, series.size(), &workers, [&](size_t, size_t i) {
    RawSeries& r = series[i];
    // Stale markers end a series; they are no samples of a window.
    size_t kept = 0;
    for (size_t j = 0; j < r.times.size(); ++j) {
      if (IsStale(r.values[j])) continue;
      r.times[kept] = r.times[j];
      r.values[kept++] = r.values[j];
    }
    r.times.resize(kept);
    r.values.resize(kept);
    if (!keep_name) DropLabel(&r.labels, kMetricName);
    StepSeries s = EmptySeries(std::move(r.labels), n);
    size_t lo = 0, hi = 0;
    for (size_t k = 0; k < n; ++k) {
      Window w;
      w.eval_time = steps.at(k);
      w.range_end = ends[k];
      w.range_start = Minus(w.range_end, range);
      if (lo > 0 && r.times[lo - 1] >= w.range_start) lo = hi = 0;  // windows moved back (@)
      while (lo < kept && r.times[lo] < w.range_start) ++lo;
      hi = std::max(hi, lo);
      while (hi < kept && r.times[hi] <= w.range_end) ++hi;
      if (hi == lo) continue;
      w.times = std::span<const int64_t>(r.times).subspan(lo, hi - lo);
      w.values = std::span<const double>(r.values).subspan(lo, hi - lo);
      for (size_t a = 0; a < scalars.size() && a < 2; ++a) w.scalars[a] = ScalarAt(scalars[a], k);
      if (holt_winters) GPULSE_RETURN_IF_ERROR(check_factors(k));
      double v;
      if (fn(w, &v)) {
        s.has[k] = 1;
        s.values[k] = v;
      }
    }
    if (HasValue(s)) results[i] = std::move(s);
    return Status::Ok();
  }));
  out->type = ValueType::kVector;
  for (StepSeries& s : results) {
    if (!s.has.empty()) out->series.push_back(std::move(s));
  }
  for (StepSeries& s : folded) {
    if (!keep_name) DropLabel(&s.labels, kMetricName);
    out->series.push_back(std::move(s));
  }
  std::unordered_set<const Labels*, LabelsPtrHash, LabelsPtrEqual> seen;
  seen.reserve(out->series.size());
  for (const StepSeries& s : out->series) {
    if (!seen.insert(&s.labels).second) return Status::InvalidArgument(kSameLabels);
  }
  return Charge(out->series, n);
}

Status Evaluator::EvalAbsentOverTime(const Expr& e, const Steps& steps, Value* out) {
  const size_t n = steps.count();
  std::vector<RawSeries> series;
  const Expr* modifiers = nullptr;
  GPULSE_RETURN_IF_ERROR(RangeSamples(*e.args[0], steps, &series, &modifiers));
  const int64_t range = Unwrap(*e.args[0]).range_ms;
  out->type = ValueType::kVector;
  StepSeries s = EmptySeries(AbsentLabels(Unwrap(*e.args[0])), n);
  for (size_t k = 0; k < n; ++k) {
    const int64_t end = EvalTime(*modifiers, steps.at(k)), start = Minus(end, range);
    bool any = false;
    for (const RawSeries& r : series) {
      const auto it = std::lower_bound(r.times.begin(), r.times.end(), start);
      for (auto j = it; j != r.times.end() && *j <= end; ++j) {
        if (!IsStale(r.values[static_cast<size_t>(j - r.times.begin())])) any = true;
      }
      if (any) break;
    }
    if (!any) {
      s.has[k] = 1;
      s.values[k] = 1;
    }
  }
  if (HasValue(s)) out->series.push_back(std::move(s));
  return Status::Ok();
}

Status Evaluator::EvalCall(const Expr& e, const Steps& steps, Value* out) {
  const size_t n = steps.count();
  const std::string& name = e.text;
  if (name == "absent_over_time") return EvalAbsentOverTime(e, steps, out);
  if (FindRangeFunction(name) != nullptr) return EvalRangeCall(e, steps, out);
  if (name == "time") {
    *out = ScalarValue(0, n);
    for (size_t k = 0; k < n; ++k)
      out->series[0].values[k] = static_cast<double>(steps.at(k)) / 1000;
    return Status::Ok();
  }
  if (name == "pi") {
    *out = ScalarValue(M_PI, n);
    return Status::Ok();
  }
  if (name == "histogram_quantile") return EvalHistogramQuantile(e, steps, out);
  if (name == "label_replace" || name == "label_join") return EvalLabelCall(e, steps, out);
  return EvalVectorCall(e, steps, out);
}

Status Evaluator::EvalVectorCall(const Expr& e, const Steps& steps, Value* out) {
  const size_t n = steps.count();
  const std::string& name = e.text;
  std::vector<Value> args(e.args.size());
  for (size_t a = 0; a < e.args.size(); ++a) {
    if (a == 0 && name == "timestamp" && Unwrap(*e.args[0]).kind == Expr::Kind::kVectorSelector) {
      GPULSE_RETURN_IF_ERROR(EvalSelector(Unwrap(*e.args[0]), steps, true, &args[0]));
      continue;
    }
    GPULSE_RETURN_IF_ERROR(Eval(*e.args[a], steps, &args[a]));
  }
  if (name == "vector") {
    out->type = ValueType::kVector;
    out->series.push_back(std::move(args[0].series[0]));
    return Status::Ok();
  }
  if (name == "scalar") {
    *out = ScalarValue(NAN, n);
    for (size_t k = 0; k < n; ++k) {
      size_t count = 0;
      for (const StepSeries& s : args[0].series) {
        if (s.has[k] && count++ == 0) out->series[0].values[k] = s.values[k];
      }
      if (count != 1) out->series[0].values[k] = NAN;
    }
    return Status::Ok();
  }
  if (name == "absent") {
    out->type = ValueType::kVector;
    StepSeries s = EmptySeries(AbsentLabels(*e.args[0]), n);
    for (size_t k = 0; k < n; ++k) {
      const bool any = std::any_of(args[0].series.begin(), args[0].series.end(),
                                   [k](const StepSeries& x) { return x.has[k] != 0; });
      s.has[k] = any ? 0 : 1;
      s.values[k] = 1;
    }
    if (HasValue(s)) out->series.push_back(std::move(s));
    return Status::Ok();
  }
  if (const DateFunction date = FindDateFunction(name)) {
    if (args.empty()) {
      // Of the evaluation's time.
      args.emplace_back();
      args[0].type = ValueType::kVector;
      args[0].series.push_back(EmptySeries({}, n));
      for (size_t k = 0; k < n; ++k) {
        args[0].series[0].has[k] = 1;
        args[0].series[0].values[k] = static_cast<double>(steps.at(k)) / 1000;
      }
    }
    *out = std::move(args[0]);
    // Beyond the int64 range Prometheus' Go cast answers nonsense; NaN here.
    MapValues(out, n, [date](double v, size_t) { return std::fabs(v) < 9.2e18 ? date(v) : NAN; });
  } else if (const MathFunction math = FindMathFunction(name)) {
    *out = std::move(args[0]);
    MapValues(out, n, [math](double v, size_t) { return math(v); });
  } else if (name == "timestamp") {
    *out = std::move(args[0]);
    const bool selector = Unwrap(*e.args[0]).kind == Expr::Kind::kVectorSelector;
    MapValues(out, n, [&](double v, size_t k) {
      return selector ? v : static_cast<double>(steps.at(k)) / 1000;
    });
  } else if (name == "clamp" || name == "clamp_min" || name == "clamp_max") {
    *out = std::move(args[0]);
    const bool has_min = name != "clamp_max", has_max = name != "clamp_min";
    const Value* min = has_min ? &args[1] : nullptr;
    const Value* max = has_max ? &args[has_min ? 2 : 1] : nullptr;
    MapValues(out, n, [&](double v, size_t k) {
      if (min != nullptr) v = GoMax(ScalarAt(*min, k), v);
      if (max != nullptr) v = GoMin(ScalarAt(*max, k), v);
      return v;
    });
    if (name == "clamp") {
      for (StepSeries& s : out->series) {
        for (size_t k = 0; k < n; ++k) {
          if (ScalarAt(*max, k) < ScalarAt(*min, k)) s.has[k] = 0;
        }
      }
    }
  } else if (name == "round") {
    *out = std::move(args[0]);
    const Value* to = args.size() > 1 ? &args[1] : nullptr;
    MapValues(out, n, [&](double v, size_t k) {
      const double inverse = 1.0 / (to != nullptr ? ScalarAt(*to, k) : 1.0);
      return std::floor(v * inverse + 0.5) / inverse;
    });
  } else if (name == "sort" || name == "sort_desc") {
    *out = std::move(args[0]);
    if (n == 1) {
      const bool desc = name == "sort_desc";
      std::stable_sort(out->series.begin(), out->series.end(),
                       [desc](const StepSeries& a, const StepSeries& b) {
                         const double x = a.values[0], y = b.values[0];
                         // NaN last, either way.
                         if (std::isnan(x) || std::isnan(y)) return std::isnan(y) && !std::isnan(x);
                         return desc ? x > y : x < y;
                       });
    }
    return Status::Ok();
  } else {
    return Status::InvalidArgument("function " + name + " is not supported");
  }
  if (!MergeEqualLabels(&out->series)) return Status::InvalidArgument(kSameLabels);
  return Status::Ok();
}

Status Evaluator::EvalHistogramQuantile(const Expr& e, const Steps& steps, Value* out) {
  const size_t n = steps.count();
  Value q, in;
  GPULSE_RETURN_IF_ERROR(Eval(*e.args[0], steps, &q));
  GPULSE_RETURN_IF_ERROR(Eval(*e.args[1], steps, &in));
  // Buckets grouped by their labels but le and the name.
  struct Histogram {
    std::vector<std::pair<size_t, double>> buckets;  // (series, upper bound)
  };
  std::vector<Histogram> histograms;
  std::unordered_map<std::string, size_t> index;
  out->type = ValueType::kVector;
  for (size_t s = 0; s < in.series.size(); ++s) {
    const std::string le(LabelValue(in.series[s].labels, "le"));
    char* end = nullptr;
    const double upper = std::strtod(le.c_str(), &end);
    if (le.empty() || end != le.c_str() + le.size()) continue;
    Labels labels = DropLabels(in.series[s].labels, {"le", std::string(kMetricName)});
    const auto [it, fresh] = index.emplace(LabelsKey(labels), histograms.size());
    if (fresh) {
      histograms.emplace_back();
      out->series.push_back(EmptySeries(std::move(labels), n));
    }
    histograms[it->second].buckets.emplace_back(s, upper);
  }
  std::vector<Bucket> buckets;
  for (size_t h = 0; h < histograms.size(); ++h) {
    for (size_t k = 0; k < n; ++k) {
      buckets.clear();
      for (const auto& [s, upper] : histograms[h].buckets) {
        if (in.series[s].has[k]) buckets.push_back(Bucket{upper, in.series[s].values[k]});
      }
      if (buckets.empty()) continue;
      out->series[h].has[k] = 1;
      out->series[h].values[k] = BucketQuantile(ScalarAt(q, k), &buckets);
    }
  }
  return Status::Ok();
}

Status Evaluator::EvalLabelCall(const Expr& e, const Steps& steps, Value* out) {
  GPULSE_RETURN_IF_ERROR(Eval(*e.args[0], steps, out));
  std::vector<std::string> strings;
  for (size_t a = 1; a < e.args.size(); ++a) strings.push_back(Unwrap(*e.args[a]).text);
  const std::string& dst = strings[0];
  if (e.text == "label_replace") {
    if (!IsLabelName(dst)) {
      return Status::InvalidArgument("invalid destination label name in label_replace(): " + dst);
    }
    auto re = CompileRegex("^(?:" + strings[3] + ")$");
    if (!re.ok()) {
      return Status::InvalidArgument("invalid regular expression in label_replace(): " +
                                     strings[3]);
    }
    const re2::RE2& r = **re;
    std::vector<re2::StringPiece> groups(static_cast<size_t>(r.NumberOfCapturingGroups()) + 1);
    for (StepSeries& s : out->series) {
      const std::string src(LabelValue(s.labels, strings[2]));
      if (!r.Match(src, 0, src.size(), re2::RE2::UNANCHORED, groups.data(),
                   static_cast<int>(groups.size()))) {
        continue;
      }
      SetLabel(&s.labels, dst, ExpandTemplate(strings[1], r, groups));
    }
  } else {
    if (!IsLabelName(dst)) {
      return Status::InvalidArgument("invalid destination label name in label_join(): " + dst);
    }
    for (StepSeries& s : out->series) {
      std::string joined;
      for (size_t a = 2; a < strings.size(); ++a) {
        if (a > 2) joined += strings[1];
        joined += LabelValue(s.labels, strings[a]);
      }
      SetLabel(&s.labels, dst, joined);
    }
  }
  if (!MergeEqualLabels(&out->series)) return Status::InvalidArgument(kSameLabels);
  return Status::Ok();
}

Status Evaluator::EvalAggregate(const Expr& e, const Steps& steps, Value* out) {
  Value param, in;
  const bool has_param = e.args.size() == 2;
  if (has_param) GPULSE_RETURN_IF_ERROR(Eval(*e.args[0], steps, &param));
  GPULSE_RETURN_IF_ERROR(Eval(*e.args.back(), steps, &in));
  out->type = ValueType::kVector;
  GPULSE_RETURN_IF_ERROR(Aggregate(e, has_param ? &param : nullptr, std::move(in.series),
                                   steps.count(), &out->series));
  return Charge(out->series, steps.count());
}

Status Evaluator::EvalBinary(const Expr& e, const Steps& steps, Value* out) {
  Value lhs, rhs;
  GPULSE_RETURN_IF_ERROR(Eval(*e.args[0], steps, &lhs));
  GPULSE_RETURN_IF_ERROR(Eval(*e.args[1], steps, &rhs));
  return Binary(e, std::move(lhs), std::move(rhs), steps.count(), out);
}

}  // namespace gpulse::query::promeval
