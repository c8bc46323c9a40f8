// A disk that fails part way through, then a power loss, under the chunk
// store (LevelDB, through test::StoreFaultEnv): every store write and sync
// after the Nth fails, for N across a whole workload of flushes with tier
// updates (late points and replaced values recompute buckets), part merges
// and deletes; then whatever was not synced is cut away and the directory is
// opened on a sound disk. Every acknowledged write and delete must be there,
// nothing else, and every tier row must equal the row its raw points give.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "storage/rollup.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/store_fault_env.h"
#include "tests/support/tier_rows.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kMinute;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z
constexpr int kNodes = 3;

using Model = std::map<int, std::map<int64_t, int64_t>>;

Series NodeSeries(int node) { return Series{"gpu", {{"node", "n" + std::to_string(node)}}}; }

Options TestOptions(test::StoreFaultEnv* env) {
  Options o;
  o.sync_policy = SyncPolicy::kEveryBatch;  // the WAL is on a sound disk
  o.info_log = [](std::string_view) {};
  o.out_of_order_window = std::chrono::nanoseconds(0);
  o.tiers = {"1h", "1d"};
  o.head_memory_bytes = 256 << 20;  // no flush but the workload's own
  o.merge_bytes_per_second = 0;     // no merge but the workload's own
  o.store_env = env;
  return o;
}

class Workload {
 public:
  Workload(Db* db, Model* model) : db_(db), model_(model) {}

  // Runs until the first failing call; returns how far it got.
  int Run() {
    int step = 0;
    for (int day = 1; day <= 3; ++day) {
      if (!Write(day, 0, 720, 0) || !Write(day - 1, 100, 140, 1000)) return step;
      ++step;
      if (!db_->Flush().ok()) return step;
      ++step;
      if (!db_->MergeParts().ok()) return step;
      ++step;
      const int node = day % kNodes;
      const int64_t from = kT0 + (day - 1) * kDay + 5 * 60 * kMinute;
      const int64_t to = from + 150 * kMinute;
      std::vector<Series> series{NodeSeries(node)};
      // A failed delete was logged before it failed (the WAL's disk is
      // sound): reopening finishes it, so the model takes it either way.
      auto& points = (*model_)[node];
      points.erase(points.lower_bound(from), points.lower_bound(to));
      if (!db_->Delete(series, from, to).ok()) return step;
      ++step;
      if (!Write(day, 720, 1440, 0)) return step;
      ++step;
      if (!db_->Flush().ok()) return step;
      ++step;
    }
    // A delete that leaves the head empty, then a flush: it has nothing to
    // write, and retires the WAL segment that holds the delete.
    std::vector<Series> all;
    for (int node = 0; node < kNodes; ++node) all.push_back(NodeSeries(node));
    for (auto& [node, points] : *model_) {
      points.erase(points.lower_bound(kT0 + 3 * kDay), points.end());
    }
    if (!db_->Delete(all, kT0 + 3 * kDay, INT64_MAX).ok()) return step;
    ++step;
    if (!db_->Flush().ok()) return step;
    ++step;
    return step;
  }

 private:
  // Minutes [from, to) of `day` for every node, value + `bump` (a bump
  // replaces values written before).
  bool Write(int day, int64_t from, int64_t to, int64_t bump) {
    std::vector<Point> batch;
    for (int node = 0; node < kNodes; ++node) {
      for (int64_t m = from; m < to; ++m) {
        const int64_t ts = kT0 + day * kDay + m * kMinute;
        const int64_t v = (m * 7 + node) % 100 + bump;
        batch.push_back(Point{"gpu", NodeSeries(node).tags, {{"util", v}}, ts});
      }
    }
    if (!db_->Write(batch).ok()) return false;
    for (const Point& p : batch) {
      const int node = p.tags[0].value[1] - '0';
      (*model_)[node][p.timestamp_ns] = std::get<int64_t>(p.fields[0].value);
    }
    return true;
  }

  Db* db_;
  Model* model_;
};

void ExpectModelAndTiers(Db* db, const Model& model, const std::string& when) {
  const std::vector<std::string> fields{"util"};
  for (const auto& [node, points] : model) {
    std::vector<Column> raw;
    ASSERT_TRUE(db->ReadSeries(NodeSeries(node), fields, INT64_MIN, INT64_MAX, &raw).ok());
    ASSERT_EQ(raw[0].size(), points.size()) << when << ", node " << node;
    size_t i = 0;
    for (const auto& [ts, v] : points) {
      ASSERT_EQ(raw[0].ts[i], ts) << when << ", node " << node;
      ASSERT_EQ(raw[0].ints[i], v) << when << ", node " << node;
      ++i;
    }
    for (size_t t : {size_t{1}, size_t{2}}) {
      test::ExpectSameRollups(
          test::AllRollups(db, NodeSeries(node), "util", t), test::RollupsOf(raw[0], t),
          when + ", node " + std::to_string(node) + ", tier " + storage::kTiers[t].name);
    }
  }
}

