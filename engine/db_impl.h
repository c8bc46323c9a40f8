// DbImpl: the engine behind gpulse::Db. It owns a data directory:
//
//   DIR/LOCK       advisory lock: one process at a time
//   DIR/wal/       the write-ahead log (storage/wal.h)
//   DIR/store/     LevelDB: catalog, inverted index, chunks (storage/key_layout.h)
//
// A write is validated, framed as one WAL record, appended, applied to the
// head, and acknowledged per the sync policy. A flush seals the head (it
// becomes `imm_`), starts a new WAL segment for the new head, merges the
// sealed head into the chunks in LevelDB, and then deletes the WAL segments
// the sealed head came from. A read merges chunks, the sealed head and the
// head, newest winning. docs/architecture.md tells the story.
//
// Threading: any number of writer and reader threads, plus two background
// threads (the flusher, and the syncer under SyncPolicy::kInterval). A flush
// of a wide head runs workers of its own for the time it writes chunks
// (WriteSeriesChunks); they take no lock, the flushing thread holding
// flush_mu_ for them, and share only the sealed head and LevelDB.
//  - write_mu_ serialises writers from WAL append to head apply, so replay
//    order equals apply order; a flush takes it to swap heads at a WAL
//    segment boundary.
//  - mu_ (shared) guards the catalog and the head pointers and contents:
//    writers take it exclusively for short mutations, readers shared.
//  - open_mu_ is held shared by every call in flight and exclusively by
//    Close, so Close never tears down what a call is using.
//  - flush_mu_ serialises flushes.
//  - bg_mu_ guards the flusher's wake-up flags and the writer stall.
// The members each guards say so (GPULSE_GUARDED_BY), and Clang checks it
// (tests/tools/check_thread_safety.sh); open_mu_ guards no member, being a
// gate for the calls in flight, and stays a std::shared_mutex.
// Lock order: open_mu_ -> flush_mu_ -> write_mu_ -> mu_; bg_mu_ is never held with another.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "engine/data_versions.h"
#include "engine/gpulse.h"
#include "engine/head.h"
#include "engine/series_index.h"
#include "engine/store_env.h"
#include "engine/tier_dictionaries.h"
#include "engine/wal_batch.h"
#include "engine/window_cache.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "storage/env.h"
#include "storage/function_ref.h"
#include "storage/mutex.h"
#include "storage/wal.h"

namespace gpulse::engine {

// "gpu,node=a,..." for messages (the read path builds it only for one).
std::string SeriesName(const Series& series);

class DbImpl final : public Db {
 public:
  // What is kept of each kind of data, in ns: [0] raw, [1 + t]
  // storage::kTiers[t]; 0 is forever.
  using Keep = std::array<int64_t, 1 + storage::kTierCount>;

  DbImpl(const Options& options, std::string path, storage::Env* env);
  ~DbImpl() override;

  // Opens the directory: lock, LevelDB, catalog, WAL replay, threads.
  Status Open();

