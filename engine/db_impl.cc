#include "engine/db_impl.h"

#include <algorithm>
#include <cstdio>

#include "leveldb/options.h"
#include "leveldb/write_batch.h"
#include "storage/key_layout.h"

namespace gpulse {

const char* Version() { return GPULSE_VERSION; }

uint64_t DefaultHeadMemoryBytes() {
  return std::clamp<uint64_t>(storage::PhysicalMemoryBytes() / 32, 64ull << 20, 2ull << 30);
}

uint64_t DefaultWindowCacheBytes() {
  return std::clamp<uint64_t>(storage::PhysicalMemoryBytes() / 32, 256ull << 20, 4ull << 30);
}

Status Db::Open(const Options& options, const std::string& path, std::unique_ptr<Db>* db) {
  if (options.chunk_window.count() <= 0) {
    return Status::InvalidArgument("chunk_window must be positive");
  }
  if (options.sync_policy == SyncPolicy::kInterval && options.sync_interval.count() <= 0) {
    return Status::InvalidArgument("sync_interval must be positive with SyncPolicy::kInterval");
  }
  storage::Env* env = options.env ? options.env : storage::Env::Default();
  auto impl = std::make_unique<engine::DbImpl>(options, path, env);
  GPULSE_RETURN_IF_ERROR(impl->Open());
  *db = std::move(impl);
  return Status::Ok();
}

namespace engine {

DbImpl::DbImpl(const Options& options, std::string path, storage::Env* env)
    : options_(options),
      path_(std::move(path)),
      env_(env),
      window_ns_(options.chunk_window.count()),
      head_budget_(options.head_memory_bytes != 0 ? options.head_memory_bytes
                                                  : DefaultHeadMemoryBytes()),
      wal_budget_(std::min(kWalPerHeadByte * head_budget_, kMostWalBytes)),
      store_env_(options.store_env != nullptr ? options.store_env : leveldb::Env::Default()),
      window_cache_(options.window_cache_bytes),
      head_(std::make_shared<Head>()) {}

DbImpl::~DbImpl() {
  const Status s = Close();
  if (!s.ok()) Log("close: " + s.ToString());
}

void DbImpl::Log(const std::string& line) const {
  if (options_.info_log) {
    options_.info_log(line);
  } else {
    std::fprintf(stderr, "gpulse: %s\n", line.c_str());
  }
}

namespace {

// Options::retention's entries into *keep, over what it holds.
Status ParseRetention(const std::map<std::string, std::chrono::nanoseconds>& retention,
                      DbImpl::Keep* keep) {
  for (const auto& [name, duration] : retention) {
    int slot = name == "raw" ? 0 : -1;
    for (size_t t = 0; t < storage::kTierCount; ++t) {
      if (name == storage::kTiers[t].name) slot = static_cast<int>(t) + 1;
    }
    if (slot < 0) {
      return Status::InvalidArgument("retention for unknown data \"" + name +
                                     "\" (raw, 5m, 1h or 1d)");
    }
    if (duration.count() < 0) {
      return Status::InvalidArgument("retention of " + name + " must not be negative");
    }
    (*keep)[slot] = duration.count();
  }
  return Status::Ok();
}

}  // namespace

Status DbImpl::Open() {
  for (const std::string& name : options_.tiers) {
    bool known = false;
    for (size_t t = 0; t < storage::kTierCount; ++t) {
      if (name == storage::kTiers[t].name) {
        tier_mask_ |= 1u << t;
        known = true;
      }
    }
    if (!known) {
      return Status::InvalidArgument("unknown tier \"" + name + "\" (the tiers are 5m, 1h, 1d)");
    }
  }
  GPULSE_RETURN_IF_ERROR(ParseRetention(options_.retention, &retention_ns_));
  for (const auto& [database, retention] : options_.retention_by_database) {
    Keep keep = retention_ns_;
    GPULSE_RETURN_IF_ERROR(ParseRetention(retention, &keep).WithContext("database " + database));
    retention_by_db_.emplace(database, keep);
  }
  for (const auto& [database, keep] : retention_by_db_) {
    any_raw_retention_ = any_raw_retention_ || keep[0] > 0;
    any_retention_ =
        any_retention_ || std::any_of(keep.begin(), keep.end(), [](int64_t ns) { return ns > 0; });
  }
  any_raw_retention_ = any_raw_retention_ || retention_ns_[0] > 0;
  any_retention_ = any_retention_ || std::any_of(retention_ns_.begin(), retention_ns_.end(),
                                                 [](int64_t ns) { return ns > 0; });
  if (!env_->FileExists(path_)) {
    if (!options_.create_if_missing) {
      return Status::NotFound("data directory " + path_ + " does not exist");
    }
  }
  GPULSE_RETURN_IF_ERROR(env_->CreateDirIfMissing(path_));
  const Status locked = env_->LockFile(path_ + "/LOCK", &lock_);
  if (locked.IsBusy()) {
    return Status::Busy("data directory " + path_ + " is in use by another process (" +
                        locked.message() + ")");
  }
  GPULSE_RETURN_IF_ERROR(locked);

  GPULSE_RETURN_IF_ERROR(RecoverStoreSwap());
  GPULSE_RETURN_IF_ERROR(OpenStore());

  GPULSE_RETURN_IF_ERROR(CheckFormatVersion());
  // Nobody else has the Db yet: the lock is uncontended, taken so that the
  // rule the analysis checks holds here too.
  {
    WriterLock l(&mu_);
    GPULSE_RETURN_IF_ERROR(index_.Load(store_.get()).WithContext(path_ + "/store"));
  }

  GPULSE_RETURN_IF_ERROR(LoadFollowers());
  GPULSE_RETURN_IF_ERROR(ReplayWal());

  closed_ = false;
  flusher_ = std::thread([this] { FlusherLoop(); });
  if (options_.sync_policy == SyncPolicy::kInterval) {
    syncer_ = std::thread([this] { SyncerLoop(); });
  }
  if (options_.merge_bytes_per_second > 0 || any_retention_) {
    maintenance_ = std::thread([this] { MaintenanceLoop(); });
  }
  return Status::Ok();
}

Status DbImpl::CheckFormatVersion() {
  std::string version;
  const leveldb::Status got = store_->Get(leveldb::ReadOptions(), storage::VersionKey(), &version);
  if (got.IsNotFound()) {
    // A new store: its version and its tier set, so that a later Open with
    // another set (or keep_stored_tiers) knows what this one kept.
    std::string bytes;
    storage::PutU32BE(&bytes, storage::kFormatVersion);
    leveldb::WriteBatch batch;
    batch.Put(storage::VersionKey(), bytes);
    batch.Put(std::string(1, storage::kTierSetKey), std::string(1, static_cast<char>(tier_mask_)));
    leveldb::WriteOptions sync;
    sync.sync = true;
    const leveldb::Status put = store_->Write(sync, &batch);
    if (!put.ok()) return Status::IOError("write format version: " + put.ToString());
  } else if (got.ok() && version.size() == 4 && storage::GetU32BE(version.data()) == 2) {
    // Version 2 had no tiers: build them from the raw chunks, once.
    GPULSE_RETURN_IF_ERROR(BuildTiersFromRaw());
  } else if (got.ok() && version.size() == 4 && storage::GetU32BE(version.data()) >= 3 &&
             storage::GetU32BE(version.data()) < storage::kFormatVersion) {
    // Versions 3 and 4 kept no tier rows for string fields: build those from
    // the raw chunks, once (a crash part way builds them again next time).
    // Version 5 wrote rollup blocks of format 1 only, which are still read
    // (docs/format/rollups.md); 6 says the store may hold format 3 ones and
    // 7 format 4 ones, so an older gpulse refuses it at open instead of
    // failing at its first read of one.
    const uint32_t was = storage::GetU32BE(version.data());
    GPULSE_RETURN_IF_ERROR(SyncTierSet());
    if (was < 5) {
      GPULSE_RETURN_IF_ERROR(BuildTiers(tier_mask_, /*strings_only=*/true));
    }
    std::string bytes;
    storage::PutU32BE(&bytes, storage::kFormatVersion);
    leveldb::WriteOptions sync;
    sync.sync = true;
    const leveldb::Status put = store_->Put(sync, storage::VersionKey(), bytes);
    if (!put.ok()) return Status::IOError("write format version: " + put.ToString());
  } else if (got.ok() && version.size() == 4 &&
             storage::GetU32BE(version.data()) == storage::kFormatVersion) {
    GPULSE_RETURN_IF_ERROR(SyncTierSet());
  } else if (!got.ok() || version.size() != 4 ||
             storage::GetU32BE(version.data()) != storage::kFormatVersion) {
    return Status::Corruption(path_ + "/store: unsupported or unreadable format version");
  }
  return Status::Ok();
}

Status DbImpl::ReplayWal() {
  storage::WalOptions wal_options;
  wal_options.segment_bytes = options_.wal_segment_bytes;
  {
    MutexLock l(&followers_mu_);
    wal_options.hold = LowestFollowedSegmentLocked();
  }
  storage::WalReplayReport report;
  GPULSE_RETURN_IF_ERROR(storage::Wal::Open(
      env_, path_ + "/wal", wal_options,
      [this](std::string_view record) { return ReplayRecord(record); }, &report, &wal_));
  uint64_t head_values = 0, head_bytes = 0;
  {
    ReaderLock l(&mu_);
    head_values = head_->values();
    head_bytes = head_->bytes();
  }
  if (report.records > 0) {
    Log("replayed " + std::to_string(report.records) + " WAL records (" +
        std::to_string(report.bytes) + " bytes, " + std::to_string(head_values) + " values) from " +
        path_ + "/wal");
  }
  if (report.dropped_bytes > 0) Log("WAL tail cut: " + report.dropped_reason);
  for (const std::string& damage : report.damage) {
    Log("WAL damage, records lost: " + damage + " (a copy of the segment is in " + path_ +
        "/wal/damaged/)");
  }
  replay_damaged_bytes_ = report.damaged_bytes;
  replay_damaged_regions_ = report.damage.size();
  replay_cut_bytes_ = report.dropped_bytes;
  if (head_values == 0) {
    // Nothing to replay: the segments an earlier session left are done with.
    GPULSE_RETURN_IF_ERROR(wal_->RemoveSegmentsBefore(wal_->active_segment()));
  }
  head_bytes_ = head_bytes;
  return Status::Ok();
}

Status DbImpl::CheckOpen() const {
  if (closed_) return Status::InvalidArgument("database " + path_ + " is closed");
  if (store_lost_) {
    return Status::IOError("database " + path_ +
                           " lost its chunk store (it could not be reopened; see the log): close "
                           "and open it again, which recovers from the WAL");
  }
  return Status::Ok();
}

Status DbImpl::Close() {
  if (closed_.exchange(true)) return Status::Ok();
  {
    MutexLock l(&bg_mu_);
    shutting_down_ = true;  // releases stalled writers, which then see closed_
  }
  bg_cv_.SignalAll();
  // Before no_calls: a retention pass holds the open lock shared, as a
  // call does (it finds the Db closed and ends at once).
  if (maintenance_.joinable()) maintenance_.join();
  std::unique_lock<std::shared_mutex> no_calls(open_mu_);
  if (flusher_.joinable()) flusher_.join();
  if (syncer_.joinable()) syncer_.join();

  Status s;
  if (!store_lost_) {
    MutexLock l(&flush_mu_);
    s = FlushLocked();
  }
  const Status closed = wal_->Close();
  if (s.ok()) s = closed;
  wal_.reset();
  store_.reset();
  lock_.reset();
  return s;
}

void DbImpl::FlusherLoop() {
  bool said_full = false;
  for (;;) {
    {
      MutexLock l(&bg_mu_);
      if (store_full_) {
        const auto retry = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (!shutting_down_ && bg_cv_.WaitUntil(&bg_mu_, retry)) {
        }
      } else {
        while (!flush_requested_ && !store_full_ && !shutting_down_) bg_cv_.Wait(&bg_mu_);
      }
      if (shutting_down_) return;
      flush_requested_ = false;
    }
    if (store_full_) {
      // Once a second while the disk is full: reopen, rewrite, retry.
      const Status r = RecoverFromNoSpace();
      if (!r.ok()) {
        if (!said_full) Log("the disk is full; retrying every second: " + r.ToString());
        said_full = true;
        if (!r.IsNoSpace()) {
          MutexLock bg(&bg_mu_);
          if (bg_error_.ok()) {
            bg_error_ = r;
            bg_error_from_retry_ = true;
          }
          bg_cv_.SignalAll();
        }
        continue;
      }
      said_full = false;
      // The store is back and the waiting flush written: a retry before
      // this one that could not reopen the store no longer refuses writes.
      bool cleared = false;
      {
        MutexLock bg(&bg_mu_);
        cleared = bg_error_from_retry_;
        if (cleared) bg_error_ = Status::Ok();
        bg_error_from_retry_ = false;
      }
      if (cleared) Log("writes resume: the store is open again");
    }
    MutexLock l(&flush_mu_);
    const Status s = FlushLocked();
    if (s.IsNoSpace()) {
      if (!said_full) Log("background flush found the disk full; retrying: " + s.ToString());
      said_full = true;
    } else if (!s.ok()) {
      Log("background flush failed: " + s.ToString());
      MutexLock bg(&bg_mu_);
      SetBgErrorLocked(s);
      bg_cv_.SignalAll();
    }
  }
}

void DbImpl::SyncerLoop() {
  MutexLock l(&bg_mu_);
  while (!shutting_down_) {
    const auto due = std::chrono::steady_clock::now() + options_.sync_interval;
    while (!shutting_down_ && bg_cv_.WaitUntil(&bg_mu_, due)) {
    }
    if (shutting_down_) return;
    l.Unlock();
    const Status s = wal_->Sync();
    l.Lock();
    if (!s.ok() && (bg_error_.ok() || bg_error_from_retry_)) {
      SetBgErrorLocked(s);
      Log("WAL sync failed; writes are refused from now on: " + s.ToString());
    }
  }
}

DbStats DbImpl::GetStats() {
  const auto open = HoldOpen();
  DbStats stats;
  {
    ReaderLock l(&mu_);
    stats.series = index_.live_series_count();
    for (const auto& [database, n] : index_.live_by_database()) {
      if (n > 0) stats.series_by_database.emplace(database, n);
    }
    stats.head_bytes = head_->bytes() + (imm_ ? imm_->bytes() : 0);
    stats.head_values = head_->values() + (imm_ ? imm_->values() : 0);
  }
  if (!closed_) {
    stats.wal_bytes = wal_->total_bytes();
    stats.wal_held_bytes = wal_->held_bytes();
    const storage::WalSyncStats syncs = wal_->sync_stats();
    stats.wal_syncs = syncs.syncs;
    stats.wal_sync_seconds = static_cast<double>(syncs.sync_nanos) / 1e9;
  }
  stats.wal_replay_damaged_bytes = replay_damaged_bytes_;
  stats.wal_replay_damaged_regions = replay_damaged_regions_;
  stats.wal_replay_cut_bytes = replay_cut_bytes_;
  stats.disk_full = wal_full_ || store_full_;
  stats.series_refused_rate = series_refused_rate_.load();
  stats.series_refused_cap = series_refused_cap_.load();
  {
    MutexLock bg(&bg_mu_);
    stats.writes_refused_full = writes_refused_full_;
  }
  stats.values_written = values_written_;
  stats.flushes = flushes_;
  stats.windows_merged = windows_merged_;
  stats.retention_runs = retention_runs_;
  stats.retention_deleted_keys = retention_deleted_keys_;
  const WindowCache::Stats cache = window_cache_.stats();
  stats.window_cache_hits = cache.hits;
  stats.window_cache_misses = cache.misses;
  stats.window_cache_refused = cache.refused;
  stats.window_cache_bytes = cache.bytes;
  return stats;
}

}  // namespace engine
}  // namespace gpulse
