// Tests for the rollup tiers (storage/rollup.h) and the quantile sketch each
// rollup row keeps (storage/sketch.h): the sketch's relative-error guarantee
// against exact nearest-rank values, that merging sketches is exact, NaN and
// infinities, the sketch's byte form; BuildRollups and CoarsenRollups against
// rows computed directly from the points; the rollup block's round trip,
// partial decoding, and its handling of truncated and corrupted bytes.
#include "storage/rollup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "storage/byte_reader.h"
#include "storage/coding.h"
#include "storage/column.h"
#include "storage/sketch.h"
#include "tests/support/first_format_rollups.h"
#include "tests/support/third_format_rollups.h"
#include "tests/support/tier_codec.h"

namespace gpulse::storage {
namespace {

using namespace gpulse::test;  // tests/support/tier_codec.h

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// The sketch's bound is reached exactly at bin edges (1 answers 0.99); the
// slack covers only the rounding of log and exp, not a looser guarantee.
constexpr double kTolerance = kSketchRelativeAccuracy * (1 + 1e-9);

// ---------------------------------------------------------------------------
// Helpers

template <typename T>
constexpr FieldType TypeOf() {
  if constexpr (std::is_same_v<T, double>) {
    return FieldType::kFloat;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return FieldType::kInt;
  } else {
    return FieldType::kUint;
  }
}

// Integer sums wrap modulo 2^64, as the integers they add do.
template <typename T>
T WrappingAdd(T a, T b) {
  if constexpr (std::is_same_v<T, double>) {
    return a + b;
  } else {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
}

std::vector<uint64_t> Bits(const std::vector<double>& v) {
  std::vector<uint64_t> out;
  for (double d : v) out.push_back(std::bit_cast<uint64_t>(d));
  return out;
}

template <typename T>
Column MakeColumn(std::vector<int64_t> ts, std::vector<T> v) {
  Column c;
  c.type = TypeOf<T>();
  c.ts = std::move(ts);
  NumericValues<T>(c) = std::move(v);
  return c;
}

template <typename T>
Sketch SketchOf(const std::vector<T>& v) {
  Sketch s;
  s.AddValues(v.data(), v.size());
  return s;
}

// The 0-based nearest-rank index of percentile p among n values:
// floor(n * p / 100 + 0.5) - 1, clamped to [0, n - 1].
uint64_t NearestRank(uint64_t n, uint64_t p) {
  const uint64_t r = (2 * n * p + 100) / 200;
  return r == 0 ? 0 : std::min(r - 1, n - 1);
}

// Checks the sketch of `values` at the usual percentiles against the exact
// nearest-rank values: within the relative accuracy, and 0 where the exact
// value counts as zero.
template <typename T>
void ExpectPercentilesWithinAccuracy(const std::vector<T>& values) {
  SketchAccumulator acc;
  acc.Add(SketchOf(values));
  std::vector<T> sorted;
  for (T v : values) {
    if (!std::isnan(static_cast<double>(v))) sorted.push_back(v);
  }
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(acc.count(), sorted.size());
  for (int p : {1, 5, 25, 50, 75, 90, 95, 99, 100}) {
    const uint64_t rank = NearestRank(sorted.size(), static_cast<uint64_t>(p));
    const double want = static_cast<double>(sorted[rank]);
    const double got = acc.ValueAtRank(rank);
    if (std::fabs(want) < kSketchMinIndexable) {
      EXPECT_EQ(got, 0.0) << "p" << p << " rank " << rank << " exact " << want;
    } else {
      EXPECT_LE(std::fabs(got - want), kTolerance * std::fabs(want))
          << "p" << p << " rank " << rank << " exact " << want << " sketch " << got;
    }
  }
}

// Every rank, not only the percentiles.
void ExpectEveryRankWithinAccuracy(std::vector<double> values) {
  SketchAccumulator acc;
  acc.Add(SketchOf(values));
  std::sort(values.begin(), values.end());
  ASSERT_EQ(acc.count(), values.size());
  for (size_t rank = 0; rank < values.size(); ++rank) {
    const double want = values[rank];
    const double got = acc.ValueAtRank(rank);
    EXPECT_LE(std::fabs(got - want), kTolerance * std::fabs(want))
        << "rank " << rank << " exact " << want << " sketch " << got;
  }
}

// x = sign * 10^e, e uniform in [lo, hi].
std::vector<double> LogSpread(std::mt19937_64& rng, size_t n, double lo, double hi,
                              bool mixed_signs) {
  std::uniform_real_distribution<double> exponent(lo, hi);
  std::bernoulli_distribution negative(mixed_signs ? 0.5 : 0.0);
  std::vector<double> v(n);
  for (double& x : v) x = (negative(rng) ? -1 : 1) * std::pow(10.0, exponent(rng));
  return v;
}

template <typename T>
void PushRow(RollupColumn* r, int64_t bucket, uint64_t count, double dsum, T sum, T min, T max,
             int64_t first_ts, T first, int64_t last_ts, T last, const Sketch& sketch) {
  auto put = [](Column* c, int64_t ts, T v) {
    c->ts.push_back(ts);
    NumericValues<T>(*c).push_back(v);
  };
  r->bucket.push_back(bucket);
  r->count.push_back(count);
  r->dsum.push_back(dsum);
  put(&r->sum, bucket, sum);
  put(&r->min, bucket, min);
  put(&r->max, bucket, max);
  put(&r->first, first_ts, first);
  put(&r->last, last_ts, last);
  r->sketch.push_back(sketch);
}

// Rows for points [begin, end) of `raw`, computed point by point: each
// point's bucket is its own window (ExpectedBucket).
template <typename T>
RollupColumn ReferenceRollups(const Column& raw, size_t begin, size_t end, int64_t width) {
  RollupColumn want;
  want.Reset(raw.type);
  const std::vector<T>& v = NumericValues<T>(raw);
  for (size_t i = begin; i < end;) {
    const int64_t b = ExpectedBucket(raw.ts[i], width);
    size_t j = i;
    T sum = 0, mn = v[i], mx = v[i];
    double dsum = 0;
    for (; j < end && ExpectedBucket(raw.ts[j], width) == b; ++j) {
      sum = WrappingAdd(sum, v[j]);
      dsum += static_cast<double>(v[j]);
      mn = std::min(mn, v[j]);
      mx = std::max(mx, v[j]);
    }
    const std::vector<T> in_bucket(v.begin() + static_cast<ptrdiff_t>(i),
                                   v.begin() + static_cast<ptrdiff_t>(j));
    // An integer field's double sum is its (wrapped) typed sum as a double.
    if constexpr (!std::is_same_v<T, double>) dsum = static_cast<double>(sum);
    PushRow<T>(&want, b, j - i, dsum, sum, mn, mx, raw.ts[i], v[i], raw.ts[j - 1], v[j - 1],
               SketchOf(in_bucket));
    i = j;
  }
  return want;
}

void ExpectSameColumn(const Column& got, const Column& want, const char* part, bool exact) {
  SCOPED_TRACE(part);
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.ts, want.ts);
  if (exact) {
    EXPECT_EQ(Bits(got.floats), Bits(want.floats));
  } else {
    ASSERT_EQ(got.floats.size(), want.floats.size());
    for (size_t j = 0; j < got.floats.size(); ++j) {
      EXPECT_DOUBLE_EQ(got.floats[j], want.floats[j]) << "row " << j;
    }
  }
  EXPECT_EQ(got.ints, want.ints);
  EXPECT_EQ(got.uints, want.uints);
  EXPECT_TRUE(got.bools.empty());
  EXPECT_TRUE(got.strings.empty());
}

// Every part of every row. Exact compares doubles bit for bit; otherwise the
// double sums (dsum, and a float field's sum) may differ in the last ULPs.
void ExpectSameRows(const RollupColumn& got, const RollupColumn& want, bool exact) {
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.bucket, want.bucket);
  EXPECT_EQ(got.count, want.count);
  if (exact) {
    EXPECT_EQ(Bits(got.dsum), Bits(want.dsum));
  } else {
    ASSERT_EQ(got.dsum.size(), want.dsum.size());
    for (size_t j = 0; j < got.dsum.size(); ++j) {
      EXPECT_DOUBLE_EQ(got.dsum[j], want.dsum[j]) << "dsum row " << j;
    }
  }
  ExpectSameColumn(got.sum, want.sum, "sum", exact);
  ExpectSameColumn(got.min, want.min, "min", true);
  ExpectSameColumn(got.max, want.max, "max", true);
  ExpectSameColumn(got.first, want.first, "first", true);
  ExpectSameColumn(got.last, want.last, "last", true);
  ASSERT_EQ(got.sketch.size(), want.sketch.size());
  for (size_t j = 0; j < got.sketch.size(); ++j) {
    EXPECT_TRUE(got.sketch[j] == want.sketch[j]) << "sketch row " << j;
  }
}

size_t RowOf(const RollupColumn& rows, int64_t bucket) {
  const auto it = std::find(rows.bucket.begin(), rows.bucket.end(), bucket);
  if (it == rows.bucket.end()) {
    ADD_FAILURE() << "no row for bucket " << bucket;
    return 0;
  }
  return static_cast<size_t>(it - rows.bucket.begin());
}

// ---------------------------------------------------------------------------
// Sketch: accuracy

TEST(SketchTest, UniformIntegersAnswerPercentilesWithinRelativeAccuracy) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int64_t> dist(0, 100);
  std::vector<int64_t> v(10'000);
  for (int64_t& x : v) x = dist(rng);
  ExpectPercentilesWithinAccuracy(v);
}

TEST(SketchTest, FloatsSpanningNineDecadesAnswerPercentilesWithinRelativeAccuracy) {
  std::mt19937_64 rng(2);
  std::vector<double> v = LogSpread(rng, 20'000, -3, 6, false);
  v.push_back(1e-3);
  v.push_back(1e6);
  ExpectPercentilesWithinAccuracy(v);
  // Lognormal: most values near e^2, long tails both ways.
  std::lognormal_distribution<double> lognormal(2.0, 3.0);
  std::vector<double> w(20'000);
  for (double& x : w) x = std::clamp(lognormal(rng), 1e-3, 1e6);
  ExpectPercentilesWithinAccuracy(w);
}

TEST(SketchTest, MixedSignValuesAnswerPercentilesWithinRelativeAccuracy) {
  std::mt19937_64 rng(3);
  ExpectPercentilesWithinAccuracy(LogSpread(rng, 10'000, -2, 4, true));
  std::normal_distribution<double> normal(-20, 1000);
  std::vector<double> w(10'000);
  for (double& x : w) x = normal(rng);
  ExpectPercentilesWithinAccuracy(w);
  std::uniform_int_distribution<int64_t> dist(-1000, 1000);
  std::vector<int64_t> ints(10'000);
  for (int64_t& x : ints) x = dist(rng);
  ExpectPercentilesWithinAccuracy(ints);
}

TEST(SketchTest, ZerosAndValuesBelowMinIndexableAnswerZero) {
  std::mt19937_64 rng(4);
  std::discrete_distribution<int> kind({40, 10, 5, 5, 20, 20});
  const std::vector<double> signed_values = LogSpread(rng, 8'000, -2, 3, true);
  std::vector<double> v;
  for (double x : signed_values) {
    switch (kind(rng)) {
      case 0:
        v.push_back(0.0);
        break;
      case 1:
        v.push_back(-0.0);
        break;
      case 2:
        v.push_back(1e-12);
        break;
      case 3:
        v.push_back(-3e-10);
        break;
      default:
        v.push_back(x);
        break;
    }
  }
  ExpectPercentilesWithinAccuracy(v);
  // The percentiles from 25 to 75 are zeros here: the check above is not
  // vacuous about them.
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(sorted[NearestRank(sorted.size(), 50)], 0.0);
  ASSERT_LT(sorted[NearestRank(sorted.size(), 5)], 0.0);
  ASSERT_GT(sorted[NearestRank(sorted.size(), 95)], 0.0);
  EXPECT_EQ(SketchOf(v).zero(),
            static_cast<uint64_t>(std::count_if(
                v.begin(), v.end(), [](double x) { return std::fabs(x) < kSketchMinIndexable; })));
}

TEST(SketchTest, UnsignedValuesUpToUint64MaxAnswerPercentilesWithinRelativeAccuracy) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> shift(0, 63);
  std::vector<uint64_t> v(10'000);
  for (uint64_t& x : v) x = rng() >> shift(rng);
  v.push_back(kU64Max);
  v.push_back(0);
  ExpectPercentilesWithinAccuracy(v);
}

TEST(SketchTest, TinyInputsAnswerTheirNearestRankValues) {
  ExpectPercentilesWithinAccuracy(std::vector<double>{42.5});
  ExpectPercentilesWithinAccuracy(std::vector<double>{1e6, -5, 7});
  ExpectPercentilesWithinAccuracy(std::vector<int64_t>{0, 1, 0});
  ExpectEveryRankWithinAccuracy({-1e6, -1, -0.5, 1e-9, 0.999, 1, 1.01, 1e9});
}

TEST(SketchTest, ExtremeFiniteMagnitudesAnswerWithinRelativeAccuracy) {
  ExpectEveryRankWithinAccuracy({2e-9, 1e-8, 1e300, 1e307, 5e307, -1e300});
  // Finite values near DBL_MAX must not be answered as infinity.
  ExpectEveryRankWithinAccuracy({1e308, DBL_MAX, -DBL_MAX, -1.5e308});
}

// ---------------------------------------------------------------------------
// Sketch: merging

// Cuts [0, n) into k pieces at random points (some may be empty).
std::vector<size_t> RandomCuts(std::mt19937_64& rng, size_t n, size_t k) {
  std::vector<size_t> cuts = {0, n};
  for (size_t i = 0; i + 1 < k; ++i) cuts.push_back(rng() % (n + 1));
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

void ExpectMergingPiecesIsExact(const std::vector<double>& values, std::mt19937_64& rng) {
  const Sketch whole = SketchOf(values);
  SketchAccumulator whole_acc;
  whole_acc.Add(whole);
  ASSERT_EQ(whole_acc.count(), values.size());
  for (size_t k : {1, 2, 3, 7, 40}) {
    SCOPED_TRACE(testing::Message() << k << " pieces");
    const std::vector<size_t> cuts = RandomCuts(rng, values.size(), k);
    std::vector<Sketch> pieces;
    Sketch incremental;  // AddValues into one sketch, piece by piece
    for (size_t p = 0; p + 1 < cuts.size(); ++p) {
      pieces.emplace_back();
      pieces.back().AddValues(values.data() + cuts[p], cuts[p + 1] - cuts[p]);
      incremental.AddValues(values.data() + cuts[p], cuts[p + 1] - cuts[p]);
    }
    Sketch merged, merged_backwards;
    for (const Sketch& s : pieces) merged.Merge(s);
    for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) merged_backwards.Merge(*it);
    EXPECT_TRUE(merged == whole);
    EXPECT_TRUE(merged_backwards == whole);
    EXPECT_TRUE(incremental == whole);
    EXPECT_EQ(merged.count(), values.size());

    SketchAccumulator added, first_half, second_half, into_empty;
    for (size_t p = 0; p < pieces.size(); ++p) {
      added.Add(pieces[p]);
      (p < pieces.size() / 2 ? first_half : second_half).Add(pieces[p]);
    }
    // The later pieces' accumulator receives the earlier ones', so its dense
    // bins must grow at either end.
    second_half.Merge(first_half);
    into_empty.Merge(second_half);
    for (const SketchAccumulator* acc : {&added, &second_half, &into_empty}) {
      ASSERT_EQ(acc->count(), values.size());
      for (uint64_t rank = 0; rank < values.size(); ++rank) {
        ASSERT_EQ(acc->ValueAtRank(rank), whole_acc.ValueAtRank(rank)) << "rank " << rank;
      }
    }
  }
}

TEST(SketchTest, MergingSketchesOfPiecesEqualsSketchingAllAtOnce) {
  std::mt19937_64 rng(6);
  std::vector<double> v = LogSpread(rng, 3'000, -3, 6, true);
  for (size_t i = 0; i < v.size(); i += 13) v[i] = 0;
  {
    SCOPED_TRACE("random order");
    ExpectMergingPiecesIsExact(v, rng);
  }
  // Sorted inputs make each piece's bins lie wholly above (or below) the
  // ones before it.
  std::sort(v.begin(), v.end());
  {
    SCOPED_TRACE("ascending");
    ExpectMergingPiecesIsExact(v, rng);
  }
  std::reverse(v.begin(), v.end());
  {
    SCOPED_TRACE("descending");
    ExpectMergingPiecesIsExact(v, rng);
  }
}

TEST(SketchTest, MergingAnEmptySketchChangesNothing) {
  const Sketch s = SketchOf(std::vector<double>{-3, 0, 5, 5, 1e4});
  Sketch merged = s;
  merged.Merge(Sketch());
  EXPECT_TRUE(merged == s);
  Sketch empty;
  empty.Merge(s);
  EXPECT_TRUE(empty == s);
  EXPECT_TRUE(Sketch().empty());
  EXPECT_FALSE(s.empty());
}

// ---------------------------------------------------------------------------
// Sketch: NaN and infinities

TEST(SketchTest, NanIsNotCountedAndInfinitiesAre) {
  const std::vector<double> v = {kNaN, 1.5, -kInf, 0.0, kNaN, kInf, -2.0, kInf, -kNaN};
  const Sketch s = SketchOf(v);
  EXPECT_EQ(s.count(), 6u);
  EXPECT_EQ(s.zero(), 1u);
  SketchAccumulator acc;
  acc.Add(s);
  ASSERT_EQ(acc.count(), 6u);
  EXPECT_EQ(acc.ValueAtRank(0), -kInf);
  EXPECT_LE(std::fabs(acc.ValueAtRank(1) + 2.0), kTolerance * 2.0);
  EXPECT_EQ(acc.ValueAtRank(2), 0.0);
  EXPECT_LE(std::fabs(acc.ValueAtRank(3) - 1.5), kTolerance * 1.5);
  EXPECT_EQ(acc.ValueAtRank(4), kInf);
  EXPECT_EQ(acc.ValueAtRank(5), kInf);
  // Infinity has a bin of its own, above DBL_MAX's.
  const Sketch with_max = SketchOf(std::vector<double>{DBL_MAX, kInf});
  EXPECT_EQ(with_max.positive().size(), 2u);

  const std::vector<double> only_nan = {kNaN, kNaN};
  EXPECT_TRUE(SketchOf(only_nan).empty());
  EXPECT_TRUE(SketchOf(only_nan) == Sketch());

  std::string bytes;
  int32_t encode_base = 0, decode_base = 0;
  s.Encode(&bytes, &encode_base, Sketch::BinForm::kCountAndStep);
  std::string_view in = bytes;
  Sketch decoded;
  ASSERT_TRUE(decoded.Decode(&in, &decode_base, Sketch::BinForm::kCountAndStep));
  EXPECT_TRUE(decoded == s);
}

// ---------------------------------------------------------------------------
// Sketch: byte form

std::vector<Sketch> SampleSketches() {
  std::mt19937_64 rng(8);
  std::vector<Sketch> out;
  out.emplace_back();                                                      // empty
  out.push_back(SketchOf(std::vector<double>{0, 0, -0.0}));                // zeros only
  out.push_back(SketchOf(std::vector<int64_t>{1, 2, 3, 1000}));            // positive only
  out.push_back(SketchOf(std::vector<double>{-1e-9, -5, -kInf, -1e300}));  // negative only
  out.push_back(SketchOf(std::vector<double>{-kInf, -7, 0, 1e-9, 3, kInf, DBL_MAX}));
  out.push_back(SketchOf(LogSpread(rng, 5'000, -9, 9, true)));  // many bins
  return out;
}

// The bases a sketch may be encoded against: the first block's, and a
// previous sketch's first positive bin below, inside and above these bins.
constexpr int32_t kBases[] = {0, 37, -500, 40'000};
// Both bin forms: format 4's, and formats 1 and 3's (still read).
constexpr Sketch::BinForm kForms[] = {Sketch::BinForm::kCountAndStep, Sketch::BinForm::kNibbles};

TEST(SketchTest, EncodeDecodeRoundTripsAgainstAnyBase) {
  for (const Sketch::BinForm form : kForms) {
    for (int32_t base : kBases) {
      for (const Sketch& s : SampleSketches()) {
        SCOPED_TRACE(testing::Message() << "base " << base << ", form " << static_cast<int>(form));
        std::string bytes;
        int32_t encode_base = base, decode_base = base;
        s.Encode(&bytes, &encode_base, form);
        std::string_view in = bytes;
        Sketch decoded = SketchOf(std::vector<double>{99});  // Decode must replace it
        ASSERT_TRUE(decoded.Decode(&in, &decode_base, form));
        EXPECT_TRUE(decoded == s);
        EXPECT_TRUE(in.empty());
        EXPECT_EQ(decode_base, encode_base);
        EXPECT_EQ(encode_base, s.positive().empty() ? base : s.positive().front().first);
      }
    }
  }
}

TEST(SketchTest, ConcatenatedEncodingsDecodeInSequence) {
  const std::vector<Sketch> sketches = SampleSketches();
  for (const Sketch::BinForm form : kForms) {
    std::string bytes;
    int32_t encode_base = 0;
    for (int round = 0; round < 2; ++round) {
      for (const Sketch& s : sketches) s.Encode(&bytes, &encode_base, form);
    }
    bytes += "tail";
    std::string_view in = bytes;
    int32_t decode_base = 0;
    for (int round = 0; round < 2; ++round) {
      for (const Sketch& s : sketches) {
        Sketch decoded;
        ASSERT_TRUE(decoded.Decode(&in, &decode_base, form));
        EXPECT_TRUE(decoded == s);
      }
    }
    EXPECT_EQ(in, "tail");
    EXPECT_EQ(decode_base, encode_base);
  }
}

TEST(SketchTest, DecodeRejectsEveryTruncation) {
  // The decoder reads the same fields from a prefix as from the whole
  // encoding, so a strict prefix always runs out before the end.
  for (const Sketch::BinForm form : kForms) {
    for (int32_t base : kBases) {
      for (const Sketch& s : SampleSketches()) {
        std::string bytes;
        int32_t encode_base = base;
        s.Encode(&bytes, &encode_base, form);
        for (size_t len = 0; len < bytes.size(); ++len) {
          std::string_view in(bytes.data(), len);
          Sketch decoded;
          int32_t decode_base = base;
          EXPECT_FALSE(decoded.Decode(&in, &decode_base, form))
              << "prefix of " << len << " of " << bytes.size() << ", base " << base;
        }
      }
    }
  }
}

// Format 4's bins: varint (count - 1) << 2 | step when the step is 1 to 3,
// else (count - 1) << 2 and the zigzag step.
TEST(SketchTest, CountAndStepBinsReadAsWritten) {
  std::string bytes;
  PutVarint64(&bytes, 2);                  // zero
  PutVarint64(&bytes, 3);                  // three positive bins
  PutVarint64(&bytes, (40 - 1) << 2 | 0);  // 40 values, the step follows
  PutVarint64(&bytes, ZigZagEncode(static_cast<uint64_t>(int64_t{-4})));
  PutVarint64(&bytes, (1 - 1) << 2 | 1);     // one value, the next bin
  PutVarint64(&bytes, (1000 - 1) << 2 | 3);  // 1,000 values, three bins on
  PutVarint64(&bytes, 1);                    // one negative bin
  PutVarint64(&bytes, (7 - 1) << 2 | 2);     // 7 values, step 2 from base - 1
  std::string_view in = bytes;
  Sketch s;
  int32_t base = 10;
  ASSERT_TRUE(s.Decode(&in, &base, Sketch::BinForm::kCountAndStep));
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(s.zero(), 2u);
  EXPECT_EQ(s.positive(), (Sketch::Bins{{5, 40}, {6, 1}, {9, 1000}}));
  EXPECT_EQ(s.negative(), (Sketch::Bins{{11, 7}}));
  EXPECT_EQ(base, 5);
  // Written back, the same bytes.
  std::string again;
  int32_t encode_base = 10;
  s.Encode(&again, &encode_base, Sketch::BinForm::kCountAndStep);
  EXPECT_EQ(again, bytes);
  // A later bin whose written step does not ascend is refused.
  std::string bad;
  PutVarint64(&bad, 0);
  PutVarint64(&bad, 2);
  PutVarint64(&bad, 1);  // count 1, step 1
  PutVarint64(&bad, 0);  // count 1, the step follows
  PutVarint64(&bad, ZigZagEncode(0));
  PutVarint64(&bad, 0);
  in = bad;
  base = 0;
  EXPECT_FALSE(s.Decode(&in, &base, Sketch::BinForm::kCountAndStep));
}

// One bin as Sketch::Encode writes it in formats 1 and 3: its index's step from the bin before
// (the first: from base - 1) and its count, packed in a byte (step << 4 |
// count) or escaped (a zero byte, then the zigzag step and the count as
// varints).
struct RawBin {
  int64_t step;
  uint64_t count;
  bool packed = false;
};

// The zero count, then for the positive and the negative bins their number
// and the bins.
std::string RawSketchBytes(uint64_t zero, const std::vector<RawBin>& pos,
                           const std::vector<RawBin>& neg) {
  std::string out;
  PutVarint64(&out, zero);
  for (const std::vector<RawBin>* bins : {&pos, &neg}) {
    PutVarint64(&out, bins->size());
    for (const RawBin& bin : *bins) {
      if (bin.packed) {
        out.push_back(static_cast<char>(static_cast<uint64_t>(bin.step) << 4 | bin.count));
      } else {
        out.push_back('\0');
        PutVarint64(&out, ZigZagEncode(static_cast<uint64_t>(bin.step)));
        PutVarint64(&out, bin.count);
      }
    }
  }
  return out;
}

// Formats 1 and 3's bins.
bool DecodesFully(const std::string& bytes, Sketch* s, int32_t base = 0) {
  std::string_view in = bytes;
  return s->Decode(&in, &base, Sketch::BinForm::kNibbles) && in.empty();
}

TEST(SketchTest, DecodeReadsPackedAndEscapedBins) {
  Sketch s;
  // The crafting is right: ordered bins decode to exactly those bins.
  ASSERT_TRUE(DecodesFully(
      RawSketchBytes(4, {{-2, 2}, {8, 1, true}, {2, 9}}, {{1, 1, true}, {40'000, 2}}), &s));
  EXPECT_EQ(s.zero(), 4u);
  EXPECT_EQ(s.positive(), (Sketch::Bins{{-3, 2}, {5, 1}, {7, 9}}));
  EXPECT_EQ(s.negative(), (Sketch::Bins{{0, 1}, {40'000, 2}}));
  // Steps count from base - 1 for both signs.
  ASSERT_TRUE(DecodesFully(RawSketchBytes(0, {{1, 3, true}}, {{15, 15, true}}), &s, 10));
  EXPECT_EQ(s.positive(), (Sketch::Bins{{10, 3}}));
  EXPECT_EQ(s.negative(), (Sketch::Bins{{24, 15}}));
}

TEST(SketchTest, DecodeRejectsBinsOutOfOrderOrOutOfRange) {
  Sketch s;
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {{6, 1}, {0, 1}}, {}), &s)) << "repeated index";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {{6, 1, true}, {0, 3, true}}, {}), &s))
      << "packed repeated index";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {{6, 1}, {-2, 1}}, {}), &s)) << "descending";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {}, {{2, 1}, {-7, 4}}), &s)) << "negative descending";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {{1, 1}, {2, 0}}, {}), &s)) << "empty bin";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {{3, 0, true}}, {}), &s)) << "packed empty bin";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {{40'002, 1}}, {}), &s)) << "index too large";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {}, {{-40'000, 1}}), &s)) << "index too small";
  // Steps that would take the index past the int64 range.
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {{8, 1}, {kI64Max, 1}}, {}), &s)) << "huge step";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {{kI64Min, 1}}, {}), &s)) << "huge first step";
  EXPECT_FALSE(DecodesFully(RawSketchBytes(0, {}, {{kI64Max, 1}}), &s, 100)) << "huge step";
  // More bins than the bytes left could hold.
  std::string many;
  PutVarint64(&many, 0);
  PutVarint64(&many, 1'000'000);
  many += std::string(10, '\x11');
  EXPECT_FALSE(DecodesFully(many, &s)) << "bin count past the end";
}