  using Db::Write;
  Status Write(std::span<const PointRef> points, WriteResult* result) override;
  Status Read(const ReadRequest& request, std::vector<SeriesColumn>* out) override;
  Status ReadSeries(SeriesRef series, std::span<const std::string> fields, int64_t start_ns,
                    int64_t end_ns, std::vector<Column>* out) override;
  Status ScanSeries(SeriesRef series, std::span<const std::string> fields, int64_t start_ns,
                    int64_t end_ns, const PointRunVisitor& fn,
                    const PackedRunVisitor* packed) override;
  Status ScanSeries(std::span<const SeriesId> ids, std::span<const std::string> fields,
                    int64_t start_ns, int64_t end_ns, const SeriesRunVisitor& fn,
                    const SeriesPackedVisitor* packed) override;
  Status TimeExtent(std::span<const SeriesId> ids, std::span<const std::string> fields,
                    int64_t start_ns, int64_t end_ns, int64_t* first, int64_t* last) override;
  Status ScanRollups(SeriesRef series, std::span<const std::string> fields, size_t tier,
                     int64_t start_ns, int64_t end_ns, uint32_t parts,
                     const RollupVisitor& fn) override;
  Status ScanRollups(std::span<const SeriesId> ids, std::span<const std::string> fields,
                     size_t tier, int64_t start_ns, int64_t end_ns, uint32_t parts,
                     const SeriesRollupVisitor& fn) override;
  Status ScanTallies(SeriesRef series, std::span<const std::string> fields, size_t tier,
                     int64_t start_ns, int64_t end_ns, const TallyVisitor& fn) override;
  uint32_t KeptTiers() const override { return tier_mask_; }
  Status CatalogVersion(std::string_view measurement, uint64_t* version) override;
  uint64_t DataVersion(std::string_view measurement, int64_t start_ns, int64_t end_ns) override {
    return versions_.Get(measurement, start_ns, end_ns);
  }
  uint64_t LatestDataVersion() override { return DataVersions::Latest(); }
  Status PutDefinition(std::string_view kind, std::string_view name,
                       std::string_view text) override;
  Status DeleteDefinition(std::string_view kind, std::string_view name) override;
  Status ListDefinitions(std::string_view kind,
                         std::vector<std::pair<std::string, std::string>>* out) override;
  Status FollowLog(std::string_view name, LogPosition* position) override;
  Status AdvanceLog(std::string_view name, LogPosition position) override;
  Status UnfollowLog(std::string_view name) override;
  Status LogFollowers(std::vector<std::pair<std::string, LogPosition>>* out) override;
  Status ReadLog(
      LogPosition from, uint64_t max_bytes,
      const std::function<Status(std::span<const LoggedPoint> points, LogPosition next)>& each,
      LogPosition* end) override;
  uint64_t LogBytesFrom(LogPosition from) override;
  Status ListMeasurements(std::vector<std::string>* out) override;
  using Db::ListSeries;
  Status ListSeries(std::string_view measurement, const std::vector<TagMatcher>& tags,
                    std::vector<Series>* out, std::vector<SeriesId>* ids) override;
  using Db::ListTagKeys;
  Status ListTagKeys(std::string_view measurement, const std::vector<TagMatcher>& scope,
                     std::vector<std::string>* out) override;
  using Db::ListTagValues;
  Status ListTagValues(std::string_view measurement, std::string_view key,
                       const std::vector<TagMatcher>& scope,
                       std::vector<std::string>* out) override;
  Status CountSeries(std::string_view measurement, const std::vector<TagMatcher>& scope,
                     uint64_t* count) override;
  Status ListFields(std::string_view measurement, std::vector<FieldInfo>* out) override;
  Status Delete(std::span<const Series> series, int64_t start_ns, int64_t end_ns) override;
  Status DropSeries(std::span<const Series> series) override;
  Status EnforceRetention(int64_t now_ns) override;
  Status MergeParts() override;
  int64_t RetainedSince(int tier, int64_t now_ns, std::string_view database) const override;
  Status Flush() override;
  Status Compact() override;
  Status Verify(bool drop_damaged, VerifyReport* report) override;
  // Writes tier `tier`'s block from `start` of a series-field again from its
  // stored raw points (after Verify dropped it). REQUIRES: flush_mu_ held,
  // no reader (Verify's exclusive hold).
  Status RebuildTierBlock(uint32_t series_id, uint32_t field_id, size_t tier, int64_t start)
      GPULSE_REQUIRES(flush_mu_);
  DbStats GetStats() override;
  Status Close() override;

 private:
  // Points whose series and fields have catalog ids. The values of all
  // points sit in one array (no allocation per point on the write path).
  struct ResolvedBatch {
    struct Value {
      uint32_t field_id;
      FieldType type;
      const FieldValueRef* value;
    };
    struct Point {
      uint32_t series_id = 0;
      int64_t ts = 0;
      uint32_t first_value = 0;
      uint32_t value_count = 0;
    };
    std::vector<Point> points;
    std::vector<Value> values;
  };

  void Log(const std::string& line) const;

