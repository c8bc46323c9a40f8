// PromQL's range functions over the tiers (query/promeval/window_fold.h):
// sum, count, avg, min, max, last and present _over_time answered from the
// rows of whole buckets must equal the same functions over the raw samples,
// for every window the rows can answer and, by falling back to the raw
// samples, for every window they cannot: ranges and steps aligned to the
// buckets or not, offsets, @, gaps, jittered scrape times, integer fields,
// NaN and infinities, points flushed and points still in the head. And the
// tiers are what answered: under a bound on the points a query may read
// that the raw samples pass, the tiered query still runs.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/promeval/run.h"
#include "tests/support/quiet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

using query::promeval::PromAnswer;
using query::promeval::PromFailure;
using query::promeval::PromRequest;
using query::promeval::RunPromQL;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'006'400;  // seconds: a whole day (and hour) in UTC
constexpr int64_t kHours = 8;

class PromqlTiersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options options = test::QuietDbOptions();
    options.tiers = {"5m", "1h", "1d"};
    ASSERT_TRUE(Db::Open(options, dir_.path(), &db_).ok());
    std::mt19937_64 rng(7);
    std::vector<Point> points;
    for (int node = 0; node < 3; ++node) {
      for (int gpu = 0; gpu < 2; ++gpu) {
        // Node 2 scrapes 7 s past each minute; node 1 is silent for 37
        // minutes; node 0's GPU 1 has a NaN and an infinity of `spare`.
        const int64_t offset = node == 2 ? 7 : 0;
        for (int64_t m = 0; m < kHours * 60; ++m) {
          if (node == 1 && m >= 130 && m < 167) continue;
          const int64_t t = (kT0 + m * 60 + offset) * kSecond;
          Point p{"gpu",
                  {{"gpu", std::to_string(gpu)}, {"node", "n" + std::to_string(node)}},
                  {{"util", static_cast<int64_t>(rng() % 101)},
                   {"power", 100 + static_cast<double>(rng() % 100000) / 997.0}},
                  t};
          if (node == 0 && gpu == 1) {
            const double spare = m == 200 ? NAN : m == 300 ? INFINITY : static_cast<double>(m);
            p.fields.push_back({"spare", spare});
          }
          points.push_back(std::move(p));
        }
      }
      // The first half flushed to blocks and tiers, the rest in the head.
      if (node == 1) {
        ASSERT_TRUE(db_->Write(points).ok());
        points.clear();
        ASSERT_TRUE(db_->Flush().ok());
      }
    }
    ASSERT_TRUE(db_->Write(points).ok());
  }

  // The answer of `text` with and without the tiers; the query must run.
  PromAnswer Ask(const std::string& text, int64_t start, int64_t end, int64_t step, bool tiers,
                 uint64_t max_points = 0) {
    PromRequest request;
    request.text = text;
    request.start = start * 1000;
    request.end = end * 1000;
    request.step = step * 1000;
    request.instant = start == end;
    request.use_tiers = tiers;
    QueryOptions options;
    if (max_points != 0) options.limits.max_points = max_points;
    PromAnswer answer;
    PromFailure failure;
    last_ = RunPromQL(db_.get(), request, options, &answer, &failure);
    std::sort(answer.series.begin(), answer.series.end(),
              [](const auto& a, const auto& b) { return a.labels < b.labels; });
    return answer;
  }

  // Both answers: the same series and steps, values equal (sums and means
  // within a relative 1e-12: the tiers add bucket sums, not samples).
  void ExpectSame(const std::string& text, int64_t start, int64_t end, int64_t step) {
    SCOPED_TRACE(text + " from " + std::to_string(start - kT0) + " to " +
                 std::to_string(end - kT0) + " step " + std::to_string(step));
    const PromAnswer raw = Ask(text, start, end, step, false);
    ASSERT_TRUE(last_.ok()) << last_.ToString();
    const PromAnswer tiered = Ask(text, start, end, step, true);
    ASSERT_TRUE(last_.ok()) << last_.ToString();
    ASSERT_EQ(raw.series.size(), tiered.series.size());
    for (size_t i = 0; i < raw.series.size(); ++i) {
      const auto& a = raw.series[i];
      const auto& b = tiered.series[i];
      ASSERT_EQ(a.labels, b.labels);
      ASSERT_EQ(a.has, b.has) << i;
      for (size_t k = 0; k < a.values.size(); ++k) {
        if (!a.has[k]) continue;
        const double x = a.values[k], y = b.values[k];
        if (x == y) continue;
        if (std::isnan(x) || std::isnan(y)) {
          EXPECT_TRUE(std::isnan(x) && std::isnan(y)) << k;
        } else {
          EXPECT_NEAR(x, y, 1e-12 * std::max(1.0, std::fabs(x))) << "series " << i << " step " << k;
        }
      }
    }
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
  Status last_;
};

