// Crash tests of the WAL over FaultInjectionEnv: fail the Nth append or sync,
// or stop at a random moment, drop what was not synced (a power loss), and
// check that replay returns every acknowledged record and nothing invented.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "storage/env.h"
#include "storage/wal.h"
#include "tests/support/fault_injection_env.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::storage {
namespace {

// Distinct, self-describing records of varied size (0 to ~120 bytes).
std::string Record(int generation, int i) {
  std::string r = "g" + std::to_string(generation) + "r" + std::to_string(i) + ":";
  r.append(static_cast<size_t>((i * 37) % 110), static_cast<char>('a' + i % 26));
  if (i % 9 == 4) r.clear();
  return r;
}

// Replays `dir` with the plain POSIX env, checks it against the writer's
// history, and returns the replayed records. `written` is every record the
// writer attempted, in order; the first `acked` of them were acknowledged.
std::vector<std::string> ReplayAndCheck(const std::string& dir,
                                        const std::vector<std::string>& written, size_t acked) {
  std::vector<std::string> got;
  WalReplayReport report;
  std::unique_ptr<Wal> wal;
  Status s = Wal::Open(
      Env::Default(), dir, WalOptions(),
      [&got](std::string_view r) {
        got.emplace_back(r);
        return Status::Ok();
      },
      &report, &wal);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return got;
  // Nothing lost: every acknowledged record is there.
  EXPECT_GE(got.size(), acked) << report.dropped_reason;
  // Nothing invented: the log is a prefix of what was written, in order. (An
  // empty record is distinct from a lost one only by position, so compare all.)
  EXPECT_LE(got.size(), written.size());
  for (size_t i = 0; i < got.size() && i < written.size(); ++i) {
    EXPECT_EQ(got[i], written[i]) << "record " << i;
  }
  EXPECT_TRUE(wal->Close().ok());
  // The first reopen repaired the tail; the second finds a clean log.
  WalReplayReport again;
  size_t records = 0;
  s = Wal::Open(
      Env::Default(), dir, WalOptions(),
      [&records](std::string_view) {
        ++records;
        return Status::Ok();
      },
      &again, &wal);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(records, got.size());
  EXPECT_EQ(again.dropped_bytes, 0u) << again.dropped_reason;
  if (s.ok()) {
    EXPECT_TRUE(wal->Close().ok());
  }
  return got;
}

enum class Fail { kAppend, kSync };

struct CrashRun {
  std::vector<std::string> written;
  size_t acked = 0;
  bool fired = false;
};

// One writer run with the nth append or sync failing (0: none). Each record
// is acknowledged only once SyncTo covers it; the first error ends the run.
CrashRun RunWithFailure(FaultInjectionEnv* env, const std::string& dir, Fail fail, int n) {
  CrashRun run;
  if (fail == Fail::kAppend) env->FailNthAppend(n);
  if (fail == Fail::kSync) env->FailNthSync(n);
  WalOptions options;
  options.segment_bytes = 300;  // several rotations within the run
  std::unique_ptr<Wal> wal;
  Status s = Wal::Open(env, dir, options, nullptr, nullptr, &wal);
  for (int i = 0; s.ok() && i < 24; ++i) {
    run.written.push_back(Record(0, i));
    uint64_t end = 0;
    s = wal->Append(run.written.back(), &end);
    if (s.ok() && i % 8 == 5) s = wal->Rotate(nullptr);
    if (s.ok()) s = wal->SyncTo(end);
    if (s.ok()) run.acked = run.written.size();
  }
  run.fired = env->injected();
  if (n > 0 && !run.fired) {
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return run;  // destroys the Wal without syncing: the process died
}

void SweepCrashPoints(Fail fail, bool torn) {
  int points = 0;
  for (int n = 1;; ++n) {
    SCOPED_TRACE("fail #" + std::to_string(n));
    ScratchDir tmp;
    FaultInjectionEnv env(Env::Default());
    CrashRun run = RunWithFailure(&env, tmp.path(), fail, n);
    if (torn) {
      ASSERT_TRUE(env.DropUnsyncedDataKeepingTornPrefix(static_cast<uint32_t>(n)).ok());
    } else {
      ASSERT_TRUE(env.DropUnsyncedData().ok());
    }
    ReplayAndCheck(tmp.path(), run.written, run.acked);
    if (::testing::Test::HasFailure()) return;
    if (!run.fired) break;  // n is past the last append or sync of the run
    ++points;
  }
  // The run has 24 appends and more than 24 syncs; a sweep that stopped early
  // would test nothing.
  EXPECT_GE(points, 24);
}

TEST(WalFaultTest, FailNthAppendThenPowerLoss) { SweepCrashPoints(Fail::kAppend, false); }
TEST(WalFaultTest, FailNthSyncThenPowerLoss) { SweepCrashPoints(Fail::kSync, false); }
TEST(WalFaultTest, FailNthAppendThenTornPowerLoss) { SweepCrashPoints(Fail::kAppend, true); }
TEST(WalFaultTest, FailNthSyncThenTornPowerLoss) { SweepCrashPoints(Fail::kSync, true); }

// kill -9 leaves unsynced bytes in the page cache, and the next Open replays
// them. If a power loss later dropped them while a newer segment survived,
// replay would find a torn segment before data: Corruption. Open must sync
// what it replayed before using a new segment.
TEST(WalFaultTest, ProcessCrashThenPowerLoss) {
  ScratchDir tmp;
  FaultInjectionEnv env(Env::Default());  // one "machine" across both processes
  std::vector<std::string> written;
  {
    std::unique_ptr<Wal> wal;
    ASSERT_TRUE(Wal::Open(&env, tmp.path(), WalOptions(), nullptr, nullptr, &wal).ok());
    for (int i = 0; i < 10; ++i) {
      written.push_back(Record(0, i));
      uint64_t end = 0;
      ASSERT_TRUE(wal->Append(written.back(), &end).ok());
      if (i == 2) {
        ASSERT_TRUE(wal->SyncTo(end).ok());
      }
    }
  }  // the process dies; the machine keeps running
  {
    std::vector<std::string> replayed;
    std::unique_ptr<Wal> wal;
    ASSERT_TRUE(Wal::Open(
                    &env, tmp.path(), WalOptions(),
                    [&replayed](std::string_view r) {
                      replayed.emplace_back(r);
                      return Status::Ok();
                    },
                    nullptr, &wal)
                    .ok());
    ASSERT_EQ(replayed, written);
    for (int i = 0; i < 5; ++i) {
      written.push_back(Record(1, i));
      uint64_t end = 0;
      ASSERT_TRUE(wal->Append(written.back(), &end).ok());
      ASSERT_TRUE(wal->SyncTo(end).ok());
    }
  }
  ASSERT_TRUE(env.DropUnsyncedData().ok());  // now the machine loses power
  std::vector<std::string> got = ReplayAndCheck(tmp.path(), written, written.size());
  EXPECT_EQ(got, written);
}

// Power loss at random moments, three generations per seed: each generation
// replays what the last left, writes more (syncing some records, rotating
// sometimes), and dies without a clean Close.
TEST(WalFaultTest, PowerLossAtRandomMoments) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    ScratchDir tmp;
    std::vector<std::string> model;  // what the log must hold, then what was written
    size_t acked = 0;
    for (int generation = 0; generation < 3; ++generation) {
      FaultInjectionEnv env(Env::Default());
      WalOptions options;
      options.segment_bytes = 200 + rng() % 400;
      std::vector<std::string> replayed;
      std::unique_ptr<Wal> wal;
      ASSERT_TRUE(Wal::Open(
                      &env, tmp.path(), options,
                      [&replayed](std::string_view r) {
                        replayed.emplace_back(r);
                        return Status::Ok();
                      },
                      nullptr, &wal)
                      .ok());
      ASSERT_EQ(replayed, model);
      const int records = static_cast<int>(rng() % 40);
      for (int i = 0; i < records; ++i) {
        model.push_back(Record(generation, i));
        uint64_t end = 0;
        ASSERT_TRUE(wal->Append(model.back(), &end).ok());
        if (rng() % 3 == 0) {
          ASSERT_TRUE(wal->SyncTo(end).ok());
          acked = model.size();
        }
        if (rng() % 10 == 0) {
          ASSERT_TRUE(wal->Rotate(nullptr).ok());
        }
      }
      wal.reset();
      if (rng() % 2 == 0) {
        ASSERT_TRUE(env.DropUnsyncedData().ok());
      } else {
        ASSERT_TRUE(env.DropUnsyncedDataKeepingTornPrefix(rng()).ok());
      }
      model = ReplayAndCheck(tmp.path(), model, acked);
      if (::testing::Test::HasFailure()) return;
      acked = model.size();  // replayed records are durable now (the reopen synced the cut)
    }
  }
}

}  // namespace
}  // namespace gpulse::storage
