// SHOW KPIS (query/fleet/kpis.cc) on a simulated fleet: every KPI is listed with
// its owner, lead or lag and alert intent; values agree with the queries
// their definitions name, and move with the incidents that should move them.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/gpulse.h"
#include "ingest/fleet_sim.h"
#include "query/query.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

constexpr int64_t kT0 = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

class KpisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = test::OpenQuietDb(dir_.path());
    ASSERT_NE(db_, nullptr);
    test::SimulateInto(
        db_.get(),
        test::SmallFleet(8, 2, 9, kT0, {"thermal@1d/6h:us-east-c0-n001", "hw-fault@1d/12h"}));
  }

  struct Row {
    QueryValue value;
    std::string owner, lead_lag, intent, definition;
  };
  std::map<std::string, Row> Kpis(const std::string& range) {
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db_.get(), "SHOW KPIS WHERE " + range, {}, &r).ok());
    std::map<std::string, Row> out;
    const StatementResult& st = r.statements.at(0);
    EXPECT_TRUE(st.status.ok()) << st.status.ToString();
    if (st.series.empty()) return out;
    const ResultSeries& s = st.series[0];
    EXPECT_EQ(s.columns,
              (std::vector<std::string>{"name", "value", "unit", "leading_lagging", "owner",
                                        "alert_intent", "definition", "description"}));
    for (const auto& row : s.values) {
      out[std::get<std::string>(row[0])] = {
          row[1], std::get<std::string>(row[4]), std::get<std::string>(row[3]),
          std::get<std::string>(row[5]), std::get<std::string>(row[6])};
    }
    return out;
  }
  static double Number(const QueryValue& v) {
    if (std::holds_alternative<double>(v)) return std::get<double>(v);
    if (std::holds_alternative<int64_t>(v)) return static_cast<double>(std::get<int64_t>(v));
    ADD_FAILURE() << "not a number";
    return -1;
  }
  // Equal but for the last bits: the executor sums on both cores, in an
  // order that may differ from run to run.
  static void ExpectSame(double a, double b) {
    EXPECT_NEAR(a, b, 1e-12 * std::max(1.0, std::abs(b)));
  }
  double Query(const std::string& q) {
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db_.get(), q, {}, &r).ok()) << q;
    return Number(r.statements.at(0).series.at(0).values.at(0).at(1));
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

TEST_F(KpisTest, EveryKpiHasAnOwnerAnIntentAndAValueItsDefinitionGives) {
  const std::string day1 = "time >= '2026-11-02T00:00:00Z' AND time < '2026-11-03T00:00:00Z'";
  const auto kpis = Kpis(day1);
  ASSERT_GE(kpis.size(), 6u);
  ASSERT_LE(kpis.size(), 10u);
  for (const auto& [name, row] : kpis) {
    EXPECT_TRUE(row.owner == "Infra" || row.owner == "ML Platform" || row.owner == "Finance")
        << name;
    EXPECT_TRUE(row.lead_lag == "leading" || row.lead_lag == "lagging") << name;
    EXPECT_TRUE(row.intent == "page" || row.intent == "ticket" || row.intent == "dashboard")
        << name;
    EXPECT_NE(row.definition.find("$range"), std::string::npos) << name;
    EXPECT_FALSE(std::holds_alternative<std::monostate>(row.value)) << name << " has no value";
  }
  const std::string where = " WHERE " + day1;
  ExpectSame(Number(kpis.at("allocation_ratio").value),
             Query("SELECT count(job) / count(util) FROM gpu" + where));
  ExpectSame(Number(kpis.at("gpu_hours").value), Query("SELECT count(job) / 60 FROM gpu" + where));
  ExpectSame(Number(kpis.at("data_loader_share").value),
             Query("SELECT sum(data_loader_ms) / sum(step_time_ms) FROM job_step" + where));
  const double rate = Number(kpis.at("job_success_rate").value);
  EXPECT_GT(rate, 0.5);
  EXPECT_LE(rate, 1.0);
  // Day one has no incident: no hardware XID, no thermal throttling.
  EXPECT_DOUBLE_EQ(Number(kpis.at("hw_errors_per_1k_gpu_hours").value), 0);
  EXPECT_DOUBLE_EQ(Number(kpis.at("thermal_throttled_share").value), 0);
  EXPECT_GT(Number(kpis.at("cost_per_productive_gpu_hour").value),
            1.0);  // dearer than the cheapest GPU-hour
}

TEST_F(KpisTest, IncidentsMoveTheKpisThatWatchThem) {
  const auto kpis = Kpis("time >= '2026-11-03T00:00:00Z' AND time < '2026-11-04T00:00:00Z'");
  // One node's 8 GPUs throttled for 6 of 24 hours in a fleet of 64 GPUs.
  EXPECT_DOUBLE_EQ(Number(kpis.at("thermal_throttled_share").value), 8.0 * 6 / (64 * 24));
  EXPECT_GT(Number(kpis.at("hw_errors_per_1k_gpu_hours").value), 1.0);
}

TEST_F(KpisTest, OnlyATimeRangeIsTaken) {
  QueryResult r;
  ASSERT_TRUE(gpulse::Query(db_.get(), "SHOW KPIS WHERE region = 'us-east'", {}, &r).ok());
  EXPECT_TRUE(r.statements[0].status.IsInvalidArgument());
}

}  // namespace
}  // namespace gpulse
