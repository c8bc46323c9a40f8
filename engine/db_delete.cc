// Deletes (DELETE FROM ... WHERE time ...) and DROP SERIES.
//
// A delete is a WAL record like a write: logged and synced first, then
// applied to the store (raw chunks, then tier rows), the catalog and the
// head, all under the write mutex and with no flush running, so it falls
// between the writes before it and after it exactly as the log orders them.
// Its store writes are not synced: until a flush retires its WAL segment
// (which syncs LevelDB first), a crash replays the record and applies it
// again. Applying it again is harmless even when a later flush already
// stored points written after the delete: those points sit after the
// delete in the same live WAL, so replay puts them back in the head.

#include <algorithm>

#include "engine/chunk_parts.h"
#include "engine/column_ops.h"
#include "engine/db_impl.h"
#include "engine/tier_kinds.h"
#include "leveldb/write_batch.h"
#include "storage/chunk_codec.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"

namespace gpulse::engine {

namespace {

// LevelDB batches are written in pieces of about this size.
constexpr size_t kDeleteBatchBytes = 8 << 20;

Status WriteIfLarge(leveldb::DB* db, leveldb::WriteBatch* batch, size_t at_least) {
  if (batch->ApproximateSize() < at_least) return Status::Ok();
  const leveldb::Status s = db->Write(leveldb::WriteOptions(), batch);
  batch->Clear();
  if (!s.ok()) return Status::IOError("delete: " + s.ToString());
  return Status::Ok();
}

// The last timestamp of the window (or block, or bucket) that starts at
// `start` and is `width` wide.
int64_t LastOf(int64_t start, int64_t width) {
  const int64_t next = storage::NextWindowStart(start, width);
  return next == INT64_MAX ? INT64_MAX : next - 1;
}

// Where the keys of (tier, series) with the field after `field_id` begin;
// false when there is none.
bool NextFieldKey(uint8_t tier, uint32_t series_id, uint32_t field_id, std::string* key) {
  if (field_id == UINT32_MAX) return false;
  *key = storage::ChunkKey(tier, series_id, field_id + 1, INT64_MIN);
  return true;
}

}  // namespace

Status DbImpl::Delete(std::span<const Series> series, int64_t start_ns, int64_t end_ns) {
  if (start_ns >= end_ns) return Status::Ok();
  return DeleteSeries(series, start_ns, end_ns == INT64_MAX ? INT64_MAX : end_ns - 1, false);
}

Status DbImpl::DropSeries(std::span<const Series> series) {
  return DeleteSeries(series, INT64_MIN, INT64_MAX, true);
}

Status DbImpl::DeleteSeries(std::span<const Series> series, int64_t first, int64_t last,
                            bool drop) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  // A tier bucket a delete cuts is computed again from the raw points; where
  // retention has deleted those, only edges on the UTC day grid (which every
  // tier's buckets tile) keep the tiers whole.
  // (The strictest cut of any database: a delete may span several.)
  int64_t cut = RawRetentionCut({}, WallClockNanos());
  for (const auto& [database, keep] : retention_by_db_) {
    if (keep[0] > 0) cut = std::max(cut, WallClockNanos() - keep[0]);
  }
  constexpr int64_t kDayNs = 86'400'000'000'000;
  const bool first_cuts = first != INT64_MIN && first < cut && first % kDayNs != 0;
  const bool last_cuts = last != INT64_MAX && last < cut && (last + 1) % kDayNs != 0;
  if (first_cuts || last_cuts) {
    return Status::InvalidArgument(
        "the delete's range starts or ends before the raw retention, off a day boundary: the "
        "tier buckets it cuts could not be computed again from raw points; delete whole UTC "
        "days there");
  }
  std::vector<std::string> keys;
  for (const Series& s : series) {
    std::vector<Tag> tags = s.tags;
    std::sort(tags.begin(), tags.end(), [](const Tag& a, const Tag& b) { return a.key < b.key; });
    std::string key = s.measurement;
    for (const Tag& t : tags) storage::AppendSeriesKeyTag(&key, t.key, t.value);
    keys.push_back(std::move(key));
  }
  // No flush may run (a sealed head would write deleted points back), and
  // no write may come between the record and its effect.
  MutexLock f(&flush_mu_);
  MutexLock w(&write_mu_);
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  {
    MutexLock bg(&bg_mu_);
    if (!bg_error_.ok()) return bg_error_;
  }
  std::vector<uint32_t> ids;
  std::vector<std::string> logged;
  {
    ReaderLock l(&mu_);
    for (std::string& key : keys) {
      const uint32_t id = index_.FindSeries(key);
      if (id == kNoId || index_.series(id).dropped) continue;
      ids.push_back(id);
      logged.push_back(std::move(key));
    }
  }
  if (ids.empty()) return Status::Ok();
  std::string record;
  EncodeWalDelete(logged, first, last, drop, &record);
  uint64_t wal_end = 0;
  GPULSE_RETURN_IF_ERROR(wal_->Append(record, &wal_end));
  GPULSE_RETURN_IF_ERROR(wal_->SyncTo(wal_end));
  const Status s = ApplyDeleteLocked(ids, first, last, drop);
  for (const Series& gone : series) versions_.TouchAll(gone.measurement);
  if (!s.ok()) {
    // The record is logged: reopening applies it. Until then the store may
    // be half done, so writes stop as after a failed flush.
    MutexLock bg(&bg_mu_);
    SetBgErrorLocked(s);
  }
  return s;
}