// ---------------------------------------------------------------------------
// BuildRollups

TEST(RollupTest, BuildRollupsOfIntegersMatchesRowsComputedFromThePoints) {
  // Minute points over 3 hours from 00:02:07, with gaps: minutes 20-32 are
  // missing (two whole 5m buckets have no row), and every 7th minute.
  const int64_t start = kT0 + 2 * kMinute + 7 * kSecond;
  const std::vector<int64_t> ts = MinutePoints(
      start, 180, [](int i) { return (i >= 20 && i < 33) || i % 7 == 3 || i == 51 || i == 52; });
  std::mt19937_64 rng(10);
  std::uniform_int_distribution<int64_t> dist(-1'000'000, 1'000'000);
  std::vector<int64_t> v(ts.size());
  for (int64_t& x : v) x = dist(rng);
  // Bucket 10 (series minutes 48-50) and 11 (minutes 53-57) wrap their sums.
  const int64_t wrap_up = kT0 + 10 * k5m, wrap_down = kT0 + 11 * k5m;
  std::vector<int64_t> up = {kI64Max, kI64Max, 3}, down = {kI64Min, -1, 1, 2, 3};
  for (size_t k = 0; k < ts.size(); ++k) {
    if (ExpectedBucket(ts[k], k5m) == wrap_up) {
      ASSERT_FALSE(up.empty());
      v[k] = up.front();
      up.erase(up.begin());
    } else if (ExpectedBucket(ts[k], k5m) == wrap_down) {
      ASSERT_FALSE(down.empty());
      v[k] = down.front();
      down.erase(down.begin());
    }
  }
  ASSERT_TRUE(up.empty() && down.empty());
  const Column raw = MakeColumn(ts, v);

  RollupColumn rows;
  rows.Reset(FieldType::kInt);
  BuildRollups(raw, 0, raw.size(), k5m, &rows);
  ExpectSameRows(rows, ReferenceRollups<int64_t>(raw, 0, raw.size(), k5m), false);
  EXPECT_EQ(rows.size(), 37u - 2u);  // 00:00 to 03:00 and two empty buckets

  const size_t u = RowOf(rows, wrap_up);
  EXPECT_EQ(rows.count[u], 3u);
  EXPECT_EQ(rows.sum.ints[u], 1);  // 2 * (2^63 - 1) + 3 - 2^64
  EXPECT_EQ(rows.dsum[u], 1.0);
  EXPECT_EQ(rows.min.ints[u], 3);
  EXPECT_EQ(rows.max.ints[u], kI64Max);
  EXPECT_EQ(rows.first.ts[u], kT0 + 50 * kMinute + 7 * kSecond);  // minute 48 of the series
  EXPECT_EQ(rows.last.ts[u], kT0 + 52 * kMinute + 7 * kSecond);
  EXPECT_EQ(rows.last.ints[u], 3);
  const size_t d = RowOf(rows, wrap_down);
  EXPECT_EQ(rows.sum.ints[d], kI64Min + 5);  // -2^63 - 1 + 6, wrapped
  EXPECT_EQ(rows.dsum[d], static_cast<double>(kI64Min + 5));
  EXPECT_EQ(rows.min.ints[d], kI64Min);
  EXPECT_EQ(rows.first.ints[d], kI64Min);
  EXPECT_EQ(rows.sketch[d].count(), 5u);
}

