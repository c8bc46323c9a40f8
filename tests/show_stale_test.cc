// SHOW STALE (query/fleet/stale.cc): the simulator's silent agent and missing GPU
// are found, only inside their windows; a GPU held by a job with no use is
// found; tag conditions and the as-of time bound narrow it.

#include <gtest/gtest.h>

#include <set>

#include "engine/gpulse.h"
#include "ingest/fleet_sim.h"
#include "query/query.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kMinute;
constexpr int64_t kT0 = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

class ShowStaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = test::OpenQuietDb(dir_.path());
    ASSERT_NE(db_, nullptr);
  }

  void Simulate(const std::vector<std::string>& incidents) {
    test::SimulateInto(db_.get(), test::SmallFleet(8, 2, 3, kT0, incidents));
  }

  // (kind, source) of every finding of `q`.
  std::set<std::string> Findings(const std::string& q, int64_t now_ns = 0) {
    QueryOptions options;
    options.now_ns = now_ns;
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db_.get(), q, options, &r).ok()) << q;
    std::set<std::string> out;
    if (!r.statements.at(0).status.ok()) {
      ADD_FAILURE() << r.statements[0].status.ToString();
      return out;
    }
    for (const ResultSeries& s : r.statements[0].series) {
      for (const auto& row : s.values)
        out.insert(std::get<std::string>(row[0]) + " " + std::get<std::string>(row[1]));
    }
    return out;
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

TEST_F(ShowStaleTest, TheSimulatorsSilentAgentAndMissingGpuAreFoundInTheirWindowsOnly) {
  Simulate({"silent-agent@12h/6h:us-east-c0-n002", "missing-gpu@1d/6h:eu-west-c0-n001/5"});
  const auto at = [](int hours) { return kT0 + hours * 60 * kMinute; };
  EXPECT_TRUE(Findings("SHOW STALE", at(11)).empty());
  EXPECT_EQ(Findings("SHOW STALE", at(13)), (std::set<std::string>{"silent_node us-east-c0-n002"}));
  EXPECT_TRUE(Findings("SHOW STALE", at(19)).empty());  // the agent is back
  EXPECT_EQ(
      Findings("SHOW STALE 10m", at(25)),
      (std::set<std::string>{"missing_gpus eu-west-c0-n001", "silent_gpu eu-west-c0-n001/5"}));
  // The same as of a time in WHERE, and narrowed by tags.
  EXPECT_EQ(Findings("SHOW STALE WHERE time <= '2026-11-02T13:00:00Z'"),
            (std::set<std::string>{"silent_node us-east-c0-n002"}));
  EXPECT_TRUE(
      Findings("SHOW STALE WHERE region = 'eu-west' AND time <= '2026-11-02T13:00:00Z'").empty());
  // Long after the data: every node and both clusters are silent.
  const auto later = Findings("SHOW STALE", at(24 * 5));
  EXPECT_EQ(later.count("silent_cluster us-east-c0") + later.count("silent_cluster eu-west-c0"),
            2u);
}

TEST_F(ShowStaleTest, AGpuHeldByAJobWithNoUseIsFound) {
  std::vector<Point> points;
  for (int m = 0; m < 10; ++m) {
    const int64_t t = kT0 + m * kMinute;
    points.push_back({"node",
                      {{"node", "n1"}, {"cluster", "c1"}},
                      {{"gpu_count", int64_t{2}}, {"gpu_inventory", int64_t{2}}},
                      t});
    points.push_back({"gpu",
                      {{"node", "n1"}, {"gpu", "0"}},
                      {{"util", int64_t{0}}, {"job", std::string("stuck")}},
                      t});
    points.push_back({"gpu",
                      {{"node", "n1"}, {"gpu", "1"}},
                      {{"util", int64_t{m == 9 ? 40 : 0}}, {"job", std::string("slow")}},
                      t});
  }
  ASSERT_TRUE(db_->Write(points).ok());
  EXPECT_EQ(Findings("SHOW STALE 5m", kT0 + 9 * kMinute),
            (std::set<std::string>{"idle_allocated n1/0"}));
}

TEST_F(ShowStaleTest, BadArgumentsAreErrors) {
  QueryResult r;
  ASSERT_TRUE(gpulse::Query(db_.get(), "SHOW STALE WHERE time > now() - 1h", {}, &r).ok());
  EXPECT_TRUE(r.statements[0].status.IsInvalidArgument());
  r = {};
  ASSERT_TRUE(gpulse::Query(db_.get(), "SHOW STALE WHERE util > 1", {}, &r).ok());
  EXPECT_TRUE(r.statements[0].status.IsInvalidArgument());
}

}  // namespace
}  // namespace gpulse
