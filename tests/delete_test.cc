// Deletes and DROP SERIES through the Db: against a model of what each
// series holds, over points in the head, in chunks (whole windows and
// windows cut by the range) and across restarts; every tier row equals the
// row the raw points left give; a delete logged but not flushed survives a
// crash; a dropped series leaves every listing and comes back when written.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "storage/rollup.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/tier_rows.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
using gpulse::test::kMinute;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z

Series GpuSeries(const std::string& node) { return Series{"gpu", {{"node", node}}}; }

class DeleteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.sync_policy = SyncPolicy::kNone;
    options_.info_log = [](std::string_view) {};
    options_.out_of_order_window = std::chrono::hours(24 * 365);
    options_.tiers = {"5m", "1h", "1d"};
    Reopen();
  }

  void Reopen() {
    db_.reset();
    const Status s = Db::Open(options_, dir_.path(), &db_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Writes util = v at `ts` for `node`, and notes it in the model.
  void Write(const std::string& node, int64_t ts, int64_t v) {
    Point p{"gpu", {{"node", node}}, {{"util", v}}, ts};
    ASSERT_TRUE(db_->Write({p}).ok());
    model_[node][ts] = v;
  }

  void Delete(const std::vector<std::string>& nodes, int64_t start, int64_t end) {
    std::vector<Series> series;
    for (const std::string& n : nodes) series.push_back(GpuSeries(n));
    const Status s = db_->Delete(series, start, end);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (const std::string& n : nodes) {
      if (start >= end) break;
      auto& points = model_[n];
      points.erase(points.lower_bound(start), points.lower_bound(end));
    }
  }

  // Every series holds exactly the model's points.
  void ExpectModel(const std::string& when) {
    for (const auto& [node, points] : model_) {
      std::vector<Column> out;
      const std::vector<std::string> fields{"util"};
      ASSERT_TRUE(db_->ReadSeries(GpuSeries(node), fields, INT64_MIN, INT64_MAX, &out).ok());
      const Column& c = out[0];
      ASSERT_EQ(c.size(), points.size()) << when << ": node " << node;
      size_t i = 0;
      for (const auto& [ts, v] : points) {
        ASSERT_EQ(c.ts[i], ts) << when << ": node " << node << " index " << i;
        ASSERT_EQ(c.ints[i], v) << when << ": node " << node << " index " << i;
        ++i;
      }
    }
  }

  // Every stored tier row equals the row built from the raw points. Flushes
  // first, so the rows read are the stored ones.
  void ExpectTiersMatchRaw(const std::string& when) {
    ASSERT_TRUE(db_->Flush().ok());
    const std::vector<std::string> fields{"util"};
    for (const auto& [node, points] : model_) {
      std::vector<Column> raw;
      ASSERT_TRUE(db_->ReadSeries(GpuSeries(node), fields, INT64_MIN, INT64_MAX, &raw).ok());
      for (size_t t = 0; t < storage::kTierCount; ++t) {
        test::ExpectSameRollups(test::AllRollups(db_.get(), GpuSeries(node), "util", t),
                                test::RollupsOf(raw[0], t),
                                when + ": node " + node + " tier " + storage::kTiers[t].name);
      }
    }
  }

  std::vector<Series> Listed() {
    std::vector<Series> out;
    EXPECT_TRUE(db_->ListSeries("gpu", {}, &out).ok());
    return out;
  }

  Options options_;
  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
  std::map<std::string, std::map<int64_t, int64_t>> model_;
};

TEST_F(DeleteTest, RandomDeletesMatchAModelInEveryTierAcrossFlushesAndRestarts) {
  std::mt19937_64 rng(11);
  const std::vector<std::string> nodes{"a", "b", "c"};
  // Four days of minutes, a quarter of them missing.
  for (const std::string& n : nodes) {
    for (int64_t t = kT0; t < kT0 + 4 * kDay; t += kMinute) {
      if (rng() % 4 == 0) continue;
      Write(n, t + static_cast<int64_t>(rng() % 50) * 1'000'000'000,
            static_cast<int64_t>(rng() % 100));
    }
  }
  ASSERT_TRUE(db_->Flush().ok());
  for (int step = 0; step < 24; ++step) {
    const std::string when = "step " + std::to_string(step);
    // A range from a few minutes to two days: whole windows and blocks as
    // well as windows, blocks and buckets cut at either end.
    const int64_t start = kT0 + static_cast<int64_t>(rng() % (4 * 24 * 60)) * kMinute +
                          static_cast<int64_t>(rng() % 60) * 1'000'000'000;
    const int64_t length = (1 + static_cast<int64_t>(rng() % (48 * 60))) * kMinute;
    std::vector<std::string> which{nodes[rng() % nodes.size()]};
    if (rng() % 3 == 0) which.push_back(nodes[(rng() % 2 + 1) % nodes.size()]);
    Delete(which, start, start + length);
    ExpectModel(when + " after the delete");
    // New points, some inside the range just deleted (late data).
    for (int k = 0; k < 40; ++k) {
      const std::string& n = nodes[rng() % nodes.size()];
      Write(n, start - kHour + static_cast<int64_t>(rng() % (length / kMinute + 120)) * kMinute,
            static_cast<int64_t>(rng() % 100));
    }
    ExpectModel(when + " after the writes");
    switch (step % 3) {
      case 0:
        ExpectTiersMatchRaw(when);
        break;
      case 1:
        Reopen();  // the head replays from the WAL, delete records included
        ExpectModel(when + " after a restart");
        break;
      default:
        break;  // the head keeps its points into the next delete
    }
  }
  Reopen();
  ExpectModel("at the end, reopened");
  ExpectTiersMatchRaw("at the end");
}

TEST_F(DeleteTest, AnEmptyOrUnknownDeleteChangesNothing) {
  Write("a", kT0, 1);
  Write("a", kT0 + kMinute, 2);
  std::vector<Series> unknown{GpuSeries("nope")};
  EXPECT_TRUE(db_->Delete(unknown, INT64_MIN, INT64_MAX).ok());
  Delete({"a"}, kT0 + kMinute, kT0 + kMinute);  // empty range
  Delete({"a"}, kT0 + 5 * kMinute, kT0 + 3);    // start after end
  ExpectModel("after deletes that delete nothing");
  Delete({"a"}, kT0 + kMinute, kT0 + kMinute + 1);  // exactly one point, end excluded
  ExpectModel("after deleting one point");
  EXPECT_EQ(Listed().size(), 1u);  // a delete keeps the series listed
}

TEST_F(DeleteTest, ADeleteSurvivesACrashBeforeAnyFlush) {
  for (int64_t m = 0; m < 3 * 24 * 60; m += 5) Write("a", kT0 + m * kMinute, m % 97);
  ASSERT_TRUE(db_->Flush().ok());  // chunks and tier rows that the delete must reach
  db_.reset();
  // The child writes, deletes and writes again, then exits without closing
  // the Db (no flush): the head and the delete exist only in the WAL.
  const pid_t pid = fork();
  if (pid == 0) {
    Options o = options_;
    o.sync_policy = SyncPolicy::kEveryBatch;
    std::unique_ptr<Db> db;
    if (!Db::Open(o, dir_.path(), &db).ok()) _exit(3);
    Point late{"gpu", {{"node", "a"}}, {{"util", int64_t{500}}}, kT0 + kDay + 7 * kMinute};
    if (!db->Write({late}).ok()) _exit(4);
    std::vector<Series> a{GpuSeries("a")};
    if (!db->Delete(a, kT0 + 20 * kHour, kT0 + 2 * kDay + 3 * kHour).ok()) _exit(5);
    Point after{"gpu", {{"node", "a"}}, {{"util", int64_t{600}}}, kT0 + kDay + 9 * kMinute};
    if (!db->Write({after}).ok()) _exit(6);
    _exit(0);  // no destructors: as in a crash
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  auto& points = model_["a"];
  points.erase(points.lower_bound(kT0 + 20 * kHour),
               points.lower_bound(kT0 + 2 * kDay + 3 * kHour));
  points[kT0 + kDay + 9 * kMinute] = 600;  // written after the delete: kept
  Reopen();
  ExpectModel("reopened after the crash");
  ExpectTiersMatchRaw("reopened after the crash");
  Reopen();
  ExpectModel("reopened again");
}

TEST_F(DeleteTest, DroppedSeriesLeaveEveryListingAndComeBackWhenWritten) {
  Point other{"cpu", {{"node", "x"}}, {{"load", 1.5}}, kT0};
  ASSERT_TRUE(db_->Write({other}).ok());
  for (int64_t m = 0; m < 2 * 24 * 60; m += 10) {
    Write("a", kT0 + m * kMinute, 1);
    Write("b", kT0 + m * kMinute, 2);
  }
  ASSERT_TRUE(db_->Flush().ok());
  Write("b", kT0 + 2 * kDay, 3);  // in the head
  std::vector<Series> b{GpuSeries("b")};
  ASSERT_TRUE(db_->DropSeries(b).ok());
  model_.erase("b");
  auto expect_only_a = [&](const std::string& when) {
    const std::vector<Series> listed = Listed();
    ASSERT_EQ(listed.size(), 1u) << when;
    EXPECT_EQ(listed[0], GpuSeries("a")) << when;
    std::vector<std::string> values;
    ASSERT_TRUE(db_->ListTagValues("gpu", "node", &values).ok());
    EXPECT_EQ(values, std::vector<std::string>{"a"}) << when;
    std::vector<SeriesColumn> read;
    ASSERT_TRUE(db_->Read({"gpu", {{"node", "b"}}, "util"}, &read).ok());
    EXPECT_TRUE(read.empty()) << when;
    EXPECT_EQ(db_->GetStats().series, 2u) << when;  // gpu a and cpu x
    ExpectModel(when);
  };
  expect_only_a("after the drop");
  Reopen();
  expect_only_a("reopened");

  // Dropping every series of a measurement removes the measurement.
  std::vector<Series> a{GpuSeries("a")};
  ASSERT_TRUE(db_->DropSeries(a).ok());
  std::vector<std::string> measurements;
  ASSERT_TRUE(db_->ListMeasurements(&measurements).ok());
  EXPECT_EQ(measurements, std::vector<std::string>{"cpu"});

  // Written again: back, with only the new point, also after a restart.
  Write("b", kT0 + 3 * kDay, 9);
  ASSERT_EQ(Listed().size(), 1u);
  EXPECT_EQ(Listed()[0], GpuSeries("b"));
  model_.erase("a");
  ExpectModel("written again");
  ExpectTiersMatchRaw("written again");
  Reopen();
  ASSERT_EQ(Listed().size(), 1u);
  ExpectModel("written again, reopened");
  ASSERT_TRUE(db_->ListMeasurements(&measurements).ok());
  EXPECT_EQ(measurements, (std::vector<std::string>{"cpu", "gpu"}));
}

}  // namespace
}  // namespace gpulse