  // --- write path (db_write.cc) ---
  // The catalog and the head as a writer reads them. Only writers change
  // either, each holding write_mu_ (and mu_ exclusively for the change
  // itself), so a holder of write_mu_ reads them without mu_: the one place
  // the analysis is told so.
  const SeriesIndex& IndexForWriter() const
      GPULSE_REQUIRES(write_mu_) GPULSE_NO_THREAD_SAFETY_ANALYSIS {
    return index_;
  }
  const Head& HeadForWriter() const GPULSE_REQUIRES(write_mu_) GPULSE_NO_THREAD_SAFETY_ANALYSIS {
    return *head_;
  }
  // A series' field cache is the writers' own (no reader looks at it), so
  // filling it on a miss needs write_mu_ alone.
  const FieldEntry* FindSeriesFieldForWriter(uint32_t series_id, std::string_view name,
                                             size_t position_hint, size_t fields_hint)
      GPULSE_REQUIRES(write_mu_) GPULSE_NO_THREAD_SAFETY_ANALYSIS {
    return index_.FindSeriesField(series_id, name, position_hint, fields_hint);
  }
  // Checks each view against the catalog (field
  // types, the out-of-order window), adding new series and fields; accepted
  // points go to *resolved, the others to *rejected with their index in
  // `views` plus `index_base`.
  // With `limit_series` (writes, not replay) a new series past
  // Options::cardinality.max_series_per_database is rejected.
  // `known` (may be null): each view's series id as looked up already under
  // write_mu_ (kNoId for a series not in the catalog then).
  void TouchSlices(std::span<const PointRef> points, const std::vector<size_t>& view_index,
                   const std::vector<PointView>& views, const std::vector<size_t>& accepted);
  Status ResolveLocked(const std::vector<PointView>& views, ResolvedBatch* resolved,
                       std::vector<size_t>* accepted, std::vector<WriteResult::Rejected>* rejected,
                       bool limit_series = false, const std::vector<uint32_t>* known = nullptr)
      GPULSE_REQUIRES(write_mu_);
  // Takes the batch's new series (those `known`
  // says are not in the catalog) from the minute's budget (a bucket refilled
  // at max_new_series_per_minute a minute), or returns false with the
  // seconds until there is room.
  bool TakeNewSeriesLocked(const std::vector<PointView>& views, const std::vector<uint32_t>& known,
                           uint64_t* retry_after_seconds) GPULSE_REQUIRES(write_mu_);
  // Adds resolved points to the head.
  void ApplyLocked(const ResolvedBatch& batch) GPULSE_REQUIRES(write_mu_);
  // Reopens the store, writes the catalog again and writes the stalled
  // flush's chunks; clears store_full_ on success. Takes open_mu_
  // exclusively: called by the flusher only.
  Status RecoverFromNoSpace();
  // Replays one WAL record at Open.
  Status ReplayRecord(std::string_view record);
  // While a sealed head is still flushing and the head is full: waits, or
  // with !wait_when_full returns ResourceExhausted.
  Status WaitForRoom();
  // Whether a writer may go on: the head has room or no flush is pending
  // (or a stop or an error ends the wait).
  bool RoomLocked() const GPULSE_REQUIRES(bg_mu_);
  void MaybeScheduleFlush();

  // --- deletes (db_delete.cc) ---
  // Delete and DropSeries: the points of `series` in [first, last] (both
  // included); `drop` also takes the series out of the listings.
  Status DeleteSeries(std::span<const Series> series, int64_t first, int64_t last, bool drop);
  // REQUIRES: write_mu_ held and no sealed head (flush_mu_ held, or Open's
  // replay). Applies a logged delete to the store, the catalog and the head.
  // Repeating it is harmless, which is what makes replaying it safe.
  Status ApplyDeleteLocked(const std::vector<uint32_t>& ids, int64_t first, int64_t last, bool drop)
      GPULSE_REQUIRES(write_mu_);
  // Queues the deletes and rewrites of one series' raw chunks, writing the
  // batch in pieces as it grows; *changed counts the keys deleted or
  // rewritten.
  Status DeleteRaw(uint32_t series_id, int64_t first, int64_t last, leveldb::WriteBatch* batch,
                   uint64_t* changed);
  // The same for its rows in the tiers of `mask`; REQUIRES: the raw deletes
  // are written (rows of buckets the range covers in part are computed from
  // the raw left).
  Status DeleteTierRows(uint32_t series_id, int64_t first, int64_t last, uint32_t mask,
                        leveldb::WriteBatch* batch, uint64_t* changed);
  // Replays a delete record at Open.
  Status ReplayDelete(std::string_view record);
  // The background thread: retention passes every retention_interval, and
  // part merging whenever a flush left windows to merge.
  void MaintenanceLoop();

