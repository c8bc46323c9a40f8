// ParallelFor (query/runtime/parallel.h): every index runs once in either split;
// fixed blocks are contiguous and in worker order (what merging in series
// order relies on); an error or a cancellation stops the run and is what it
// returns; and with Split::kDynamic the caller does not wait for workers that
// are busy elsewhere.

#include "query/runtime/parallel.h"
#include "query/query.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace gpulse::query {
namespace {

TEST(ParallelForTest, EveryIndexRunsOnceInEitherSplit) {
  const QueryOptions options;
  for (const Split split : {Split::kBlocks, Split::kDynamic}) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      ExecContext ctx(nullptr, options, 0);
      std::vector<std::atomic<int>> runs(n);
      size_t workers = 0;
      ASSERT_TRUE(ParallelFor(
                      &ctx, n, &workers,
                      [&](size_t, size_t i) {
                        runs[i].fetch_add(1);
                        return Status::Ok();
                      },
                      8, split)
                      .ok());
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << i << " of " << n;
      EXPECT_GE(workers, 1u);
    }
  }
}

TEST(ParallelForTest, FixedBlocksAreContiguousAndInWorkerOrder) {
  const QueryOptions options;
  ExecContext ctx(nullptr, options, 0);
  const size_t n = 1000;
  std::vector<size_t> worker_of(n);
  size_t workers = 0;
  ASSERT_TRUE(ParallelFor(&ctx, n, &workers, [&](size_t w, size_t i) {
                worker_of[i] = w;
                return Status::Ok();
              }).ok());
  // Worker numbers never go down along the indices, and each is below the
  // count reported.
  for (size_t i = 1; i < n; ++i) EXPECT_LE(worker_of[i - 1], worker_of[i]) << i;
  EXPECT_LT(worker_of[n - 1], workers);
  EXPECT_EQ(worker_of[0], 0u);
}

TEST(ParallelForTest, AnErrorStopsTheRunAndIsReturned) {
  const QueryOptions options;
  for (const Split split : {Split::kBlocks, Split::kDynamic}) {
    ExecContext ctx(nullptr, options, 0);
    std::atomic<size_t> ran{0};
    size_t workers = 0;
    const Status st = ParallelFor(
        &ctx, 100000, &workers,
        [&](size_t, size_t i) {
          ran.fetch_add(1);
          return i == 10 ? Status::InvalidArgument("index 10 is bad") : Status::Ok();
        },
        8, split);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_NE(st.message().find("index 10"), std::string::npos);
    EXPECT_LT(ran.load(), 100000u);
  }
}

// Cancellation is asked for at most every kCancelCheckInterval: the run
// stops within about that long of it, long before its end (100,000 indexes
// of 20 us each would take 2 s).
TEST(ParallelForTest, ACancelledQueryStops) {
  std::atomic<bool> cancel{false};
  std::atomic<size_t> ran{0};
  QueryOptions options;
  options.cancelled = [&] { return cancel.load(); };
  ExecContext ctx(nullptr, options, 0);
  size_t workers = 0;
  const Status st = ParallelFor(
      &ctx, 100000, &workers,
      [&](size_t, size_t i) {
        if (i == 100) cancel = true;
        ran.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        return Status::Ok();
      },
      8, Split::kDynamic);
  EXPECT_TRUE(st.IsCancelled()) << st.ToString();
  EXPECT_LT(ran.load(), 20000u);
}

// Every pool thread is held by another statement's blocks; a run of either
// split on this thread does all the work itself and returns instead of
// waiting for them (a kBlocks run takes every block, in order).
TEST(ParallelForTest, NeitherSplitWaitsForWorkersBusyElsewhere) {
  if (HardwareThreads() < 2) GTEST_SKIP() << "no worker threads on one core";
  for (const Split split : {Split::kDynamic, Split::kBlocks}) {
    SCOPED_TRACE(split == Split::kDynamic ? "kDynamic" : "kBlocks");
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    std::atomic<size_t> held{0};
    const QueryOptions options;
    // The other statement: each of its blocks waits until released, so its
    // calling thread and every pool thread stay in one.
    const size_t threads = std::min<size_t>(HardwareThreads(), 8);
    ExecContext other_ctx(nullptr, options, 0);
    size_t other_blocks = 0;
    auto other = std::async(std::launch::async, [&] {
      return ParallelFor(&other_ctx, 1000, &other_blocks, [&](size_t w, size_t i) {
        if (i != 1000 * w / threads) return Status::Ok();  // the first index of block w
        held.fetch_add(1);
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return release; });
        return Status::Ok();
      });
    });
    // Released however the test ends (before `other` is waited for).
    struct Release {
      std::mutex& mu;
      std::condition_variable& cv;
      bool& release;
      void Now() {
        {
          std::lock_guard<std::mutex> l(mu);
          release = true;
        }
        cv.notify_all();
      }
      ~Release() { Now(); }
    } release_all{mu, cv, release};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (held.load() < threads && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(held.load(), threads) << "the pool's thread never took the other statement's block";

    ExecContext ctx(nullptr, options, 0);
    std::vector<size_t> block_of(1000, SIZE_MAX);
    std::atomic<size_t> done{0};
    size_t blocks = 0;
    auto mine = std::async(std::launch::async, [&] {
      return ParallelFor(
          &ctx, 1000, &blocks,
          [&](size_t w, size_t i) {
            block_of[i] = w;
            done.fetch_add(1);
            return Status::Ok();
          },
          8, split);
    });
    const bool returned = mine.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
    release_all.Now();
    EXPECT_TRUE(returned) << "the caller waited for a busy worker";
    EXPECT_TRUE(mine.get().ok());
    EXPECT_EQ(done.load(), 1000u);
    if (split == Split::kBlocks) {
      for (size_t i = 1; i < block_of.size(); ++i) EXPECT_LE(block_of[i - 1], block_of[i]) << i;
      EXPECT_EQ(block_of.back(), blocks - 1);
    }
    EXPECT_TRUE(other.get().ok());
  }
}

}  // namespace
}  // namespace gpulse::query
