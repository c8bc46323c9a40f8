// kill -9 at random moments: a child writes with SyncPolicy::kEveryBatch and
// reports every acknowledged batch; the parent kills it, reopens the data
// directory and checks that every acknowledged point is there with its value,
// and that no point holds a value that was never written. Several rounds run
// on the same directory, so later rounds replay WALs and merge into chunks
// left by earlier ones.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "engine/gpulse.h"
#include "query/query.h"
#include "tests/support/crash_workload.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

struct ChildRun {
  int64_t last_acked = -1;  // the highest minute the child acknowledged
};

// Starts the writer, lets it run for `run_for`, kills it with SIGKILL, and
// returns what it acknowledged (read from its stdout pipe, which keeps what
// was written before the kill).
ChildRun RunAndKill(const std::string& dir, int64_t first_minute,
                    std::chrono::milliseconds run_for) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    const std::string first = std::to_string(first_minute);
    execl(GPULSE_CRASH_WRITER, GPULSE_CRASH_WRITER, dir.c_str(), first.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::this_thread::sleep_for(run_for);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the writer exited on its own, status " << status;

  ChildRun run;
  FILE* in = fdopen(fds[0], "r");
  long long minute = 0;
  while (std::fscanf(in, "%lld", &minute) == 1) run.last_acked = minute;
  std::fclose(in);
  return run;
}

TEST(Kill9Test, AcknowledgedWritesSurviveSigkill) {
  storage::ScratchDir dir;
  std::mt19937 rng(20261122);
  int64_t next_minute = 0;
  int64_t acked_through = -1;  // every minute <= this was acknowledged at some point
  for (int round = 0; round < 8; ++round) {
    const auto run_for = std::chrono::milliseconds(150 + rng() % 600);
    const ChildRun run = RunAndKill(dir.path(), next_minute, run_for);
    ASSERT_GE(run.last_acked, next_minute) << "round " << round << " acknowledged nothing";
    acked_through = run.last_acked;

    Options options;
    options.info_log = [](std::string_view) {};
    std::unique_ptr<Db> db;
    const Status opened = Db::Open(options, dir.path(), &db);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    for (int gpu = 0; gpu < test::kCrashGpus; ++gpu) {
      ReadRequest r{"gpu", {{"gpu", std::to_string(gpu)}}, "util"};
      std::vector<SeriesColumn> out;
      ASSERT_TRUE(db->Read(r, &out).ok());
      ASSERT_EQ(out.size(), 1u);
      const Column& c = out[0].column;
      // Every acknowledged minute is there...
      ASSERT_GE(c.size(), static_cast<size_t>(acked_through + 1)) << "round " << round;
      for (size_t i = 0; i < c.size(); ++i) {
        const int64_t minute = c.ts[i] / test::kCrashMinuteNs;
        ASSERT_EQ(c.ts[i], static_cast<int64_t>(i) * test::kCrashMinuteNs)
            << "round " << round << ": a hole or a stray timestamp at index " << i;
        // ...and every value present is the one written for its minute.
        ASSERT_EQ(c.ints[i], test::CrashUtil(gpu, minute)) << "round " << round;
      }
      // At most the batch in flight at the kill is there beyond the acks.
      EXPECT_LE(c.size(), static_cast<size_t>(acked_through + 2));
      if (gpu == 0) next_minute = static_cast<int64_t>(c.size());
    }
    // The tiers agree with the raw points, though kills land mid-flush
    // (between a flush's tier and raw writes) and WAL replays re-add points
    // the tiers may already hold.
    for (const char* bucket : {"5m", "1h", "1d"}) {
      const std::string q = std::string(
                                "SELECT count(util), sum(util), min(util), max(util), "
                                "first(power_w), last(power_w) FROM ") +
                            "%s WHERE time >= 0 AND time < '1970-02-01T00:00:00Z' GROUP BY time(" +
                            bucket + "), gpu";
      auto run = [&](const char* from) {
        char text[512];
        std::snprintf(text, sizeof text, q.c_str(), from);
        QueryResult r;
        EXPECT_TRUE(gpulse::Query(db.get(), text, QueryOptions(), &r).ok());
        EXPECT_EQ(r.statements.size(), 1u);
        EXPECT_TRUE(r.statements[0].status.ok()) << r.statements[0].status.ToString();
        return r.statements[0].series;
      };
      const auto tiered = run("gpu");
      const auto raw = run("\"raw\".gpu");
      ASSERT_EQ(tiered.size(), raw.size());
      for (size_t i = 0; i < raw.size(); ++i) {
        ASSERT_EQ(tiered[i].values, raw[i].values)
            << "round " << round << ", time(" << bucket << "), series " << i;
      }
    }
    std::printf("round %d: killed after %lld ms; minutes acknowledged through %lld, present %lld\n",
                round, static_cast<long long>(run_for.count()),
                static_cast<long long>(acked_through), static_cast<long long>(next_minute));
    ASSERT_TRUE(db->Close().ok());
  }
}

}  // namespace
}  // namespace gpulse
