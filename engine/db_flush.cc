// The flush: seal the head, merge it into the chunks, retire its WAL.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "engine/chunk_parts.h"
#include "engine/column_ops.h"
#include "engine/db_impl.h"
#include "engine/store_status.h"
#include "leveldb/write_batch.h"
#include "storage/chunk_codec.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

namespace {
// LevelDB batches are written in pieces of about this size.
constexpr size_t kFlushBatchBytes = 8 << 20;
// A flush worker takes this many series ids at a time: few enough that the
// workers finish together, enough that taking them costs nothing.
constexpr size_t kFlushSeriesPerTake = 256;
// A head of fewer series is written by the flushing thread alone; a larger
// one by up to kMostFlushWorkers threads (one a core).
constexpr size_t kParallelFlushSeries = 4096;
constexpr size_t kMostFlushWorkers = 8;
}  // namespace

Status DbImpl::Flush() {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  MutexLock l(&flush_mu_);
  return FlushLocked();
}

Status DbImpl::FlushLocked() {
  {
    MutexLock bg(&bg_mu_);
    if (!bg_error_.ok()) return bg_error_;
  }
  if (store_lost_) return CheckOpen();
  if (flush_stalled_ || store_full_) {
    return Status::NoSpace("the disk of " + path_ +
                           " is full: an earlier flush waits for space (retried every second)");
  }
  uint64_t first_live_segment = 0;
  std::shared_ptr<const Head> sealed;
  {
    MutexLock w(&write_mu_);
    if (HeadForWriter().empty()) {
      // Every logged point is in chunks: segments left by earlier opens
      // (each Open starts a new one) can go.
      return wal_->RemoveSegmentsBefore(wal_->active_segment());
    }
    // Records appended from here on go to the new segment and the new head,
    // so every segment below it holds only points of the sealed head (or of
    // chunks already written).
    GPULSE_RETURN_IF_ERROR(wal_->Rotate(&first_live_segment));
    // The swap is all that writers wait for: the flush sorts each unsorted
    // column as it reads it, outside the locks (readers of imm_ sort their
    // copies meanwhile).
    WriterLock l(&mu_);
    imm_ = head_;
    sealed = imm_;
    head_ = std::make_shared<Head>();
    head_bytes_ = 0;
  }
  {
    MutexLock bg(&bg_mu_);
    imm_pending_ = true;
  }

  const Status s = WriteChunks(*sealed);
  if (s.ok()) {
    WriterLock l(&mu_);
    imm_.reset();
  }
  {
    // On failure the sealed head stays readable and its WAL segments stay:
    // writes are refused from now on, and reopening replays and retries.
    MutexLock bg(&bg_mu_);
    if (s.ok()) {
      imm_pending_ = false;
      if (!merge_candidates_.empty()) merge_requested_ = true;
    } else if (s.IsNoSpace()) {
      // The sealed head stays readable and pending, its WAL stays: the
      // flusher writes it again once there is space (RecoverFromNoSpace).
      flush_stalled_ = true;
      stalled_first_segment_ = first_live_segment;
      store_full_ = true;
    } else {
      SetBgErrorLocked(s);
    }
  }
  bg_cv_.SignalAll();
  GPULSE_RETURN_IF_ERROR(s);
  ++flushes_;
  return wal_->RemoveSegmentsBefore(first_live_segment);
}