TEST(RollupTest, BuildRollupsOfFloatsMatchesRowsComputedFromThePoints) {
  const int64_t start = kT0 - 3 * kMinute + 59 * kSecond;
  const std::vector<int64_t> ts =
      MinutePoints(start, 180, [](int i) { return (i >= 60 && i < 71) || i % 5 == 1; });
  std::mt19937_64 rng(11);
  std::normal_distribution<double> dist(20, 15);
  std::vector<double> v(ts.size());
  for (double& x : v) x = dist(rng);
  v[7] = 0;
  v[8] = 1e-300;
  const Column raw = MakeColumn(ts, v);

  RollupColumn rows;
  rows.Reset(FieldType::kFloat);
  BuildRollups(raw, 0, raw.size(), k5m, &rows);
  const RollupColumn want = ReferenceRollups<double>(raw, 0, raw.size(), k5m);
  ExpectSameRows(rows, want, false);
  // Buckets -1 to 35, less 60:00 to 64:59 (minutes 63-67 of the series).
  ASSERT_EQ(rows.size(), 37u - 1u);
  for (size_t j = 0; j < rows.size(); ++j) {
    EXPECT_EQ(rows.sketch[j].count(), rows.count[j]) << "row " << j;
    EXPECT_DOUBLE_EQ(rows.sum.floats[j], rows.dsum[j]) << "row " << j;
  }
}

