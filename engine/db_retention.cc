// Retention: data older than its kind's retention (Options::retention) is
// deleted in whole pieces, in the background.
//
// Raw points go by whole chunk windows: a window is deleted once its last
// instant is past the cut, so no window is ever decoded and rewritten for
// retention. Tier rows go by whole buckets: blocks wholly past the cut are
// deleted, and the one block the cut crosses loses its rows before the cut
// (a rewrite only when it has such rows). Nothing is logged: the pass
// deletes only what lies wholly before the cut, so repeating it after a
// crash, or running it twice, deletes nothing more than once. Writes older
// than the raw cut are refused (db_write.cc), so no flush writes behind it.

#include <algorithm>

#include "engine/clock.h"
#include "engine/db_impl.h"
#include "leveldb/write_batch.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

int64_t DbImpl::RawRetentionCut() const {
  return retention_ns_[0] > 0 ? RetainedSince(-1, WallClockNanos()) : INT64_MIN;
}

int64_t DbImpl::RetainedSince(int tier, int64_t now_ns) const {
  if (tier < -1 || tier >= static_cast<int>(storage::kTierCount)) return INT64_MIN;
  const int64_t keep = retention_ns_[tier + 1];
  if (keep <= 0) return INT64_MIN;
  return now_ns < INT64_MIN + keep ? INT64_MIN : now_ns - keep;
}

Status DbImpl::EnforceRetention(int64_t now_ns) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  size_t series = 0;
  {
    std::shared_lock<std::shared_mutex> l(mu_);
    series = index_.series_count();
  }
  const int64_t raw_cut = RetainedSince(-1, now_ns);
  // The window holding the cut stays whole; those before it go. Tier rows
  // go by whole buckets before the one holding their cut, so no row is
  // computed again from raw points.
  const int64_t raw_keep =
      raw_cut == INT64_MIN ? INT64_MIN : storage::WindowStart(raw_cut, window_ns_);
  int64_t tier_keep[storage::kTierCount];
  for (size_t t = 0; t < storage::kTierCount; ++t) {
    const int64_t cut = RetainedSince(static_cast<int>(t), now_ns);
    tier_keep[t] = cut == INT64_MIN || !(tier_mask_ & (1u << t))
                       ? INT64_MIN
                       : storage::WindowStart(cut, storage::kTiers[t].width_ns);
  }
  uint64_t changed = 0;
  leveldb::WriteBatch batch;
  {
    // Points in the head behind the cut go to chunks first: flushed later,
    // into a window already deleted, they could recompute a tier bucket
    // from raw points that are gone.
    std::lock_guard<std::mutex> f(flush_mu_);
    GPULSE_RETURN_IF_ERROR(FlushLocked());
  }
  // The flush mutex is held for a slice of the series at a time (no flush
  // may write chunk parts or tier rows while they are cut), so flushes and
  // the writers behind them wait only briefly.
  constexpr uint32_t kSeriesPerSlice = 256;
  for (uint32_t from = 0; from < series; from += kSeriesPerSlice) {
    GPULSE_RETURN_IF_ERROR(CheckOpen());
    std::lock_guard<std::mutex> f(flush_mu_);
    const uint32_t to = static_cast<uint32_t>(std::min<size_t>(series, from + kSeriesPerSlice));
    for (uint32_t id = from; id < to; ++id) {
      if (raw_keep != INT64_MIN) {
        GPULSE_RETURN_IF_ERROR(DeleteRaw(id, INT64_MIN, raw_keep - 1, &batch, &changed));
      }
      for (size_t t = 0; t < storage::kTierCount; ++t) {
        if (tier_keep[t] == INT64_MIN) continue;
        GPULSE_RETURN_IF_ERROR(
            DeleteTierRows(id, INT64_MIN, tier_keep[t] - 1, 1u << t, &batch, &changed));
      }
    }
    const leveldb::Status w = store_->Write(leveldb::WriteOptions(), &batch);
    batch.Clear();
    if (!w.ok()) return Status::IOError("retention: " + w.ToString());
  }
  if (changed > 0) {
    window_cache_.Clear();
    Log("retention: deleted or trimmed " + std::to_string(changed) +
        " chunk parts and tier blocks");
  }
  ++retention_runs_;
  retention_deleted_keys_ += changed;
  return Status::Ok();
}

}  // namespace gpulse::engine
