// ANOMALIES on a simulated fortnight (query/fleet/anomalies.h): a day on which one
// cluster's storage slows is flagged, above every other weekday of that
// cluster, and few ordinary days are. Slow: two weeks of 8 nodes are
// simulated (about 8 s, two minutes under the sanitizers).

#include <gtest/gtest.h>

#include <algorithm>

#include "query/fleet/anomalies.h"
#include "query/query.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
constexpr int64_t kMonday = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

TEST(AnomaliesSimTest, AClusterDaySlowedByItsStorageIsFlagged) {
  storage::ScratchDir dir;
  std::unique_ptr<Db> db = test::OpenQuietDb(dir.path());
  ASSERT_NE(db, nullptr);
  // 8 nodes for two weeks; on Wednesday 2026-11-11 the storage of
  // us-east-c0 slows down and its GPUs wait on data all day.
  test::SimulateInto(db.get(),
                     test::SmallFleet(8, 14, 3, kMonday, {"io-bottleneck@9d/1d:us-east-c0"}));
  const StatementResult r = test::RunFirst(
      db.get(), "ANOMALIES BY cluster WHERE time >= '2026-11-02' AND time < '2026-11-16'");
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

}  // namespace
}  // namespace gpulse