TEST_F(PromqlTiersTest, EveryFoldOverEveryWindowEqualsTheRawSamples) {
  const char* functions[] = {"sum_over_time",    "count_over_time", "avg_over_time",
                             "min_over_time",    "max_over_time",   "last_over_time",
                             "present_over_time"};
  const char* ranges[] = {"5m", "15m", "1h", "2h", "90s", "7m", "3h30m"};
  // (start, end, step) in seconds past kT0: steps on the buckets' edges and
  // off them.
  const int64_t spans[][3] = {{3600, 8 * 3600, 3600},  {1800, 6 * 3600, 300},
                              {3600, 3 * 3600, 60},    {4000, 7 * 3600, 420},
                              {8 * 3600, 8 * 3600, 1}, {5 * 3600 + 17, 5 * 3600 + 17, 1}};
  for (const char* f : functions) {
    for (const char* range : ranges) {
      for (const auto& span : spans) {
        for (const char* metric : {"gpu_util", "gpu_power", "gpu_spare"}) {
          ExpectSame(std::string(f) + "(" + metric + "[" + range + "])", kT0 + span[0],
                     kT0 + span[1], span[2]);
        }
      }
    }
  }
}

TEST_F(PromqlTiersTest, OffsetAtAndSelectorsEqualTheRawSamples) {
  for (const std::string q :
       {"sum_over_time(gpu_util[1h] offset 30m)", "max_over_time(gpu_power{node=\"n2\"}[1h])",
        "avg_over_time(gpu_util{gpu=~\"1\"}[2h] @ 14400)",
        "last_over_time({__name__=~\"gpu_.*\", node!=\"n0\"}[1h])",
        "sum by (node) (sum_over_time(gpu_util[1h])) / sum by (node) "
        "(count_over_time(gpu_util[1h]))",
        "last_over_time(gpu_spare[1h] offset 1h)",
        // Windows whose ends lie past int64's nanoseconds either way.
        "max_over_time(gpu_util[1h] @ 100000000000)",
        "count_over_time(gpu_util[1h] @ -100000000000)"}) {
    ExpectSame(q, kT0 + 3600, kT0 + 8 * 3600, 3600);
    ExpectSame(q, kT0 + 8 * 3600, kT0 + 8 * 3600, 1);
  }
}

// Points less than a millisecond apart (line protocol in nanoseconds):
// PromQL sees the later of each millisecond, folded where it is read as in
// the evaluator.
TEST_F(PromqlTiersTest, PointsInOneMillisecondCountOnceWhereTheyAreFolded) {
  std::vector<Point> points;
  for (int64_t m = 0; m < 30; ++m) {
    const int64_t t = (kT0 + m * 60) * kSecond;
    points.push_back(
        Point{"dup", {{"node", "n0"}}, {{"v", static_cast<double>(m)}, {"n", 50 - m}}, t});
    if (m % 3 == 0) {
      points.push_back(Point{"dup",
                             {{"node", "n0"}},
                             {{"v", static_cast<double>(100 + m)}, {"n", int64_t{-m}}},
                             t + 400'000});
    }
  }
  ASSERT_TRUE(db_->Write(points).ok());
  for (const char* f : {"sum_over_time", "count_over_time", "min_over_time", "max_over_time",
                        "last_over_time", "avg_over_time"}) {
    for (const char* metric : {"dup_v", "dup_n"}) {
      ExpectSame(std::string(f) + "(" + metric + "[90s])", kT0, kT0 + 1800, 60);
    }
  }
  const PromAnswer a = Ask("count_over_time(dup_v[90s])", kT0 + 60, kT0 + 60, 1, true);
  ASSERT_EQ(a.series.size(), 1u);
  EXPECT_EQ(a.series[0].values[0], 2);  // the minutes 0 and 1, one point each
}

// Six series of 480 samples: the raw samples of 8 hours exceed a bound of
// 1,000 points; the 1h rows (8 a series) do not.
TEST_F(PromqlTiersTest, TheTiersAnswerWithinABoundTheRawSamplesExceed) {
  const std::string q = "count_over_time(gpu_util[8h])";
  const int64_t t = kT0 + 8 * 3600;
  Ask(q, t, t, 1, false, 1000);
  EXPECT_FALSE(last_.ok());
  const PromAnswer tiered = Ask(q, t, t, 1, true, 1000);
  ASSERT_TRUE(last_.ok()) << last_.ToString();
  const PromAnswer raw = Ask(q, t, t, 1, false);
  ASSERT_EQ(tiered.series.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(tiered.series[i].labels, raw.series[i].labels);
    EXPECT_EQ(tiered.series[i].values, raw.series[i].values);
  }
  // The 480 samples of [t - 8h, t] (t itself has none), but for node 1's
  // 37 silent minutes.
  EXPECT_EQ(tiered.series[0].values[0], 480);  // gpu 0 of n0
  EXPECT_EQ(tiered.series[1].values[0], 443);  // gpu 0 of n1
}

}  // namespace
}  // namespace gpulse
