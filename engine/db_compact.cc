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

#include "engine/chunk_parts.h"
#include "engine/db_impl.h"
#include "leveldb/options.h"
#include "leveldb/write_batch.h"
#include "storage/chunk_codec.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

namespace {

constexpr size_t kCopyBatchBytes = 8 << 20;

leveldb::Options StoreOptions(leveldb::Env* env) {
  leveldb::Options options;
  if (env != nullptr) options.env = env;
  options.create_if_missing = true;
  // Chunks are zstd-compressed by the chunk codec; Snappy on top gains nothing.
  options.compression = leveldb::kNoCompression;
  // Small memtables: chunks arrive in large batches at flush time, and the
  // memory is better spent on the head.
  options.write_buffer_size = 4 << 20;
  return options;
}

}  // namespace

Status DbImpl::OpenStore() {
  leveldb::DB* store = nullptr;
  const leveldb::Status s =
      leveldb::DB::Open(StoreOptions(options_.store_env), path_ + "/store", &store);
  if (!s.ok()) return Status::IOError("open " + path_ + "/store: " + s.ToString());
  store_.reset(store);
  window_cache_.Clear();
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
  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(StoreOptions(options_.store_env), path, &raw);
  if (!s.ok()) return Status::IOError("create " + path + ": " + s.ToString());
  std::unique_ptr<leveldb::DB> copy(raw);
  std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
  leveldb::WriteBatch batch;
  leveldb::WriteOptions sync;
  sync.sync = true;
  std::string encoded;
  for (it->SeekToFirst(); it->Valid();) {
    storage::ChunkKeyParts parts;
    const std::string key = it->key().ToString();
    if (!storage::ParseChunkKey(key, &parts) || parts.tier != storage::kRawTier) {
      // Not a raw chunk (a catalog entry, or a tier's one-part block).
      batch.Put(it->key(), it->value());
      it->Next();
    } else {
      // A window's parts become one part 0; a lone part 0 is copied as is.
      const std::string value = it->value().ToString();
      storage::ChunkInfo info;
      GPULSE_RETURN_IF_ERROR(storage::ReadChunkInfo(value, &info).WithContext("compact"));
      Column merged;
      merged.type = info.type;
      int count = 0;
      GPULSE_RETURN_IF_ERROR(ReadWindowParts(it.get(), parts, &merged, &count));
      if (count == 1 && parts.part == 0) {
        batch.Put(key, value);
      } else {
        encoded.clear();
        storage::EncodeChunk(merged, &encoded);
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
  // The synced last write makes the whole copy durable (LevelDB's log is in order).
  s = copy->Write(sync, &batch);
  if (!s.ok()) return Status::IOError("write " + path + ": " + s.ToString());
  return Status::Ok();
}

Status DbImpl::Compact() {
  std::unique_lock<std::shared_mutex> exclusive(open_mu_);
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  std::lock_guard<std::mutex> flush(flush_mu_);
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
    // Without a store nothing can be served: behave as closed. The WAL and
    // DIR are intact; the next Open recovers.
    Log("compaction could not reopen the store; closing: " + reopened.ToString());
    closed_ = true;
    return reopened;
  }
  return s;
}

Status DbImpl::Verify(bool drop_damaged, VerifyReport* report) {
  std::unique_lock<std::shared_mutex> exclusive(open_mu_);
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  std::lock_guard<std::mutex> flush(flush_mu_);
  *report = VerifyReport();
  leveldb::WriteBatch drops;
  std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
  Column part;
  for (it->Seek(storage::ChunkKey(storage::kRawTier, 0, 0, INT64_MIN)); it->Valid(); it->Next()) {
    storage::ChunkKeyParts key;
    const std::string_view raw(it->key().data(), it->key().size());
    if (!storage::ParseChunkKey(raw, &key) || key.tier != storage::kRawTier) break;
    ++report->parts;
    const Status s =
        storage::DecodeChunk(std::string_view(it->value().data(), it->value().size()), &part);
    std::string why = s.ok() ? std::string() : s.message();
    std::string series = "series " + std::to_string(key.series_id), field;
    {
      std::shared_lock<std::shared_mutex> l(mu_);
      if (key.series_id < index_.series_count()) {
        const Series& named = index_.series(key.series_id).series;
        series = named.measurement;
        for (const Tag& t : named.tags) series += "," + t.key + "=" + t.value;
      }
      if (key.field_id < index_.field_count()) {
        field = index_.field(key.field_id).name;
        if (why.empty() && part.type != index_.field(key.field_id).type) {
          why = "the part's type is not its field's";
        }
      }
    }
    if (why.empty() && !std::is_sorted(part.ts.begin(), part.ts.end())) why = "times out of order";
    if (why.empty()) continue;
    std::string hex = storage::KeyHex(raw);
    Log("verify: damaged chunk part " + hex + " (" + series + " field " + field + " window " +
        std::to_string(key.window_start) + " part " + std::to_string(key.part) + "): " + why);
    report->damaged.push_back({std::move(hex), std::move(series), std::move(field),
                               key.window_start, key.part, std::move(why)});
    if (drop_damaged) drops.Delete(it->key());
  }
  if (!it->status().ok()) return Status::IOError("verify: read chunks: " + it->status().ToString());
  if (drop_damaged && !report->damaged.empty()) {
    leveldb::WriteOptions sync;
    sync.sync = true;
    const leveldb::Status w = store_->Write(sync, &drops);
    if (!w.ok()) return Status::IOError("verify: drop damaged parts: " + w.ToString());
    report->dropped = report->damaged.size();
    window_cache_.Clear();
  }
  return Status::Ok();
}

}  // namespace gpulse::engine