  // --- part merging (db_merge_parts.cc) ---
  // Merges up to `max_bytes` of stored parts of ready candidate windows into
  // one part each, holding flush_mu_; *merged_bytes gets the bytes read and
  // *more whether ready windows remain.
  Status MergeReadyParts(uint64_t max_bytes, uint64_t* merged_bytes, bool* more);
  // Points of the series with canonical key `series_key` before this are
  // refused: its raw retention's cut at `now_ns`, or INT64_MIN when raw
  // points are kept forever.
  int64_t RawRetentionCut(std::string_view series_key, int64_t now_ns) const;
  // What is kept of each kind of data for the series of `database`.
  const Keep& KeepFor(std::string_view database) const;

  // --- flush (db_flush.cc) ---
  Status FlushLocked() GPULSE_REQUIRES(flush_mu_);
  // Merges every column of `sealed` into the chunks in LevelDB; the last
  // LevelDB write is synced. Large heads are written by several workers.
  Status WriteChunks(const Head& sealed) GPULSE_REQUIRES(flush_mu_);
  // What a flush's workers share, and what one leaves for WriteChunks to
  // apply once all are done.
  struct FlushTasks {
    std::atomic<size_t> next{0};      // the next series id to take
    std::atomic<bool> failed{false};  // a worker failed: the others stop
    std::atomic<uint64_t> writes{0};  // LevelDB writes the workers made
  };
  struct FlushWork;
  // A worker of WriteChunks: takes the next series ids, a block at a time,
  // until none are left or one failed, and writes their columns in LevelDB
  // batches of its own (unsynced).
  Status WriteSeriesChunks(const Head& sealed, FlushTasks* tasks, FlushWork* work);
  // Folds the points of one series-field that this flush writes (`fresh`,
  // time ascending) into every tier's rows: a bucket whose stored row the
  // points cannot simply be added to (they fall among its points: late
  // data or replaced values) is computed again from the raw points.
  // The blocks it writes are added to *touched (the cache drops them).
  Status UpdateTiers(uint32_t series_id, uint32_t field_id, const Column& fresh, uint32_t mask,
                     leveldb::WriteBatch* batch, std::vector<WindowKey>* touched);
  // UpdateTiers for one kind of rows (db_tiers.cc: RollupKind, TallyKind).
  template <typename Kind>
  Status UpdateTierRows(uint32_t series_id, uint32_t field_id, const Column& fresh, uint32_t mask,
                        leveldb::WriteBatch* batch, std::vector<WindowKey>* touched);
  // ScanRollups and ScanTallies: fn(s, field, rows, begin, end) for series
  // ids[s].
  template <typename Kind, typename Visitor>
  Status ScanTierRows(std::span<const SeriesId> ids, std::span<const std::string> fields,
                      size_t tier, int64_t start_ns, int64_t end_ns, const Visitor& fn);
  // Builds every tier from the raw chunks and then writes the current
  // format version (opening a version 2 store, which had no tiers).
  Status BuildTiersFromRaw();
  // Makes the stored tiers those of tier_mask_: drops the others, builds
  // missing ones from raw, records the set (key 'T').
  Status SyncTierSet();
  // Builds the tiers in `mask` from the raw chunks (their blocks absent).
  // `strings_only`: only the string fields' tallies (a store from before them).
  Status BuildTiers(uint32_t mask, bool strings_only = false);
  void FlusherLoop();
  void SyncerLoop();

  // --- store maintenance (db_compact.cc) ---
  // Opens DIR/store into store_.
  Status OpenStore();
  // At Open: writes a new store's format version and tier set, or brings an
  // older store's up to date (building the tiers it lacks), or refuses a
  // format it does not know.
  Status CheckFormatVersion();
  // At Open: replays the WAL into the head (logging what it could not
  // read) and opens it for appends.
  Status ReplayWal();
  // The definitions' store access, for callers that hold the Db open
  // already (the log followers) or open it (Open).
  Status StoreDefinition(std::string_view kind, std::string_view name, std::string_view text);
  Status EraseDefinition(std::string_view kind, std::string_view name);
  Status ScanDefinitions(std::string_view kind,
                         std::vector<std::pair<std::string, std::string>>* out);
  // Reads the followers' positions from the store (Open, before the replay,
  // so that no segment they need is retired).
  Status LoadFollowers();
  // The lowest segment a follower needs (UINT64_MAX: none).
  uint64_t LowestFollowedSegmentLocked() const GPULSE_REQUIRES(followers_mu_);
  // Finishes or undoes a store swap that a crash interrupted (see Compact).
  Status RecoverStoreSwap();
  // Copies the newest version of every key of store_ into a new LevelDB at
  // `path`, synced, with dictionaries trained for the tiers' fields that
  // have none and every tier block of a field with one compressed with it.
  Status CopyStore(const std::string& path);

