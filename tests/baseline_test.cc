// BASELINE (query/fleet/baseline.cc): expected value and band from the same time
// of day on earlier days of the same kind. The simulator's weekday retrains
// are normal; the same rise on a Sunday is not. Hand-made days pin the
// median, the MAD band and the errors.

#include <gtest/gtest.h>

#include "engine/gpulse.h"
#include "ingest/fleet_sim.h"
#include "query/query.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
constexpr int64_t kMonday = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

class BaselineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = test::OpenQuietDb(dir_.path());
    ASSERT_NE(db_, nullptr);
  }

  // The rows of the first statement's first series, as time -> row.
  std::map<int64_t, std::vector<QueryValue>> Rows(const std::string& q, Status* status = nullptr) {
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db_.get(), q, {}, &r).ok()) << q;
    std::map<int64_t, std::vector<QueryValue>> rows;
    const StatementResult& st = r.statements.at(0);
    if (status != nullptr) *status = st.status;
    if (!st.status.ok() || st.series.empty()) return rows;
    EXPECT_EQ(st.series[0].columns, (std::vector<std::string>{"time", "value", "expected", "lower",
                                                              "upper", "deviation"}));
    for (const auto& row : st.series[0].values) rows[std::get<int64_t>(row[0])] = row;
    return rows;
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

TEST_F(BaselineTest, WeekdayRetrainsAreNormalAndTheSameRiseOnASundayIsNot) {
  fleet::SimOptions s = test::SmallFleet(4, 8, 4, kMonday);
  s.regions = 1;  // us-east: the retrain cron fires at 02:00 local, 07:00Z
  test::SimulateInto(db_.get(), s);
  // Someone runs the retrain by hand on Sunday 2026-11-08 at 07:00Z.
  const int64_t sunday = kMonday + 6 * kDay + 7 * kHour;
  ASSERT_TRUE(db_->Write({Point{"sched",
                                {{"event", "submitted"}, {"queue", "train"}, {"region", "us-east"}},
                                {{"job", std::string("manual-retrain")},
                                 {"workload_class", std::string("retrain")},
                                 {"requested_gpus", int64_t{8}}},
                                sunday + 1}})
                  .ok());
  const auto rows = Rows(
      "SELECT BASELINE(count(job), 7d) FROM sched WHERE event = 'submitted' AND workload_class = "
      "'retrain' AND "
      "time >= '2026-11-08T00:00:00Z' AND time < '2026-11-10T00:00:00Z' GROUP BY time(1h) FILL(0)");
  ASSERT_EQ(rows.size(), 48u);
  const auto fires = [&](int64_t t) {
    const auto& row = rows.at(t);
    return std::get<double>(row[1]) > std::get<double>(row[4]) ||
           std::get<double>(row[1]) < std::get<double>(row[3]);
  };
  EXPECT_TRUE(fires(sunday));  // 1 where Saturday had 0
  EXPECT_FALSE(
      fires(kMonday + 7 * kDay + 7 * kHour));  // Monday's retrain: as on the weekdays before
  EXPECT_GT(std::get<double>(rows.at(sunday)[5]), 3.0);
  int fired = 0;
  for (const auto& [t, row] : rows) fired += fires(t);
  EXPECT_EQ(fired, 1);
}