TEST(RollupTest, BuildRollupsOfUnsignedSumsWrapModulo2To64) {
  const int64_t start = kT0 + 30 * kSecond;
  const std::vector<int64_t> ts =
      MinutePoints(start, 180, [](int i) { return i % 6 == 5 || (i >= 100 && i < 110); });
  std::mt19937_64 rng(12);
  std::vector<uint64_t> v(ts.size());
  for (uint64_t& x : v) x = rng() >> 24;
  // Bucket 3 (minutes 15-19, 17 skipped) holds UINT64_MAX, UINT64_MAX - 4, 10, 0.
  const int64_t wrap = kT0 + 3 * k5m;
  std::vector<uint64_t> big = {kU64Max, kU64Max - 4, 10, 0};
  for (size_t k = 0; k < ts.size(); ++k) {
    if (ExpectedBucket(ts[k], k5m) == wrap) {
      ASSERT_FALSE(big.empty());
      v[k] = big.front();
      big.erase(big.begin());
    }
  }
  ASSERT_TRUE(big.empty());
  const Column raw = MakeColumn(ts, v);

  RollupColumn rows;
  rows.Reset(FieldType::kUint);
  BuildRollups(raw, 0, raw.size(), k5m, &rows);
  ExpectSameRows(rows, ReferenceRollups<uint64_t>(raw, 0, raw.size(), k5m), false);
  const size_t w = RowOf(rows, wrap);
  EXPECT_EQ(rows.count[w], 4u);
  EXPECT_EQ(rows.sum.uints[w], 4u);  // 2^64 - 1 + 2^64 - 5 + 10 = 4 modulo 2^64
  EXPECT_EQ(rows.dsum[w], 4.0);
  EXPECT_EQ(rows.min.uints[w], 0u);
  EXPECT_EQ(rows.max.uints[w], kU64Max);
  EXPECT_EQ(rows.first.uints[w], kU64Max);
  EXPECT_EQ(rows.first.ts[w], kT0 + 15 * kMinute + 30 * kSecond);
  EXPECT_EQ(rows.last.uints[w], 0u);
  EXPECT_EQ(rows.sketch[w].count(), 4u);
  EXPECT_EQ(rows.sketch[w].zero(), 1u);
}

TEST(RollupTest, BuildRollupsAppendsRowsForOnlyTheGivenRange) {
  const std::vector<int64_t> ts = MinutePoints(kT0, 120, [](int) { return false; });
  std::vector<int64_t> v(ts.size());
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<int64_t>(k * k) - 500;
  const Column raw = MakeColumn(ts, v);

  RollupColumn rows;
  rows.Reset(FieldType::kInt);
  BuildRollups(raw, 0, 30, k5m, &rows);  // minutes 0-29: 6 whole buckets
  ASSERT_EQ(rows.size(), 6u);
  BuildRollups(raw, 47, 93, k5m, &rows);  // minutes 47-92: 45m-90m, partial at both ends
  RollupColumn want = ReferenceRollups<int64_t>(raw, 0, 30, k5m);
  const RollupColumn tail = ReferenceRollups<int64_t>(raw, 47, 93, k5m);
  for (size_t j = 0; j < tail.size(); ++j) AppendRollupRow(tail, j, &want);
  ExpectSameRows(rows, want, false);
  ASSERT_EQ(rows.size(), 6u + 10u);
  EXPECT_EQ(rows.count[6], 3u);  // minutes 47-49
  EXPECT_EQ(rows.first.ts[6], kT0 + 47 * kMinute);
  EXPECT_EQ(rows.count.back(), 3u);  // minutes 90-92
  EXPECT_EQ(rows.last.ts.back(), kT0 + 92 * kMinute);
}

