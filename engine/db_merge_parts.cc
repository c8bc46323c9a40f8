// Background part merging, and the maintenance thread that runs it and the
// retention passes.
//
// A flush writes a window's new points as the window's next part instead of
// rewriting it (chunk_parts.h), so a window that keeps getting points (late
// and out-of-order data, frequent flushes) collects parts, and every read
// of it merges them. Once a point after the window's end has been flushed,
// the window is unlikely to change again, and merging its parts into one
// costs one rewrite for good; a window still filling is left alone (merging
// it at every flush would rewrite it again and again). Flushes note the
// windows they added a part to; the maintenance thread merges those that
// are ready in small batches under the flush mutex, reading at most
// Options::merge_bytes_per_second. The merged part holds exactly the points
// a read of the parts gives, written in one LevelDB batch with the parts'
// deletes, so a reader's snapshot sees either the parts or the merged part,
// and a crash leaves one or the other. Tiers do not change.

#include <algorithm>
#include <chrono>

#include "engine/chunk_parts.h"
#include "engine/db_impl.h"
#include "leveldb/write_batch.h"
#include "storage/chunk_codec.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

namespace {

// The background merges in batches of at most this share of a second's
// bytes, so the flush mutex is held briefly.
constexpr uint64_t kSlicesPerSecond = 8;

}  // namespace

Status DbImpl::MergeParts() {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  for (bool more = true; more;) {
    uint64_t bytes = 0;
    GPULSE_RETURN_IF_ERROR(MergeReadyParts(64 << 20, &bytes, &more));
  }
  return Status::Ok();
}

Status DbImpl::MergeReadyParts(uint64_t max_bytes, uint64_t* merged_bytes, bool* more) {
  *merged_bytes = 0;
  *more = false;
  MutexLock f(&flush_mu_);
  {
    MutexLock bg(&bg_mu_);
    if (!bg_error_.ok()) return bg_error_;
  }
  if (store_lost_) return CheckOpen();  // the maintenance thread calls without it
  std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
  leveldb::WriteBatch batch;
  std::vector<WindowKey> touched;
  std::string encoded;
  uint64_t windows = 0;
  for (auto c = merge_candidates_.begin(); c != merge_candidates_.end();) {
    if (storage::NextWindowStart(c->window_start, window_ns_) > max_flushed_ts_) {
      ++c;  // still filling
      continue;
    }
    if (*merged_bytes >= max_bytes) {
      *more = true;
      break;
    }
    const std::string first_key =
        storage::ChunkKey(storage::kRawTier, c->series_id, c->field_id, c->window_start);
    storage::ChunkKeyParts first;
    storage::ParseChunkKey(first_key, &first);
    Column merged;
    {
      ReaderLock l(&mu_);
      merged.type = index_.field(c->field_id).type;
    }
    it->Seek(first_key);
    int parts = 0;
    uint16_t last_part = 0;
    GPULSE_RETURN_IF_ERROR(ReadWindowParts(it.get(), first, &merged, &parts, &last_part));
    if (parts > 1) {
      for (uint32_t p = 0; p <= last_part; ++p) {
        batch.Delete(storage::ChunkKey(storage::kRawTier, c->series_id, c->field_id,
                                       c->window_start, static_cast<uint16_t>(p)));
      }
      encoded.clear();
      storage::EncodeChunk(merged, c->window_start, &encoded);
      batch.Put(first_key, encoded);
      touched.push_back({c->series_id, c->field_id, c->window_start});
      *merged_bytes += encoded.size();
      ++windows;
    }
    c = merge_candidates_.erase(c);
  }
  const leveldb::Status w = store_->Write(leveldb::WriteOptions(), &batch);
  // The merged part reads as the parts did; dropping the cached copies only
  // keeps the cache's rule simple (a write to a window drops it).
  window_cache_.Invalidate(touched);
  if (!w.ok()) return Status::IOError("merge parts: " + w.ToString());
  windows_merged_ += windows;
  return Status::Ok();
}

void DbImpl::MaintenanceLoop() {
  const bool retention = any_retention_;
  const uint64_t rate = options_.merge_bytes_per_second;
  auto next_retention = std::chrono::steady_clock::now();  // a pass at once
  MutexLock l(&bg_mu_);
  while (!shutting_down_) {
    if (retention && std::chrono::steady_clock::now() >= next_retention) {
      l.Unlock();
      const Status s = EnforceRetention(WallClockNanos());
      if (!s.ok() && !closed_) Log("retention pass failed (it runs again later): " + s.ToString());
      l.Lock();
      next_retention = std::chrono::steady_clock::now() + options_.retention_interval;
      continue;
    }
    if (merge_requested_ && rate > 0) {
      merge_requested_ = false;
      for (bool more = true; more && !shutting_down_;) {
        l.Unlock();
        uint64_t bytes = 0;
        const Status s =
            MergeReadyParts(std::max<uint64_t>(1, rate / kSlicesPerSecond), &bytes, &more);
        l.Lock();
        if (!s.ok()) {
          if (!closed_) Log("merging chunk parts failed (a later flush retries): " + s.ToString());
          break;
        }
        // The I/O bound: as long as the bytes took at the rate.
        const auto resume = std::chrono::steady_clock::now() +
                            std::chrono::nanoseconds(bytes * 1'000'000'000 / rate);
        while (!shutting_down_ && bg_cv_.WaitUntil(&bg_mu_, resume)) {
        }
      }
      continue;
    }
    // Until Close, a merge to do, or (with retention) the next pass.
    while (!shutting_down_ && !(merge_requested_ && rate > 0)) {
      if (!retention) {
        bg_cv_.Wait(&bg_mu_);
      } else if (!bg_cv_.WaitUntil(&bg_mu_, next_retention)) {
        break;
      }
    }
  }
}

}  // namespace gpulse::engine