  // --- read path (db_read.cc) ---
  // A LevelDB snapshot taken on first use and released by the destructor: a
  // read whose windows are all in the window cache never takes one (taking
  // and releasing one locks LevelDB's mutex twice and allocates). Taking it
  // after the unflushed points were copied is safe: a flush finishing in
  // between leaves a point in both places, which the newest-wins merge
  // tolerates; it cannot make a point vanish. (A DELETE in between may
  // leave the copied points from before it with stored ones from after.)
  // One thread uses it.
  class LazySnapshot {
   public:
    explicit LazySnapshot(leveldb::DB* db) : db_(db) {}
    ~LazySnapshot() {
      if (snapshot_) db_->ReleaseSnapshot(snapshot_);
    }
    LazySnapshot(const LazySnapshot&) = delete;
    LazySnapshot& operator=(const LazySnapshot&) = delete;
    const leveldb::Snapshot* get() {
      if (!snapshot_) snapshot_ = db_->GetSnapshot();
      return snapshot_;
    }

   private:
    leveldb::DB* db_;
    const leveldb::Snapshot* snapshot_ = nullptr;
  };
  // What a read of one series sees: per field its id and type and the
  // unflushed points in range (sealed head and head, copied under mu_), the
  // window cache's epoch read then, and the store as of a snapshot taken when
  // first needed (LazySnapshot, which the series read together share).
  struct SeriesSnapshot {
    struct Field {
      uint32_t id = kNoId;  // kNoId: the measurement has no such field
      FieldType type = FieldType::kFloat;
      Column sealed;
      Column head;
    };
    explicit SeriesSnapshot(LazySnapshot* s) : store(s) {}
    LazySnapshot* store;
    uint64_t epoch = 0;
    uint32_t series_id = kNoId;
    std::vector<Field> fields;
  };
  // The id of `series` (its key built in a buffer each thread keeps; an id
  // checked against the catalog), or kNoId. REQUIRES: mu_ held (shared is
  // enough).
  uint32_t FindSeriesIdLocked(SeriesRef series) const GPULSE_REQUIRES_SHARED(mu_);
  // "no series gpu,node=a" or "no series with id 7".
  static std::string NoSeries(SeriesRef series);
  // The id of `series`; NotFound (naming it) when it does not exist.
  Status FindSeriesId(SeriesRef series, SeriesId* id);
  // NotFound (naming the series) when it does not exist.
  Status TakeSeriesSnapshot(SeriesRef series, std::span<const std::string> fields, int64_t start_ns,
                            int64_t end_ns, SeriesSnapshot* out);
  // Which of the sealed head and the head may hold points in [start, end):
  // a check of their time bounds, so that a read of flushed time (most
  // reads) looks for no column in either. REQUIRES: mu_ held (shared).
  struct Unflushed {
    bool sealed = false, head = false;
  };
  Unflushed UnflushedInLocked(int64_t start_ns, int64_t end_ns) const GPULSE_REQUIRES_SHARED(mu_);
  // *f as a snapshot of `field` of series `series_id` sees it: id, type, and
  // the unflushed points in [start, end) of the heads `in` names.
  // REQUIRES: mu_ held (shared).
  void SnapshotFieldLocked(uint32_t series_id, const FieldEntry& field, int64_t start_ns,
                           int64_t end_ns, Unflushed in, SeriesSnapshot::Field* f) const
      GPULSE_REQUIRES_SHARED(mu_);
  // The snapshot's fields of series out->series_id (which exists), but the
  // epoch. Unflushed points are copied only when the head (or the sealed
  // head) may hold some in [start, end). REQUIRES: mu_ held (shared is
  // enough).
  void SnapshotFieldsLocked(std::span<const std::string> fields, int64_t start_ns, int64_t end_ns,
                            SeriesSnapshot* out) const GPULSE_REQUIRES_SHARED(mu_);
  // The stored points of [start, end) merged with the snapshot's unflushed
  // ones of field `f`, newest winning.
  Status ReadMerged(const SeriesSnapshot& snap, size_t f, int64_t start, int64_t end, Column* out);
  // `epoch`: the window cache's, read before the unflushed points were
  // copied. A null `snapshot` reads the store as it is (the flush's own reads).
  Status ReadChunks(LazySnapshot* snapshot, uint32_t series_id, uint32_t field_id, int64_t start,
                    int64_t end, uint64_t epoch, Column* out);
  // ReadChunks, each window handed to `emit` instead of appended: at least
  // its points in [start, end), which are the range's (a cached window that
  // is packed unpacks just those; one that is not is handed over whole, in
  // place).
  // `emit_packed`, when given, takes the cached windows that are packed
  // integers at a steady interval (PackedWindow::Packed) instead of `emit`.
  // `cursor`, when given, is the store iterator to read with (made on first
  // use, from `snapshot`): the series of one scan share it, and a seek to the
  // next series finds its chunks in the block the last one loaded, where a
  // new iterator would lock LevelDB's mutex, allocate and look up the block
  // cache again.
  using WindowEmitter = storage::FunctionRef<void(const Column& window)>;
  using PackedEmitter = storage::FunctionRef<void(const storage::PackedRun& window)>;
  using StoreCursor = std::unique_ptr<leveldb::Iterator>;
  // `first_cached`, when given, is the window cache's answer for the
  // range's first window, looked up by the caller (null: not held); only
  // for a range of at most kCacheFirstWindows windows (CachedFirst).
  Status EmitChunks(LazySnapshot* snapshot, uint32_t series_id, uint32_t field_id, FieldType type,
                    int64_t start, int64_t end, uint64_t epoch, WindowEmitter emit,
                    const PackedEmitter* emit_packed = nullptr, StoreCursor* cursor = nullptr,
                    const std::shared_ptr<const PackedWindow>* first_cached = nullptr);
  // Whether EmitChunks looks [start, end)'s windows up in the cache before
  // the store: when they are at most kCacheFirstWindows.
  bool CachedFirst(int64_t start, int64_t end) const;
  // ScanSeries of one series whose snapshot is taken: runs of field f go to
  // fn(f, column, begin, end), packed ones to `packed` when given.
  // `first_cached`, when not empty, holds the cache's answer for each
  // field's first window, looked up by the caller where StoredUntil's range
  // is not empty and CachedFirst holds for it.
  using FieldRunEmitter =
      storage::FunctionRef<void(size_t field, const Column& column, size_t begin, size_t end)>;
  using FieldPackedEmitter = storage::FunctionRef<void(size_t field, const storage::PackedRun& run,
                                                       size_t begin, size_t end)>;
  Status ScanSnapshot(const SeriesSnapshot& snap, int64_t start_ns, int64_t end_ns,
                      FieldRunEmitter fn, const FieldPackedEmitter* packed, StoreCursor* cursor,
                      std::span<const std::shared_ptr<const PackedWindow>> first_cached = {});
  // Where a field's stored windows stop being the answer as they are: its
  // first unflushed point in [start_ns, end_ns), or end_ns.
  static int64_t StoredUntil(const SeriesSnapshot::Field& field, int64_t start_ns, int64_t end_ns);
  // The snapshots of series `ids` (fields, unflushed points in range, the
  // window cache's epoch), under one hold of the state lock.
  Status TakeSnapshots(std::span<const SeriesId> ids, std::span<const std::string> fields,
                       int64_t start_ns, int64_t end_ns, LazySnapshot* store,
                       std::vector<SeriesSnapshot>* out);

