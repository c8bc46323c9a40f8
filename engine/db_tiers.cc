// The downsampling tiers (storage/rollup.h): kept up to date by every flush,
// read by queries whose buckets are whole tier buckets.
//
// A flush folds its points into the stored rows when it can do so exactly:
// when all of a bucket's new points lie after the stored row's last point or
// before its first, no stored point is replaced, so adding the two rows
// gives the row of the union. Otherwise (a late point among stored ones, or
// a replaced value) the bucket is computed again from the raw points, stored
// merged with the new ones. Tier rows go in the same LevelDB batches as the
// raw chunks; if a crash cuts a flush short, the WAL replays its points and
// the next flush finds them inside the rows already written, so it computes
// those buckets from raw again: raw and tiers cannot disagree.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "engine/chunk_parts.h"
#include "engine/column_ops.h"
#include "engine/db_impl.h"
#include "engine/tier_kinds.h"
#include "storage/chunk_codec.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"

namespace gpulse::engine {

Status DbImpl::UpdateTiers(uint32_t series_id, uint32_t field_id, const Column& fresh,
                           uint32_t mask, leveldb::WriteBatch* batch,
                           std::vector<WindowKey>* touched) {
  if (fresh.ts.empty() || mask == 0) return Status::Ok();
  Status s;
  WithTierKind(fresh.type, [&](auto kind) {
    s = UpdateTierRows<decltype(kind)>(series_id, field_id, fresh, mask, batch, touched);
  });
  return s;
}

template <typename Kind>
Status DbImpl::UpdateTierRows(uint32_t series_id, uint32_t field_id, const Column& fresh,
                              uint32_t mask, leveldb::WriteBatch* batch,
                              std::vector<WindowKey>* touched) {
  using Rows = typename Kind::Rows;
  // The new points' rows in every kept tier: the finest from the points, the
  // others from the finer rows.
  Rows rows[storage::kTierCount];
  int finer = -1;
  for (size_t t = 0; t < storage::kTierCount; ++t) {
    if (!(mask & (1u << t))) continue;
    Kind::Reset(fresh.type, &rows[t]);
    if (finer < 0) {
      Kind::Build(fresh, storage::kTiers[t].width_ns, &rows[t]);
    } else {
      Kind::Coarsen(rows[finer], storage::kTiers[t].width_ns, &rows[t]);
    }
    finer = static_cast<int>(t);
  }

  std::string value;
  for (size_t t = 0; t < storage::kTierCount; ++t) {
    if (!(mask & (1u << t))) continue;
    const storage::Tier& tier = storage::kTiers[t];
    const storage::ZstdDictionary* dict = tier_dicts_.Find(tier.id, field_id);
    const Rows& add = rows[t];
    size_t j = 0;
    while (j < add.size()) {
      const int64_t block = storage::WindowStart(add.bucket[j], storage::BlockSpan(tier));
      const std::string key = storage::ChunkKey(tier.id, series_id, field_id, block);
      Rows stored;
      Kind::Reset(fresh.type, &stored);
      const leveldb::Status g = store_->Get(leveldb::ReadOptions(), key, &value);
      if (g.ok()) {
        Status d = Kind::Decode(value, dict, &stored);
        if (d.ok() && !Kind::TypeIs(stored, fresh.type)) {
          d = Status::Corruption("rows of another type than the field");
        }
        if (!d.ok()) {
          // A block that cannot be read (damaged, or written with a
          // dictionary the store lost): its rows again from the raw points
          // stored for its span, so that writes go on. Rows past the raw
          // retention are lost with it, as in `gpulse verify --repair`.
          Log("flush: the tier " + std::string(tier.name) + " block of series " +
              std::to_string(series_id) + " field " + std::to_string(field_id) + " from " +
              std::to_string(block) + " cannot be read (" + d.message() +
              "); built again from the raw points");
          Kind::Reset(fresh.type, &stored);
          Column raw;
          raw.type = fresh.type;
          GPULSE_RETURN_IF_ERROR(
              ReadChunks(nullptr, series_id, field_id, block,
                         storage::NextWindowStart(block, storage::BlockSpan(tier)),
                         window_cache_.epoch(), &raw));
          Kind::Build(raw, tier.width_ns, &stored);
        }
      } else if (!g.IsNotFound()) {
        return Status::IOError("flush: read tier rows: " + g.ToString());
      }
      Rows merged;
      Kind::Reset(fresh.type, &merged);
      size_t i = 0;
      const int64_t span = storage::BlockSpan(tier);
      const int64_t block_end = storage::NextWindowStart(block, span);
      while (i < stored.size() || (j < add.size() && add.bucket[j] < block_end)) {
        const bool take_add = j < add.size() && add.bucket[j] < block_end;
        if (!take_add || (i < stored.size() && stored.bucket[i] < add.bucket[j])) {
          Kind::Append(stored, i++, &merged);
          continue;
        }
        if (i == stored.size() || add.bucket[j] < stored.bucket[i]) {
          Kind::Append(add, j++, &merged);
          continue;
        }
        // Whether the new row can be added to the stored one: its points
        // all lie after (or before) the stored row's, so none is replaced.
        if (Kind::FirstTs(add, j) > Kind::LastTs(stored, i) ||
            Kind::LastTs(add, j) < Kind::FirstTs(stored, i)) {
          Kind::Append(stored, i++, &merged);
          Kind::MergeLast(add, j++, &merged);
          continue;
        }
        // The new points fall among stored ones: the bucket again from raw.
        const int64_t b = add.bucket[j];
        const int64_t b_end = storage::NextWindowStart(b, tier.width_ns);
        Column raw;
        raw.type = fresh.type;
        GPULSE_RETURN_IF_ERROR(
            ReadChunks(nullptr, series_id, field_id, b, b_end, window_cache_.epoch(), &raw));
        Column part;
        part.type = fresh.type;
        AppendRange(fresh, b, b_end, &part);
        MergeNewer(part, &raw);
        Kind::Build(raw, tier.width_ns, &merged);
        ++i;
        ++j;
      }
      value.clear();
      Kind::Encode(merged, t, dict, &value);
      batch->Put(key, value);
      touched->push_back({series_id, field_id, block, tier.id});
    }
  }
  return Status::Ok();
}

Status DbImpl::BuildTiersFromRaw() {
  GPULSE_RETURN_IF_ERROR(BuildTiers(tier_mask_));
  leveldb::WriteBatch batch;
  std::string bytes;
  storage::PutU32BE(&bytes, storage::kFormatVersion);
  batch.Put(storage::VersionKey(), bytes);
  batch.Put(std::string(1, storage::kTierSetKey), std::string(1, static_cast<char>(tier_mask_)));
  leveldb::WriteOptions sync;
  sync.sync = true;
  const leveldb::Status put = store_->Write(sync, &batch);
  if (!put.ok()) return Status::IOError("write format version: " + put.ToString());
  return Status::Ok();
}

Status DbImpl::SyncTierSet() {
  const std::string key(1, storage::kTierSetKey);
  std::string stored;
  const leveldb::Status got = store_->Get(leveldb::ReadOptions(), key, &stored);
  uint32_t have = 0;
  if (got.ok() && stored.size() == 1) {
    have = static_cast<uint8_t>(stored[0]);
    // A tool opening a server's directory keeps the server's tiers.
    if (options_.keep_stored_tiers) tier_mask_ = have;
  } else if (got.IsNotFound()) {
    // A new store (no chunks yet): nothing to build.
    have = tier_mask_;
  } else {
    return Status::Corruption(path_ + "/store: unreadable tier set");
  }
  if (have != tier_mask_) {
    // Dropped tiers: their keys are one contiguous range each.
    for (size_t t = 0; t < storage::kTierCount; ++t) {
      if (!(have & (1u << t)) || (tier_mask_ & (1u << t))) continue;
      Log(std::string("dropping the ") + storage::kTiers[t].name + " tier (not in the tier set)");
      const std::string from(1, storage::kChunkPrefix);
      std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
      leveldb::WriteBatch batch;
      for (it->Seek(from + static_cast<char>(storage::kTiers[t].id)); it->Valid(); it->Next()) {
        storage::ChunkKeyParts k;
        const leveldb::Slice raw_key = it->key();
        if (!storage::ParseChunkKey(std::string_view(raw_key.data(), raw_key.size()), &k) ||
            k.tier != storage::kTiers[t].id) {
          break;
        }
        batch.Delete(it->key());
        if (batch.ApproximateSize() > (8 << 20)) {
          const leveldb::Status w = store_->Write(leveldb::WriteOptions(), &batch);
          if (!w.ok()) return Status::IOError("drop tier: " + w.ToString());
          batch.Clear();
        }
      }
      const leveldb::Status w = store_->Write(leveldb::WriteOptions(), &batch);
      if (!w.ok()) return Status::IOError("drop tier: " + w.ToString());
    }
    GPULSE_RETURN_IF_ERROR(BuildTiers(tier_mask_ & ~have));
  }
  leveldb::WriteOptions sync;
  sync.sync = true;
  const leveldb::Status put = store_->Put(sync, key, std::string(1, static_cast<char>(tier_mask_)));
  if (!put.ok()) return Status::IOError("write tier set: " + put.ToString());
  return Status::Ok();
}

namespace {

// The windows of one series' field, in time order: the unit of work of a
// tier build. Windows of one field share tier blocks, so one worker takes
// them all, in order; different fields touch different blocks.
struct FieldWindows {
  uint32_t series_id = 0, field_id = 0;
  std::vector<Column> windows;
};

// A bounded hand-over from the reader of the raw chunks to the workers.
class FieldQueue {
 public:
  explicit FieldQueue(size_t bound) : bound_(bound) {}
  // False once Stop was called (a worker failed): the producer gives up.
  bool Push(FieldWindows item) {
    MutexLock lock(&mu_);
    while (items_.size() >= bound_ && !stopped_) not_full_.Wait(&mu_);
    if (stopped_) return false;
    items_.push_back(std::move(item));
    not_empty_.Signal();
    return true;
  }
  // False when closed and drained, or stopped.
  bool Pop(FieldWindows* item) {
    MutexLock lock(&mu_);
    while (items_.empty() && !closed_ && !stopped_) not_empty_.Wait(&mu_);
    if (stopped_ || items_.empty()) return false;
    *item = std::move(items_.front());
    items_.erase(items_.begin());
    not_full_.Signal();
    return true;
  }
  void Close() {
    MutexLock lock(&mu_);
    closed_ = true;
    not_empty_.SignalAll();
  }
  void Stop() {
    MutexLock lock(&mu_);
    stopped_ = true;
    not_empty_.SignalAll();
    not_full_.SignalAll();
  }