// One run: day 0 written and flushed on a sound disk, then the workload
// with store writes failing after `budget`, a power loss, and the check.
void RunWithBudget(int64_t budget, int64_t* operations) {
  storage::ScratchDir dir;
  test::StoreFaultEnv env;
  Model model;
  const std::string when = "failing after " + std::to_string(budget);
  {
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(TestOptions(&env), dir.path(), &db).ok());
    Workload w(db.get(), &model);
    std::vector<Point> day0;
    for (int node = 0; node < kNodes; ++node) {
      for (int64_t m = 0; m < 1440; m += 2) {
        day0.push_back(Point{"gpu", NodeSeries(node).tags, {{"util", m % 100}}, kT0 + m * kMinute});
        model[node][kT0 + m * kMinute] = m % 100;
      }
    }
    ASSERT_TRUE(db->Write(day0).ok());
    ASSERT_TRUE(db->Flush().ok());
    const int64_t before = env.operations();
    env.FailAfter(budget);
    const int steps = w.Run();
    *operations = env.operations() - before;
    if (budget < 0) {
      ASSERT_EQ(steps, 20) << "the workload fails on a sound disk";
    }
    db.reset();  // Close fails to flush on the failing disk: the WAL stays
  }
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  env.FailAfter(-1);
  std::unique_ptr<Db> db;
  const Status opened = Db::Open(TestOptions(&env), dir.path(), &db);
  ASSERT_TRUE(opened.ok()) << when << ": " << opened.ToString();
  ExpectModelAndTiers(db.get(), model, when);
  // Another power loss right after: what the replay wrote and the WAL
  // segments Open retired must already be safe.
  ASSERT_TRUE(db->Close().ok());
  db.reset();
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  ASSERT_TRUE(Db::Open(TestOptions(&env), dir.path(), &db).ok());
  ExpectModelAndTiers(db.get(), model, when + ", after a second power loss");
}

TEST(StoreFaultTest, RawAndTiersAgreeAfterTheDiskFailsAnywhereAndPowerIsLost) {
  int64_t total = 0;
  RunWithBudget(-1, &total);
  ASSERT_GT(total, 20);
  // About 60 failure points spread over the workload, the first ones each.
  const int64_t step = std::max<int64_t>(1, total / 60);
  for (int64_t budget = 0; budget < total; budget += budget < 12 ? 1 : step) {
    int64_t ignored = 0;
    RunWithBudget(budget, &ignored);
    if (HasFatalFailure()) return;
  }
}

// A store Env whose LockFile of one path fails while armed: the store's own
// directory cannot be opened again, but a compaction's copy can.
class RefuseReopenEnv : public leveldb::EnvWrapper {
 public:
  explicit RefuseReopenEnv(std::string lock_path)
      : leveldb::EnvWrapper(leveldb::Env::Default()), lock_path_(std::move(lock_path)) {}
  void Arm(bool on) { armed_ = on; }
  leveldb::Status LockFile(const std::string& name, leveldb::FileLock** lock) override {
    if (armed_ && name == lock_path_) return leveldb::Status::IOError(name, "refused by the test");
    return target()->LockFile(name, lock);
  }

 private:
  const std::string lock_path_;
  std::atomic<bool> armed_{false};
};

