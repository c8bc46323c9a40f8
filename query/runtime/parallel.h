// ParallelFor: a query's per-series (or per-group) work on the calling
// thread and a pool of worker threads shared by every query.
//
// Thread safety: any thread may call ParallelFor; fn runs on several
// threads at once and must be safe for that.
#pragma once

#include <cstddef>
#include <functional>

#include "query/runtime/context.h"

namespace gpulse::query {

// The machine's hardware threads (read once).
size_t HardwareThreads();

// How ParallelFor hands out the indices.
enum class Split {
  // The indices in as many contiguous blocks as threads take part, fn's
  // `worker` being the block: per-block results merge in index (series)
  // order, for answers that depend on the order of folding (float sums, ties
  // between series). Threads claim whole blocks as they come free: a worker
  // woken late (a halted CPU takes a few hundred microseconds to wake on a
  // VM) finds the blocks taken rather than holding up the answer.
  kBlocks,
  // Threads claim a few indices at a time as they come free, and the calling
  // thread does not wait for a worker that has not started: on a busy
  // machine a worker woken late would otherwise hold up a whole block. For
  // results stored per index, or aggregates whose answer does not depend on
  // the order (counts, integer extremes and sums).
  kDynamic,
};

// Runs fn(worker, i) for i in [0, n) on up to two worker threads (more on
// machines with more cores) and the calling thread; polls for cancellation
// meanwhile. fn(w, i) calls with the same w never overlap.
// workers_out: how many threads may take part (fn's `worker` is below it).
Status ParallelFor(ExecContext* ctx, size_t n, size_t* workers_out,
                   const std::function<Status(size_t worker, size_t i)>& fn,
                   size_t min_per_worker = 8, Split split = Split::kBlocks);

}  // namespace gpulse::query