TEST(RollupTest, BuildRollupsStartsANewRowAtTheWindowAfterTheClampedInt64MinWindow) {
  // The window holding INT64_MIN starts below the int64 range, so its bucket
  // is clamped to INT64_MIN; the next window starts at -30744573 * 5m,
  // less than INT64_MIN + 5m.
  const int64_t next_window = -30'744'573 * k5m;
  ASSERT_EQ(ExpectedBucket(kI64Min, k5m), kI64Min);
  ASSERT_EQ(ExpectedBucket(next_window, k5m), next_window);
  ASSERT_LT(next_window, kI64Min + k5m);
  const Column raw =
      MakeColumn<int64_t>({kI64Min, kI64Min + 1, next_window, next_window + 9}, {1, 2, 30, 40});
  RollupColumn rows;
  rows.Reset(FieldType::kInt);
  BuildRollups(raw, 0, raw.size(), k5m, &rows);
  ExpectSameRows(rows, ReferenceRollups<int64_t>(raw, 0, raw.size(), k5m), false);
  EXPECT_EQ(rows.bucket, (std::vector<int64_t>{kI64Min, next_window}));
  EXPECT_EQ(rows.count, (std::vector<uint64_t>{2, 2}));
}

TEST(RollupTest, BuildRollupsKeepsAPointAtInt64MaxInTheLastWindowsRow) {
  const int64_t last_window = 30'744'573 * k5m;  // its end is past INT64_MAX
  ASSERT_EQ(ExpectedBucket(kI64Max, k5m), last_window);
  const Column raw =
      MakeColumn<int64_t>({last_window - 1, last_window, kI64Max - 1, kI64Max}, {1, 2, 3, 4});
  RollupColumn rows;
  rows.Reset(FieldType::kInt);
  BuildRollups(raw, 0, raw.size(), k5m, &rows);
  ExpectSameRows(rows, ReferenceRollups<int64_t>(raw, 0, raw.size(), k5m), false);
  EXPECT_EQ(rows.bucket, (std::vector<int64_t>{last_window - k5m, last_window}));
  EXPECT_EQ(rows.count, (std::vector<uint64_t>{1, 3}));
}

// ---------------------------------------------------------------------------
// CoarsenRollups

// Values whose sums are exact doubles in any order: quarters for floats,
// multiples of 2^13 below 2^40 for integers, plus two values at the integer
// extremes (whose doubles are powers of two).
template <typename T>
std::vector<T> ExactlySummableValues(std::mt19937_64& rng, size_t n) {
  std::vector<T> v(n);
  for (T& x : v) {
    if constexpr (std::is_same_v<T, double>) {
      x = static_cast<double>(static_cast<int64_t>(rng() % 8001) - 4000) / 4;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      x = (static_cast<int64_t>(rng() % (1 << 27)) - (1 << 26)) * 8192;
    } else {
      x = (rng() % (1 << 27)) * 8192;
    }
  }
  if constexpr (std::is_same_v<T, int64_t>) {
    v[n / 3] = kI64Max;
    v[n / 3 + 1] = kI64Min;
    v[n / 2] = kI64Max;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    v[n / 3] = kU64Max;
    v[n / 2] = kU64Max - 4;
  }
  return v;
}

template <typename T>
void ExpectCoarseningEqualsBuildingDirectly(const std::vector<int64_t>& ts, uint64_t seed) {
  SCOPED_TRACE(FieldTypeName(TypeOf<T>()));
  std::mt19937_64 rng(seed);
  const Column raw = MakeColumn(ts, ExactlySummableValues<T>(rng, ts.size()));
  auto build = [&](int64_t width) {
    RollupColumn r;
    r.Reset(TypeOf<T>());
    BuildRollups(raw, 0, raw.size(), width, &r);
    return r;
  };
  auto coarsen = [](const RollupColumn& fine, int64_t width) {
    RollupColumn r;
    r.Reset(fine.type);
    CoarsenRollups(fine, width, &r);
    return r;
  };
  const RollupColumn m5 = build(k5m), h1 = build(k1h), d1 = build(k1d);
  // Not vacuous: coarse rows merge several fine ones.
  ASSERT_GT(m5.size(), h1.size() * 3);
  ASSERT_GT(h1.size(), d1.size() * 3);
  ASSERT_GE(d1.size(), 3u);
  {
    SCOPED_TRACE("5m to 1h");
    ExpectSameRows(coarsen(m5, k1h), h1, true);
  }
  {
    SCOPED_TRACE("1h to 1d");
    ExpectSameRows(coarsen(h1, k1d), d1, true);
  }
  {
    SCOPED_TRACE("5m to 1h to 1d");
    ExpectSameRows(coarsen(coarsen(m5, k1h), k1d), d1, true);
  }
  {
    SCOPED_TRACE("5m to 1d");
    ExpectSameRows(coarsen(m5, k1d), d1, true);
  }
}

TEST(RollupTest, CoarseningFinerRowsEqualsBuildingTheCoarserTierDirectly) {
  // 3.5 days of minute points from 13:07:11 with gaps: every 11th minute,
  // an hour-long hole every 17 hours, and 25 hours missing on day two.
  const std::vector<int64_t> ts = MinutePoints(
      kT0 + 13 * k1h + 7 * kMinute + 11 * kSecond, 5040,
      [](int i) { return i % 11 == 4 || (i / 60) % 17 == 5 || (i >= 1500 && i < 3000); });
  ExpectCoarseningEqualsBuildingDirectly<int64_t>(ts, 20);
  ExpectCoarseningEqualsBuildingDirectly<uint64_t>(ts, 21);
  ExpectCoarseningEqualsBuildingDirectly<double>(ts, 22);
}

TEST(RollupTest, CoarseningEqualsBuildingDirectlyAcrossTheEpoch) {
  const std::vector<int64_t> ts =
      MinutePoints(-2 * k1d + 3 * kMinute + 1, 4320, [](int i) { return i % 13 == 0; });
  ExpectCoarseningEqualsBuildingDirectly<int64_t>(ts, 23);
  ExpectCoarseningEqualsBuildingDirectly<uint64_t>(ts, 24);
  ExpectCoarseningEqualsBuildingDirectly<double>(ts, 25);
}

// ---------------------------------------------------------------------------
// EncodeRollups / DecodeRollups

constexpr int64_t kAfterMinWindow = -30'744'573 * k5m;  // the first unclamped 5m window
constexpr int64_t kLastWindow = 30'744'573 * k5m;       // the 5m window holding INT64_MAX

// An integer field's double sum is its typed sum as a double: the block
// stores only the typed one.
RollupColumn IntRows() {
  RollupColumn r;
  r.Reset(FieldType::kInt);
  PushRow<int64_t>(&r, kI64Min, 1, static_cast<double>(kI64Min), kI64Min, kI64Min, kI64Min, kI64Min,
                   kI64Min, kI64Min + 299 * kSecond, kI64Min,
                   SketchOf(std::vector<int64_t>{kI64Min}));
  PushRow<int64_t>(&r, kAfterMinWindow, 3, static_cast<double>(kI64Max), kI64Max, -5, kI64Max,
                   kAfterMinWindow + 1, kI64Max, kAfterMinWindow + k5m - 1, -5,
                   SketchOf(std::vector<int64_t>{kI64Max, 5, -5}));
  PushRow<int64_t>(&r, -k5m, 7, -4, -4, -9, 8, -k5m, 8, -1, -9,
                   SketchOf(std::vector<int64_t>{8, 0, 0, 0, 0, -9, -3}));
  PushRow<int64_t>(&r, 0, kU64Max, 0, 0, 0, 0, 0, 0, k5m - 1, 0, Sketch());
  PushRow<int64_t>(&r, kT0, 2, 3, 3, 1, 2, kT0 + kSecond, 1, kT0 + 2 * kSecond, 2,
                   SketchOf(std::vector<int64_t>{1, 2}));
  PushRow<int64_t>(&r, kLastWindow, 1, 1, 1, 1, 1, kI64Max, 1, kI64Max, 1,
                   SketchOf(std::vector<int64_t>{1}));
  return r;
}

RollupColumn UintRows() {
  RollupColumn r;
  r.Reset(FieldType::kUint);
  const uint64_t top = uint64_t{1} << 63;
  PushRow<uint64_t>(&r, kI64Min, 2, static_cast<double>(kU64Max - 1), kU64Max - 1, kU64Max, kU64Max,
                    kI64Min + 1, kU64Max, kI64Min + 2, kU64Max,
                    SketchOf(std::vector<uint64_t>{kU64Max, kU64Max}));
  PushRow<uint64_t>(&r, -k1h, 3, static_cast<double>(top), top, 0, top, -k1h, 0, -1, top,
                    SketchOf(std::vector<uint64_t>{0, top, 0}));
  PushRow<uint64_t>(&r, k1h * 1000, 1, 1, 1, 1, 1, k1h * 1000 + 5, 1, k1h * 1000 + 5, 1,
                    SketchOf(std::vector<uint64_t>{1}));
  return r;
}