TEST(StoreFaultTest, ACompactionThatCannotReopenTheStoreRefusesCallsAndLosesNothing) {
  storage::ScratchDir dir;
  RefuseReopenEnv env(dir.path() + "/store/LOCK");
  Options options;
  options.info_log = [](std::string_view) {};
  options.store_env = &env;
  options.sync_policy = SyncPolicy::kEveryBatch;
  const std::vector<std::string> fields{"util"};
  // The second batch is in the head when Compact starts (it flushes it
  // first): both must read back after the failed swap and a reopen.
  std::vector<Point> flushed, in_head;
  for (int64_t m = 0; m < 60; ++m) {
    flushed.push_back(Point{"gpu", NodeSeries(0).tags, {{"util", m}}, kT0 + m * kMinute});
    in_head.push_back(
        Point{"gpu", NodeSeries(0).tags, {{"util", m + 100}}, kT0 + (60 + m) * kMinute});
  }
  {
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
    ASSERT_TRUE(db->Write(flushed).ok());
    ASSERT_TRUE(db->Flush().ok());
    ASSERT_TRUE(db->Write(in_head).ok());
    env.Arm(true);
    const Status compacted = db->Compact();
    ASSERT_FALSE(compacted.ok());
    EXPECT_NE(compacted.message().find("refused by the test"), std::string::npos)
        << compacted.ToString();
    // Every call is refused with the reason, none reaches the missing store.
    std::vector<Column> raw;
    const Status read = db->ReadSeries(NodeSeries(0), fields, INT64_MIN, INT64_MAX, &raw);
    EXPECT_NE(read.message().find("lost its chunk store"), std::string::npos) << read.ToString();
    EXPECT_FALSE(db->Write(flushed).ok());
    EXPECT_FALSE(db->Flush().ok());
    EXPECT_FALSE(db->Compact().ok());
    // Close stops the background threads (a destroyed joinable thread
    // would end the process) and keeps the WAL.
    EXPECT_TRUE(db->Close().ok());
  }
  env.Arm(false);
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  std::vector<Column> raw;
  ASSERT_TRUE(db->ReadSeries(NodeSeries(0), fields, INT64_MIN, INT64_MAX, &raw).ok());
  ASSERT_EQ(raw[0].size(), 120u);
  for (int64_t m = 0; m < 120; ++m) {
    EXPECT_EQ(raw[0].ts[m], kT0 + m * kMinute);
    EXPECT_EQ(raw[0].ints[m], m < 60 ? m : m + 40);
  }
  EXPECT_TRUE(db->Compact().ok());
}

// A disk-full retry that could not reopen the store (its lock refused, as
// when descriptors run out) made its error sticky: writes stayed refused
// after a later retry reopened the store and wrote the waiting flush. Now
// they resume with it, and nothing acknowledged is lost.
TEST(StoreFaultTest, WritesResumeOnceADiskFullRetryReopensTheStoreAfterOneThatCouldNot) {
  storage::ScratchDir dir;
  test::StoreFaultEnv env;
  Options options;
  options.info_log = [](std::string_view) {};
  options.store_env = &env;
  options.sync_policy = SyncPolicy::kEveryBatch;
  const std::vector<std::string> fields{"util"};
  const auto batch = [](int64_t from) {
    std::vector<Point> points;
    for (int64_t m = from; m < from + 60; ++m) {
      points.push_back(Point{"gpu", NodeSeries(0).tags, {{"util", m}}, kT0 + m * kMinute});
    }
    return points;
  };
  const auto expect_all = [&](Db* db, int64_t n) {
    std::vector<Column> raw;
    ASSERT_TRUE(db->ReadSeries(NodeSeries(0), fields, INT64_MIN, INT64_MAX, &raw).ok());
    ASSERT_EQ(raw[0].size(), static_cast<size_t>(n));
    for (int64_t m = 0; m < n; ++m) EXPECT_EQ(raw[0].ints[m], m);
  };
  {
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
    ASSERT_TRUE(db->Write(batch(0)).ok());
    ASSERT_TRUE(db->Flush().ok());
    // The disk fills: the flush of the second batch waits for space.
    ASSERT_TRUE(db->Write(batch(60)).ok());
    env.FailAsFullDisk(true);
    env.FailAfter(0);
    const Status full = db->Flush();
    ASSERT_TRUE(full.IsNoSpace()) << full.ToString();
    // A retry cannot reopen the store: calls are refused.
    env.RefuseLocks(true);
    Status refused;
    for (int i = 0; i < 100 && refused.ok(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      refused = db->Write(batch(120));
    }
    ASSERT_FALSE(refused.ok());
    // Space is back and the store opens: the next retry recovers, and writes
    // are taken again without a restart.
    env.RefuseLocks(false);
    env.FailAfter(-1);
    Status resumed = refused;
    for (int i = 0; i < 100 && !resumed.ok(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      resumed = db->Write(batch(120));
    }
    ASSERT_TRUE(resumed.ok()) << resumed.ToString();
    ASSERT_TRUE(db->Flush().ok());
    expect_all(db.get(), 180);
    ASSERT_TRUE(db->Close().ok());
  }
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  expect_all(db.get(), 180);
}

}  // namespace
}  // namespace gpulse
