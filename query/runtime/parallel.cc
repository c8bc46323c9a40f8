#include "query/runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "storage/mutex.h"

namespace gpulse::query {

// hardware_concurrency() reads /sys on every call.
size_t HardwareThreads() {
  static const size_t n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

namespace {

// Threads shared by every query's ParallelFor, so that a query does not
// start (and join) threads of its own: made on first use, one less than the
// hardware threads (the caller works too), stopped and joined at exit.
class WorkerPool {
 public:
  static WorkerPool& Get() {
    static WorkerPool pool(std::min<size_t>(HardwareThreads(), 8) - 1);
    return pool;
  }

  void Submit(std::function<void()> task) {
    {
      MutexLock l(&mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.Signal();
  }

  ~WorkerPool() {
    {
      MutexLock l(&mu_);
      stopping_ = true;
    }
    cv_.SignalAll();
    for (std::thread& t : threads_) t.join();
  }

 private:
  explicit WorkerPool(size_t n) {
    for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { Loop(); });
  }

  void Loop() {
    MutexLock l(&mu_);
    while (true) {
      while (!stopping_ && tasks_.empty()) cv_.Wait(&mu_);
      if (tasks_.empty()) return;  // stopping, nothing left
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      l.Unlock();
      task();
      l.Lock();
    }
  }

  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ GPULSE_GUARDED_BY(mu_);
  bool stopping_ GPULSE_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace

Status ParallelFor(ExecContext* ctx, size_t n, size_t* workers_out,
                   const std::function<Status(size_t worker, size_t i)>& fn, size_t min_per_worker,
                   Split split) {
  const size_t hw = HardwareThreads();
  const size_t workers = std::min<size_t>({hw, 8, std::max<size_t>(1, n / min_per_worker)});
  *workers_out = workers;
  if (workers == 1) {
    for (size_t i = 0; i < n; ++i) {
      GPULSE_RETURN_IF_ERROR(ctx->Poll());
      GPULSE_RETURN_IF_ERROR(fn(0, i));
    }
    return ctx->stopped() ? ctx->stop_status() : Status::Ok();
  }
  // What the threads share; a worker that starts after the work is all
  // claimed touches only this (it outlives the call), never fn or ctx.
  struct Shared {
    std::atomic<size_t> next{0};  // the first block (kBlocks) or index not claimed
    std::atomic<size_t> busy{0};  // threads that may still call fn
    Mutex mu;                     // with cv: the caller's wait for busy to reach 0
    CondVar cv;
  };
  auto shared = std::make_shared<Shared>();
  const size_t batch = 4;
  // Claims and runs work until none is left: under kBlocks whole blocks,
  // fn's `worker` being the block; under kDynamic a few indices at a time,
  // fn's `worker` being w, the thread. Only the calling thread polls.
  auto run = [ctx, &fn, n, workers, split, batch](Shared& sh, size_t w) {
    auto call = [&](size_t slot, size_t i) {
      if (w == 0 && i % 16 == 0 && !ctx->Poll().ok()) return false;
      Status st = fn(slot, i);
      if (!st.ok()) {
        ctx->Stop(std::move(st));
        return false;
      }
      return !ctx->stopped();
    };
    const size_t limit = split == Split::kBlocks ? workers : n;
    while (true) {
      const size_t claimed = sh.next.fetch_add(split == Split::kBlocks ? 1 : batch);
      if (claimed >= limit) return;
      const size_t begin = split == Split::kBlocks ? n * claimed / workers : claimed;
      const size_t end =
          split == Split::kBlocks ? n * (claimed + 1) / workers : std::min(n, claimed + batch);
      for (size_t i = begin; i < end; ++i) {
        if (!call(split == Split::kBlocks ? claimed : w, i)) {
          sh.next.store(limit);  // the others stop claiming
          return;
        }
      }
    }
  };
  auto finish = [](Shared& sh) {
    MutexLock l(&sh.mu);
    sh.busy.fetch_sub(1);
    sh.cv.SignalAll();
  };
  const size_t limit = split == Split::kBlocks ? workers : n;
  for (size_t w = 1; w < workers; ++w) {
    WorkerPool::Get().Submit([shared, run, finish, limit, w] {
      Shared& sh = *shared;
      // Counted busy before claiming: the caller, having seen all the work
      // claimed and no thread busy, may return.
      sh.busy.fetch_add(1);
      if (sh.next.load() >= limit) return finish(sh);
      run(sh, w);
      finish(sh);
    });
  }
  run(*shared, 0);
  // Waits for the workers that took a block or claimed indices, checking
  // every 5 ms whether the statement was cancelled or is late (they see it
  // and end early; the wait goes on until they have, as they use fn).
  MutexLock l(&shared->mu);
  while (shared->busy.load() > 0) {
    shared->cv.WaitFor(&shared->mu, std::chrono::milliseconds(5));
    if (shared->busy.load() == 0) break;
    l.Unlock();
    static_cast<void>(ctx->Poll());
    l.Lock();
  }
  return ctx->stopped() ? ctx->stop_status() : Status::Ok();
}

}  // namespace gpulse::query
