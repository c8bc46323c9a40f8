// Memory budgets for queries: what one query may hold (QueryMemory) and what
// every query running at once may hold together (QueryMemoryPool).
//
// A query charges what it builds as it builds it: the stored values it reads
// into memory, the aggregate states of its groups, the rows of its answer and
// the text they are sent as. A charge past a bound fails with
// ResourceExhausted naming the bound and its setting, before the memory is
// taken, so a query that would need 7 GB stops at its budget rather than
// after. The figures are estimates of the allocations (sizeof a value, a row,
// a string's bytes), not the allocator's counts: close enough to bound the
// process, cheap enough to take per series or per group.
//
// Thread safety: both classes may be charged from any number of threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "storage/status.h"

namespace gpulse {

// Memory that queries running at once may hold together (the server's
// limits.server_query_memory_bytes). A QueryMemory takes from it in grains,
// so that the many small charges of a query touch only the query's own
// counter.
class QueryMemoryPool {
 public:
  // limit 0: DefaultServerQueryMemory().
  explicit QueryMemoryPool(uint64_t limit);
  QueryMemoryPool(const QueryMemoryPool&) = delete;
  QueryMemoryPool& operator=(const QueryMemoryPool&) = delete;

  // Takes `bytes` if the pool has them; false, taking nothing, if not.
  bool TryTake(uint64_t bytes);
  void Give(uint64_t bytes);

  uint64_t limit() const { return limit_; }
  uint64_t held() const { return held_.load(std::memory_order_relaxed); }
  // Queries refused because the pool was full.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  void CountRefused() { refused_.fetch_add(1, std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> held_{0};
  std::atomic<uint64_t> refused_{0};
};

// What one query holds, bounded by its own limit and, with a pool, by the
// pool's. Gives everything back to the pool when destroyed.
class QueryMemory {
 public:
  // limit 0: DefaultQueryMemory(). pool may be null (an embedded Db's query).
  QueryMemory(uint64_t limit, QueryMemoryPool* pool);
  ~QueryMemory();
  QueryMemory(const QueryMemory&) = delete;
  QueryMemory& operator=(const QueryMemory&) = delete;

  // Counts `bytes` more held. ResourceExhausted, counting nothing, when the
  // query's limit or the pool's would be passed; the message names which.
  // `what` says what was being built ("the answer's rows"), for the message.
  Status Charge(uint64_t bytes, const char* what);
  // Counts `bytes` no longer held (at most what was charged).
  void Release(uint64_t bytes);
  // Gives back whatever is held beyond `held` (what held() said before a
  // step whose charges are now let go, such as rows already sent).
  void ReleaseTo(uint64_t held) {
    const uint64_t now = this->held();
    if (now > held) Release(now - held);
  }

  uint64_t limit() const { return limit_; }
  uint64_t held() const { return held_.load(std::memory_order_relaxed); }
  // The most held at once.
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  // Takes from the pool what `held` needs beyond taken_, in grains.
  bool TakeFromPool(uint64_t held);

  const uint64_t limit_;
  QueryMemoryPool* const pool_;
  std::atomic<uint64_t> held_{0};
  std::atomic<uint64_t> peak_{0};
  std::atomic<uint64_t> taken_{0};  // from the pool; >= held_ rounded to grains
};

// Charges `bytes` for the scope's life: given back when it ends. For what a
// step holds while it works (the columns a raw SELECT has read), not for
// what the answer keeps.
class ScopedCharge {
 public:
  explicit ScopedCharge(QueryMemory* memory) : memory_(memory) {}
  ~ScopedCharge() {
    if (memory_ != nullptr) memory_->Release(bytes_.load(std::memory_order_relaxed));
  }
  ScopedCharge(const ScopedCharge&) = delete;
  ScopedCharge& operator=(const ScopedCharge&) = delete;

  Status Charge(uint64_t bytes, const char* what) {
    if (memory_ == nullptr) return Status::Ok();
    Status st = memory_->Charge(bytes, what);
    if (st.ok()) bytes_.fetch_add(bytes, std::memory_order_relaxed);
    return st;
  }

 private:
  QueryMemory* const memory_;
  std::atomic<uint64_t> bytes_{0};
};

// Estimates of what a query's structures hold, for Charge: a column's times
// and values (a string's bytes beside its header); `rows` rows of `width`
// QueryValues as ResultSeries::values holds them; an answered series in
// either shape.
uint64_t ColumnBytes(const Column& column);
uint64_t RowsBytes(size_t rows, size_t width);
uint64_t SeriesBytes(const ResultSeries& series);

// The defaults: a sixteenth of physical memory for one query, a quarter for
// all queries at once (the rest is the head's, the caches' and the page
// cache's that LevelDB reads through).
uint64_t DefaultQueryMemory();
uint64_t DefaultServerQueryMemory();
// "1.5 GiB", "512 MiB": for messages.
std::string FormatBytes(uint64_t bytes);

}  // namespace gpulse