Status DbImpl::ApplyDeleteLocked(const std::vector<uint32_t>& ids, int64_t first, int64_t last,
                                 bool drop) {
  leveldb::WriteBatch batch;
  uint64_t changed = 0;
  for (uint32_t id : ids) GPULSE_RETURN_IF_ERROR(DeleteRaw(id, first, last, &batch, &changed));
  GPULSE_RETURN_IF_ERROR(WriteIfLarge(store_.get(), &batch, 0));
  // Tier buckets covered in part are computed from the raw points left;
  // no decoded window from before the delete may answer for them.
  window_cache_.Clear();
  for (uint32_t id : ids) {
    GPULSE_RETURN_IF_ERROR(DeleteTierRows(id, first, last, tier_mask_, &batch, &changed));
  }
  GPULSE_RETURN_IF_ERROR(WriteIfLarge(store_.get(), &batch, 0));
  {
    WriterLock l(&mu_);
    for (uint32_t id : ids) {
      head_->Erase(id, first, last);
      if (drop) index_.Drop(id, &batch);
    }
  }
  // Synced: a flush with an empty head (or Open) may retire the WAL segment
  // holding the record without writing to the store first.
  leveldb::WriteOptions sync;
  sync.sync = true;
  const leveldb::Status w = store_->Write(sync, &batch);
  if (!w.ok()) return Status::IOError("delete: " + w.ToString());
  // Readers that decoded a window or block while the delete ran.
  window_cache_.Clear();
  return Status::Ok();
}

