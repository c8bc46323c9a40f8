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
#include <condition_variable>
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
    const Rows& add = rows[t];
    size_t j = 0;
    while (j < add.size()) {
      const int64_t block = storage::WindowStart(add.bucket[j], storage::BlockSpan(tier));
      const std::string key = storage::ChunkKey(tier.id, series_id, field_id, block);
      Rows stored;
      Kind::Reset(fresh.type, &stored);
      const leveldb::Status g = store_->Get(leveldb::ReadOptions(), key, &value);
      if (g.ok()) {
        const Status d = Kind::Decode(value, &stored);
        if (!d.ok())
          return Status::Corruption("flush: tier " + std::string(tier.name) + ": " + d.message());
        if (!Kind::TypeIs(stored, fresh.type)) {
          return Status::Corruption("flush: tier " + std::string(tier.name) +
                                    " rows have another type than the field");
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
      Kind::Encode(merged, &value);
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
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < bound_ || stopped_; });
    if (stopped_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }
  // False when closed and drained, or stopped.
  bool Pop(FieldWindows* item) {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || closed_ || stopped_; });
    if (stopped_ || items_.empty()) return false;
    *item = std::move(items_.front());
    items_.erase(items_.begin());
    not_full_.notify_one();
    return true;
  }
  void Close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
  }
  void Stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  const size_t bound_;
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::vector<FieldWindows> items_;
  bool closed_ = false, stopped_ = false;
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
      GPULSE_RETURN_IF_ERROR(storage::ReadChunkInfo(std::string_view(v.data(), v.size()), &info));
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

namespace {

// The position of the first of a block's rows (bucket starts of width
// `width`, ascending) at or after t: by arithmetic when the block has no
// gaps (its first and last rows as far apart as their count says), so that
// a read of hundreds of series does not search each one's rows twice.
size_t FirstRowAtOrAfter(const std::vector<int64_t>& bucket, int64_t t, int64_t width) {
  const size_t n = bucket.size();
  if (n == 0 || t <= bucket.front()) return 0;
  if (t > bucket.back()) return n;
  const auto w = static_cast<uint64_t>(width);
  const uint64_t apart =
      static_cast<uint64_t>(bucket.back()) - static_cast<uint64_t>(bucket.front());
  if (n <= static_cast<size_t>(storage::kRollupBlockRows) && apart == (n - 1) * w) {
    return static_cast<size_t>(
        (static_cast<uint64_t>(t) - static_cast<uint64_t>(bucket.front()) + w - 1) / w);
  }
  return static_cast<size_t>(std::lower_bound(bucket.begin(), bucket.end(), t) - bucket.begin());
}

}  // namespace

Status DbImpl::ScanRollups(SeriesRef series, std::span<const std::string> fields, size_t tier,
                           int64_t start_ns, int64_t end_ns, uint32_t parts,
                           const RollupVisitor& fn) {
  (void)parts;  // every part is decoded: blocks are cached whole
  SeriesId id = kNoId;
  GPULSE_RETURN_IF_ERROR(FindSeriesId(series, &id));
  return ScanTierRows<RollupKind>(std::span<const SeriesId>(&id, 1), fields, tier, start_ns, end_ns,
                                  [&](size_t, size_t f, const storage::RollupColumn& rows, size_t b,
                                      size_t e) { fn(f, rows, b, e); });
}

Status DbImpl::ScanRollups(std::span<const SeriesId> ids, std::span<const std::string> fields,
                           size_t tier, int64_t start_ns, int64_t end_ns, uint32_t parts,
                           const SeriesRollupVisitor& fn) {
  (void)parts;
  return ScanTierRows<RollupKind>(ids, fields, tier, start_ns, end_ns, fn);
}

Status DbImpl::ScanTallies(SeriesRef series, std::span<const std::string> fields, size_t tier,
                           int64_t start_ns, int64_t end_ns, const TallyVisitor& fn) {
  SeriesId id = kNoId;
  GPULSE_RETURN_IF_ERROR(FindSeriesId(series, &id));
  return ScanTierRows<TallyKind>(std::span<const SeriesId>(&id, 1), fields, tier, start_ns, end_ns,
                                 [&](size_t, size_t f, const storage::TallyColumn& rows, size_t b,
                                     size_t e) { fn(f, rows, b, e); });
}

Status DbImpl::FindSeriesId(SeriesRef series, SeriesId* id) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  std::shared_lock<std::shared_mutex> l(mu_);
  *id = FindSeriesIdLocked(series);
  if (*id == kNoId) return Status::NotFound(NoSeries(series));
  return Status::Ok();
}

