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
#include <chrono>

#include "engine/db_impl.h"
#include "leveldb/write_batch.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

namespace {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int64_t DbImpl::RawRetentionCut() const {
  return retention_ns_[0] > 0 ? RetainedSince(-1, NowNanos()) : INT64_MIN;
}

int64_t DbImpl::RetainedSince(int tier, int64_t now_ns) const {
  const int64_t keep = retention_ns_[tier + 1];
  if (keep <= 0) return INT64_MIN;
  return now_ns < INT64_MIN + keep ? INT64_MIN : now_ns - keep;
}

Status DbImpl::EnforceRetention(int64_t now_ns) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  // No flush may write tier rows or chunk parts while they are cut.
  std::lock_guard<std::mutex> f(flush_mu_);
  size_t series = 0;
  {
    std::shared_lock<std::shared_mutex> l(mu_);
    series = index_.series_count();
  }
  uint64_t changed = 0;
  leveldb::WriteBatch batch;
  // Raw: whole chunk windows before the one holding the cut.
  const int64_t raw_cut = RetainedSince(-1, now_ns);
  if (raw_cut != INT64_MIN) {
    // The window holding the cut stays whole; those before it go.
    const int64_t keep_from = storage::WindowStart(raw_cut, window_ns_);
    if (keep_from != INT64_MIN) {
      for (uint32_t id = 0; id < series; ++id) {
        GPULSE_RETURN_IF_ERROR(DeleteRaw(id, INT64_MIN, keep_from - 1, &batch, &changed));
      }
    }
  }
  // Tiers: whole buckets before the one holding the cut, so no row is
  // computed again from raw points.
  for (size_t t = 0; t < storage::kTierCount; ++t) {
    const int64_t cut = RetainedSince(static_cast<int>(t), now_ns);
    if (cut == INT64_MIN || !(tier_mask_ & (1u << t))) continue;
    const int64_t keep_from = storage::WindowStart(cut, storage::kTiers[t].width_ns);
    if (keep_from == INT64_MIN) continue;
    for (uint32_t id = 0; id < series; ++id) {
      GPULSE_RETURN_IF_ERROR(
          DeleteTierRows(id, INT64_MIN, keep_from - 1, 1u << t, &batch, &changed));
    }
  }
  const leveldb::Status w = store_->Write(leveldb::WriteOptions(), &batch);
  if (!w.ok()) return Status::IOError("retention: " + w.ToString());
  if (changed > 0) {
    window_cache_.Clear();
    Log("retention: deleted or trimmed " + std::to_string(changed) +
        " chunk parts and tier blocks");
  }
  ++retention_runs_;
  retention_deleted_keys_ += changed;
  return Status::Ok();
}

void DbImpl::RetentionLoop() {
  std::unique_lock<std::mutex> l(bg_mu_);
  while (!shutting_down_) {
    l.unlock();
    const Status s = EnforceRetention(NowNanos());
    if (!s.ok() && !closed_) Log("retention pass failed (it runs again later): " + s.ToString());
    l.lock();
    bg_cv_.wait_for(l, options_.retention_interval, [this] { return shutting_down_; });
  }
}

}  // namespace gpulse::engine