Status DbImpl::DeleteRaw(uint32_t series_id, int64_t first, int64_t last,
                         leveldb::WriteBatch* batch, uint64_t* changed) {
  std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
  it->Seek(storage::ChunkKey(storage::kRawTier, series_id, 0, INT64_MIN));
  std::string encoded, seek;
  while (it->Valid()) {
    storage::ChunkKeyParts k;
    const leveldb::Slice key = it->key();
    if (!storage::ParseChunkKey(std::string_view(key.data(), key.size()), &k) ||
        k.tier != storage::kRawTier || k.series_id != series_id) {
      break;
    }
    const int64_t window_last = LastOf(k.window_start, window_ns_);
    if (window_last < first) {
      it->Seek(storage::ChunkKey(storage::kRawTier, series_id, k.field_id,
                                 storage::WindowStart(first, window_ns_)));
      continue;
    }
    if (k.window_start > last) {
      if (!NextFieldKey(storage::kRawTier, series_id, k.field_id, &seek)) break;
      it->Seek(seek);
      continue;
    }
    if (k.window_start >= first && window_last <= last) {
      batch->Delete(it->key());  // each part of a window inside the range
      ++*changed;
      it->Next();
      GPULSE_RETURN_IF_ERROR(WriteIfLarge(store_.get(), batch, kDeleteBatchBytes));
      continue;
    }
    // A window the range covers in part: its points outside stay, as one part.
    Column merged;
    {
      ReaderLock l(&mu_);
      if (k.field_id >= index_.field_count()) {
        return Status::Corruption("chunk of series " + std::to_string(series_id) +
                                  " names unknown field " + std::to_string(k.field_id));
      }
      merged.type = index_.field(k.field_id).type;
    }
    uint16_t last_part = 0;
    GPULSE_RETURN_IF_ERROR(ReadWindowParts(it.get(), k, &merged, nullptr, &last_part));
    for (uint32_t p = 0; p <= last_part; ++p) {
      batch->Delete(storage::ChunkKey(storage::kRawTier, series_id, k.field_id, k.window_start,
                                      static_cast<uint16_t>(p)));
    }
    EraseRange(&merged, first, last);
    ++*changed;
    if (!merged.ts.empty()) {
      encoded.clear();
      storage::EncodeChunk(merged, k.window_start, &encoded);
      batch->Put(storage::ChunkKey(storage::kRawTier, series_id, k.field_id, k.window_start, 0),
                 encoded);
    }
    GPULSE_RETURN_IF_ERROR(WriteIfLarge(store_.get(), batch, kDeleteBatchBytes));
  }
  if (!it->status().ok()) return Status::IOError("delete: read chunks: " + it->status().ToString());
  return Status::Ok();
}