TEST_F(BaselineTest, MedianAndMadOfTheSameHourOnDaysOfTheSameKind) {
  // Monday to Friday at 10:00, util 10, 20, 30, 40 then 100 on the fifth
  // weekday; the weekend at 10:00 is 500, which a weekday never sees.
  const double weekday_values[] = {10, 20, 30, 40, 100};
  std::vector<Point> points;
  for (int d = 0; d < 7; ++d) {
    const double v = d < 5 ? weekday_values[d] : 500;
    points.push_back({"gpu", {{"node", "n1"}}, {{"util", v}}, kMonday + d * kDay + 10 * kHour});
  }
  ASSERT_TRUE(db_->Write(points).ok());
  const auto rows = Rows(
      "SELECT BASELINE(mean(util), 7d, 2) FROM gpu WHERE time >= '2026-11-06T00:00:00Z' AND "
      "time < '2026-11-07T00:00:00Z' GROUP BY time(1h)");
  ASSERT_EQ(rows.size(), 1u);  // only the hour with a point
  const auto& friday = rows.begin()->second;
  // Samples: 10, 20, 30, 40 (the weekend's 500 left out): median 25,
  // MAD median(15, 5, 5, 15) = 10, sigma 14.826, k = 2.
  EXPECT_DOUBLE_EQ(std::get<double>(friday[1]), 100);
  EXPECT_DOUBLE_EQ(std::get<double>(friday[2]), 25);
  EXPECT_NEAR(std::get<double>(friday[3]), 25 - 2 * 14.826, 1e-9);
  EXPECT_NEAR(std::get<double>(friday[4]), 25 + 2 * 14.826, 1e-9);
  EXPECT_NEAR(std::get<double>(friday[5]), 75 / 14.826, 1e-9);
}

TEST_F(BaselineTest, MaintenanceAndKnownSeasonsAreLeftOutOfTheHistory) {
  const double weekday_values[] = {10, 20, 30, 40, 100};
  std::vector<Point> points;
  for (int d = 0; d < 5; ++d) {
    points.push_back(
        {"gpu", {{"node", "n1"}}, {{"util", weekday_values[d]}}, kMonday + d * kDay + 10 * kHour});
  }
  // n1 was drained for a kernel patch on Tuesday from 09:00 to 12:00.
  points.push_back({"maintenance",
                    {{"node", "n1"}, {"reason", "kernel-patch"}},
                    {{"end", kMonday + kDay + 12 * kHour}},
                    kMonday + kDay + 9 * kHour});
  ASSERT_TRUE(db_->Write(points).ok());
  const std::string q =
      "SELECT BASELINE(mean(util), 7d, 2) FROM gpu WHERE time >= '2026-11-06T00:00:00Z' AND "
      "time < '2026-11-07T00:00:00Z' GROUP BY node, time(1h)";
  // Samples 10, 30, 40: median 30.
  auto rows = Rows(q);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(std::get<double>(rows.begin()->second[2]), 30);
  // Wednesday was a launch day, known in advance: 10, 40 -> median 25.
  QueryResult r;
  ASSERT_TRUE(
      gpulse::Query(db_.get(), "CREATE SEASON launch FROM '2026-11-04' TO '2026-11-05'", {}, &r)
          .ok());
  ASSERT_TRUE(r.statements.at(0).status.ok()) << r.statements[0].status.ToString();
  rows = Rows(q);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(std::get<double>(rows.begin()->second[2]), 25);
}

TEST_F(BaselineTest, ItsMisusesAreErrors) {
  Status s;
  Rows(
      "SELECT BASELINE(mean(util), 7d), max(util) FROM gpu WHERE time >= now() - 1d GROUP BY "
      "time(1h)",
      &s);
  EXPECT_NE(s.message().find("only field"), std::string::npos) << s.ToString();
  Rows("SELECT BASELINE(mean(util), 7d) FROM gpu WHERE time >= now() - 1d", &s);
  EXPECT_NE(s.message().find("GROUP BY time"), std::string::npos) << s.ToString();
  Rows("SELECT BASELINE(mean(util), 7d) FROM gpu WHERE time >= now() - 1d GROUP BY time(7h)", &s);
  EXPECT_NE(s.message().find("divide a day"), std::string::npos) << s.ToString();
  Rows("SELECT BASELINE(mean(util), 12h) FROM gpu WHERE time >= now() - 1d GROUP BY time(1h)", &s);
  EXPECT_NE(s.message().find("from 1d"), std::string::npos) << s.ToString();
  Rows("SELECT BASELINE(mean(util), 100000d) FROM gpu WHERE time >= now() - 1d GROUP BY time(1h)",
       &s);
  EXPECT_NE(s.message().find("from 1d to 3660d"), std::string::npos) << s.ToString();
  Rows("SELECT BASELINE(mean(util), 7d) FROM gpu GROUP BY time(1h)", &s);
  EXPECT_NE(s.message().find("time range"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace gpulse