  // --- tier reads (db_tier_scan.cc): ScanTierRows in steps ---
  // What the steps of one tier scan share: its tier and range, the blocks
  // the range overlaps, the window cache's epoch, and the store as of one
  // snapshot, read through one iterator the series share.
  struct TierScan {
    explicit TierScan(LazySnapshot* s) : store(s) {}
    const storage::Tier* tier = nullptr;
    int64_t start_ns = 0, end_ns = 0;
    int64_t snap_end = 0;     // the end of the last bucket: unflushed points up to here
    int64_t span = 0;         // a block's width
    int64_t first_block = 0;  // the block holding start_ns
    size_t blocks = 0;        // blocks in range, when looked_up
    bool looked_up = false;   // every block of the range looked up in the cache at once
    uint64_t epoch = 0;
    LazySnapshot* store;
    StoreCursor it;
    Status damage;  // the first damaged block met
  };
  // A series-field of the scan: its id (kNoId: the measurement has no such
  // field) and type.
  struct TierPart {
    uint32_t id = kNoId;
    FieldType type = FieldType::kFloat;
  };
  // Fills scan->tier and the block geometry of [start, end).
  static void PlanTierScan(size_t tier, int64_t start_ns, int64_t end_ns, TierScan* scan);
  // Each series-field's part (parts[s * fields + f]) and, when the heads
  // may hold points in range, its unflushed points (*unflushed, the same
  // positions); then the cache's epoch.
  Status TierPartsLocked(std::span<const SeriesId> ids, std::span<const std::string> fields,
                         TierScan* scan, std::vector<TierPart>* parts,
                         std::vector<SeriesSnapshot::Field>* unflushed) const
      GPULSE_REQUIRES_SHARED(mu_);
  // Walks the stored blocks of one series-field through the range (from
  // `cached`, the scan's blocks looked up at once, when given; from the
  // cache block by block, and the store on a miss, otherwise), handing
  // each block's rows in range to emit(rows, lo, hi). A damaged block ends
  // the walk and is recorded in scan->damage.
  template <typename Kind, typename Emit>
  Status ReadTierBlocks(TierScan* scan, SeriesId id, TierPart part,
                        std::shared_ptr<const typename Kind::Rows>* cached, const Emit& emit);
  // The rows of buckets `touched` of one series-field, computed from their
  // raw points merged with `unflushed`.
  template <typename Kind>
  Status RecomputeTierBuckets(TierScan* scan, SeriesId id, TierPart part,
                              SeriesSnapshot::Field unflushed, const std::vector<int64_t>& touched,
                              typename Kind::Rows* rows);

