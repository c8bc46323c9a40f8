#include "query/exec/cells.h"
#include "query/runtime/result.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace gpulse::query {

namespace {

using Cell = Cells::Cell;
using Num = Cells::Num;

template <typename T>
T& As(Num& n) {
  if constexpr (std::is_same_v<T, double>) {
    return n.d;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return n.i;
  } else {
    return n.u;
  }
}
template <typename T>
T As(const Num& n) {
  return As<T>(const_cast<Num&>(n));
}

// Integer sums wrap like the integers they add, as AggState's do.
template <typename T>
T Add(T a, T b) {
  if constexpr (std::is_same_v<T, double>) {
    return a + b;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
}

// AggState's TakeMinMax, one side at a time: a smaller (larger) value, or
// an equal one at an earlier time, replaces the kept one.
template <typename T>
void TakeMin(Cell& c, T x, int64_t t) {
  T& m = As<T>(c.a);
  if (x < m || (x == m && t < c.ta)) {
    m = x;
    c.ta = t;
  }
}
template <typename T>
void TakeMax(Cell& c, T x, int64_t t) {
  T& m = As<T>(c.b);
  if (x > m || (x == m && t < c.tb)) {
    m = x;
    c.tb = t;
  }
}

// Where a run's times and values come from: a Column's vectors (plain
// pointers), or a PackedRun's steady times and narrow offsets.
struct SteadyTimes {
  uint64_t first, step;
  int64_t operator[](size_t i) const { return static_cast<int64_t>(first + i * step); }
};
template <typename T, typename U>
struct Offsets {
  using Offset_t = U;
  const uint8_t* p;
  uint64_t base;
  size_t size;  // offsets readable at p
  U Offset(size_t i) const {
    U x;
    std::memcpy(&x, p + sizeof(U) * i, sizeof(U));
    return x;
  }
  T operator[](size_t i) const { return static_cast<T>(base + Offset(i)); }
};

// 16 bytes of offsets as lanes (GCC's vector extension: SSE2 on x86-64,
// NEON on ARM, plain loops elsewhere).
template <typename U>
using Lanes [[gnu::vector_size(16)]] = U;

template <typename V>
[[gnu::always_inline]] inline V MaxLanes(V a, V b) {
  return a > b ? a : b;
}

// The largest (kLargest) or smallest of offsets [i, j), i < j, 16 bytes at
// a time: a bucket of 15 one-byte offsets (minute points, 15-minute
// buckets) is one load, a mask and four steps across the lanes, where a
// loop took three instructions a point. The smallest is the complement of
// the largest complement, so one reduction serves both: lanes past j are
// 0, and the steps across lanes shift zeros in. A last piece that 16 bytes
// from it would read past the run folds point by point.
template <bool kLargest, typename T, typename U>
[[gnu::always_inline]] inline U ExtremeOffset(const Offsets<T, U>& v, size_t i, size_t j) {
  constexpr size_t kLanes = 16 / sizeof(U);
  using V = Lanes<U>;
  using W = Lanes<uint64_t>;
  const V flip = V{} + (kLargest ? U{0} : std::numeric_limits<U>::max());
  V acc{};
  size_t m = i;
  for (; m + kLanes <= j; m += kLanes) {
    V x;
    std::memcpy(&x, v.p + sizeof(U) * m, sizeof x);
    acc = MaxLanes(acc, x ^ flip);
  }
  if (m < j && m + kLanes <= v.size) {
    V x;
    std::memcpy(&x, v.p + sizeof(U) * m, sizeof x);
    V lane{};
    for (size_t l = 0; l < kLanes; ++l) lane[l] = static_cast<U>(l);
    x = lane < V{} + static_cast<U>(j - m) ? x ^ flip : V{};
    acc = MaxLanes(acc, x);
    m = j;
  }
  // Across lanes: the two halves, then shifts within the low half.
  const W w = reinterpret_cast<W>(acc);
  acc = MaxLanes(acc, reinterpret_cast<V>(__builtin_shufflevector(w, w, 1, 0)));
  for (int bits = 32; bits >= static_cast<int>(8 * sizeof(U)); bits /= 2) {
    acc = MaxLanes(acc, reinterpret_cast<V>(reinterpret_cast<W>(acc) >> bits));
  }
  U r = static_cast<U>(acc[0] ^ flip[0]);
  for (; m < j; ++m) {
    const U o = v.Offset(m);
    r = kLargest ? (o > r ? o : r) : (o < r ? o : r);
  }
  return r;
}

template <typename V>
constexpr bool kIsOffsets = false;
template <typename T, typename U>
constexpr bool kIsOffsets<Offsets<T, U>> = true;

// The first of points [begin, end) at or after x.
inline size_t FirstAtOrAfter(const int64_t* t, size_t begin, size_t end, int64_t x) {
  return static_cast<size_t>(std::lower_bound(t + begin, t + end, x) - t);
}
inline size_t FirstAtOrAfter(const SteadyTimes& t, size_t begin, size_t end, int64_t x) {
  storage::PackedRun run;
  run.first = t.first;
  run.step = t.step;
  run.size = end;
  return std::max(begin, run.IndexOf(x));
}

// Whether runs of up to n points of the offsets sum exactly in a double,
// point by point: every partial sum is an integer below 2^53, so adding the
// points as doubles one by one gives the integer sum itself. (The bound is
// 2^52, out of reach of this test's own rounding.)
template <typename T, typename U>
bool SumsExactly(const Offsets<T, U>& v, size_t n) {
  constexpr double kExact = 4503599627370496.0;  // 2^52
  const double top = static_cast<double>(std::numeric_limits<U>::max());
  const double base = std::is_signed_v<T> ? static_cast<double>(static_cast<int64_t>(v.base))
                                          : static_cast<double>(v.base);
  return (std::fabs(base) + top) * static_cast<double>(n) < kExact;
}

// Folds the run v[i..j) (times t, one bucket) into c, as AggState::AddRange.
// `timed`: keep the selected point's time (min/max/spread); when it is not
// asked for, integer extremes fold in a plain loop (the value is the same;
// only which of equal values was kept differs, and for integers that is
// not visible). Packed offsets fold as narrow integers where the answer
// is the same: extremes by the smallest and largest offset, sums as
// integers when a double sums them exactly.
// Inlined: runs are short (5 to 15 points at minute grain), the call cost
// as much as the fold.
template <typename T, AggKind K, typename Times, typename Values>
[[gnu::always_inline]] inline void FoldRun(Cell& c, const Times& t, const Values& v, size_t i,
                                           size_t j, bool timed, bool exact_sums = false) {
  if constexpr (K == AggKind::kSum || K == AggKind::kMean) {
    if constexpr (kIsOffsets<Values>) {
      if (exact_sums) {
        uint64_t offsets = 0;
        for (size_t k = i; k < j; ++k) offsets += v.Offset(k);
        const auto sum = static_cast<T>(v.base * (j - i) + offsets);  // wraps as the adds would
        As<T>(c.sum) = Add<T>(As<T>(c.sum), sum);
        c.dsum += static_cast<double>(sum);
        c.n += j - i;
        return;
      }
    }
    T acc = 0;
    double dsum = 0;
    for (size_t k = i; k < j; ++k) {
      acc = Add<T>(acc, v[k]);
      dsum += static_cast<double>(v[k]);
    }
    As<T>(c.sum) = Add<T>(As<T>(c.sum), acc);
    c.dsum += dsum;
  } else if constexpr (K == AggKind::kMin || K == AggKind::kMax || K == AggKind::kSpread) {
    size_t k = i;
    if (c.n == 0) {
      As<T>(c.a) = As<T>(c.b) = v[k];
      c.ta = c.tb = t[k];
      ++k;
    }
    if constexpr (std::is_integral_v<T>) {
      if (!timed) {
        T lo = As<T>(c.a), hi = As<T>(c.b);
        if constexpr (kIsOffsets<Values>) {
          // Offsets order as their values do (every value is base or more).
          if (k < j) {
            using U = typename Values::Offset_t;
            const U olo = K == AggKind::kMax ? U{0} : ExtremeOffset<false>(v, k, j);
            const U ohi = K == AggKind::kMin ? U{0} : ExtremeOffset<true>(v, k, j);
            const T vlo = static_cast<T>(v.base + olo), vhi = static_cast<T>(v.base + ohi);
            if constexpr (K != AggKind::kMax) lo = vlo < lo ? vlo : lo;
            if constexpr (K != AggKind::kMin) hi = vhi > hi ? vhi : hi;
            k = j;
          }
        } else {
          for (; k < j; ++k) {
            if constexpr (K != AggKind::kMax) lo = v[k] < lo ? v[k] : lo;
            if constexpr (K != AggKind::kMin) hi = v[k] > hi ? v[k] : hi;
          }
        }
        As<T>(c.a) = lo;
        As<T>(c.b) = hi;
      }
    }
    for (; k < j; ++k) {
      if constexpr (K != AggKind::kMax) TakeMin<T>(c, v[k], t[k]);
      if constexpr (K != AggKind::kMin) TakeMax<T>(c, v[k], t[k]);
    }
  } else if constexpr (K == AggKind::kFirst) {
    if (c.n == 0 || t[i] < c.ta) {
      As<T>(c.a) = v[i];
      c.ta = t[i];
    }
  } else if constexpr (K == AggKind::kLast) {
    if (c.n == 0 || t[j - 1] > c.tb) {
      As<T>(c.b) = v[j - 1];
      c.tb = t[j - 1];
    }
  }
  c.n += j - i;
}

// Splits [begin, end) into runs per bucket and folds each. Samples at a
// steady interval make runs of one length, so a run's end is first guessed
// from the last run's length and checked (two comparisons), and the next
// run's bucket is the next one unless the data skips buckets: no division
// and no scan per point in the common case.
template <typename T, AggKind K, typename Times, typename Values>
void FoldBuckets(Cell* cells, size_t nslots, const BucketGrid& grid, const Times& t,
                 const Values& v, size_t begin, size_t end, bool timed) {
  size_t i = FirstAtOrAfter(t, begin, end, grid.first);
  if (i >= end) return;
  bool exact = false;
  if constexpr (kIsOffsets<Values>) exact = SumsExactly(v, end - i);
  if (grid.count == 1) {
    // One bucket (or no GROUP BY time): the read range bounds the points.
    FoldRun<T, K>(cells[0], t, v, i, end, timed, exact);
    return;
  }
  if constexpr (std::is_same_v<Times, SteadyTimes>) {
    if (t.step > 0 && static_cast<uint64_t>(grid.width) % t.step == 0) {
      // Points at a steady step that divides the bucket width: after the
      // first bucket, every bucket holds width / step points.
      const size_t per = static_cast<size_t>(static_cast<uint64_t>(grid.width) / t.step);
      uint64_t idx = (static_cast<uint64_t>(t[i]) - static_cast<uint64_t>(grid.first)) /
                     static_cast<uint64_t>(grid.width);
      const int64_t next = grid.first + static_cast<int64_t>(idx + 1) * grid.width;
      size_t j = FirstAtOrAfter(t, i, end, next);
      for (; idx < grid.count; ++idx) {
        FoldRun<T, K>(cells[idx * nslots], t, v, i, j, timed, exact);
        if (j == end) return;
        i = j;
        j = std::min(end, i + per);
      }
      return;
    }
  }
  // Unsigned: t - first may exceed INT64_MAX.
  auto bucket_of = [&](int64_t ts) {
    return (static_cast<uint64_t>(ts) - static_cast<uint64_t>(grid.first)) /
           static_cast<uint64_t>(grid.width);
  };
  uint64_t idx = bucket_of(t[i]);
  size_t run = 1;
  while (idx < grid.count) {
    const int64_t next = grid.first + static_cast<int64_t>(idx + 1) * grid.width;
    size_t j = i + run;
    if (j > end || t[j - 1] >= next || (j < end && t[j] < next)) {
      j = i + 1;
      while (j < end && t[j] < next) ++j;
    }
    FoldRun<T, K>(cells[idx * nslots], t, v, i, j, timed, exact);
    if (j == end) return;
    run = j - i;
    i = j;
    // The next bucket, unless the data skips some (then one division).
    const uint64_t past = static_cast<uint64_t>(t[i]) - static_cast<uint64_t>(next);
    idx = idx + 1 < grid.count && past < static_cast<uint64_t>(grid.width) ? idx + 1
                                                                           : bucket_of(t[i]);
  }
}

// The parts of tier rows a fold reads, as plain pointers: the compiler
// cannot tell that stores to a cell leave the rows' vectors alone, and
// would reload each vector's data on every row.
template <typename T>
struct RollupRows {
  explicit RollupRows(const storage::RollupColumn& rows)
      : count(rows.count.data()),
        sum(storage::NumericValues<T>(rows.sum).data()),
        dsum(rows.dsum.data()),
        min(storage::NumericValues<T>(rows.min).data()),
        max(storage::NumericValues<T>(rows.max).data()),
        first(storage::NumericValues<T>(rows.first).data()),
        last(storage::NumericValues<T>(rows.last).data()),
        min_ts(rows.min.ts.data()),
        max_ts(rows.max.ts.data()),
        first_ts(rows.first.ts.data()),
        last_ts(rows.last.ts.data()) {}
  const uint64_t* count;
  const T* sum;
  const double* dsum;
  const T *min, *max, *first, *last;
  const int64_t *min_ts, *max_ts, *first_ts, *last_ts;
};

// Folds tier row r into c, as NumericState::AddRollups does (the same float
// sums in the same order).
template <typename T, AggKind K>
inline void FoldRollupRow(Cell& c, const RollupRows<T>& rows, size_t r) {
  if constexpr (K == AggKind::kSum) {
    As<T>(c.sum) = Add<T>(As<T>(c.sum), rows.sum[r]);
    c.dsum += rows.dsum[r];
  } else if constexpr (K == AggKind::kMean) {
    c.dsum += rows.dsum[r];  // a mean is dsum / n: the typed sum is not read
  } else if constexpr (K == AggKind::kMin || K == AggKind::kMax || K == AggKind::kSpread) {
    if (c.n == 0) {
      As<T>(c.a) = rows.min[r];
      c.ta = rows.min_ts[r];
      As<T>(c.b) = rows.max[r];
      c.tb = rows.max_ts[r];
    } else {
      TakeMin<T>(c, rows.min[r], rows.min_ts[r]);
      TakeMax<T>(c, rows.max[r], rows.max_ts[r]);
    }
  } else if constexpr (K == AggKind::kFirst) {
    if (c.n == 0 || rows.first_ts[r] < c.ta) {
      As<T>(c.a) = rows.first[r];
      c.ta = rows.first_ts[r];
    }
  } else if constexpr (K == AggKind::kLast) {
    if (c.n == 0 || rows.last_ts[r] > c.tb) {
      As<T>(c.b) = rows.last[r];
      c.tb = rows.last_ts[r];
    }
  }
  c.n += rows.count[r];
}

// Folds tier rows [begin, end) into their grid buckets' cells.
template <typename T, AggKind K>
void FoldRollupBuckets(Cell* cells, size_t nslots, const BucketGrid& grid,
                       const storage::RollupColumn& rows, size_t begin, size_t end,
                       int64_t row_width) {
  const int64_t* b = rows.bucket.data();
  size_t r = b[begin] >= grid.first
                 ? begin
                 : static_cast<size_t>(std::lower_bound(b + begin, b + end, grid.first) - b);
  if (r == end) return;
  const RollupRows<T> parts(rows);
  if (grid.count == 1) {
    // One bucket (or no GROUP BY time): the read range bounds the rows.
    for (; r < end; ++r) FoldRollupRow<T, K>(cells[0], parts, r);
    return;
  }
  const auto first = static_cast<uint64_t>(grid.first);
  const auto width = static_cast<uint64_t>(grid.width);
  if (row_width == grid.width && (static_cast<uint64_t>(b[r]) - first) % width == 0) {
    // Rows of the grid's own buckets, ascending, each a bucket of its own:
    // when the first and last are as far apart as their count says, they
    // are every bucket between, and row r + j folds into cell idx + j (the
    // common dashboard case: a fleet's mean per hour from the 1h tier).
    const uint64_t idx = (static_cast<uint64_t>(b[r]) - first) / width;
    const size_t m = end - r;
    const uint64_t apart = static_cast<uint64_t>(b[end - 1]) - static_cast<uint64_t>(b[r]);
    if (apart / width == m - 1 && idx < grid.count && m <= grid.count - idx) {
      Cell* c = cells + idx * nslots;
      for (size_t j = 0; j < m; ++j, c += nslots) FoldRollupRow<T, K>(*c, parts, r + j);
      return;
    }
  }
  // Rows come in bucket order, mostly one a bucket and the next in the
  // next bucket: a division only where rows skip a bucket.
  uint64_t idx = (static_cast<uint64_t>(b[r]) - first) / width;
  uint64_t next = first + (idx + 1) * width;  // where bucket idx ends
  for (; r < end; ++r) {
    const auto t = static_cast<uint64_t>(b[r]);
    if (t - first >= next - first) {  // at or past `next`
      idx = t - next < width ? idx + 1 : (t - first) / width;
      next = first + (idx + 1) * width;
    }
    if (idx >= grid.count) return;
    FoldRollupRow<T, K>(cells[idx * nslots], parts, r);
  }
}

// Calls fn(std::integral_constant<AggKind, kind>) for a cell aggregate's
// kind, so that each kind's fold is its own specialised loop.
template <typename Fn>
void WithKind(AggKind kind, Fn&& fn) {
  switch (kind) {
    case AggKind::kCount:
      return fn(std::integral_constant<AggKind, AggKind::kCount>{});
    case AggKind::kSum:
      return fn(std::integral_constant<AggKind, AggKind::kSum>{});
    case AggKind::kMean:
      return fn(std::integral_constant<AggKind, AggKind::kMean>{});
    case AggKind::kMin:
      return fn(std::integral_constant<AggKind, AggKind::kMin>{});
    case AggKind::kMax:
      return fn(std::integral_constant<AggKind, AggKind::kMax>{});
    case AggKind::kSpread:
      return fn(std::integral_constant<AggKind, AggKind::kSpread>{});
    case AggKind::kFirst:
      return fn(std::integral_constant<AggKind, AggKind::kFirst>{});
    case AggKind::kLast:
      return fn(std::integral_constant<AggKind, AggKind::kLast>{});
    default:
      return;
  }
}

template <typename T>
void FoldRollupsTyped(AggKind kind, Cell* cells, size_t nslots, const BucketGrid& grid,
                      const storage::RollupColumn& rows, size_t begin, size_t end,
                      int64_t row_width) {
  WithKind(kind, [&](auto k) {
    FoldRollupBuckets<T, decltype(k)::value>(cells, nslots, grid, rows, begin, end, row_width);
  });
}

template <typename T>
void FoldTyped(AggKind kind, bool timed, Cell* cells, size_t nslots, const BucketGrid& grid,
               const Column& col, size_t begin, size_t end) {
  const int64_t* t = col.ts.data();
  const T* v = storage::NumericValues<T>(col).data();
  WithKind(kind, [&](auto k) {
    FoldBuckets<T, decltype(k)::value>(cells, nslots, grid, t, v, begin, end, timed);
  });
}

template <typename T, typename U>
void FoldPackedTyped(AggKind kind, bool timed, Cell* cells, size_t nslots, const BucketGrid& grid,
                     const storage::PackedRun& run, size_t begin, size_t end) {
  const SteadyTimes t{run.first, run.step};
  const Offsets<T, U> v{run.offsets, run.base, run.size};
  WithKind(kind, [&](auto k) {
    FoldBuckets<T, decltype(k)::value>(cells, nslots, grid, t, v, begin, end, timed);
  });
}

template <typename T>
void FoldPackedWidth(AggKind kind, bool timed, Cell* cells, size_t nslots, const BucketGrid& grid,
                     const storage::PackedRun& run, size_t begin, size_t end) {
  switch (run.width) {
    case 1:
      return FoldPackedTyped<T, uint8_t>(kind, timed, cells, nslots, grid, run, begin, end);
    case 2:
      return FoldPackedTyped<T, uint16_t>(kind, timed, cells, nslots, grid, run, begin, end);
    default:
      return FoldPackedTyped<T, uint32_t>(kind, timed, cells, nslots, grid, run, begin, end);
  }
}

// Folds o into c (same aggregate), as AggState::Merge.
template <typename T>
void MergeCell(AggKind kind, Cell& c, const Cell& o) {
  if (o.n == 0) return;
  if (c.n == 0) {
    c = o;
    return;
  }
  switch (kind) {
    case AggKind::kSum:
    case AggKind::kMean:
      As<T>(c.sum) = Add<T>(As<T>(c.sum), As<T>(o.sum));
      c.dsum += o.dsum;
      break;
    case AggKind::kMin:
      TakeMin<T>(c, As<T>(o.a), o.ta);
      break;
    case AggKind::kMax:
      TakeMax<T>(c, As<T>(o.b), o.tb);
      break;
    case AggKind::kSpread:
      TakeMin<T>(c, As<T>(o.a), o.ta);
      TakeMax<T>(c, As<T>(o.b), o.tb);
      break;
    case AggKind::kFirst:
      if (o.ta < c.ta) {
        c.a = o.a;
        c.ta = o.ta;
      }
      break;
    case AggKind::kLast:
      if (o.tb > c.tb) {
        c.b = o.b;
        c.tb = o.tb;
      }
      break;
    default:
      break;
  }
  c.n += o.n;
}

template <typename T>
QueryValue ResultOf(AggKind kind, const Cell& c, int64_t* selected) {
  *selected = INT64_MIN;
  if (kind == AggKind::kCount) return static_cast<int64_t>(c.n);
  if (c.n == 0) return std::monostate{};
  switch (kind) {
    case AggKind::kSum:
      return QueryValue(As<T>(c.sum));
    case AggKind::kMean:
      return c.dsum / static_cast<double>(c.n);
    case AggKind::kMin:
      *selected = c.ta;
      return QueryValue(As<T>(c.a));
    case AggKind::kMax:
      *selected = c.tb;
      return QueryValue(As<T>(c.b));
    case AggKind::kSpread:
      if constexpr (std::is_same_v<T, double>) {
        return As<T>(c.b) - As<T>(c.a);
      } else {
        using U = std::make_unsigned_t<T>;
        return QueryValue(static_cast<T>(static_cast<U>(As<T>(c.b)) - static_cast<U>(As<T>(c.a))));
      }
    case AggKind::kFirst:
      *selected = c.ta;
      return QueryValue(As<T>(c.a));
    case AggKind::kLast:
      *selected = c.tb;
      return QueryValue(As<T>(c.b));
    default:
      return std::monostate{};
  }
}

// Appends to `out` the answer of slot `slot` in bucket i at time t, typed as
// ResultOf's value, when it is not null (a count is 0, not null, in a bucket
// where another slot saw a point). True when it appended.
template <typename T>
[[gnu::always_inline]] inline bool AppendCell(AggKind kind, const Cell* cells, size_t ns,
                                              size_t slot, size_t i, int64_t t, Column* out) {
  const Cell& c = cells[i * ns + slot];
  if (c.n == 0) {
    if (kind != AggKind::kCount) return false;
    bool present = false;
    for (size_t k = 0; k < ns && !present; ++k) present = cells[i * ns + k].n > 0;
    if (!present) return false;  // no row
  }
  switch (kind) {
    case AggKind::kCount:
      out->ints.push_back(static_cast<int64_t>(c.n));
      break;
    case AggKind::kMean:
      out->floats.push_back(c.dsum / static_cast<double>(c.n));
      break;
    case AggKind::kSum:
      storage::NumericValues<T>(*out).push_back(As<T>(c.sum));
      break;
    case AggKind::kMin:
    case AggKind::kFirst:
      storage::NumericValues<T>(*out).push_back(As<T>(c.a));
      break;
    case AggKind::kMax:
    case AggKind::kLast:
      storage::NumericValues<T>(*out).push_back(As<T>(c.b));
      break;
    case AggKind::kSpread: {
      int64_t selected;
      const QueryValue v = ResultOf<T>(kind, c, &selected);
      storage::NumericValues<T>(*out).push_back(std::get<T>(v));
      break;
    }
    default:
      return false;
  }
  out->ts.push_back(t);
  return true;
}

// AppendTyped for one aggregate, a function of its own: the loop keeps the
// grid in registers, where one written inside WithKind's lambda reloads it
// through the captures (15 instructions more a cell).
template <typename T, AggKind kKind>
void AppendTypedKind(const Cell* cells, size_t ns, size_t slot, const BucketGrid grid,
                     Column* out) {
  for (size_t i = 0; i < grid.count; ++i) {
    AppendCell<T>(kKind, cells, ns, slot, i, grid.first + static_cast<int64_t>(i) * grid.width,
                  out);
  }
}

// Cells::AppendResults for a field of type T: ResultOf's values without a
// QueryValue each, for the buckets where any slot saw a point. The
// aggregate is chosen once, not a cell at a time.
template <typename T>
void AppendTyped(AggKind kind, const Cell* cells, size_t ns, size_t slot, const BucketGrid& grid,
                 Column* out) {
  WithKind(kind,
           [&](auto k) { AppendTypedKind<T, decltype(k)::value>(cells, ns, slot, grid, out); });
}

}  // namespace

FieldType CellAnswerType(const AggSpec& spec) {
  return spec.kind == AggKind::kCount  ? FieldType::kInt
         : spec.kind == AggKind::kMean ? FieldType::kFloat
                                       : spec.type;
}

bool IsCellAggregate(const AggSpec& spec) {
  switch (spec.type) {
    case FieldType::kFloat:
    case FieldType::kInt:
    case FieldType::kUint:
      break;
    default:
      return false;
  }
  switch (spec.kind) {
    case AggKind::kCount:
    case AggKind::kSum:
    case AggKind::kMean:
    case AggKind::kMin:
    case AggKind::kMax:
    case AggKind::kSpread:
    case AggKind::kFirst:
    case AggKind::kLast:
      return true;
    default:
      return false;
  }
}

void Cells::Allocate(size_t nslots, const BucketGrid& grid) {
  if (cells_.empty()) cells_.resize(grid.count * nslots);
}

void Cells::AddRange(const std::vector<AggSpec>& specs, const BucketGrid& grid, size_t slot,
                     const Column& c, size_t begin, size_t end) {
  const AggSpec& spec = specs[slot];
  // A column of another type than the plan's (the engine keeps one type per
  // field and measurement, so this does not happen) is not read as this one.
  if (begin >= end || grid.count == 0 || c.type != spec.type) return;
  Allocate(specs.size(), grid);
  Cell* base = cells_.data() + slot;
  switch (spec.type) {
    case FieldType::kFloat:
      return FoldTyped<double>(spec.kind, spec.need_time, base, specs.size(), grid, c, begin, end);
    case FieldType::kInt:
      return FoldTyped<int64_t>(spec.kind, spec.need_time, base, specs.size(), grid, c, begin, end);
    case FieldType::kUint:
      return FoldTyped<uint64_t>(spec.kind, spec.need_time, base, specs.size(), grid, c, begin,
                                 end);
    default:
      return;
  }
}

void Cells::AddPacked(const std::vector<AggSpec>& specs, const BucketGrid& grid, size_t slot,
                      const storage::PackedRun& run, size_t begin, size_t end) {
  const AggSpec& spec = specs[slot];
  if (begin >= end || grid.count == 0 || run.type != spec.type) return;
  Allocate(specs.size(), grid);
  Cell* base = cells_.data() + slot;
  switch (spec.type) {
    case FieldType::kInt:
      return FoldPackedWidth<int64_t>(spec.kind, spec.need_time, base, specs.size(), grid, run,
                                      begin, end);
    case FieldType::kUint:
      return FoldPackedWidth<uint64_t>(spec.kind, spec.need_time, base, specs.size(), grid, run,
                                       begin, end);
    default:
      return;
  }
}

void Cells::AddRollups(const std::vector<AggSpec>& specs, const BucketGrid& grid, size_t slot,
                       const storage::RollupColumn& rows, size_t begin, size_t end,
                       int64_t row_width) {
  const AggSpec& spec = specs[slot];
  if (begin >= end || grid.count == 0 || rows.type != spec.type) return;
  Allocate(specs.size(), grid);
  Cell* base = cells_.data() + slot;
  switch (spec.type) {
    case FieldType::kFloat:
      return FoldRollupsTyped<double>(spec.kind, base, specs.size(), grid, rows, begin, end,
                                      row_width);
    case FieldType::kInt:
      return FoldRollupsTyped<int64_t>(spec.kind, base, specs.size(), grid, rows, begin, end,
                                       row_width);
    case FieldType::kUint:
      return FoldRollupsTyped<uint64_t>(spec.kind, base, specs.size(), grid, rows, begin, end,
                                        row_width);
    default:
      return;
  }
}

void Cells::Merge(const std::vector<AggSpec>& specs, const BucketGrid& grid, Cells* other) {
  if (other->cells_.empty()) return;
  if (cells_.empty()) {
    cells_.swap(other->cells_);
    return;
  }
  const size_t ns = specs.size();
  for (size_t i = 0; i < grid.count; ++i) {
    for (size_t k = 0; k < ns; ++k) {
      Cell& c = cells_[i * ns + k];
      const Cell& o = other->cells_[i * ns + k];
      switch (specs[k].type) {
        case FieldType::kFloat:
          MergeCell<double>(specs[k].kind, c, o);
          break;
        case FieldType::kInt:
          MergeCell<int64_t>(specs[k].kind, c, o);
          break;
        default:
          MergeCell<uint64_t>(specs[k].kind, c, o);
          break;
      }
    }
  }
  other->cells_.clear();
}

void Cells::AppendResults(const std::vector<AggSpec>& specs, const BucketGrid& grid, size_t slot,
                          Column* out) const {
  const AggSpec& spec = specs[slot];
  out->type = CellAnswerType(spec);
  if (cells_.empty()) return;
  // Room for every bucket at once: growing by doubling reallocates about
  // eight times on the way to a day of 15-minute buckets, and over a fleet's
  // groups that was most of a subquery's allocations.
  out->ts.reserve(out->ts.size() + grid.count);
  switch (out->type) {
    case FieldType::kFloat:
      out->floats.reserve(out->floats.size() + grid.count);
      break;
    case FieldType::kInt:
      out->ints.reserve(out->ints.size() + grid.count);
      break;
    default:
      out->uints.reserve(out->uints.size() + grid.count);
      break;
  }
  switch (spec.type) {
    case FieldType::kFloat:
      return AppendTyped<double>(spec.kind, cells_.data(), specs.size(), slot, grid, out);
    case FieldType::kInt:
      return AppendTyped<int64_t>(spec.kind, cells_.data(), specs.size(), slot, grid, out);
    case FieldType::kUint:
      return AppendTyped<uint64_t>(spec.kind, cells_.data(), specs.size(), slot, grid, out);
    default:
      return;
  }
}

QueryValue Cells::Result(const AggSpec& spec, size_t nslots, size_t slot, size_t i,
                         int64_t* selected) const {
  static const Cell kEmpty{};
  const Cell& c = cells_.empty() ? kEmpty : cells_[i * nslots + slot];
  switch (spec.type) {
    case FieldType::kFloat:
      return ResultOf<double>(spec.kind, c, selected);
    case FieldType::kInt:
      return ResultOf<int64_t>(spec.kind, c, selected);
    default:
      return ResultOf<uint64_t>(spec.kind, c, selected);
  }
}

}  // namespace gpulse::query
