#include "query/promeval/window_fold.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "query/promeval/functions.h"

namespace gpulse::query::promeval {

namespace {

// The fold so far of a window's samples, whole buckets and single samples.
struct Acc {
  double sum = 0;
  uint64_t count = 0;
  double min = 0, max = 0;
  double last = 0;
  int64_t last_ts = INT64_MIN;

  void Sample(int64_t ts, double v) { Add(1, v, v, v, ts, v); }
  void Add(uint64_t n, double s, double lo, double hi, int64_t ts, double l) {
    if (count == 0) {
      min = lo;
      max = hi;
    } else {
      if (lo < min) min = lo;
      if (hi > max) max = hi;
    }
    sum += s;
    count += n;
    if (ts > last_ts) last_ts = ts, last = l;
  }
};

}  // namespace

std::optional<WindowFold> FoldOf(std::string_view function) {
  if (function == "sum_over_time") return WindowFold::kSum;
  if (function == "count_over_time") return WindowFold::kCount;
  if (function == "avg_over_time") return WindowFold::kAvg;
  if (function == "min_over_time") return WindowFold::kMin;
  if (function == "max_over_time") return WindowFold::kMax;
  if (function == "last_over_time") return WindowFold::kLast;
  if (function == "present_over_time") return WindowFold::kPresent;
  return std::nullopt;
}

uint32_t FoldParts(WindowFold fold) {
  uint32_t parts = storage::kRollupFirstLast | storage::kRollupSum;
  if (fold == WindowFold::kMin || fold == WindowFold::kMax) parts |= storage::kRollupMinMax;
  return parts;
}

bool FoldRows(const storage::RollupColumn& rows, size_t* from, int64_t start_ms, int64_t end_ms,
              WindowFold fold, double* out, bool* has) {
  using storage::NumberAt;
  Acc acc;
  size_t r = *from;
  while (r < rows.size() && MillisOf(rows.last.ts[r]) < start_ms) ++r;
  *from = r;
  for (; r < rows.size(); ++r) {
    const int64_t first = MillisOf(rows.first.ts[r]), last = MillisOf(rows.last.ts[r]);
    if (first > end_ms) break;
    if (!std::isfinite(rows.dsum[r])) return false;
    if (first >= start_ms && last <= end_ms) {
      const bool extremes = fold == WindowFold::kMin || fold == WindowFold::kMax;
      acc.Add(rows.count[r], rows.dsum[r], extremes ? NumberAt(rows.min, r) : 0,
              extremes ? NumberAt(rows.max, r) : 0, rows.last.ts[r], NumberAt(rows.last, r));
    } else if (first >= start_ms && first == end_ms) {
      acc.Sample(rows.first.ts[r], NumberAt(rows.first, r));  // the window ends at it
    } else if (last <= end_ms &&
               (last == start_ms || fold == WindowFold::kLast || fold == WindowFold::kPresent)) {
      // Only the last sample when the window starts at it; else the bucket's
      // last sample is in the window, which is all last and present ask.
      acc.Sample(rows.last.ts[r], NumberAt(rows.last, r));
    } else if (first >= start_ms && fold == WindowFold::kPresent) {
      acc.Sample(rows.first.ts[r], NumberAt(rows.first, r));  // a sample is in the window
    } else {
      return false;  // samples on both sides of an edge
    }
  }
  *has = acc.count > 0;
  if (!*has) return true;
  switch (fold) {
    case WindowFold::kSum:
      *out = acc.sum;
      break;
    case WindowFold::kCount:
      *out = static_cast<double>(acc.count);
      break;
    case WindowFold::kAvg:
      *out = acc.sum / static_cast<double>(acc.count);
      break;
    case WindowFold::kMin:
      *out = acc.min;
      break;
    case WindowFold::kMax:
      *out = acc.max;
      break;
    case WindowFold::kLast:
      *out = acc.last;
      break;
    case WindowFold::kPresent:
      *out = 1;
      break;
  }
  return true;
}

namespace {

// The fold of one window's values (at least one): min and max by
// Prometheus' own loop (its signed zeros and NaNs), the others by position.
// Over integers (a stored column's own values) min and max are those of the
// floats: the conversion keeps the order.
template <WindowFold F, typename T>
double FoldValues(std::span<const T> v) {
  if constexpr (F == WindowFold::kMax || F == WindowFold::kMin) {
    // Prometheus' loop takes each value while it holds a NaN, and then only
    // greater (smaller) ones: a NaN never replaces a number.
    size_t i = 0;
    T m = v[0];
    if constexpr (std::is_floating_point_v<T>) {
      while (std::isnan(m) && ++i < v.size()) m = v[i];
    }
    for (++i; i < v.size(); ++i) {
      const T x = v[i];
      m = (F == WindowFold::kMax ? x > m : x < m) ? x : m;
    }
    return static_cast<double>(m);
  } else if constexpr (F == WindowFold::kCount) {
    return static_cast<double>(v.size());
  } else if constexpr (F == WindowFold::kLast) {
    return static_cast<double>(v.back());
  } else {
    return 1;  // present
  }
}

// Milliseconds in the unit of times `per_ms` to the millisecond, held at
// the ends of int64.
int64_t Scaled(int64_t ms, int64_t per_ms) {
  int64_t out;
  if (!__builtin_mul_overflow(ms, per_ms, &out)) return out;
  return ms < 0 ? INT64_MIN : INT64_MAX;
}

// False where two samples of a window lie less than a millisecond apart
// (checked only when `per_ms` > 1: times in milliseconds are a RawSeries',
// one sample a millisecond already).
template <WindowFold F, typename T>
bool FoldEach(std::span<const int64_t> times, std::span<const T> values,
              std::span<const int64_t> ends, int64_t range, int64_t per_ms, StepSeries* out) {
  // Sums and means as functions.cc adds them (a compensated sum, a running
  // mean); the rest here, a window a few comparisons.
  RangeFunction fn = nullptr;
  if constexpr (F == WindowFold::kSum) fn = FindRangeFunction("sum_over_time");
  if constexpr (F == WindowFold::kAvg) fn = FindRangeFunction("avg_over_time");
  const size_t n = times.size();
  // Times ascend, so their difference as unsigned is exact.
  const uint64_t close = per_ms > 1 ? static_cast<uint64_t>(per_ms) : 0;
  size_t lo = 0, hi = 0;
  for (size_t k = 0; k < ends.size(); ++k) {
    const int64_t end = ends[k], start = Minus(end, range);
    // [start, end] in milliseconds: [first, last] in the times' unit.
    const int64_t first = Scaled(start, per_ms);
    // Where the millisecond after `end` is past int64's ends in the times'
    // unit, the window holds every later time, or none.
    const int64_t past = end == INT64_MAX ? INT64_MAX : Scaled(end + 1, per_ms);
    if (past == INT64_MIN) continue;
    const int64_t last = past == INT64_MAX ? INT64_MAX : past - 1;
    if (lo > 0 && times[lo - 1] >= first) lo = hi = 0;  // windows moved back (@)
    if (hi > lo && times[hi - 1] < first) lo = hi;      // windows that tile: skip the last
    while (lo < n && times[lo] < first) ++lo;
    if (hi < lo) hi = lo;
    // A window's edges are whole milliseconds, so two samples of one
    // millisecond are both in it or both out: the samples it takes are
    // checked as they are taken.
    for (; hi < n && times[hi] <= last; ++hi) {
      if (hi > lo &&
          static_cast<uint64_t>(times[hi]) - static_cast<uint64_t>(times[hi - 1]) < close) {
        return false;
      }
    }
    if (hi == lo) continue;
    double v;
    if constexpr (F == WindowFold::kSum || F == WindowFold::kAvg) {
      Window w;
      w.times = times.subspan(lo, hi - lo);
      w.values = values.subspan(lo, hi - lo);
      w.range_start = start;
      w.range_end = end;
      fn(w, &v);
    } else {
      v = FoldValues<F>(values.subspan(lo, hi - lo));
    }
    out->has[k] = 1;
    out->values[k] = v;
  }
  return true;
}

template <typename T>
bool FoldTyped(std::span<const int64_t> times, std::span<const T> values,
               std::span<const int64_t> ends, int64_t range, WindowFold fold, int64_t per_ms,
               StepSeries* out) {
  switch (fold) {
    case WindowFold::kSum:
    case WindowFold::kAvg:
      if constexpr (std::is_same_v<T, double>) {
        return fold == WindowFold::kSum
                   ? FoldEach<WindowFold::kSum>(times, values, ends, range, per_ms, out)
                   : FoldEach<WindowFold::kAvg>(times, values, ends, range, per_ms, out);
      }
      return false;  // FoldStoredSamples says: doubles only
    case WindowFold::kCount:
      return FoldEach<WindowFold::kCount>(times, values, ends, range, per_ms, out);
    case WindowFold::kMin:
      return FoldEach<WindowFold::kMin>(times, values, ends, range, per_ms, out);
    case WindowFold::kMax:
      return FoldEach<WindowFold::kMax>(times, values, ends, range, per_ms, out);
    case WindowFold::kLast:
      return FoldEach<WindowFold::kLast>(times, values, ends, range, per_ms, out);
    case WindowFold::kPresent:
      return FoldEach<WindowFold::kPresent>(times, values, ends, range, per_ms, out);
  }
  return false;
}

}  // namespace

void FoldSamples(std::span<const int64_t> times, std::span<const double> values,
                 std::span<const int64_t> ends, int64_t range, WindowFold fold, StepSeries* out) {
  FoldTyped(times, values, ends, range, fold, 1, out);
}

template <typename T>
bool FoldStoredSamples(std::span<const int64_t> times_ns, std::span<const T> values,
                       std::span<const int64_t> ends, int64_t range, WindowFold fold,
                       StepSeries* out) {
  return FoldTyped(times_ns, values, ends, range, fold, kNanosPerMilli, out);
}

template bool FoldStoredSamples(std::span<const int64_t>, std::span<const double>,
                                std::span<const int64_t>, int64_t, WindowFold, StepSeries*);
template bool FoldStoredSamples(std::span<const int64_t>, std::span<const int64_t>,
                                std::span<const int64_t>, int64_t, WindowFold, StepSeries*);
template bool FoldStoredSamples(std::span<const int64_t>, std::span<const uint64_t>,
                                std::span<const int64_t>, int64_t, WindowFold, StepSeries*);
template bool FoldStoredSamples(std::span<const int64_t>, std::span<const uint8_t>,
                                std::span<const int64_t>, int64_t, WindowFold, StepSeries*);

}  // namespace gpulse::query::promeval