  Status CheckOpen() const;
  // Holds off Close until the calling method returns; every public method
  // but Close takes it before CheckOpen.
  std::shared_lock<std::shared_mutex> HoldOpen() const {
    return std::shared_lock<std::shared_mutex>(open_mu_);
  }

  const Options options_;
  const std::string path_;
  storage::Env* const env_;
  const int64_t window_ns_;
  // Options::head_memory_bytes or its default, and the WAL bytes that
  // flush the head as well (MaybeScheduleFlush): the head's budget times
  // kWalPerHeadByte, at most kMostWalBytes. The WAL takes about 23 bytes a
  // value of the fleet load where the head takes 1 to 4.
  static constexpr uint64_t kWalPerHeadByte = 8;
  static constexpr uint64_t kMostWalBytes = 1ull << 30;
  const uint64_t head_budget_;
  const uint64_t wal_budget_;
  uint32_t tier_mask_ = 0;  // Options::tiers, set by Open
  // Options::retention and retention_by_database, set by Open.
  Keep retention_ns_ = {};
  std::map<std::string, Keep, std::less<>> retention_by_db_;
  bool any_retention_ = false;      // some kind of data of some database has one
  bool any_raw_retention_ = false;  // ... of the raw points: writes check their age

  std::unique_ptr<storage::FileLock> lock_;
  // The store's file layer: options_.store_env (or LevelDB's default), its
  // table files read with pread. Declared before store_, which it outlives.
  StoreEnv store_env_;
  std::unique_ptr<leveldb::DB> store_;
  // store_'s tier dictionaries, loaded with it (OpenStore): they change only
  // when store_ does, so they follow its rule.
  TierDictionaries tier_dicts_;
  WindowCache window_cache_;
  DataVersions versions_;  // touched after a write or delete can be read
  std::unique_ptr<storage::Wal> wal_;
  std::atomic<bool> closed_{true};
  // The store could not be reopened (Compact's swap, or RecoverFromNoSpace):
  // store_ is null, so CheckOpen refuses every call until the Db is closed
  // and opened again. Close still stops the threads and keeps the WAL,
  // which holds every acknowledged write the store lacks.
  std::atomic<bool> store_lost_{false};
  mutable std::shared_mutex open_mu_;  // shared by calls in flight, exclusive in Close