Status DbImpl::RecoverFromNoSpace() {
  // Close holds open_mu_ while it joins this thread: wait for the lock only
  // while nobody is closing.
  std::unique_lock<std::shared_mutex> exclusive(open_mu_, std::defer_lock);
  while (!exclusive.try_lock()) {
    {
      MutexLock bg(&bg_mu_);
      if (shutting_down_) return Status::Cancelled("closing");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Not CheckOpen: a store lost by an earlier failed reopen is retried here.
  if (closed_) return Status::InvalidArgument("database " + path_ + " is closed");
  MutexLock flush(&flush_mu_);
  MutexLock write(&write_mu_);
  // LevelDB may have half-written its log at the failure, or stopped on a
  // background error it never clears: a reopen replays and repairs it.
  store_.reset();
  const Status reopened = OpenStore();
  store_lost_ = !reopened.ok();
  GPULSE_RETURN_IF_ERROR(reopened);
  GPULSE_RETURN_IF_ERROR(IndexForWriter().Rewrite(store_.get()));
  if (flush_stalled_) {
    std::shared_ptr<const Head> sealed;
    {
      ReaderLock l(&mu_);
      sealed = imm_;
    }
    GPULSE_RETURN_IF_ERROR(WriteChunks(*sealed));
    {
      WriterLock l(&mu_);
      imm_.reset();
    }
    flush_stalled_ = false;
    ++flushes_;
    GPULSE_RETURN_IF_ERROR(wal_->RemoveSegmentsBefore(stalled_first_segment_));
  }
  store_full_ = false;
  {
    MutexLock bg(&bg_mu_);
    imm_pending_ = false;
    if (!merge_candidates_.empty()) merge_requested_ = true;
  }
  bg_cv_.SignalAll();
  Log("disk space is back: the store of " + path_ + " is reopened and the waiting flush written");
  return Status::Ok();
}

Status DbImpl::WriteSeriesChunks(const Head& sealed, FlushTasks* tasks, FlushWork* work) {
  leveldb::WriteBatch batch;
  Status status;
  std::string encoded;
  // Parts written by earlier flushes. Each window is visited once per flush,
  // so an iterator sees what it needs whether or not it sees this flush's
  // own writes. It is made again after any worker wrote a piece of its
  // batch: an iterator's implicit snapshot hides later writes to its
  // memtable, and LevelDB steps over hidden entries one by one, so a Seek
  // past the last raw key (a new series-field) walked every tier row written
  // since. At 100,000 series-fields that made one flush take 82 s, not 1.
  uint64_t writes_seen = tasks->writes.load();
  std::unique_ptr<leveldb::Iterator> existing(store_->NewIterator(leveldb::ReadOptions()));
  const auto seek = [&](const std::string& key) {
    const uint64_t writes = tasks->writes.load(std::memory_order_acquire);
    if (writes != writes_seen) {
      writes_seen = writes;
      existing.reset(store_->NewIterator(leveldb::ReadOptions()));
    }
    existing->Seek(key);
  };
  // The windows and tier blocks in `batch`: once it is written, their
  // decoded copies in the window cache are out of date (a decode begun
  // before the write holds an older epoch and is refused). Dropping them at
  // each write, not at the end of the flush, keeps this to one batch's:
  // every window and tier block of a head at 100,000 GPUs took 100 MB.
  std::vector<WindowKey> touched;
  const auto write_batch = [&] {
    const leveldb::Status s = store_->Write(leveldb::WriteOptions(), &batch);
    if (!s.ok()) status = StoreStatus("flush: write chunks", s);
    batch.Clear();
    tasks->writes.fetch_add(1, std::memory_order_release);
    // Even after a failed write: some of its pieces may be in.
    window_cache_.Invalidate(touched);
    touched.clear();
  };
  Column column;  // each entry's points in turn, its vectors reused
  const auto write_column = [&](const Head::Entry& entry) {
    if (!status.ok()) return;
    column.Clear();
    column.type = entry.type;
    sealed.AppendColumn(entry, &column);
    if (!entry.sorted) SortAndDedup(&column);
    size_t i = 0;
    while (i < column.ts.size() && status.ok()) {
      const int64_t window = storage::WindowStart(column.ts[i], window_ns_);
      // The last window may end past INT64_MAX: then it holds the rest.
      const size_t end =
          window > INT64_MAX - window_ns_
              ? column.ts.size()
              : std::lower_bound(column.ts.begin() + i, column.ts.end(), window + window_ns_) -
                    column.ts.begin();
      Column part;
      part.type = column.type;
      AppendPoints(column, i, end, &part);
      i = end;
      touched.push_back({entry.series_id, entry.field_id, window});
      // The parts already stored for this window: the new points go in a
      // part of their own, unless the window has enough parts to merge.
      const std::string first_key =
          storage::ChunkKey(storage::kRawTier, entry.series_id, entry.field_id, window);
      storage::ChunkKeyParts first;
      storage::ParseChunkKey(first_key, &first);
      seek(first_key);
      int parts = 0;
      uint16_t last_part = 0;
      status = CountWindowParts(existing.get(), first, &parts, &last_part);
      if (!status.ok()) return;
      uint16_t part_number = 0;
      if (parts >= kMergePartsAt || last_part == storage::kMaxChunkPart) {
        Column stored;
        stored.type = column.type;
        seek(first_key);
        status = ReadWindowParts(existing.get(), first, &stored);
        if (!status.ok()) return;
        MergeNewer(part, &stored);
        part = std::move(stored);
        for (int p = 0; p <= last_part; ++p) {
          batch.Delete(storage::ChunkKey(storage::kRawTier, entry.series_id, entry.field_id, window,
                                         static_cast<uint16_t>(p)));
        }
        work->merged.push_back({entry.series_id, entry.field_id, window});
      } else if (parts > 0) {
        part_number = static_cast<uint16_t>(last_part + 1);
        work->parted.push_back({entry.series_id, entry.field_id, window});
      }
      const std::string key = storage::ChunkKey(storage::kRawTier, entry.series_id, entry.field_id,
                                                window, part_number);
      encoded.clear();
      storage::EncodeChunk(part, window, &encoded);
      batch.Put(key, encoded);
      if (batch.ApproximateSize() >= kFlushBatchBytes) write_batch();
    }
    if (!column.ts.empty()) work->max_ts = std::max(work->max_ts, column.ts.back());
    if (status.ok())
      status = UpdateTiers(entry.series_id, entry.field_id, column, tier_mask_, &batch, &touched);
  };
  while (status.ok() && !tasks->failed.load(std::memory_order_relaxed)) {
    const size_t first = tasks->next.fetch_add(kFlushSeriesPerTake, std::memory_order_relaxed);
    if (first >= sealed.series_slots()) break;
    sealed.ForEachIn(first, first + kFlushSeriesPerTake, write_column);
  }
  if (status.ok()) {
    write_batch();
  } else {
    // A batch written in part may have left pieces in.
    window_cache_.Invalidate(touched);
  }
  if (!status.ok()) tasks->failed.store(true, std::memory_order_relaxed);
  return status;
}

Status DbImpl::WriteChunks(const Head& sealed) {
  // Series-fields are written independently: workers take series a block
  // at a time, each with its own batches and iterator (LevelDB takes
  // writes from many threads). A small head is written on this thread.
  const size_t workers =
      sealed.series_slots() < kParallelFlushSeries
          ? 1
          : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMostFlushWorkers);
  std::vector<FlushWork> work(workers);
  std::vector<Status> statuses(workers);
  FlushTasks tasks;
  if (workers == 1) {
    statuses[0] = WriteSeriesChunks(sealed, &tasks, &work[0]);
  } else {
    std::vector<std::thread> threads;
    for (size_t w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] { statuses[w] = WriteSeriesChunks(sealed, &tasks, &work[w]); });
    }
    for (std::thread& t : threads) t.join();
  }
  Status status;
  for (size_t w = 0; w < workers; ++w) {
    if (status.ok() && !statuses[w].ok()) status = statuses[w];
    // A window is visited once a flush: by one worker, merged or parted.
    for (const PartsKey& key : work[w].merged) merge_candidates_.erase(key);
    merge_candidates_.insert(work[w].parted.begin(), work[w].parted.end());
    max_flushed_ts_ = std::max(max_flushed_ts_, work[w].max_ts);
  }
  GPULSE_RETURN_IF_ERROR(status);
  // The synced write makes every earlier (unsynced) LevelDB write durable
  // too, since LevelDB's log is written in order. Only then may the WAL go.
  std::string version;
  storage::PutU32BE(&version, storage::kFormatVersion);
  leveldb::WriteBatch batch;
  batch.Put(storage::VersionKey(), version);
  leveldb::WriteOptions sync;
  sync.sync = true;
  const leveldb::Status s = store_->Write(sync, &batch);
  if (!s.ok()) return StoreStatus("flush: write chunks", s);
  return Status::Ok();
}

}  // namespace gpulse::engine
