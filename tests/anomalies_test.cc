// ANOMALIES (query/anomalies.h) and the isolation forest under it: an odd
// day of a cluster is flagged against the days of its kind, ordinary days
// are not, and the misuses are errors.

#include "query/anomalies.h"

#include <gtest/gtest.h>

#include <random>

#include "query/isolation_forest.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

constexpr int64_t kHour = 3600LL * 1'000'000'000;
constexpr int64_t kDay = 24 * kHour;
constexpr int64_t kMonday = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

TEST(IsolationForestTest, AnIsolatedPointScoresHighAndACrowdNear05) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n(0, 1);
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 200; ++i) rows.push_back({n(rng), 50 + 10 * n(rng)});
  rows.push_back({8, 50});  // far out on the first feature only
  const query::IsolationForest forest(rows, {});
  EXPECT_GT(forest.Score(rows.back()), 0.7);
  double mean = 0;
  for (int i = 0; i < 200; ++i) mean += forest.Score(rows[static_cast<size_t>(i)]) / 200;
  EXPECT_GT(mean, 0.35);
  EXPECT_LT(mean, 0.55);
  // The same seed gives the same forest; identical points are no trouble.
  EXPECT_EQ(query::IsolationForest(rows, {}).Score(rows[3]), forest.Score(rows[3]));
  const query::IsolationForest flat(std::vector<std::vector<double>>(10, {1.0, 2.0}), {});
  EXPECT_GT(flat.Score({1.0, 2.0}), 0.0);
  EXPECT_LT(flat.Score({1.0, 2.0}), 1.0);
}

class AnomaliesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = test::OpenQuietDb(dir_.path());
    ASSERT_NE(db_, nullptr);
  }

  StatementResult Run(const std::string& q) {
    QueryResult r;
    const Status s = db_->Query(q, {}, &r);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return r.statements.empty() ? StatementResult{} : std::move(r.statements[0]);
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

TEST_F(AnomaliesTest, AClusterDaySlowedByItsStorageIsFlagged) {
  // 8 nodes for two weeks; on Wednesday 2026-11-11 the storage of
  // us-east-c0 slows down and its GPUs wait on data all day.
  test::SimulateInto(db_.get(),
                     test::SmallFleet(8, 14, 3, kMonday, {"io-bottleneck@9d/1d:us-east-c0"}));
  const StatementResult r =
      Run("ANOMALIES BY cluster WHERE time >= '2026-11-02' AND time < '2026-11-16'");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.series.size(), 2u);
  const ResultSeries& east = r.series[1];
  ASSERT_EQ(east.tags, (std::vector<Tag>{{"cluster", "us-east-c0"}}));
  EXPECT_EQ(east.columns, (std::vector<std::string>{"time", "mean_util", "p95_util", "mean_cpu",
                                                    "p95_cpu", "score", "anomalous"}));
  ASSERT_EQ(east.values.size(), 14u);
  const int64_t incident_day = kMonday + 9 * kDay;
  double incident_score = 0, best_other_weekday = 0;
  size_t flagged = 0;
  for (const ResultSeries& s : r.series) {
    for (const auto& row : s.values) {
      const int64_t day = std::get<int64_t>(row[0]);
      const double score = std::get<double>(row[5]);
      flagged += std::get<bool>(row[6]) ? 1 : 0;
      if (&s != &east) continue;
      if (day == incident_day) {
        incident_score = score;
        EXPECT_TRUE(std::get<bool>(row[6]));
      } else if ((day - kMonday) / kDay % 7 < 5) {
        best_other_weekday = std::max(best_other_weekday, score);
      }
    }
  }
  EXPECT_GT(incident_score, best_other_weekday);
  EXPECT_LE(flagged, 3u) << "of 28 group-days";
}

TEST_F(AnomaliesTest, MisusesAreErrorsAndTooFewDaysSaySo) {
  EXPECT_EQ(Run("ANOMALIES BY gpu").status.message(),
            "line 1, column 14: ANOMALIES groups BY region, cluster, node or sku, not gpu");
  EXPECT_EQ(Run("ANOMALIES OVER 12h").status.message(),
            "line 1, column 16: OVER must be from 1d to 3660d");
  EXPECT_EQ(Run("ANOMALIES WHERE util > 3").status.message().substr(0, 19), "line 1, column 17: ");
  std::vector<Point> points;
  for (int d = 0; d < 3; ++d) {
    points.push_back({"gpu", {{"cluster", "c0"}}, {{"util", 50.0}}, kMonday + d * kDay});
  }
  ASSERT_TRUE(db_->Write(points).ok());
  const StatementResult r =
      Run("ANOMALIES BY cluster WHERE time >= '2026-11-02' AND time < '2026-11-09'");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.series.empty());
  ASSERT_GE(r.notes.size(), 2u);
  EXPECT_EQ(r.notes[r.notes.size() - 2],
            "scored on GPU util only: no node cpu_util in the range (docs/fleet-schema.md)");
  EXPECT_EQ(r.notes.back(),
            "weekdays are not scored: 3 group-days, and 8 are needed to tell odd from ordinary");
}

}  // namespace
}  // namespace gpulse