Status DbImpl::DeleteTierRows(uint32_t series_id, int64_t first, int64_t last, uint32_t mask,
                              leveldb::WriteBatch* batch, uint64_t* changed) {
  std::string encoded, seek;
  for (size_t t = 0; t < storage::kTierCount; ++t) {
    if (!(mask & (1u << t))) continue;
    const storage::Tier& tier = storage::kTiers[t];
    const int64_t span = storage::BlockSpan(tier);
    std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
    it->Seek(storage::ChunkKey(tier.id, series_id, 0, INT64_MIN));
    while (it->Valid()) {
      storage::ChunkKeyParts k;
      const leveldb::Slice key = it->key();
      if (!storage::ParseChunkKey(std::string_view(key.data(), key.size()), &k) ||
          k.tier != tier.id || k.series_id != series_id) {
        break;
      }
      const int64_t block_last = LastOf(k.window_start, span);
      if (block_last < first) {
        it->Seek(
            storage::ChunkKey(tier.id, series_id, k.field_id, storage::WindowStart(first, span)));
        continue;
      }
      if (k.window_start > last) {
        if (!NextFieldKey(tier.id, series_id, k.field_id, &seek)) break;
        it->Seek(seek);
        continue;
      }
      if (k.window_start >= first && block_last <= last) {
        batch->Delete(it->key());
        ++*changed;
        it->Next();
        GPULSE_RETURN_IF_ERROR(WriteIfLarge(store_.get(), batch, kDeleteBatchBytes));
        continue;
      }
      // A block the range cuts: its rows inside go, rows of buckets the
      // range cuts are computed from the raw points left, the rest stay.
      FieldType type;
      {
        ReaderLock l(&mu_);
        if (k.field_id >= index_.field_count()) {
          return Status::Corruption("tier block of series " + std::to_string(series_id) +
                                    " names unknown field " + std::to_string(k.field_id));
        }
        type = index_.field(k.field_id).type;
      }
      const leveldb::Slice value = it->value();
      const std::string_view bytes(value.data(), value.size());
      const storage::ZstdDictionary* dict = tier_dicts_.Find(tier.id, k.field_id);
      Status trimmed;
      const auto trim = [&](auto kind) {
        using Kind = decltype(kind);
        typename Kind::Rows stored, kept;
        Kind::Reset(type, &stored);
        Kind::Reset(type, &kept);
        Status d = Kind::Decode(bytes, dict, &stored);
        if (d.ok() && !Kind::TypeIs(stored, type)) {
          d = Status::Corruption("rows of another type than the field");
        }
        if (!d.ok()) {
          // A block that cannot be read (damaged, or written with a
          // dictionary the store lost): its rows again from the raw points
          // left in its span outside the range, as a flush does, so that
          // the delete (a retention pass, a replayed one) goes on. Rows past
          // the raw retention are lost with it.
          Log("delete: the tier " + std::string(tier.name) + " block of series " +
              std::to_string(series_id) + " field " + std::to_string(k.field_id) + " from " +
              std::to_string(k.window_start) + " cannot be read (" + d.message() +
              "); built again from the raw points left");
          Column raw;
          raw.type = type;
          trimmed = ReadChunks(nullptr, series_id, k.field_id, k.window_start,
                               storage::NextWindowStart(k.window_start, span),
                               window_cache_.epoch(), &raw);
          if (!trimmed.ok()) return;
          // A retention pass deletes raw points in the batch it writes
          // later, if at all (its raw cut may be older than the tier's).
          EraseRange(&raw, first, last);
          Kind::Build(raw, tier.width_ns, &kept);
          Kind::Reset(type, &stored);  // none of its rows is kept as read
        }
        for (size_t i = 0; i < stored.size() && trimmed.ok(); ++i) {
          const int64_t bucket = stored.bucket[i];
          const int64_t bucket_last = LastOf(bucket, tier.width_ns);
          if (bucket_last < first || bucket > last) {
            Kind::Append(stored, i, &kept);
          } else if (bucket < first || bucket_last > last) {
            Column raw;  // covered in part: the row of the points left, if any
            raw.type = type;
            trimmed = ReadChunks(nullptr, series_id, k.field_id, bucket,
                                 storage::NextWindowStart(bucket, tier.width_ns),
                                 window_cache_.epoch(), &raw);
            Kind::Build(raw, tier.width_ns, &kept);
          }
        }
        if (!trimmed.ok()) return;
        if (d.ok() && kept.size() == stored.size() && kept.bucket == stored.bucket &&
            kept.count == stored.count) {
          // No row went and none changed: the block stays as it is. (The
          // retention pass meets a block its cut crosses at every run.)
        } else if (kept.size() == 0) {
          batch->Delete(it->key());
          ++*changed;
        } else {
          ++*changed;
          encoded.clear();
          Kind::Encode(kept, t, dict, &encoded);
          batch->Put(it->key(), encoded);
        }
      };
      if (!WithTierKind(type, trim)) {
        trimmed =
            Status::Corruption("a tier block under a field of booleans, which has no tier rows");
      }
      if (!trimmed.ok()) return trimmed.WithContext("delete: tier " + std::string(tier.name));
      it->Next();
      GPULSE_RETURN_IF_ERROR(WriteIfLarge(store_.get(), batch, kDeleteBatchBytes));
    }
    if (!it->status().ok()) {
      return Status::IOError("delete: read tier rows: " + it->status().ToString());
    }
  }
  return Status::Ok();
}

Status DbImpl::ReplayDelete(std::string_view record) {
  WalDelete d;
  GPULSE_RETURN_IF_ERROR(DecodeWalDelete(record, &d));
  MutexLock w(&write_mu_);
  std::vector<uint32_t> ids;
  {
    ReaderLock l(&mu_);
    for (std::string_view key : d.series_keys) {
      // A series the catalog lost in the crash had nothing stored yet.
      const uint32_t id = index_.FindSeries(key);
      if (id != kNoId) ids.push_back(id);
    }
  }
  return ApplyDeleteLocked(ids, d.first_ns, d.last_ns, d.drop_series);
}

}  // namespace gpulse::engine