RollupColumn FloatRows() {
  RollupColumn r;
  r.Reset(FieldType::kFloat);
  const double nan_payload = std::bit_cast<double>(uint64_t{0x7ff8'0000'0000'0abc});
  const double neg_nan = std::bit_cast<double>(uint64_t{0xfff8'0000'0000'0001});
  // A float field's sum is its dsum (the block stores it once).
  PushRow<double>(&r, kI64Min, 3, neg_nan, neg_nan, kNaN, -0.0, kI64Min + 7, -0.0,
                  kI64Min + k5m - 1, nan_payload, SketchOf(std::vector<double>{kNaN, -0.0, 1}));
  PushRow<double>(&r, kAfterMinWindow, 2, -0.0, -0.0, -0.0, 0.0, kAfterMinWindow, 0.0,
                  kAfterMinWindow + 1, -0.0, SketchOf(std::vector<double>{0.0, -0.0}));
  PushRow<double>(&r, -k1d, 4, kInf, kInf, -DBL_MAX, kInf, -k1d + 3, 5e-324, -1, -kInf,
                  SketchOf(std::vector<double>{-DBL_MAX, kInf, 5e-324, -kInf}));
  PushRow<double>(&r, kT0, 2, 0.30000000000000004, 0.30000000000000004, 0.1, 0.2, kT0, 0.1, kT0 + 1,
                  0.2, SketchOf(std::vector<double>{0.1, 0.2}));
  return r;
}

// A full block of 288 5m rows built from points, which compresses.
RollupColumn FullBlock() {
  const std::vector<int64_t> ts = MinutePoints(kT0, 288 * 5, [](int) { return false; });
  std::mt19937_64 rng(30);
  std::normal_distribution<double> dist(50, 10);
  std::vector<double> v(ts.size());
  for (double& x : v) x = std::round(dist(rng) * 10) / 10;
  RollupColumn r;
  r.Reset(FieldType::kFloat);
  BuildRollups(MakeColumn(ts, v), 0, ts.size(), k5m, &r);
  return r;
}

std::string Encoded(const RollupColumn& rows) {
  std::string out;
  EncodeRollups(rows, true, &out);
  return out;
}

// Some stale rows of another type, which DecodeRollups must replace.
RollupColumn Stale() {
  RollupColumn r;
  r.Reset(FieldType::kUint);
  PushRow<uint64_t>(&r, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, Sketch());
  return r;
}

TEST(RollupTest, EncodeDecodeRoundTripsEveryPartBitForBit) {
  for (const RollupColumn& rows : {IntRows(), UintRows(), FloatRows(), FullBlock()}) {
    SCOPED_TRACE(testing::Message() << FieldTypeName(rows.type) << ", " << rows.size() << " rows");
    const std::string bytes = Encoded(rows);
    RollupColumn decoded = Stale();
    const Status s = DecodeRollups(bytes, kRollupAll, &decoded);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectSameRows(decoded, rows, true);
  }
  RollupColumn empty;
  empty.Reset(FieldType::kInt);
  RollupColumn decoded = Stale();
  ASSERT_TRUE(DecodeRollups(Encoded(empty), kRollupAll, &decoded).ok());
  ExpectSameRows(decoded, empty, true);
}

// Blocks of rollup format 1, as gpulse wrote them before format 3
// (tests/support/first_format_rollups.h): a data directory from then keeps
// reading.
TEST(RollupTest, BlocksOfTheFirstFormatStillRead) {
  const std::string format1_int = gpulse::test::FirstFormatIntBlock();
  const std::string format1_float = gpulse::test::FirstFormatFloatBlock();
  for (const auto& [type, bytes] :
       {std::pair{FieldType::kInt, &format1_int}, std::pair{FieldType::kFloat, &format1_float}}) {
    SCOPED_TRACE(FieldTypeName(type));
    ASSERT_EQ((*bytes)[0], 1);
    const Column raw = gpulse::test::FirstFormatPoints(type);
    RollupColumn want;
    want.Reset(type);
    BuildRollups(raw, 0, raw.size(), k1h, &want);
    ASSERT_EQ(want.size(), 3u);
    RollupColumn got = Stale();
    const Status s = DecodeRollups(*bytes, kRollupAll, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectSameRows(got, want, true);
    // Written again, it is format 4, and reads the same.
    const std::string again = Encoded(got);
    EXPECT_EQ(again[0], 4);
    EXPECT_LT(again.size(), bytes->size());
    ASSERT_TRUE(DecodeRollups(again, kRollupAll, &got).ok());
    ExpectSameRows(got, want, true);
  }
}

// Blocks of rollup format 3, as gpulse wrote them before format 4
// (tests/support/third_format_rollups.h): they read as the rows they were
// built from; written again (format 4), the one-decimal floats are smaller
// and the integers at most the three bytes of the column methods larger.
TEST(RollupTest, BlocksOfTheThirdFormatStillRead) {
  const std::string format3_int = gpulse::test::ThirdFormatIntBlock();
  const std::string format3_float = gpulse::test::ThirdFormatFloatBlock();
  for (const auto& [type, bytes] :
       {std::pair{FieldType::kInt, &format3_int}, std::pair{FieldType::kFloat, &format3_float}}) {
    SCOPED_TRACE(FieldTypeName(type));
    ASSERT_EQ((*bytes)[0], 3);
    EXPECT_TRUE(IsOlderFormatRollupBlock(*bytes));
    const Column raw = gpulse::test::FirstFormatPoints(type);
    RollupColumn want;
    want.Reset(type);
    BuildRollups(raw, 0, raw.size(), k1h, &want);
    for (Sketch& s : want.sketch) s = Sketch();  // the 1h tier keeps none
    RollupColumn got = Stale();
    const Status s = DecodeRollups(*bytes, kRollupAll, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectSameRows(got, want, true);
    std::string again;
    EncodeRollups(got, false, &again);
    EXPECT_EQ(again[0], 4);
    EXPECT_FALSE(IsOlderFormatRollupBlock(again));
    if (type == FieldType::kFloat) {
      EXPECT_LT(again.size(), bytes->size());
    } else {
      EXPECT_LE(again.size(), bytes->size() + 3);
    }
    ASSERT_TRUE(DecodeRollups(again, kRollupAll, &got).ok());
    ExpectSameRows(got, want, true);
  }
}

// The 1d blocks of format 3 keep their sketches (bins as nibbles): they
// read as the row and sketch built from the points, and written again
// (format 4, bins by count) read the same.
TEST(RollupTest, DayBlocksOfTheThirdFormatKeepTheirSketches) {
  const std::string int_day = gpulse::test::ThirdFormatIntDayBlock();
  const std::string float_day = gpulse::test::ThirdFormatFloatDayBlock();
  for (const auto& [type, bytes] :
       {std::pair{FieldType::kInt, &int_day}, std::pair{FieldType::kFloat, &float_day}}) {
    SCOPED_TRACE(FieldTypeName(type));
    ASSERT_EQ((*bytes)[0], 3);
    const Column raw = gpulse::test::FirstFormatPoints(type);
    RollupColumn want;
    want.Reset(type);
    BuildRollups(raw, 0, raw.size(), k1d, &want);
    ASSERT_EQ(want.size(), 1u);
    ASSERT_FALSE(want.sketch[0].empty());
    RollupColumn got = Stale();
    const Status s = DecodeRollups(*bytes, kRollupAll, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectSameRows(got, want, true);
    const std::string again = Encoded(got);
    EXPECT_EQ(again[0], 4);
    ASSERT_TRUE(DecodeRollups(again, kRollupAll, &got).ok());
    ExpectSameRows(got, want, true);
  }
}

// Rows of a tier that keeps no sketches (storage::KeepsSketches) are stored
// without them and read back with empty ones; every other part is kept.
TEST(RollupTest, RowsStoredWithoutSketchesKeepEveryOtherPart) {
  for (const RollupColumn& rows : {IntRows(), UintRows(), FloatRows(), FullBlock()}) {
    SCOPED_TRACE(testing::Message() << FieldTypeName(rows.type) << ", " << rows.size() << " rows");
    std::string bare;
    EncodeRollups(rows, false, &bare);
    EXPECT_LT(bare.size(), Encoded(rows).size());
    RollupColumn decoded = Stale();
    ASSERT_TRUE(DecodeRollups(bare, kRollupAll, &decoded).ok());
    RollupColumn want = rows;
    for (Sketch& s : want.sketch) s = Sketch();
    ExpectSameRows(decoded, want, true);
    // Asked for sketches alone, it has one (empty) a row; not asked, none.
    ASSERT_TRUE(DecodeRollups(bare, kRollupSketch, &decoded).ok());
    EXPECT_EQ(decoded.sketch, want.sketch);
    ASSERT_TRUE(DecodeRollups(bare, kRollupMinMax, &decoded).ok());
    EXPECT_TRUE(decoded.sketch.empty());
  }
  EXPECT_FALSE(KeepsSketches(0));
  EXPECT_FALSE(KeepsSketches(1));
  EXPECT_TRUE(KeepsSketches(2));
  EXPECT_STREQ(kTiers[kSketchTier].name, "1d");
}

// Buckets and point offsets are written in the largest unit dividing them
// all: minute data's hour rows cost a few bytes, and a point a nanosecond off
// the grid is still kept to the nanosecond.
TEST(RollupTest, BucketsAndOffsetsKeepTheirNanosecondsInAnyUnit) {
  const Column minutes = gpulse::test::FirstFormatPoints(FieldType::kInt);
  for (const int64_t shift : {int64_t{0}, int64_t{1}, kSecond, -k1d, -k1d + 7}) {
    SCOPED_TRACE(shift);
    Column raw = minutes;
    for (int64_t& t : raw.ts) t += shift;
    raw.ts.back() += 1;  // one point off the others' grid
    RollupColumn rows;
    rows.Reset(FieldType::kInt);
    BuildRollups(raw, 0, raw.size(), k1h, &rows);
    RollupColumn got;
    ASSERT_TRUE(DecodeRollups(Encoded(rows), kRollupAll, &got).ok());
    ExpectSameRows(got, rows, true);
  }
  // Minute data's offsets in minutes take a byte each; the same rows a
  // nanosecond off the minute take six for the last point's.
  const auto bare_size = [](const Column& raw) {
    RollupColumn rows;
    rows.Reset(raw.type);
    BuildRollups(raw, 0, raw.size(), k1h, &rows);
    std::string bare;
    EncodeRollups(rows, false, &bare);
    return bare.size();
  };
  Column off = minutes;
  for (int64_t& t : off.ts) t += 1;
  EXPECT_LE(bare_size(minutes) + 3 * 5, bare_size(off));
}

TEST(RollupTest, DecodeFillsOnlyTheRequestedPartsBesideBucketsAndCounts) {
  const RollupColumn rows = IntRows();
  const std::string bytes = Encoded(rows);
  for (uint32_t part : {kRollupSum, kRollupMinMax, kRollupFirstLast, kRollupSketch}) {
    SCOPED_TRACE(testing::Message() << "part " << part);
    RollupColumn decoded = Stale();
    ASSERT_TRUE(DecodeRollups(bytes, part, &decoded).ok());
    EXPECT_EQ(decoded.type, FieldType::kInt);
    EXPECT_EQ(decoded.bucket, rows.bucket);
    EXPECT_EQ(decoded.count, rows.count);
    const Column none = [] {
      Column c;
      c.type = FieldType::kInt;
      return c;
    }();
    const bool sum = part == kRollupSum, minmax = part == kRollupMinMax,
               firstlast = part == kRollupFirstLast, sketch = part == kRollupSketch;
    EXPECT_EQ(Bits(decoded.dsum), Bits(sum ? rows.dsum : std::vector<double>{}));
    ExpectSameColumn(decoded.sum, sum ? rows.sum : none, "sum", true);
    ExpectSameColumn(decoded.min, minmax ? rows.min : none, "min", true);
    ExpectSameColumn(decoded.max, minmax ? rows.max : none, "max", true);
    ExpectSameColumn(decoded.first, firstlast ? rows.first : none, "first", true);
    ExpectSameColumn(decoded.last, firstlast ? rows.last : none, "last", true);
    EXPECT_EQ(decoded.sketch, sketch ? rows.sketch : std::vector<Sketch>{});
  }
}

// ---------------------------------------------------------------------------
// DecodeRollups on corrupt input

// Encodings of each form a decoder must read.
using Forms = BlockForms;
Forms SampleForms() {
  Forms f;
  RollupColumn tiny;
  tiny.Reset(FieldType::kInt);
  PushRow<int64_t>(&tiny, kT0, 2, 3, 3, 1, 2, kT0, 1, kT0 + 1, 2,
                   SketchOf(std::vector<int64_t>{1, 2}));
  f.tiny = Encoded(tiny);
  f.compressed = Encoded(FullBlock());
  f.big_plain = UncompressedBlock(f.compressed);
  return f;
}

// After any decode that reports OK, every requested part has one entry per row.
void ExpectConsistentIfOk(const Status& s, const RollupColumn& out) {
  if (!s.ok()) return;
  const size_t n = out.bucket.size();
  EXPECT_EQ(out.count.size(), n);
  EXPECT_EQ(out.dsum.size(), n);
  for (const Column* c : {&out.sum, &out.min, &out.max, &out.first, &out.last}) {
    EXPECT_EQ(c->ts.size(), n);
  }
  EXPECT_EQ(out.sketch.size(), n);
}

TEST(RollupTest, DecodeRejectsMalformedHeaders) {
  const Forms f = SampleForms();
  ASSERT_EQ(f.tiny[1], 0) << "the tiny block must stay plain";
  ASSERT_EQ(f.compressed[1], 2) << "the full block must compress";
  RollupColumn out;
  ASSERT_TRUE(DecodeRollups(f.tiny, kRollupAll, &out).ok());
  ASSERT_TRUE(DecodeRollups(f.compressed, kRollupAll, &out).ok());
  ASSERT_TRUE(DecodeRollups(f.big_plain, kRollupAll, &out).ok());
  ExpectSameRows(out, FullBlock(), true);

  EXPECT_TRUE(DecodeRollups("", kRollupAll, &out).IsCorruption());
  EXPECT_TRUE(DecodeRollups(std::string_view("\x01", 1), kRollupAll, &out).IsCorruption());
  for (const std::string* block : {&f.tiny, &f.compressed}) {
    for (char format : {'\x00', '\x02', '\xff'}) {
      std::string bad = *block;
      bad[0] = format;
      EXPECT_TRUE(DecodeRollups(bad, kRollupAll, &out).IsCorruption()) << int{format};
    }
    for (char compression : {'\x03', '\x7f', '\xff'}) {
      std::string bad = *block;
      bad[1] = compression;
      EXPECT_TRUE(DecodeRollups(bad, kRollupAll, &out).IsCorruption()) << int{compression};
    }
  }
  // A field type without rollups.
  std::string strings = f.tiny;
  strings[2] = static_cast<char>(FieldType::kString);
  EXPECT_TRUE(DecodeRollups(strings, kRollupAll, &out).IsCorruption());
  // A zstd body read as plain, and a plain one read as zstd: any status, no crash.
  std::string swapped = f.compressed;
  swapped[1] = 0;
  ExpectConsistentIfOk(DecodeRollups(swapped, kRollupAll, &out), out);
  swapped = f.big_plain;
  for (char compression : {'\x01', '\x02'}) {
    swapped[1] = compression;
    EXPECT_FALSE(DecodeRollups(swapped, kRollupAll, &out).ok()) << int{compression};
  }
}

// A plain block's framing: the format, the type, the row count, the units
// (formats 3 and 4), the column methods (format 4: five nibbles, sum, min,
// max, first, last) and the five sections, each kept as its bytes.
struct Framing {
  uint8_t format = 4;
  uint8_t type = 0;
  uint64_t rows = 0;
  uint8_t units = 0;
  std::string methods;
  std::string sections[5];
};

Framing Split(const std::string& plain_block) {
  EXPECT_EQ(plain_block[1], 0);
  Framing f;
  f.format = static_cast<uint8_t>(plain_block[0]);
  ByteReader r(std::string_view(plain_block).substr(2));
  EXPECT_TRUE(r.ReadByte(&f.type) && r.ReadVarint64(&f.rows));
  if (f.format >= 3) {
    EXPECT_TRUE(r.ReadByte(&f.units));
  }
  if (f.format == 4) {
    std::string_view methods;
    EXPECT_TRUE(r.ReadBytes(3, &methods));
    f.methods = methods;
  }
  for (std::string& section : f.sections) {
    uint64_t len = 0;
    std::string_view bytes;
    EXPECT_TRUE(r.ReadVarint64(&len) && r.ReadBytes(len, &bytes));
    section = bytes;
  }
  EXPECT_EQ(r.remaining(), 0u);
  return f;
}

std::string Join(const Framing& f) {
  std::string out;
  out.push_back(static_cast<char>(f.format));
  out.push_back('\0');
  out.push_back(static_cast<char>(f.type));
  PutVarint64(&out, f.rows);
  if (f.format >= 3) out.push_back(static_cast<char>(f.units));
  out += f.methods;
  for (const std::string& section : f.sections) {
    PutVarint64(&out, section.size());
    out += section;
  }
  return out;
}

// The method nibble of value column c (0 sum, 1 min, 2 max, 3 first, 4 last)
// of a format-4 block.
int MethodOf(const Framing& f, size_t c) {
  return static_cast<uint8_t>(f.methods[c / 2]) >> (c % 2 == 0 ? 0 : 4) & 15;
}

// Format 4 writes each value column by the method that makes it smallest
// (docs/format/rollups.md): a counter's first and last from the same row's
// min and max, readings with one decimal as integers of tenths, and any
// float column with a value no decimal form has (NaN, -0.0, infinities,
// 0.1 + 0.2) as XORed doubles. Every one reads back bit for bit.
TEST(RollupTest, EachValueColumnIsWrittenByItsSmallestMethodAndReadBitForBit) {
  // A counter: each hour's first is its min and its last its max.
  RollupColumn counter;
  counter.Reset(FieldType::kInt);
  int64_t at = 171'198'588'053'049;
  for (int h = 0; h < 24; ++h) {
    const int64_t first = at, last = at + 101'444'418'653'137 + h * 7'919;
    const int64_t sum = first * 30 + last * 30;
    PushRow<int64_t>(&counter, kT0 + h * k1h, 60, static_cast<double>(sum), sum, first, last,
                     kT0 + h * k1h, first, kT0 + h * k1h + 59 * kMinute, last, Sketch());
    at = last + 1'743'000'000'000;
  }
  // Power readings with one decimal; the sums are not decimals.
  const RollupColumn power = FullBlock();
  const auto plain = [](const RollupColumn& rows) {
    std::string block;
    EncodeRollups(rows, false, &block);
    return block[1] == 0 ? block : UncompressedBlock(block);
  };
  const Framing c = Split(plain(counter));
  EXPECT_EQ(MethodOf(c, 0), 0) << "sum from the previous row";
  EXPECT_EQ(MethodOf(c, 1), 0) << "min from the previous row";
  EXPECT_EQ(MethodOf(c, 3), 1) << "first from min";
  EXPECT_EQ(MethodOf(c, 4), 1) << "last from max";
  const Framing p = Split(plain(power));
  EXPECT_EQ(MethodOf(p, 0), 0) << "the double sums as XORed doubles";
  for (size_t col = 1; col < 5; ++col) {
    EXPECT_EQ(MethodOf(p, col) >> 1, 2) << "column " << col << ": tenths (1 + 1 digit)";
  }
  const Framing x = Split(plain(FloatRows()));
  for (size_t col = 0; col < 5; ++col) {
    EXPECT_EQ(MethodOf(x, col), 0) << "column " << col << " has values no decimal form has";
  }
  const RollupColumn* const both[] = {&counter, &power};
  for (const RollupColumn* rows : both) {
    RollupColumn got = Stale();
    ASSERT_TRUE(DecodeRollups(plain(*rows), kRollupAll, &got).ok());
    RollupColumn want = *rows;
    for (Sketch& s : want.sketch) s = Sketch();
    ExpectSameRows(got, want, true);
    // First and last read alone (their references read for them).
    RollupColumn ends;
    ASSERT_TRUE(DecodeRollups(plain(*rows), kRollupFirstLast, &ends).ok());
    ExpectSameColumn(ends.first, want.first, "first", true);
    ExpectSameColumn(ends.last, want.last, "last", true);
    EXPECT_TRUE(ends.min.ts.empty() && ends.max.ts.empty()) << "min and max were not asked for";
  }
}

// First and last read alone decode min and max only when they were written
// from them: a damaged extremes section leaves a gauge's first and last
// readable, and a counter's (first from min, last from max) not. A float
// column whose reference holds a value with no decimal form (-0.0) is
// written from its previous row instead, and reads back bit for bit.
TEST(RollupTest, FirstAndLastReadTheirReferencesOnlyWhenWrittenFromThem) {
  RollupColumn gauge;
  gauge.Reset(FieldType::kFloat);
  // min holds -0.0 in one row: no decimal form, so min is XORed doubles and
  // first, with decimals of its own, cannot be written from it.
  const double mins[] = {-0.0, 0.5, 1.5, 2.5};
  for (int h = 0; h < 4; ++h) {
    const double first = mins[h] + 0.1 * h, last = mins[h] + 3.7;
    PushRow<double>(&gauge, kT0 + h * k1h, 60, 100.0 / 3, 100.0 / 3, mins[h], last + 100.3,
                    kT0 + h * k1h, first, kT0 + h * k1h + 59 * kMinute, last, Sketch());
  }
  RollupColumn counter;
  counter.Reset(FieldType::kInt);
  for (int h = 0; h < 4; ++h) {
    const int64_t first = int64_t{1'000'000'000} * h, last = first + 999'999'937;
    PushRow<int64_t>(&counter, kT0 + h * k1h, 60, 0, 0, first, last, kT0 + h * k1h, first,
                     kT0 + h * k1h + 59 * kMinute, last, Sketch());
  }
  for (const RollupColumn* rows : {&gauge, &counter}) {
    std::string block;
    EncodeRollups(*rows, false, &block);
    if (block[1] != 0) block = UncompressedBlock(block);
    Framing f = Split(block);
    const bool from_extremes = ((MethodOf(f, 3) | MethodOf(f, 4)) & 1) != 0;
    EXPECT_EQ(from_extremes, rows == &counter);
    RollupColumn got;
    ASSERT_TRUE(DecodeRollups(Join(f), kRollupFirstLast, &got).ok());
    ExpectSameColumn(got.first, rows->first, "first", true);
    ExpectSameColumn(got.last, rows->last, "last", true);
    f.sections[2] = "\xff";  // the extremes, damaged
    const Status damaged = DecodeRollups(Join(f), kRollupFirstLast, &got);
    EXPECT_EQ(damaged.ok(), !from_extremes) << damaged.ToString();
    EXPECT_TRUE(DecodeRollups(Join(f), kRollupMinMax, &got).IsCorruption());
  }
}

TEST(RollupTest, DecodeRejectsBlocksWhoseFramingDisagreesWithTheirRows) {
  const Forms forms = SampleForms();
  for (const std::string* block : {&forms.tiny, &forms.big_plain}) {
    SCOPED_TRACE(testing::Message() << block->size() << " bytes");
    const Framing f = Split(*block);
    ASSERT_EQ(Join(f), *block);
    RollupColumn out;
    ASSERT_TRUE(DecodeRollups(Join(f), kRollupAll, &out).ok());
    ASSERT_EQ(out.size(), f.rows);

    Framing bad = f;
    bad.rows = f.rows + 1;
    EXPECT_TRUE(DecodeRollups(Join(bad), kRollupAll, &out).IsCorruption()) << "one row more";
    bad.rows = f.rows - 1;  // the last sketch is left over
    EXPECT_TRUE(DecodeRollups(Join(bad), kRollupAll, &out).IsCorruption()) << "one row less";
    bad = f;
    bad.sections[4] += '\0';
    EXPECT_TRUE(DecodeRollups(Join(bad), kRollupAll, &out).IsCorruption()) << "sketch bytes left";
    EXPECT_TRUE(DecodeRollups(Join(bad), kRollupSketch, &out).IsCorruption());
    bad.sections[4].resize(f.sections[4].size() - 1);
    EXPECT_TRUE(DecodeRollups(Join(bad), kRollupSketch, &out).IsCorruption()) << "sketch cut";
    // Column methods no encoder writes: the sum or the minimum from a
    // reference they do not have, a decimal integer column, the spare nibble.
    for (const auto& [at, method, parts] :
         {std::tuple{0, '\x01', kRollupSum}, std::tuple{0, '\x10', kRollupMinMax},
          std::tuple{1, '\x02', kRollupMinMax}, std::tuple{2, '\x10', kRollupAll}}) {
      if (method == '\x02' && f.type == static_cast<uint8_t>(FieldType::kFloat)) continue;
      bad = f;
      bad.methods[at] = static_cast<char>(bad.methods[at] | method);
      EXPECT_TRUE(DecodeRollups(Join(bad), parts, &out).IsCorruption())
          << "method byte " << at << " |= " << int{method};
    }
  }
  // A row count far past what the bytes could hold is rejected before
  // anything is allocated for it.
  Framing huge;
  huge.type = static_cast<uint8_t>(FieldType::kInt);
  huge.rows = uint64_t{1} << 40;
  RollupColumn out;
  EXPECT_TRUE(DecodeRollups(Join(huge), kRollupAll, &out).IsCorruption());
  huge.rows = kU64Max;
  EXPECT_TRUE(DecodeRollups(Join(huge), kRollupMinMax, &out).IsCorruption());
}

TEST(RollupTest, DecodeRejectsEveryTruncation) {
  const Forms f = SampleForms();
  for (const std::string* block : {&f.tiny, &f.compressed, &f.big_plain}) {
    SCOPED_TRACE(testing::Message() << block->size() << " bytes");
    for (size_t len = 0; len < block->size(); ++len) {
      for (uint32_t parts : {uint32_t{kRollupAll}, uint32_t{kRollupMinMax}}) {
        RollupColumn out;
        const Status s = DecodeRollups(std::string_view(block->data(), len), parts, &out);
        EXPECT_FALSE(s.ok()) << "prefix of " << len;
        if (s.ok()) return;  // one report is enough
      }
    }
  }
}

TEST(RollupTest, DecodeSurvivesRandomByteFlips) {
  const Forms f = SampleForms();
  std::mt19937_64 rng(40);
  for (const std::string* block : {&f.tiny, &f.compressed, &f.big_plain}) {
    for (int trial = 0; trial < 300; ++trial) {
      std::string bad = *block;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < flips; ++k) {
        const size_t at = rng() % bad.size();
        bad[at] = static_cast<char>(bad[at] ^ static_cast<char>(1 + rng() % 255));
      }
      RollupColumn out;
      const Status s = DecodeRollups(bad, kRollupAll, &out);
      ExpectConsistentIfOk(s, out);
      if (s.ok()) {
        // Decoded sketches must be usable: merging them stays in bounds.
        SketchAccumulator acc;
        for (const Sketch& sk : out.sketch) acc.Add(sk);
        if (acc.count() > 0) (void)acc.ValueAtRank(acc.count() - 1);
      }
    }
  }
}

}  // namespace
}  // namespace gpulse::storage
