#include "query/promeval/functions.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

namespace gpulse::query::promeval {

namespace {

// Neumaier's compensated sum, as Prometheus' kahanSumInc.
struct KahanSum {
  double sum = 0;
  double c = 0;
  void Add(double inc) {
    const double t = sum + inc;
    c += std::fabs(sum) >= std::fabs(inc) ? (sum - t) + inc : (inc - t) + sum;
    sum = t;
  }
  double Value() const { return std::isinf(sum) ? sum : sum + c; }
};

double Seconds(int64_t ms) { return static_cast<double>(ms) / 1000; }

// rate, increase and delta: the change over the window, extrapolated to its
// edges when the samples come close to them.
bool ExtrapolatedRate(const Window& w, bool counter, bool per_second, double* out) {
  const size_t n = w.values.size();
  if (n < 2) return false;
  double result = w.values[n - 1] - w.values[0];
  if (counter) {
    double last = 0;
    for (double v : w.values) {
      if (v < last) result += last;
      last = v;
    }
  }
  double to_start = Seconds(w.times[0] - w.range_start);
  const double to_end = Seconds(w.range_end - w.times[n - 1]);
  const double sampled = Seconds(w.times[n - 1] - w.times[0]);
  const double average = sampled / static_cast<double>(n - 1);
  if (counter && result > 0 && w.values[0] >= 0) {
    // A counter starts at zero: extrapolate no further back than that.
    to_start = std::min(to_start, sampled * (w.values[0] / result));
  }
  const double threshold = average * 1.1;
  double interval = sampled;
  interval += to_start < threshold ? to_start : average / 2;
  interval += to_end < threshold ? to_end : average / 2;
  double factor = interval / sampled;
  if (per_second) factor /= Seconds(w.range_end - w.range_start);
  *out = result * factor;
  return true;
}

bool Rate(const Window& w, double* out) { return ExtrapolatedRate(w, true, true, out); }
bool Increase(const Window& w, double* out) { return ExtrapolatedRate(w, true, false, out); }
bool Delta(const Window& w, double* out) { return ExtrapolatedRate(w, false, false, out); }

// irate and idelta: the last two samples.
bool InstantChange(const Window& w, bool per_second, double* out) {
  const size_t n = w.values.size();
  if (n < 2) return false;
  const double last = w.values[n - 1], previous = w.values[n - 2];
  double result = per_second && last < previous ? last : last - previous;
  const int64_t interval = w.times[n - 1] - w.times[n - 2];
  if (interval == 0) return false;
  if (per_second) result /= Seconds(interval);
  *out = result;
  return true;
}

bool Irate(const Window& w, double* out) { return InstantChange(w, true, out); }
bool Idelta(const Window& w, double* out) { return InstantChange(w, false, out); }

// Least squares over (time - intercept_time in seconds, value).
void LinearRegression(const Window& w, int64_t intercept_time, double* slope, double* intercept) {
  KahanSum x, y, xy, x2;
  bool constant = true;
  const double first = w.values[0];
  const double n = static_cast<double>(w.values.size());
  for (size_t i = 0; i < w.values.size(); ++i) {
    if (w.values[i] != first) constant = false;
    const double t = Seconds(w.times[i] - intercept_time);
    x.Add(t);
    y.Add(w.values[i]);
    xy.Add(t * w.values[i]);
    x2.Add(t * t);
  }
  if (constant) {
    *slope = std::isinf(first) ? NAN : 0;
    *intercept = std::isinf(first) ? NAN : first;
    return;
  }
  const double sx = x.Value(), sy = y.Value();
  const double cov = xy.Value() - sx * sy / n;
  const double var = x2.Value() - sx * sx / n;
  *slope = cov / var;
  *intercept = sy / n - *slope * sx / n;
}

bool Deriv(const Window& w, double* out) {
  if (w.values.size() < 2) return false;
  double intercept;
  LinearRegression(w, w.times[0], out, &intercept);
  return true;
}

bool PredictLinear(const Window& w, double* out) {
  if (w.values.size() < 2) return false;
  double slope, intercept;
  LinearRegression(w, w.eval_time, &slope, &intercept);
  *out = slope * w.scalars[0] + intercept;
  return true;
}

bool HoltWinters(const Window& w, double* out) {
  const size_t n = w.values.size();
  if (n < 2) return false;
  const double sf = w.scalars[0], tf = w.scalars[1];
  double s0 = 0, s1 = w.values[0], b = w.values[1] - w.values[0];
  for (size_t i = 1; i < n; ++i) {
    if (i > 1) b = tf * (s1 - s0) + (1 - tf) * b;
    const double next = sf * w.values[i] + (1 - sf) * (s1 + b);
    s0 = s1;
    s1 = next;
  }
  *out = s1;
  return true;
}

bool Changes(const Window& w, double* out) {
  double changes = 0;
  for (size_t i = 1; i < w.values.size(); ++i) {
    const double a = w.values[i - 1], b = w.values[i];
    if (a != b && !(std::isnan(a) && std::isnan(b))) ++changes;
  }
  *out = changes;
  return true;
}

bool Resets(const Window& w, double* out) {
  double resets = 0;
  for (size_t i = 1; i < w.values.size(); ++i) {
    if (w.values[i] < w.values[i - 1]) ++resets;
  }
  *out = resets;
  return true;
}

bool AvgOverTime(const Window& w, double* out) {
  // Prometheus' running mean, operation for operation: a plain sum over the
  // count rounds differently, and ceil(avg_over_time(x)) == x would tell.
  KahanSum mean;
  double count = 0;
  for (double v : w.values) {
    ++count;
    if (std::isinf(mean.sum)) {
      // An infinite mean stays as it is, but for the opposite infinity or NaN.
      if (std::isinf(v) && (mean.sum > 0) == (v > 0)) continue;
      if (!std::isinf(v) && !std::isnan(v)) continue;
    }
    mean.Add(v / count - mean.sum / count);
  }
  *out = mean.Value();
  return true;
}

bool SumOverTime(const Window& w, double* out) {
  KahanSum sum;
  for (double v : w.values) sum.Add(v);
  *out = sum.Value();
  return true;
}

bool CountOverTime(const Window& w, double* out) {
  *out = static_cast<double>(w.values.size());
  return true;
}

bool MinOverTime(const Window& w, double* out) {
  double m = w.values[0];
  for (double v : w.values) {
    if (v < m || std::isnan(m)) m = v;
  }
  *out = m;
  return true;
}

bool MaxOverTime(const Window& w, double* out) {
  double m = w.values[0];
  for (double v : w.values) {
    if (v > m || std::isnan(m)) m = v;
  }
  *out = m;
  return true;
}

bool LastOverTime(const Window& w, double* out) {
  *out = w.values.back();
  return true;
}

bool PresentOverTime(const Window& w, double* out) {
  (void)w;
  *out = 1;
  return true;
}

bool QuantileOverTime(const Window& w, double* out) {
  std::vector<double> values(w.values.begin(), w.values.end());
  *out = Quantile(w.scalars[0], &values);
  return true;
}

// Welford's running variance with compensated sums, as Prometheus'.
double Variance(const Window& w) {
  double count = 0;
  KahanSum mean, aux;
  for (double v : w.values) {
    ++count;
    const double delta = v - (mean.sum + mean.c);
    mean.Add(delta / count);
    aux.Add(delta * (v - (mean.sum + mean.c)));
  }
  return (aux.sum + aux.c) / count;
}

bool StdvarOverTime(const Window& w, double* out) {
  *out = Variance(w);
  return true;
}

bool StddevOverTime(const Window& w, double* out) {
  *out = std::sqrt(Variance(w));
  return true;
}

template <typename F>
const F* FindIn(const std::map<std::string_view, F>& table, std::string_view name) {
  const auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

double Sgn(double v) { return v > 0 ? 1 : v < 0 ? -1 : v; }
double Deg(double v) { return v * 180 / M_PI; }
double Rad(double v) { return v * M_PI / 180; }

using std::chrono::days;
using std::chrono::sys_days;
using std::chrono::year_month_day;

// The UTC calendar day and seconds into it of a Unix time in seconds.
struct Civil {
  year_month_day ymd;
  int64_t second_of_day;
};
Civil CivilOf(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds);
  int64_t day = s / 86400, second = s % 86400;
  if (second < 0) second += 86400, --day;
  return Civil{year_month_day(sys_days(days(day))), second};
}

double DayOfMonth(double s) { return static_cast<unsigned>(CivilOf(s).ymd.day()); }
double DayOfWeek(double s) { return std::chrono::weekday(sys_days(CivilOf(s).ymd)).c_encoding(); }
double DayOfYear(double s) {
  const year_month_day ymd = CivilOf(s).ymd;
  const sys_days first = sys_days(ymd.year() / std::chrono::January / 1);
  return static_cast<double>((sys_days(ymd) - first).count() + 1);
}
double DaysInMonth(double s) {
  const year_month_day ymd = CivilOf(s).ymd;
  return static_cast<unsigned>(
      std::chrono::year_month_day_last(ymd.year(), std::chrono::month_day_last(ymd.month())).day());
}
double Hour(double s) { return static_cast<double>(CivilOf(s).second_of_day / 3600); }
double Minute(double s) { return static_cast<double>(CivilOf(s).second_of_day % 3600 / 60); }
double Month(double s) { return static_cast<unsigned>(CivilOf(s).ymd.month()); }
double Year(double s) { return static_cast<int>(CivilOf(s).ymd.year()); }

}  // namespace

RangeFunction FindRangeFunction(std::string_view name) {
  static const std::map<std::string_view, RangeFunction> table = {
      {"avg_over_time", AvgOverTime},
      {"changes", Changes},
      {"count_over_time", CountOverTime},
      {"delta", Delta},
      {"deriv", Deriv},
      {"holt_winters", HoltWinters},
      {"idelta", Idelta},
      {"increase", Increase},
      {"irate", Irate},
      {"last_over_time", LastOverTime},
      {"max_over_time", MaxOverTime},
      {"min_over_time", MinOverTime},
      {"predict_linear", PredictLinear},
      {"present_over_time", PresentOverTime},
      {"quantile_over_time", QuantileOverTime},
      {"rate", Rate},
      {"resets", Resets},
      {"stddev_over_time", StddevOverTime},
      {"stdvar_over_time", StdvarOverTime},
      {"sum_over_time", SumOverTime},
  };
  const RangeFunction* f = FindIn(table, name);
  return f == nullptr ? nullptr : *f;
}

MathFunction FindMathFunction(std::string_view name) {
  static const std::map<std::string_view, MathFunction> table = {
      {"abs", [](double v) { return std::fabs(v); }},
      {"acos", [](double v) { return std::acos(v); }},
      {"acosh", [](double v) { return std::acosh(v); }},
      {"asin", [](double v) { return std::asin(v); }},
      {"asinh", [](double v) { return std::asinh(v); }},
      {"atan", [](double v) { return std::atan(v); }},
      {"atanh", [](double v) { return std::atanh(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"cosh", [](double v) { return std::cosh(v); }},
      {"deg", Deg},
      {"exp", [](double v) { return std::exp(v); }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ln", [](double v) { return std::log(v); }},
      {"log10", [](double v) { return std::log10(v); }},
      {"log2", [](double v) { return std::log2(v); }},
      {"rad", Rad},
      {"sgn", Sgn},
      {"sin", [](double v) { return std::sin(v); }},
      {"sinh", [](double v) { return std::sinh(v); }},
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"tan", [](double v) { return std::tan(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
  };
  const MathFunction* f = FindIn(table, name);
  return f == nullptr ? nullptr : *f;
}

DateFunction FindDateFunction(std::string_view name) {
  static const std::map<std::string_view, DateFunction> table = {
      {"day_of_month", DayOfMonth},
      {"day_of_week", DayOfWeek},
      {"day_of_year", DayOfYear},
      {"days_in_month", DaysInMonth},
      {"hour", Hour},
      {"minute", Minute},
      {"month", Month},
      {"year", Year},
  };
  const DateFunction* f = FindIn(table, name);
  return f == nullptr ? nullptr : *f;
}

double Quantile(double q, std::vector<double>* values) {
  if (values->empty() || std::isnan(q)) return NAN;
  if (q < 0) return -INFINITY;
  if (q > 1) return INFINITY;
  // NaN first, as Prometheus sorts them.
  std::sort(values->begin(), values->end(), [](double a, double b) {
    if (std::isnan(a)) return !std::isnan(b);
    return a < b;
  });
  const double n = static_cast<double>(values->size());
  const double rank = q * (n - 1);
  const size_t lower = static_cast<size_t>(std::max(0.0, std::floor(rank)));
  const size_t upper = std::min(values->size() - 1, lower + 1);
  const double weight = rank - std::floor(rank);
  return (*values)[lower] * (1 - weight) + (*values)[upper] * weight;
}

double BucketQuantile(double q, std::vector<Bucket>* buckets) {
  if (std::isnan(q)) return NAN;
  if (q < 0) return -INFINITY;
  if (q > 1) return INFINITY;
  if (buckets->empty()) return NAN;
  std::sort(buckets->begin(), buckets->end(),
            [](const Bucket& a, const Bucket& b) { return a.upper < b.upper; });
  if (!std::isinf(buckets->back().upper) || buckets->back().upper < 0) return NAN;
  // Buckets of one bound summed; counts made monotonic.
  std::vector<Bucket> b;
  for (const Bucket& x : *buckets) {
    if (!b.empty() && b.back().upper == x.upper) {
      b.back().count += x.count;
    } else {
      b.push_back(x);
    }
  }
  double max = -INFINITY;
  for (Bucket& x : b) {
    if (x.count > max) {
      max = x.count;
    } else if (x.count < max) {
      x.count = max;
    }
  }
  if (b.size() < 2) return NAN;
  const double observations = b.back().count;
  if (observations == 0) return NAN;
  double rank = q * observations;
  size_t i = 0;
  while (i < b.size() - 1 && !(b[i].count >= rank)) ++i;
  if (i == b.size() - 1) return b[b.size() - 2].upper;
  if (i == 0 && b[0].upper <= 0) return b[0].upper;
  double start = 0, count = b[i].count;
  if (i > 0) {
    start = b[i - 1].upper;
    count -= b[i - 1].count;
    rank -= b[i - 1].count;
  }
  return start + (b[i].upper - start) * (rank / count);
}

double GoMax(double a, double b) {
  if (std::isinf(a) && a > 0) return a;
  if (std::isinf(b) && b > 0) return b;
  if (std::isnan(a) || std::isnan(b)) return NAN;
  return a > b ? a : b;
}

double GoMin(double a, double b) {
  if (std::isinf(a) && a < 0) return a;
  if (std::isinf(b) && b < 0) return b;
  if (std::isnan(a) || std::isnan(b)) return NAN;
  return a < b ? a : b;
}

}  // namespace gpulse::query::promeval