template <typename Kind, typename Visitor>
Status DbImpl::ScanTierRows(std::span<const SeriesId> ids, std::span<const std::string> fields,
                            size_t tier, int64_t start_ns, int64_t end_ns, const Visitor& fn) {
  using Rows = typename Kind::Rows;
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  if (tier >= storage::kTierCount || !(tier_mask_ & (1u << tier))) {
    return Status::InvalidArgument("tier " + std::to_string(tier) +
                                   " is not kept (Options::tiers)");
  }
  const storage::Tier& t = storage::kTiers[tier];
  if (start_ns >= end_ns || ids.empty()) return Status::Ok();
  // Unflushed points of whole buckets: the last bucket may end past end_ns.
  const int64_t snap_end =
      storage::NextWindowStart(storage::WindowStart(end_ns - 1, t.width_ns), t.width_ns);
  const int64_t span = storage::BlockSpan(t);
  const int64_t first_block = storage::WindowStart(start_ns, span);
  // The blocks [start_ns, end_ns) overlaps, when few enough to look up in
  // the cache all at once (a range of years of 5m rows is looked up block by
  // block, skipping the gaps between stored blocks).
  constexpr size_t kLookUpFirst = 16;
  size_t blocks = 0;
  for (int64_t b = first_block; b < end_ns && blocks <= kLookUpFirst;
       b = storage::NextWindowStart(b, span)) {
    ++blocks;
    if (b > INT64_MAX - span) break;
  }
  const bool looked_up = blocks <= kLookUpFirst;

  // Under one hold of the state lock: each series' fields and unflushed
  // points; under one of the cache's: every block's cached rows.
  // Per series and field (parts[s * nf + f]): the field's id and type, and
  // its unflushed points in range, copied only when the head or the sealed
  // head may hold some there (most reads are of flushed time: then a series
  // costs no look in either).
  const size_t nf = fields.size();
  struct Part {
    uint32_t id = kNoId;
    FieldType type = FieldType::kFloat;
  };
  std::vector<Part> parts(ids.size() * nf);
  std::vector<SeriesSnapshot::Field> unflushed;  // the same positions, when copied
  LazySnapshot store(store_.get());
  uint64_t epoch = 0;
  {
    std::shared_lock<std::shared_mutex> l(mu_);
    const Unflushed in = UnflushedInLocked(start_ns, snap_end);
    if (in.sealed || in.head) unflushed.resize(parts.size());
    // The fields by name, found again only when the measurement changes.
    const std::string* measurement = nullptr;
    std::vector<const FieldEntry*> found(nf);
    for (size_t s = 0; s < ids.size(); ++s) {
      if (ids[s] >= index_.series_count()) {
        return Status::InvalidArgument("no series with id " + std::to_string(ids[s]));
      }
      const std::string& m = index_.series(ids[s]).series.measurement;
      if (measurement == nullptr || *measurement != m) {
        measurement = &m;
        for (size_t i = 0; i < nf; ++i) found[i] = index_.FindField(m, fields[i]);
      }
      for (size_t i = 0; i < nf; ++i) {
        if (!found[i]) continue;
        parts[s * nf + i] = {found[i]->id, found[i]->type};
        if (!unflushed.empty()) {
          SnapshotFieldLocked(ids[s], *found[i], start_ns, snap_end, in, &unflushed[s * nf + i]);
        }
      }
    }
    epoch = window_cache_.epoch();
  }
  std::vector<std::shared_ptr<const Rows>> cached;
  if (looked_up) {
    std::vector<WindowKey> keys;
    keys.reserve(parts.size() * blocks);
    for (size_t s = 0; s < ids.size(); ++s) {
      for (size_t i = 0; i < nf; ++i) {
        for (size_t j = 0; j < blocks; ++j) {
          keys.push_back(
              {ids[s], parts[s * nf + i].id, first_block + static_cast<int64_t>(j) * span, t.id});
        }
      }
    }
    cached.resize(keys.size());
    Kind::LookupMany(&window_cache_, keys, cached.data());
  }
  const auto name_of = [&](SeriesId id) {
    std::shared_lock<std::shared_mutex> l(mu_);
    return SeriesName(index_.series(id).series);
  };

  std::unique_ptr<leveldb::Iterator> it;
  Status damage;  // the first damaged block met
  for (size_t s = 0; s < ids.size(); ++s) {
    for (size_t i = 0; i < nf; ++i) {
      const Part& p = parts[s * nf + i];
      if (p.id == kNoId || !Kind::For(p.type)) continue;
      // Buckets with unflushed points: computed below from all their raw
      // points; the stored rows of those buckets are skipped.
      std::vector<int64_t> touched;
      for (size_t copy = 0; copy < (unflushed.empty() ? 0 : 2); ++copy) {
        const SeriesSnapshot::Field& u = unflushed[s * nf + i];
        for (int64_t ts : (copy == 0 ? u.sealed : u.head).ts) {
          const int64_t b = storage::WindowStart(ts, t.width_ns);
          if (b >= start_ns && b < end_ns && (touched.empty() || touched.back() != b)) {
            touched.push_back(b);
          }
        }
      }
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      // Emits rows [lo, hi) of a block, minus the touched buckets.
      auto emit = [&](const Rows& rows, size_t lo, size_t hi) {
        if (touched.empty()) return fn(s, i, rows, lo, hi);
        size_t a = lo;
        for (size_t r = lo; r < hi; ++r) {
          if (!std::binary_search(touched.begin(), touched.end(), rows.bucket[r])) continue;
          if (a < r) fn(s, i, rows, a, r);
          a = r + 1;
        }
        if (a < hi) fn(s, i, rows, a, hi);
      };

      int64_t block = first_block;
      while (block < end_ns) {
        const WindowKey cache_key{ids[s], p.id, block, t.id};
        std::shared_ptr<const Rows> rows;
        if (looked_up) {
          const uint64_t j = (static_cast<uint64_t>(block) - static_cast<uint64_t>(first_block)) /
                             static_cast<uint64_t>(span);
          rows = std::move(cached[(s * nf + i) * blocks + j]);
        } else {
          rows = Kind::Lookup(&window_cache_, cache_key);
        }
        if (!rows) {
          // The first stored block at or after `block` (blocks may be
          // missing).
          if (!it) {
            leveldb::ReadOptions options;
            options.snapshot = store.get();
            it.reset(store_->NewIterator(options));
          }
          it->Seek(storage::ChunkKey(t.id, ids[s], p.id, block));
          storage::ChunkKeyParts k;
          bool found = false;
          if (it->Valid()) {
            const leveldb::Slice raw_key = it->key();
            found = storage::ParseChunkKey(std::string_view(raw_key.data(), raw_key.size()), &k) &&
                    k.tier == t.id && k.series_id == ids[s] && k.field_id == p.id;
          }
          if (!found || k.window_start != block) {
            // `block` has no rows stored: remembered as an empty entry, so
            // that the next query over it (the last block of a range that
            // reaches past the data) does not seek the store again. A flush
            // that writes the block drops the entry.
            if (it->status().ok()) {
              auto none = std::make_shared<Rows>();
              Kind::Reset(p.type, none.get());
              Kind::Insert(&window_cache_, cache_key, std::move(none), epoch);
            }
            if (!found || k.window_start >= end_ns) break;
            block = k.window_start;  // past a gap: that block may be cached
            continue;
          }
          Rows decoded;
          const leveldb::Slice v = it->value();
          Status d = Kind::Decode(std::string_view(v.data(), v.size()), &decoded);
          if (d.ok() && !Kind::TypeIs(decoded, p.type)) {
            d = Status::Corruption("type differs from the field's");
          }
          if (!d.ok()) {
            // A damaged block: the rest of this series-field is left out,
            // the other series are read, and the call says so at the end.
            Status why =
                Status::Corruption("tier " + std::string(t.name) + " block of " + name_of(ids[s]) +
                                   " from " + std::to_string(block) + ": " + d.message());
            LogDamage(why, cache_key);
            if (damage.ok()) damage = std::move(why);
            break;
          }
          auto shared = std::make_shared<const Rows>(std::move(decoded));
          Kind::Insert(&window_cache_, cache_key, shared, epoch);
          rows = std::move(shared);
        }
        const size_t lo = FirstRowAtOrAfter(rows->bucket, start_ns, t.width_ns);
        const size_t hi = FirstRowAtOrAfter(rows->bucket, end_ns, t.width_ns);
        if (lo < hi) emit(*rows, lo, hi);
        if (block > INT64_MAX - span) break;
        block = storage::NextWindowStart(block, span);
      }
      if (it && !it->status().ok()) {
        return Status::IOError("read tier rows: " + it->status().ToString());
      }

      if (touched.empty()) continue;
      // The series' snapshot as ReadMerged takes it: this field's points.
      SeriesSnapshot snap(&store);
      snap.series_id = ids[s];
      snap.epoch = epoch;
      snap.fields.push_back(std::move(unflushed[s * nf + i]));
      Rows fixed;
      Kind::Reset(p.type, &fixed);
      for (int64_t b : touched) {
        const int64_t b_end = storage::NextWindowStart(b, t.width_ns);
        Column raw;
        GPULSE_RETURN_IF_ERROR(ReadMerged(snap, 0, b, b_end, &raw));
        Kind::Build(raw, t.width_ns, &fixed);
      }
      if (fixed.size() > 0) fn(s, i, fixed, 0, fixed.size());
    }
  }
  return damage;
}

}  // namespace gpulse::engine
