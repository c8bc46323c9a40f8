// PromQL's functions over float samples, as Prometheus 2.42 computes them:
// the range functions (a window of samples to a value: rate, deriv,
// *_over_time...), the functions of one value (abs, ln, sin...), the date
// functions, and the quantiles of histogram_quantile and quantile. Which
// labels an answer keeps is the evaluator's part (evaluator.cc).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace gpulse::query::promeval {

// A range function's input at one step: the samples of one series in
// [range_start, range_end] (ms), and the function's scalar arguments at
// that step.
struct Window {
  std::span<const int64_t> times;
  std::span<const double> values;
  int64_t range_start = 0;
  int64_t range_end = 0;
  int64_t eval_time = 0;       // the step's time (predict_linear's "now")
  double scalars[2] = {0, 0};  // quantile_over_time's q; predict_linear's t; holt_winters' sf, tf
};

// Computes *out from the window; false when the series has no value at the
// step (rate of fewer than two samples).
using RangeFunction = bool (*)(const Window& w, double* out);
// Null for a name that is no range function (absent_over_time is the
// evaluator's: it answers where series are missing).
RangeFunction FindRangeFunction(std::string_view name);

// abs, ceil, exp, ln, sqrt, the trigonometric functions...: null for others.
using MathFunction = double (*)(double);
MathFunction FindMathFunction(std::string_view name);

// day_of_month, hour, year...: a Unix time in seconds to the calendar field
// (UTC); null for others.
using DateFunction = double (*)(double seconds);
DateFunction FindDateFunction(std::string_view name);

// The q-quantile of `values` (reordered), as aggregations and
// quantile_over_time compute it: linear between the closest ranks; NaN for
// none, -Inf for q < 0, +Inf for q > 1.
double Quantile(double q, std::vector<double>* values);

// A bucket of a classic histogram: its upper bound (le) and cumulative count.
struct Bucket {
  double upper = 0;
  double count = 0;
};
// histogram_quantile over one histogram's buckets (reordered).
double BucketQuantile(double q, std::vector<Bucket>* buckets);

// Go's math.Max and math.Min: NaN wins over numbers, +Inf (Max) and -Inf
// (Min) over NaN. std::fmax and std::fmin let numbers win over NaN.
double GoMax(double a, double b);
double GoMin(double a, double b);

}  // namespace gpulse::query::promeval
