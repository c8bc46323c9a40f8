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

#include "engine/db_impl.h"
#include "leveldb/write_batch.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

namespace {

// The start of the piece of `width` holding the cut `keep` before `now`:
// pieces before it lie wholly past the retention. INT64_MIN: keep all.
int64_t KeepFrom(int64_t keep, int64_t now_ns, int64_t width) {
  if (keep <= 0 || now_ns < INT64_MIN + keep) return INT64_MIN;
  return storage::WindowStart(now_ns - keep, width);
}

}  // namespace

const DbImpl::Keep& DbImpl::KeepFor(std::string_view database) const {
  if (database.empty() || retention_by_db_.empty()) return retention_ns_;
  const auto it = retention_by_db_.find(database);
  return it == retention_by_db_.end() ? retention_ns_ : it->second;
}

int64_t DbImpl::RawRetentionCut(std::string_view series_key, int64_t now_ns) const {
  const int64_t keep = KeepFor(DatabaseOfSeriesKey(series_key))[0];
  if (keep <= 0 || now_ns < INT64_MIN + keep) return INT64_MIN;
  return now_ns - keep;
}

int64_t DbImpl::RetainedSince(int tier, int64_t now_ns, std::string_view database) const {
  if (tier < -1 || tier >= static_cast<int>(storage::kTierCount)) return INT64_MIN;
  const int64_t keep = KeepFor(database)[tier + 1];
  if (keep <= 0) return INT64_MIN;
  return now_ns < INT64_MIN + keep ? INT64_MIN : now_ns - keep;
}

Status DbImpl::EnforceRetention(int64_t now_ns) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  size_t series = 0;
  {
    ReaderLock l(&mu_);
    series = index_.series_count();
  }
  uint64_t changed = 0;
  leveldb::WriteBatch batch;
  {
    // Points in the head behind the cut go to chunks first: flushed later,
    // into a window already deleted, they could recompute a tier bucket
    // from raw points that are gone.
    MutexLock f(&flush_mu_);
    GPULSE_RETURN_IF_ERROR(FlushLocked());
  }
  // The flush mutex is held for a slice of the series at a time (no flush
  // may write chunk parts or tier rows while they are cut), so flushes and
  // the writers behind them wait only briefly.
  constexpr uint32_t kSeriesPerSlice = 256;
  for (uint32_t from = 0; from < series; from += kSeriesPerSlice) {
    GPULSE_RETURN_IF_ERROR(CheckOpen());
    MutexLock f(&flush_mu_);
    const uint32_t to = static_cast<uint32_t>(std::min<size_t>(series, from + kSeriesPerSlice));
    for (uint32_t id = from; id < to; ++id) {
      // The window holding the cut stays whole; those before it go. Tier
      // rows go by whole buckets before the one holding their cut, so no
      // row is computed again from raw points.
      const Keep* keep = &retention_ns_;
      if (!retention_by_db_.empty()) {
        ReaderLock l(&mu_);
        keep = &KeepFor(DatabaseOfSeriesKey(index_.series(id).canonical_key));
      }
      const int64_t raw_keep = KeepFrom((*keep)[0], now_ns, window_ns_);
      int64_t tier_keep[storage::kTierCount];
      for (size_t t = 0; t < storage::kTierCount; ++t) {
        tier_keep[t] = (tier_mask_ & (1u << t))
                           ? KeepFrom((*keep)[t + 1], now_ns, storage::kTiers[t].width_ns)
                           : INT64_MIN;
      }
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
    versions_.TouchEverything();
    Log("retention: deleted or trimmed " + std::to_string(changed) +
        " chunk parts and tier blocks");
  }
  ++retention_runs_;
  retention_deleted_keys_ += changed;
  return Status::Ok();
}

}  // namespace gpulse::engine