 private:
  const size_t bound_;
  Mutex mu_;
  CondVar not_full_, not_empty_;
  std::vector<FieldWindows> items_ GPULSE_GUARDED_BY(mu_);
  bool closed_ GPULSE_GUARDED_BY(mu_) = false;
  bool stopped_ GPULSE_GUARDED_BY(mu_) = false;
};

}  // namespace

Status DbImpl::BuildTiers(uint32_t mask, bool strings_only) {
  if (mask == 0) return Status::Ok();
  std::string names;
  for (size_t t = 0; t < storage::kTierCount; ++t) {
    if (mask & (1u << t)) names += std::string(names.empty() ? "" : ", ") + storage::kTiers[t].name;
  }
  Log(std::string("building ") + (strings_only ? "the string fields' rows of " : "") + "the " +
      names + " tiers of " + path_ + "/store from its raw chunks");
  // This thread reads and decodes the raw windows; two workers fold them
  // into tier rows and write them (the rows' encoding is most of the cost).
  // A field always goes to the same worker, so its pieces are folded in
  // order. It runs at Open, before any other thread uses the store.
  constexpr int kWorkers = 2;
  constexpr size_t kPiecePoints =
      8 << 20;  // a field is handed over in pieces of about this many points
  std::vector<std::unique_ptr<FieldQueue>> queues;
  // Two pieces waiting per worker: memory stays near (2 + 1) x 2 pieces.
  for (int i = 0; i < kWorkers; ++i) queues.push_back(std::make_unique<FieldQueue>(2));
  std::mutex error_mutex;
  Status error;
  const auto fail = [&](Status s) {
    std::lock_guard lock(error_mutex);
    if (error.ok()) error = std::move(s);
    for (auto& q : queues) q->Stop();
  };
  std::atomic<uint64_t> windows{0};
  const auto work = [&](FieldQueue* queue) {
    FieldWindows item;
    while (queue->Pop(&item)) {
      // A field's windows as one column, folded in one pass: each tier
      // block is then read, encoded and written once, not once a window.
      // A crash part way leaves the tier set unrecorded: the next Open
      // builds again, and rows already written are recomputed, not added
      // twice.
      Column all;
      all.type = item.windows.front().type;
      for (const Column& window : item.windows) AppendPoints(window, 0, window.size(), &all);
      leveldb::WriteBatch batch;
      std::vector<WindowKey> touched;  // the cache is empty at Open
      Status s = UpdateTiers(item.series_id, item.field_id, all, mask, &batch, &touched);
      if (s.ok()) {
        const leveldb::Status w = store_->Write(leveldb::WriteOptions(), &batch);
        if (!w.ok()) s = Status::IOError("build tiers: " + w.ToString());
      }
      if (!s.ok()) return fail(s);
      windows.fetch_add(item.windows.size(), std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> workers;
  for (auto& q : queues) workers.emplace_back(work, q.get());
  const Status read = [&]() -> Status {
    std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
    it->Seek(std::string(1, storage::kChunkPrefix));
    FieldWindows item;
    size_t points = 0;
    const auto hand_over = [&] {
      if (item.windows.empty()) return true;
      FieldQueue& queue = *queues[(item.series_id * 31 + item.field_id) % kWorkers];
      const FieldWindows next{item.series_id, item.field_id, {}};
      const bool taken = queue.Push(std::move(item));
      item = next;
      points = 0;
      return taken;
    };
    while (it->Valid()) {
      storage::ChunkKeyParts k;
      const leveldb::Slice key = it->key();
      if (!storage::ParseChunkKey(std::string_view(key.data(), key.size()), &k) ||
          k.tier != storage::kRawTier) {
        break;
      }
      // The window's type is its chunks' (the catalog is not loaded yet).
      storage::ChunkInfo info;
      const leveldb::Slice v = it->value();
      GPULSE_RETURN_IF_ERROR(
          storage::ReadChunkInfo(std::string_view(v.data(), v.size()), k.window_start, &info));
      if (strings_only && info.type != FieldType::kString) {
        int parts = 0;
        uint16_t last_part = 0;
        GPULSE_RETURN_IF_ERROR(CountWindowParts(it.get(), k, &parts, &last_part));  // past it
        continue;
      }
      if (k.series_id != item.series_id || k.field_id != item.field_id || points >= kPiecePoints) {
        if (!hand_over()) return Status::Ok();  // a worker failed; its error is returned
        item.series_id = k.series_id;
        item.field_id = k.field_id;
      }
      Column& window = item.windows.emplace_back();
      window.type = info.type;
      GPULSE_RETURN_IF_ERROR(ReadWindowParts(it.get(), k, &window));
      points += window.size();
    }
    if (!it->status().ok()) return Status::IOError("build tiers: " + it->status().ToString());
    hand_over();
    return Status::Ok();
  }();
  for (auto& q : queues) q->Close();
  for (auto& w : workers) w.join();
  if (!read.ok()) return read;
  if (!error.ok()) return error;
  Log("tiers built from " + std::to_string(windows.load()) + " raw windows");
  return Status::Ok();
}

}  // namespace gpulse::engine
