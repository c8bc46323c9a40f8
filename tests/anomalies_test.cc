// ANOMALIES (query/fleet/anomalies.h) and the isolation forest under it: an
// isolated point scores high, a crowd near 0.5, and the statement's misuses
// are errors. The simulated fortnight with an odd day is a slow test
// (tests/slow/anomalies_sim_test.cc).

#include "query/fleet/anomalies.h"

#include <gtest/gtest.h>

#include <random>

#include "query/fleet/isolation_forest.h"
#include "query/query.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
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

  StatementResult Run(const std::string& q) { return test::RunFirst(db_.get(), q); }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

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
