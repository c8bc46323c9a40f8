// Compact: rewrite the chunk store without replaced versions, each window's
// parts merged into one, and swap it in.
//
// The swap is three renames in DIR, each made durable before the next:
//   1. the copy is written, complete and synced, to DIR/store.compacting;
//   2. DIR/store becomes DIR/store.old;
//   3. DIR/store.compacting becomes DIR/store; then DIR/store.old is removed.
// A crash after 2 and before 3 leaves no DIR/store: Open then finishes the
// swap (store.compacting is known complete, since 2 follows 1). Any other
// leftover is removed at Open: a store.compacting beside a store is an
// unfinished copy, and a store.old is a finished swap's remains.

#include <algorithm>
#include <filesystem>
#include <optional>
#include <unordered_set>

#include "engine/chunk_parts.h"
#include "engine/column_ops.h"
#include "engine/db_impl.h"
#include "engine/tier_kinds.h"
#include "leveldb/options.h"
#include "leveldb/write_batch.h"
#include "storage/chunk_codec.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"
#include "storage/zstd_frame.h"

namespace gpulse::engine {

namespace {

constexpr size_t kCopyBatchBytes = 8 << 20;
// zstd levels of tier blocks compressed with a dictionary: a flush's, as
// without one, and a compaction's, which writes each block once for good
// (level 6 saved 0.3% more of the harness's day and week than level 1;
// docs/format/rollups.md, "Dictionaries").
constexpr int kDictionaryLevel = 1;
constexpr int kCompactDictionaryLevel = 6;

leveldb::Options StoreOptions(leveldb::Env* env) {
  leveldb::Options options;
  options.env = env;
  options.create_if_missing = true;
  // Snappy over each 4 KiB table block: the chunk codec's zstd frames do not
  // shrink and are stored as they are (LevelDB keeps a block compressed only
  // when that saves an eighth), but the keys and small values of a wide fleet
  // do: a window part or tier row of a few points, the rows of one bucket in
  // every series alike, catalog and index keys (docs/format/key-layout.md).
  options.compression = leveldb::kSnappyCompression;
  // Small memtables: chunks arrive in large batches at flush time, and the
  // memory is better spent on the head.
  options.write_buffer_size = 4 << 20;
  return options;
}

// The index into storage::kTiers of the tier stored under key id `id`.
std::optional<size_t> TierOfKeyId(uint8_t id) {
  for (size_t t = 0; t < storage::kTierCount; ++t) {
    if (storage::kTiers[t].id == id) return t;
  }
  return std::nullopt;
}

}  // namespace

Status DbImpl::OpenStore() {
  leveldb::DB* store = nullptr;
  const leveldb::Status s = leveldb::DB::Open(StoreOptions(&store_env_), path_ + "/store", &store);
  if (!s.ok()) return Status::IOError("open " + path_ + "/store: " + s.ToString());
  store_.reset(store);
  window_cache_.Clear();
  std::vector<std::string> damaged;
  GPULSE_RETURN_IF_ERROR(
      tier_dicts_.Load(store_.get(), kDictionaryLevel, &damaged).WithContext(path_ + "/store"));
  for (const std::string& d : damaged) {
    Log(d + "; its tier's blocks of the field that need it cannot be read (gpulse verify)");
  }
  return Status::Ok();
}

Status DbImpl::RecoverStoreSwap() {
  const std::string store = path_ + "/store";
  const std::string copy = store + ".compacting";
  const std::string old = store + ".old";
  if (!env_->FileExists(store) && env_->FileExists(copy)) {
    Log("finishing a store compaction a crash interrupted");
    GPULSE_RETURN_IF_ERROR(env_->RenameFile(copy, store));
    GPULSE_RETURN_IF_ERROR(env_->SyncDir(path_));
  }
  for (const std::string& leftover : {copy, old}) {
    if (!env_->FileExists(leftover)) continue;
    std::error_code ec;
    std::filesystem::remove_all(leftover, ec);
    if (ec) return Status::IOError("remove " + leftover + ": " + ec.message());
  }
  return Status::Ok();
}

Status DbImpl::CopyStore(const std::string& path) {
  // The dictionaries the copy's tier blocks are written with: the store's
  // own (a (tier, field)'s never changes) and new ones for fields without.
  std::vector<TrainedDictionary> trained;
  GPULSE_RETURN_IF_ERROR(
      TrainTierDictionaries(store_.get(), tier_dicts_, kCompactDictionaryLevel, &trained)
          .WithContext("compact"));
  // Every dictionary the copy writes with, at the compaction's level.
  TierDictionaries writing;
  tier_dicts_.ForEach([&](uint8_t tier, uint32_t field, const storage::ZstdDictionary& d) {
    std::unique_ptr<storage::ZstdDictionary> copy;
    if (storage::ZstdDictionary::Load(d.bytes(), kCompactDictionaryLevel, &copy).ok()) {
      writing.Add(tier, field, std::move(copy));
    }
  });

  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(StoreOptions(&store_env_), path, &raw);
  if (!s.ok()) return Status::IOError("create " + path + ": " + s.ToString());
  std::unique_ptr<leveldb::DB> copy(raw);
  leveldb::WriteBatch batch;
  std::vector<std::pair<std::string, std::string>> new_keys;
  for (TrainedDictionary& t : trained) {
    new_keys.emplace_back(storage::DictionaryKey(t.tier, t.field_id),
                          TierDictionaries::EncodeValue(t.dict->bytes()));
    writing.Add(t.tier, t.field_id, std::move(t.dict));
  }
  if (!trained.empty()) {
    Log("compact: " + std::to_string(trained.size()) + " tier dictionaries trained");
  }
  std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
  leveldb::WriteOptions sync;
  sync.sync = true;
  std::string encoded;
  // The (tier, field)s with a block in the copy (tier << 32 | field), and
  // the dictionaries of none left behind.
  std::unordered_set<uint64_t> with_blocks;
  size_t unused = 0;
  for (it->SeekToFirst(); it->Valid();) {
    storage::ChunkKeyParts parts;
    const std::string key = it->key().ToString();
    const bool chunk = storage::ParseChunkKey(key, &parts);
    const std::optional<size_t> tier =
        chunk && parts.tier != storage::kRawTier ? TierOfKeyId(parts.tier) : std::nullopt;
    const std::string_view value(it->value().data(), it->value().size());
    if (chunk && parts.tier != storage::kRawTier) {
      with_blocks.insert(static_cast<uint64_t>(parts.tier) << 32 | parts.field_id);
    }
    uint8_t dict_tier = 0;
    uint32_t dict_field = 0;
    // The block's dictionary in the store (to read it with) and in the copy
    // (to write it with): the same bytes, or a new one where the store had
    // none.
    const storage::ZstdDictionary* was =
        tier ? tier_dicts_.Find(parts.tier, parts.field_id) : nullptr;
    const storage::ZstdDictionary* dict = tier ? writing.Find(parts.tier, parts.field_id) : nullptr;
    // The block written again (`encoded`) where `written` is OK; one that
    // cannot be read is copied as it is.
    const auto put_tier_block = [&](const Status& written) {
      if (written.ok()) {
        batch.Put(it->key(), encoded);
        return;
      }
      Log("compact: a tier block that cannot be read is copied as it is (store key " +
          storage::KeyHex(key) + "): " + written.message());
      batch.Put(it->key(), it->value());
    };
    const bool needs_dict = dict != nullptr && !storage::IsDictionaryCompressedBlock(value);
    if (tier && needs_dict &&
        (storage::IsCurrentFormatRollupBlock(value) || storage::IsTallyBlock(value))) {
      // A block of the current format compressed without its field's
      // dictionary: its body framed again with it, not decoded (one a
      // dictionary does not make smaller stays plain, and costs a
      // compression at every compaction).
      encoded.clear();
      put_tier_block(storage::ReframeBlock(value, was, dict, &encoded));
      it->Next();
    } else if (tier && (needs_dict || storage::IsOlderFormatRollupBlock(value))) {
      // A tier block of an earlier format, written again in the current one
      // (without the sketches a finer tier no longer keeps, in format 1),
      // with its field's dictionary if there is one. One that does not
      // decode (an unknown format) is copied as it is: tier rows are
      // derived data, and `gpulse verify` names the block.
      encoded.clear();
      Status d;
      const auto rewrite = [&](auto kind) {
        using Kind = decltype(kind);
        typename Kind::Rows rows;
        d = Kind::Decode(value, was, &rows);
        if (d.ok()) Kind::Encode(rows, *tier, dict, &encoded);
      };
      if (storage::IsTallyBlock(value)) {
        rewrite(TallyKind{});
      } else {
        rewrite(RollupKind{});
      }
      put_tier_block(d);
      it->Next();
    } else if (!chunk && storage::ParseDictionaryKey(key, &dict_tier, &dict_field) &&
               !with_blocks.contains(static_cast<uint64_t>(dict_tier) << 32 | dict_field)) {
      // A dictionary no tier block is left to need (its field's series
      // dropped, its blocks past retention): not copied, so it does not
      // count toward the store's cap. ('Z' keys sort after every 'C' key.)
      ++unused;
      it->Next();
    } else if (!chunk || parts.tier != storage::kRawTier) {
      // Not a raw chunk (a catalog entry, a dictionary, or a tier's block).
      batch.Put(it->key(), it->value());
      it->Next();
    } else {
      // A window's parts become one part 0; a lone part 0 is copied as is.
      const std::string raw_value = it->value().ToString();
      storage::ChunkInfo info;
      GPULSE_RETURN_IF_ERROR(
          storage::ReadChunkInfo(raw_value, parts.window_start, &info).WithContext("compact"));
      Column merged;
      merged.type = info.type;
      int count = 0;
      GPULSE_RETURN_IF_ERROR(ReadWindowParts(it.get(), parts, &merged, &count));
      if (count == 1 && parts.part == 0) {
        batch.Put(key, raw_value);
      } else {
        encoded.clear();
        storage::EncodeChunk(merged, parts.window_start, &encoded);
        batch.Put(
            storage::ChunkKey(parts.tier, parts.series_id, parts.field_id, parts.window_start),
            encoded);
      }
    }
    if (batch.ApproximateSize() >= kCopyBatchBytes) {
      s = copy->Write(leveldb::WriteOptions(), &batch);
      if (!s.ok()) return Status::IOError("write " + path + ": " + s.ToString());
      batch.Clear();
    }
  }
  if (!it->status().ok()) return Status::IOError("read store: " + it->status().ToString());
  if (unused > 0) {
    Log("compact: " + std::to_string(unused) +
        " tier dictionaries dropped: no block of their tier and field is left");
  }
  // Last, after every key copied from the store.
  for (const auto& [key, value] : new_keys) batch.Put(key, value);
  // The synced last write makes the whole copy durable (LevelDB's log is in order).
  s = copy->Write(sync, &batch);
  if (!s.ok()) return Status::IOError("write " + path + ": " + s.ToString());
  return Status::Ok();
}

Status DbImpl::Compact() {
  std::unique_lock<std::shared_mutex> exclusive(open_mu_);
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  MutexLock flush(&flush_mu_);
  GPULSE_RETURN_IF_ERROR(FlushLocked());

  const std::string store = path_ + "/store";
  const std::string copy = store + ".compacting";
  const std::string old = store + ".old";
  GPULSE_RETURN_IF_ERROR(RecoverStoreSwap());  // a failed earlier Compact's leftovers
  GPULSE_RETURN_IF_ERROR(CopyStore(copy));
  GPULSE_RETURN_IF_ERROR(env_->SyncDir(path_));

  store_.reset();
  Status s = env_->RenameFile(store, old);
  if (s.ok()) s = env_->SyncDir(path_);
  if (s.ok()) s = env_->RenameFile(copy, store);
  if (s.ok()) s = env_->SyncDir(path_);
  // Whatever happened, DIR/store (or the recoverable swap state) is there:
  // reopen it, so a failed swap leaves the database usable.
  const Status recovered = RecoverStoreSwap();
  const Status reopened = recovered.ok() ? OpenStore() : recovered;
  if (!reopened.ok()) {
    // Without a store nothing can be served: every call is refused until
    // the Db is closed and opened again. The WAL and DIR are intact; the
    // next Open recovers.
    Log("compaction could not reopen the store; every call is refused until the database is "
        "opened again: " +
        reopened.ToString());
    store_lost_ = true;
    return reopened;
  }
  return s;
}

namespace {

// Why a block of tier rows of a field of `type` cannot be read with `dict`
// (its tier and field's dictionary, or null); empty when it can.
std::string TierBlockDamage(FieldType type, const storage::ZstdDictionary* dict,
                            std::string_view data) {
  std::string why;
  const bool kept = WithTierKind(type, [&](auto kind) {
    using Kind = decltype(kind);
    typename Kind::Rows rows;
    Status d = Kind::Decode(data, dict, &rows);
    if (d.ok() && !Kind::TypeIs(rows, type))
      d = Status::Corruption("type differs from the field's");
    if (!d.ok()) why = d.message();
  });
  return kept ? why : "a tier block of a field that has no tier rows";
}

}  // namespace

Status DbImpl::Verify(bool drop_damaged, VerifyReport* report) {
  std::unique_lock<std::shared_mutex> exclusive(open_mu_);
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  MutexLock flush(&flush_mu_);
  *report = VerifyReport();
  leveldb::WriteBatch drops;
  struct Block {
    uint32_t series_id, field_id;
    size_t tier;
    int64_t start;
  };
  std::vector<Block> dropped_blocks;
  std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
  Column part;
  for (it->Seek(storage::ChunkKey(storage::kRawTier, 0, 0, INT64_MIN)); it->Valid(); it->Next()) {
    storage::ChunkKeyParts key;
    const std::string_view raw(it->key().data(), it->key().size());
    if (!storage::ParseChunkKey(raw, &key)) break;
    const std::string_view value(it->value().data(), it->value().size());
    const std::optional<size_t> tier =
        key.tier == storage::kRawTier ? std::nullopt : TierOfKeyId(key.tier);
    std::string why;
    std::string series = "series " + std::to_string(key.series_id), field;
    bool known_field = false;
    FieldType type = FieldType::kFloat;
    {
      ReaderLock l(&mu_);
      if (key.series_id < index_.series_count()) {
        const Series& named = index_.series(key.series_id).series;
        series = named.measurement;
        for (const Tag& t : named.tags) series += "," + t.key + "=" + t.value;
      }
      if (key.field_id < index_.field_count()) {
        field = index_.field(key.field_id).name;
        type = index_.field(key.field_id).type;
        known_field = true;
      }
    }
    if (key.tier == storage::kRawTier) {
      ++report->parts;
      const Status s = storage::DecodeChunk(value, key.window_start, &part);
      if (!s.ok()) {
        why = s.message();
      } else if (known_field && part.type != type) {
        why = "the part's type is not its field's";
      } else if (!std::is_sorted(part.ts.begin(), part.ts.end())) {
        why = "times out of order";
      }
    } else {
      ++report->tier_blocks;
      if (!tier) {
        why = "a block of unknown tier " + std::to_string(key.tier);
      } else if (known_field) {
        why = TierBlockDamage(type, tier_dicts_.Find(key.tier, key.field_id), value);
      }
    }
    if (why.empty()) continue;
    const std::string tier_name = tier ? storage::kTiers[*tier].name : "raw";
    std::string hex = storage::KeyHex(raw);
    Log("verify: damaged " + (tier ? tier_name + " tier block " : std::string("chunk part ")) +
        hex + " (" + series + " field " + field + " window " + std::to_string(key.window_start) +
        " part " + std::to_string(key.part) + "): " + why);
    report->damaged.push_back({std::move(hex), tier_name, std::move(series), std::move(field),
                               key.window_start, key.part, std::move(why)});
    if (drop_damaged) {
      drops.Delete(it->key());
      if (tier && known_field) {
        dropped_blocks.push_back({key.series_id, key.field_id, *tier, key.window_start});
      }
    }
  }
  if (!it->status().ok()) return Status::IOError("verify: read chunks: " + it->status().ToString());
  it.reset();
  // Dictionaries that cannot be read: the blocks that need one were named
  // above; a repair drops it after them, so the next compaction may train
  // another for the tier and field.
  const std::vector<std::pair<uint8_t, uint32_t>> unreadable = tier_dicts_.Unreadable();
  for (const auto& [tier_id, field_id] : unreadable) {
    const std::string key = storage::DictionaryKey(tier_id, field_id);
    const std::optional<size_t> tier = TierOfKeyId(tier_id);
    std::string field = "field " + std::to_string(field_id);
    {
      ReaderLock l(&mu_);
      if (field_id < index_.field_count()) field = index_.field(field_id).name;
    }
    report->damaged.push_back({storage::KeyHex(key), tier ? storage::kTiers[*tier].name : "?", "",
                               field, 0, 0, "its tier's dictionary for the field is unreadable"});
    if (drop_damaged) drops.Delete(key);
  }
  if (drop_damaged && !report->damaged.empty()) {
    leveldb::WriteOptions sync;
    sync.sync = true;
    const leveldb::Status w = store_->Write(sync, &drops);
    if (!w.ok()) return Status::IOError("verify: drop damaged parts: " + w.ToString());
    report->dropped = report->damaged.size();
    for (const auto& [tier_id, field_id] : unreadable) tier_dicts_.Erase(tier_id, field_id);
    window_cache_.Clear();
    versions_.TouchEverything();
    // The raw parts are dropped first: a rebuilt block holds what the raw
    // points left say.
    for (const Block& b : dropped_blocks) {
      const Status rebuilt = RebuildTierBlock(b.series_id, b.field_id, b.tier, b.start);
      window_cache_.Clear();
      GPULSE_RETURN_IF_ERROR(rebuilt);
      ++report->rebuilt;
    }
  }
  return Status::Ok();
}

Status DbImpl::RebuildTierBlock(uint32_t series_id, uint32_t field_id, size_t tier, int64_t start) {
  FieldType type;
  {
    ReaderLock l(&mu_);
    type = index_.field(field_id).type;
  }
  const int64_t span = storage::BlockSpan(storage::kTiers[tier]);
  const int64_t end = start > INT64_MAX - span ? INT64_MAX : start + span;
  // The raw points of [start, end), from every raw window that may hold
  // some: those starting in the block, and the one holding its start.
  Column fresh;
  fresh.type = type;
  const int64_t window_ns = std::max<int64_t>(options_.chunk_window.count(), 1);
  const int64_t from = start < INT64_MIN + window_ns ? INT64_MIN : start - window_ns + 1;
  std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
  it->Seek(storage::ChunkKey(storage::kRawTier, series_id, field_id, from));
  while (it->Valid()) {
    storage::ChunkKeyParts k;
    const leveldb::Slice key = it->key();
    if (!storage::ParseChunkKey(std::string_view(key.data(), key.size()), &k) ||
        k.tier != storage::kRawTier || k.series_id != series_id || k.field_id != field_id ||
        k.window_start >= end) {
      break;
    }
    Column window;
    window.type = type;
    GPULSE_RETURN_IF_ERROR(ReadWindowParts(it.get(), k, &window));
    const auto from = std::lower_bound(window.ts.begin(), window.ts.end(), start);
    const auto to = std::lower_bound(from, window.ts.end(), end);
    AppendPoints(window, static_cast<size_t>(from - window.ts.begin()),
                 static_cast<size_t>(to - window.ts.begin()), &fresh);
  }
  if (!it->status().ok()) return Status::IOError("verify: read raw: " + it->status().ToString());
  leveldb::WriteBatch batch;
  std::vector<WindowKey> touched;
  GPULSE_RETURN_IF_ERROR(UpdateTiers(series_id, field_id, fresh, 1u << tier, &batch, &touched));
  leveldb::WriteOptions sync;
  sync.sync = true;
  const leveldb::Status w = store_->Write(sync, &batch);
  if (!w.ok()) return Status::IOError("verify: rebuild tier rows: " + w.ToString());
  return Status::Ok();
}

}  // namespace gpulse::engine