  Mutex flush_mu_;
  Mutex write_mu_;
  // Followers of the log (db_followers.cc), kept as definitions of kind
  // kLogFollowerKind too.
  Mutex followers_mu_;
  std::map<std::string, LogPosition, std::less<>> followers_ GPULSE_GUARDED_BY(followers_mu_);
  // A full disk (docs/operations.md, "Failure modes"). wal_full_: the last
  // WAL append found no space (the next that succeeds clears it).
  // store_full_: a store write found no space; the flusher then reopens the
  // store, writes the catalog again and retries the stalled flush every
  // second until one succeeds (RecoverFromNoSpace).
  std::atomic<bool> wal_full_{false}, store_full_{false};
  bool flush_stalled_ GPULSE_GUARDED_BY(flush_mu_) = false;          // imm_ waits for space
  uint64_t stalled_first_segment_ GPULSE_GUARDED_BY(flush_mu_) = 0;  // its WAL, retired after
  double new_series_budget_ GPULSE_GUARDED_BY(write_mu_) = -1;       // < 0: not started (full)
  int64_t new_series_budget_at_ GPULSE_GUARDED_BY(write_mu_) = 0;    // when it was last refilled
  std::atomic<uint64_t> series_refused_rate_{0}, series_refused_cap_{0};
  mutable SharedMutex mu_;
  SeriesIndex index_ GPULSE_GUARDED_BY(mu_);  // mutated with write_mu_ held too
  std::shared_ptr<Head> head_ GPULSE_GUARDED_BY(mu_);
  std::shared_ptr<const Head> imm_ GPULSE_GUARDED_BY(mu_);  // sealed, being flushed

  mutable Mutex bg_mu_;
  CondVar bg_cv_;  // flusher wake-ups, stall releases, shutdown
  bool flush_requested_ GPULSE_GUARDED_BY(bg_mu_) = false;
  bool imm_pending_ GPULSE_GUARDED_BY(bg_mu_) = false;
  bool shutting_down_ GPULSE_GUARDED_BY(bg_mu_) = false;
  // Records `s` as the sticky background error unless one is recorded
  // already; a disk-full retry's error gives way to any other, which stays.
  void SetBgErrorLocked(Status s) GPULSE_REQUIRES(bg_mu_) {
    if (!bg_error_.ok() && !bg_error_from_retry_) return;
    bg_error_ = std::move(s);
    bg_error_from_retry_ = false;
  }
  Status bg_error_ GPULSE_GUARDED_BY(bg_mu_);  // sticky flush or sync failure
  // bg_error_ is a disk-full retry's that failed for another reason (the
  // store not reopened): a later retry that recovers clears it.
  bool bg_error_from_retry_ GPULSE_GUARDED_BY(bg_mu_) = false;
  std::thread flusher_;
  std::thread syncer_;
  std::thread maintenance_;  // retention and part merging, when either is on
  // Windows a flush wrote a second (or later) part of, by (series, field,
  // window start), and the newest timestamp flushed: a window is ready to
  // merge once a point after its end has been flushed.
  struct PartsKey {
    uint32_t series_id;
    uint32_t field_id;
    int64_t window_start;
    auto operator<=>(const PartsKey&) const = default;
  };
  struct FlushWork {
    std::vector<PartsKey> parted;  // windows given one more part
    std::vector<PartsKey> merged;  // windows merged into one part
    int64_t max_ts = INT64_MIN;    // the newest point written
  };
  std::set<PartsKey> merge_candidates_ GPULSE_GUARDED_BY(flush_mu_);
  int64_t max_flushed_ts_ GPULSE_GUARDED_BY(flush_mu_) = INT64_MIN;
  bool merge_requested_ GPULSE_GUARDED_BY(bg_mu_) = false;

  std::atomic<uint64_t> head_bytes_{0};
  std::atomic<uint64_t> values_written_{0};
  std::atomic<uint64_t> flushes_{0};
  // Logs a damaged window read once (db_read.cc), with its store key range.
  void LogDamage(const Status& why, const WindowKey& window);
  Mutex damage_mu_;
  // (tier, series, field, window) logged
  std::set<std::tuple<uint8_t, uint32_t, uint32_t, int64_t>> logged_damage_
      GPULSE_GUARDED_BY(damage_mu_);
  // What the WAL replay of the last Open could not read (DbStats): set by
  // Open before the Db is shared, read-only after.
  uint64_t replay_damaged_bytes_ = 0, replay_damaged_regions_ = 0, replay_cut_bytes_ = 0;
  std::atomic<uint64_t> retention_runs_{0};
  std::atomic<uint64_t> windows_merged_{0};
  std::atomic<uint64_t> retention_deleted_keys_{0};
  uint64_t writes_refused_full_ GPULSE_GUARDED_BY(bg_mu_) = 0;
};

}  // namespace gpulse::engine
