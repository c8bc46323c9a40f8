// gpulse: an embedded time-series database for GPU fleets.
//
// This header is the whole public face of the engine. A program opens a data
// directory, writes batches of points, reads back time ranges of one field,
// lists what is stored, and closes:
//
//   gpulse::Options options;
//   std::unique_ptr<gpulse::Db> db;
//   gpulse::Status s = gpulse::Db::Open(options, "/var/lib/gpulse", &db);
//   if (!s.ok()) { ... s.ToString() ... }
//   s = db->Write(points);            // durable per options.sync_policy when OK
//   s = db->Read(request, &result);   // flushed chunks and the head, merged
//
// Errors are values (Status, Result); no exception crosses this API.
//
// Thread safety: every method of Db may be called from any number of threads
// at once. Writes are atomic per batch with respect to readers only in the
// sense that a reader sees each point either entirely or not at all.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "storage/column.h"
#include "storage/rollup.h"
#include "storage/status.h"
#include "storage/tally.h"

namespace gpulse::storage {
class Env;
}  // namespace gpulse::storage
namespace leveldb {
class Env;
}  // namespace leveldb

namespace gpulse {

using storage::Column;        // timestamps + values of one field, one type
using storage::FieldType;     // float, integer, unsigned, boolean, string
using storage::RollupColumn;  // a tier's rows of one numeric field of one series
using storage::TallyColumn;   // a tier's rows of one string field of one series

// One value of a field, in line protocol's five types.
using FieldValue = std::variant<double, int64_t, uint64_t, bool, std::string>;

struct Tag {
  std::string key;
  std::string value;
  friend bool operator==(const Tag&, const Tag&) = default;
};

struct Field {
  std::string key;
  FieldValue value;
};

// A point: measurement, tag set, field set, timestamp in nanoseconds since the
// Unix epoch. Tags may come in any order (they are sorted on write); tag keys
// must be unique within a point, field keys too.
struct Point {
  std::string measurement;
  std::vector<Tag> tags;
  std::vector<Field> fields;
  int64_t timestamp_ns = 0;
};

// The zero-copy form of a point, for writers that parse their own input (the
// HTTP server writes straight from the request body): every string is the
// caller's and needs to live only until Write returns.
using FieldValueRef = std::variant<double, int64_t, uint64_t, bool, std::string_view>;

struct TagRef {
  std::string_view key;
  std::string_view value;
};

struct FieldRef {
  std::string_view key;
  FieldValueRef value;
};

struct PointRef {
  std::string_view measurement;
  std::span<const TagRef> tags;
  std::span<const FieldRef> fields;
  int64_t timestamp_ns = 0;
};

// The latest time a point may carry, in Unix nanoseconds (the earliest is
// INT64_MIN). INT64_MAX itself stays free so that a half-open read [lo, hi)
// can always name a bound past any stored time; Db::Write rejects a point
// at INT64_MAX, naming it, where it used to be acknowledged and never read.
inline constexpr int64_t kMaxTimestampNs = INT64_MAX - 1;

// The type of a value, and a value as a reference (a string is viewed, not
// copied).
FieldType TypeOf(const FieldValueRef& value);
FieldValueRef ToRef(const FieldValue& value);

// A series: a measurement and its sorted tag set.
struct Series {
  std::string measurement;
  std::vector<Tag> tags;  // sorted by key
  friend bool operator==(const Series&, const Series&) = default;
};

// A series' number in the catalog: given when the series is first written
// and never given to another (a dropped series keeps it), so it names the
// same series for the life of the data directory. Db::ListSeries gives
// them; reads by id skip finding the series by its key.
using SeriesId = uint32_t;
inline constexpr SeriesId kNoSeriesId = UINT32_MAX;  // not known

// Which series a read is of: the series itself (found by its key) or its
// SeriesId (found without building and hashing the key: a query reading
// hundreds of series passes the ids ListSeries gave).
struct SeriesRef {
  SeriesRef(const Series& s) : series(&s) {}  // NOLINT: implicit by design
  SeriesRef(SeriesId i) : id(i) {}            // NOLINT: implicit by design
  const Series* series = nullptr;
  SeriesId id = kNoSeriesId;
};

enum class SyncPolicy {
  kEveryBatch,  // fsync the WAL before Write returns (group commit across threads)
  kInterval,    // Write returns once the batch is in the OS; a background fsync runs every
                // sync_interval. Survives a process crash; a power loss may cost one interval.
  kNone,        // never fsync; the OS writes back when it likes. For tests and bulk loads.
};

// The head's default memory bound: a 32nd of physical memory, at least
// 64 MiB and at most 2 GiB. A million series-fields (100,000 GPUs of ten
// fields) take about 160 MB before their first values and 270 MB with an
// hour of minutes, so on a machine of 24 GiB (768 MiB) the WAL's bound, not
// the head's, flushes such a fleet: after about 45 minutes of data.
uint64_t DefaultHeadMemoryBytes();

// The decoded-window cache's default bound: a 32nd of physical memory, at
// least 256 MiB and at most 4 GiB. The last hour of 100,000 GPUs' ten fields
// (1.2 M windows and tier blocks) takes 326 MB: where the cache holds less
// than the windows a dashboard's refresh reads, each refresh decodes again.
uint64_t DefaultWindowCacheBytes();

// The most table files whose descriptors the chunk store keeps open at once:
// LevelDB's table cache (1,000 files) or a fifth of the soft RLIMIT_NOFILE,
// the lesser. A server keeps that many descriptors free of connections.
size_t StoreDescriptorBudget();

struct Options {
  // Create the data directory when it does not exist. When false, opening a
  // missing directory returns NotFound.
  bool create_if_missing = true;

  SyncPolicy sync_policy = SyncPolicy::kInterval;
  std::chrono::milliseconds sync_interval{100};

  // The head (unflushed points in memory: a column of each series-field,
  // about 160 bytes and then 1 to 2 bytes a value of minute-grain GPU
  // telemetry) is flushed to chunks once it holds this many bytes, or once
  // the WAL holds eight times as many or 1 GiB, whichever is less (a
  // restart replays at most that: about 8 s at the 130 MB/s measured), or
  // once it spans a whole chunk window. Writers wait while a second head
  // fills up behind a flush still running, so memory stays near twice this
  // bound. 0: DefaultHeadMemoryBytes().
  uint64_t head_memory_bytes = 0;

  // What Write does when the head is full and the previous flush has not
  // finished: wait for it (true), or return ResourceExhausted at once so the
  // caller can push back on its own client (the HTTP server answers 503).
  bool wait_when_full = true;

  // The time span one chunk covers: points of one series and field whose
  // timestamps fall in the same window are stored together. A day of minute
  // samples (1440 points) compresses to well under a byte a value.
  std::chrono::nanoseconds chunk_window = std::chrono::hours(24);

  // A point older than the newest point of its series (seen since Open) by
  // more than this is rejected. Zero accepts points of any age.
  std::chrono::nanoseconds out_of_order_window = std::chrono::hours(24 * 7);

  // Bounds on one point: Write rejects a point past one, naming the bound
  // and its setting. They keep one request from making a catalog entry of
  // megabytes (a 10 MiB measurement name was accepted) or a series of
  // 100,000 fields. GPU telemetry needs a few dozen fields and short names;
  // dcgm-exporter's widest scrape is under 200 fields.
  struct PointLimits {
    size_t max_fields = 1'000;            // fields of one point
    size_t max_tags = 256;                // tags of one point
    size_t max_name_bytes = 1'024;        // a measurement name, tag key or field key
    size_t max_tag_value_bytes = 65'536;  // a tag value
  };
  PointLimits point_limits;

  // Bounds on the catalog's growth (0: none, the default of an embedded Db;
  // `gpulse serve` sets 5,000,000 and 250,000). Every series costs memory for
  // as long as the data directory lives (about 0.8 KB with its index
  // entries), so a runaway tag (a request id, a timestamp as a tag) must not
  // add millions unchecked. A point that would add a series to a database
  // holding max_series_per_database is rejected by name; a Write whose new
  // series exceed what is left of the minute's max_new_series_per_minute is
  // refused whole (ResourceExhausted, WriteResult::series_rate_limited) and
  // may be sent again after retry_after_seconds. 250,000 a minute registers
  // a fleet of 100,000 GPUs (about 115,000 series) in its first minute.
  struct CardinalityLimits {
    uint64_t max_series_per_database = 0;
    uint64_t max_new_series_per_minute = 0;
  };
  CardinalityLimits cardinality;

  uint64_t wal_segment_bytes = 64ull << 20;

  // The downsampling tiers kept besides the raw points, by name
  // (storage::kTiers: "5m", "1h", "1d"). Each costs flush work and disk
  // and speeds up queries whose buckets it tiles. The default leaves out
  // 5m: at minute grain a 5m row summarises 5 points yet takes more room
  // than they do (on the fleet set: +2.5x the raw bytes and +45% ingest CPU,
  // against +0.9x and +15% for 1h and 1d together; docs/performance.md),
  // and raw chunks answer 5-minute buckets well. Add it for data sampled
  // every few seconds. A data directory opened with another set than it
  // was written with drops the tiers no longer named and builds the new
  // ones from the raw chunks.
  std::vector<std::string> tiers = {"1h", "1d"};
  // Keep the tier set the data directory was written with, whatever `tiers`
  // says (a new directory gets `tiers`). For tools that open a directory a
  // server configured (`gpulse import`, `query --data`, `shell --data`):
  // they must not drop or build tiers behind its back.
  bool keep_stored_tiers = false;

  // How long each kind of data is kept, by name: "raw" (the points) and the
  // tier names ("5m", "1h", "1d"); absent or zero keeps it forever. Data
  // older than now minus its retention is deleted in the background (every
  // retention_interval, and at Open) in whole pieces: raw chunk windows and
  // tier rows whose whole span is past it, so up to a chunk window more than
  // the retention may stay. A point older than the raw retention is
  // rejected on write. Queries reaching before the raw retention are
  // answered from a tier where the tier's buckets allow it (see
  // docs/query-language.md). The default keeps everything: gpulse never
  // deletes what a user did not ask it to (imports of old traces, test
  // sets); docs/operations.md suggests settings for a production fleet.
  std::map<std::string, std::chrono::nanoseconds> retention;
  // The same per database: series tagged db=<name> (what /write?db= and
  // /api/v2/write?bucket= write) keep their data as the map under <name>
  // says; what it leaves out comes from `retention`.
  std::map<std::string, std::map<std::string, std::chrono::nanoseconds>> retention_by_database;
  std::chrono::milliseconds retention_interval{10 * 60 * 1000};

  // Chunk windows that flushes left in several parts (late and out-of-order
  // points, frequent flushes) are merged into one part in the background
  // once the data has moved past them, reading at most this many chunk
  // bytes a second (flushes wait only while one small batch of windows is
  // merged). 0 leaves the parts until a flush finds 8 of them or Compact.
  uint64_t merge_bytes_per_second = 32ull << 20;

  // Decoded chunk windows kept in memory for queries that come back to them
  // (dashboards refreshing): at most this many bytes (a window of a steady
  // small-integer field packs to about a byte a value and 270 bytes of its
  // own). 0 turns the cache off.
  uint64_t window_cache_bytes = DefaultWindowCacheBytes();

  // The file layer for the WAL and the directory lock (LevelDB uses its own).
  // Null means POSIX. Tests pass a fault-injecting one; it must outlive the Db.
  storage::Env* env = nullptr;
  // The file layer of the chunk store (LevelDB's Env); null is LevelDB's
  // default. Tests pass one that fails writes and drops unsynced data. It
  // must be a file-system Env: table files are read with pread whichever it
  // is (engine/store_env.h).
  leveldb::Env* store_env = nullptr;

  // Receives one line per notable event (WAL replay, torn tail cut, flushes).
  // Default: stderr, prefixed "gpulse: ".
  std::function<void(std::string_view line)> info_log;
};

// A tag condition of a read or listing: the tag `key` equals `value`.
struct TagMatcher {
  std::string key;
  std::string value;
};

// Read one field of every series of `measurement` whose tags match all of
// `tags`, over timestamps in [start_ns, end_ns).
struct ReadRequest {
  std::string measurement;
  std::vector<TagMatcher> tags;
  std::string field;
  int64_t start_ns = INT64_MIN;
  int64_t end_ns = INT64_MAX;
};

// The points of one series in a read: timestamps ascending, one value each.
struct SeriesColumn {
  Series series;
  Column column;
};

struct FieldInfo {
  std::string name;
  FieldType type = FieldType::kFloat;
};

inline constexpr std::string_view kPrometheusMeasurementKind = "prometheus_measurement";
// Prometheus' stale markers (a series has ended) for the metric a field f
// holds are kept as the bool field "__stale__.f" of the same series, true at
// each marker's time (docs/prometheus-mapping.md, "Stale markers"). A '.'
// cannot be in a Prometheus metric name, so no metric has such a field.
// InfluxQL's field listings and `SELECT *` leave these fields out; PromQL
// reads them beside f; deletes, retention and drops treat them as any field.
inline constexpr std::string_view kStaleFieldPrefix = "__stale__.";
inline std::string StaleFieldOf(std::string_view field) {
  return std::string(kStaleFieldPrefix) + std::string(field);
}
inline bool IsStaleField(std::string_view field) { return field.starts_with(kStaleFieldPrefix); }
// Kind "prometheus_metadata": what scrapes' # TYPE and # HELP lines say of a
// metric family (or remote write's metadata), named by the family, the text
// "TYPE\nUNIT\nHELP".
inline constexpr std::string_view kPrometheusMetadataKind = "prometheus_metadata";

// A place in the write-ahead log, at a write's boundary: what a follower of
// the log (Db::FollowLog) has read up to.
struct LogPosition {
  uint64_t segment = 0;
  uint64_t offset = 0;
  friend auto operator<=>(const LogPosition&, const LogPosition&) = default;
};

// A point as the log holds it (Db::ReadLog): its series by canonical key
// (the measurement, then '\0' tag key '\0' tag value for each tag in key
// order; no name holds a NUL byte), its time and its fields. Every view
// lives only for the call it is handed to.
struct LoggedPoint {
  std::string_view series_key;
  int64_t timestamp_ns = 0;
  std::span<const FieldRef> fields;
};

// What Write did with a batch.
struct WriteResult {
  uint64_t points_written = 0;
  uint64_t values_written = 0;
  // One entry per rejected point: its index in the batch and why.
  struct Rejected {
    size_t index = 0;
    std::string reason;
  };
  std::vector<Rejected> rejected;
  // The Write was refused whole: its new series exceed what is left of the
  // minute's Options::cardinality.max_new_series_per_minute. Nothing was
  // written; send it again after this many seconds.
  bool series_rate_limited = false;
  uint64_t retry_after_seconds = 0;
};

struct DbStats {
  uint64_t series = 0;
  uint64_t head_bytes = 0;
  uint64_t head_values = 0;
  uint64_t wal_bytes = 0;
  uint64_t wal_held_bytes = 0;  // log kept for followers only (FollowLog)
  uint64_t wal_syncs = 0;
  double wal_sync_seconds = 0;  // total time spent in WAL fsyncs
  // What the replay at Open could not read: bytes of damaged records inside
  // the log (their points are lost; the log says where) and torn-tail bytes
  // cut (never acknowledged under the every-batch policy).
  uint64_t wal_replay_damaged_bytes = 0;
  uint64_t wal_replay_damaged_regions = 0;
  uint64_t wal_replay_cut_bytes = 0;
  // The disk was full at the last WAL append or store write: writes fail
  // with NoSpace until space returns, then resume by themselves (the
  // flusher retries the store every second).
  bool disk_full = false;
  // Live series of each database ("" for series without a db tag), and the
  // series refused by Options::cardinality.
  std::map<std::string, uint64_t> series_by_database;
  uint64_t series_refused_rate = 0;  // in Writes refused whole (new series a minute)
  uint64_t series_refused_cap = 0;   // points rejected (series of a database)
  uint64_t values_written = 0;
  uint64_t flushes = 0;
  uint64_t writes_refused_full = 0;  // Writes that got ResourceExhausted (wait_when_full off)
  uint64_t window_cache_hits = 0;    // reads of a chunk window answered from memory
  uint64_t window_cache_misses = 0;  // ... and decoded from the store
  // ... and not kept: the cache was full of windows asked for as often
  uint64_t window_cache_refused = 0;
  uint64_t window_cache_bytes = 0;
  uint64_t windows_merged = 0;          // chunk windows whose parts were merged into one
  uint64_t retention_runs = 0;          // passes of the retention enforcer
  uint64_t retention_deleted_keys = 0;  // chunk parts and tier blocks it deleted or trimmed
};

// The wall clock in Unix nanoseconds: what now() means in queries, and what
// retention counts back from.
inline int64_t WallClockNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Db {
 public:
  // Opens the data directory at `path`, replaying its write-ahead log into
  // the head. Returns Busy when another process (or another Db in this one)
  // has it open, NotFound when it is missing and !create_if_missing, and
  // Corruption when stored data cannot be read. On success *db owns it.
  static Status Open(const Options& options, const std::string& path, std::unique_ptr<Db>* db);

  Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  // Closes if Close was not called; errors are logged, not returned.
  virtual ~Db() = default;

  // Writes a batch. Invalid points (empty measurement or field set, a NUL in
  // a name, a repeated tag or field key, a field whose type differs from the
  // type first written for that measurement and field, a point too far out
  // of order) are rejected one by one and the rest is written: the Status is
  // then InvalidArgument naming the first rejected point, and *result (when
  // given) lists all of them. Returns OK only when every point was written
  // and is durable per the sync policy. A point with the same series, field
  // and timestamp as an earlier one replaces its value.
  Status Write(const std::vector<Point>& points, WriteResult* result = nullptr);

  // The same, for points whose strings the caller owns: nothing is copied
  // before the batch is logged. Indexes in *result are into `points`.
  virtual Status Write(std::span<const PointRef> points, WriteResult* result = nullptr) = 0;

  // Appends to *out one SeriesColumn per matching series that has points of
  // the field in range, series in catalog order. Sees every write that has
  // returned, and may see writes still in progress.
  virtual Status Read(const ReadRequest& request, std::vector<SeriesColumn>* out) = 0;

  virtual Status ListMeasurements(std::vector<std::string>* out) = 0;
  // Series of `measurement` (every measurement when empty) matching `tags`,
  // sorted by measurement, then tag by tag (key, then value), bytewise.
  // When `ids` is given, each series' SeriesId is appended to it, in the
  // same order.
  virtual Status ListSeries(std::string_view measurement, const std::vector<TagMatcher>& tags,
                            std::vector<Series>* out, std::vector<SeriesId>* ids) = 0;
  Status ListSeries(std::string_view measurement, const std::vector<TagMatcher>& tags,
                    std::vector<Series>* out) {
    return ListSeries(measurement, tags, out, nullptr);
  }
  // Sorted distinct tag keys of the measurement's series that match every
  // one of `scope` (all of them when it is empty), from the tag index: no
  // series is listed, so a fleet's `SHOW TAG KEYS` costs its tag values,
  // not its series.
  virtual Status ListTagKeys(std::string_view measurement, const std::vector<TagMatcher>& scope,
                             std::vector<std::string>* out) = 0;
  Status ListTagKeys(std::string_view measurement, std::vector<std::string>* out) {
    return ListTagKeys(measurement, {}, out);
  }
  // Sorted distinct values of tag `key` among the measurement's series that
  // match every one of `scope`, as ListTagKeys.
  virtual Status ListTagValues(std::string_view measurement, std::string_view key,
                               const std::vector<TagMatcher>& scope,
                               std::vector<std::string>* out) = 0;
  Status ListTagValues(std::string_view measurement, std::string_view key,
                       std::vector<std::string>* out) {
    return ListTagValues(measurement, key, {}, out);
  }
  // How many of the measurement's series match every one of `scope`.
  virtual Status CountSeries(std::string_view measurement, const std::vector<TagMatcher>& scope,
                             uint64_t* count) = 0;
  // The measurement's fields, by name.
  virtual Status ListFields(std::string_view measurement, std::vector<FieldInfo>* out) = 0;
  // The version of the measurement's catalog: it changes whenever a series
  // or field of the measurement is added, a series of it dropped, or a
  // dropped one written again, and what the listings above answer for the
  // measurement can have changed only when it has. Each value is new to the
  // process (two Dbs, or one closed and opened again, never share one). A
  // caller may keep what it derived from the listings (the query layer
  // keeps its plans) while the version stays the same, if it read the
  // version before it listed.
  virtual Status CatalogVersion(std::string_view measurement, uint64_t* version) = 0;
  // The version of what `measurement` holds in [start_ns, end_ns), by
  // whole ten-minute slices of UTC time: it changes whenever a point of the
  // measurement with a timestamp in a slice the range meets is written, or points of it are
  // deleted (Delete, DropSeries; retention and Verify's drops change every
  // version). Each value is new to the process. A caller may keep what it
  // derived from the range's points (the GPU-minute ledger keeps spans of
  // hours) while the version stays the same, if it read the version (or
  // LatestDataVersion) before it read the points.
  virtual uint64_t DataVersion(std::string_view measurement, int64_t start_ns, int64_t end_ns) = 0;
  // At least every DataVersion answered now: a DataVersion above it, later,
  // means a change made after this call. Read it before reading the points
  // derived from, and the days whose versions stay at or below it since
  // hold what was read.
  virtual uint64_t LatestDataVersion() = 0;

  // Deletes the points of each of `series` whose timestamps lie in
  // [start_ns, end_ns) (an end of INT64_MAX includes INT64_MAX), from every field, the head, the
  // chunks and every tier (tier buckets the range covers in part are computed again from the points
  // left). Series that do not exist are skipped; the series stay listed. The delete is logged and
  // synced before it is applied, so once OK is returned it survives a crash, and a crash part way
  // through is finished when the directory is opened again. Writers wait while it runs (chunk
  // windows and tier blocks inside the range are deleted whole, without being read); readers may
  // see it half done.
  virtual Status Delete(std::span<const Series> series, int64_t start_ns, int64_t end_ns) = 0;

  // Deletes every point of each of `series`, as Delete does, and takes the
  // series out of every listing and query (ListSeries, tag keys and values,
  // measurements left with no series). Writing the series again brings it
  // back, holding only the new points.
  virtual Status DropSeries(std::span<const Series> series) = 0;

  // Merges now, without the rate bound, every chunk window that the
  // background merging would merge (several parts, and a newer point
  // flushed after the window's end). Readers and writers go on meanwhile.
  virtual Status MergeParts() = 0;

  // Deletes what is older than `now_ns` minus Options::retention, as the
  // background pass does (every retention_interval): raw chunk windows and
  // tier rows that lie wholly before the cut. Safe to call at any time;
  // running it again deletes nothing more.
  virtual Status EnforceRetention(int64_t now_ns) = 0;

  // The first timestamp whose data the retention still keeps at `now_ns`
  // for the raw points (tier -1) or storage::kTiers[tier] of the series of
  // `database` (tagged db=<database>; empty: of series with no db tag);
  // INT64_MIN when kept forever.
  virtual int64_t RetainedSince(int tier, int64_t now_ns, std::string_view database = {}) const = 0;

  // Writes the whole head to chunks and retires the WAL segments it came from.
  // Returns when done.
  virtual Status Flush() = 0;

  // Flushes, then rewrites the chunk store into a fresh LevelDB holding only
  // the newest version of each key, each window's chunk parts merged into one
  // (one part per flush that touched the window), and swaps it in
  // (crash-safe: a crash at any moment leaves the old store or the new one).
  // LevelDB keeps replaced versions until its own compactions reach them;
  // this drops them now.
  // Worth running after a bulk load, or before measuring disk use. Every
  // other call waits while it runs (about 1 s per 10 million stored values).
  virtual Status Compact() = 0;

  // What Verify found.
  struct VerifyReport {
    uint64_t parts = 0;        // raw chunk parts read
    uint64_t tier_blocks = 0;  // tier blocks (rollup and tally rows) read
    struct Damaged {
      std::string key;     // the store key, in hex
      std::string tier;    // "raw", or the tier's name ("1h")
      std::string series;  // "gpu,node=a" (or the id when the catalog lacks it)
      std::string field;
      int64_t window_start = 0;  // the raw window's, or the tier block's
      uint16_t part = 0;
      std::string reason;  // what decoding said
    };
    std::vector<Damaged> damaged;
    uint64_t dropped = 0;  // parts and blocks deleted (drop_damaged)
    uint64_t rebuilt = 0;  // dropped tier blocks built again from the raw points
  };
  // Reads and decodes every stored raw chunk part and tier block and reports
  // the ones that cannot be read (a damaged LevelDB table). With
  // `drop_damaged` it deletes them, so that queries over their series read
  // the rest again, and builds each dropped tier block again from the raw
  // points left; keep a copy of the data directory first (`gpulse verify
  // --repair` makes one). Every other call waits while it runs.
  virtual Status Verify(bool drop_damaged, VerifyReport* report) = 0;

  // Reads `fields` of the one series `series` over [start_ns, end_ns):
  // (*out)[i] is fields[i]'s points, empty when the series has none (or has
  // no such field). NotFound when the series does not exist (or the id was
  // never given).
  virtual Status ReadSeries(SeriesRef series, std::span<const std::string> fields, int64_t start_ns,
                            int64_t end_ns, std::vector<Column>* out) = 0;

  // What ReadSeries reads, handed over in place: fn(i, column, begin, end)
  // gets points [begin, end) of `column`, a run of fields[i]'s points
  // (begin < end; a field's runs ascend and do not overlap). Stored windows
  // come from the read cache as it keeps them, or unpacked into a scratch
  // column, never copied per caller; `column` is valid during the call only.
  // For scans that fold points (aggregates), not keep them. With `packed`,
  // a cached window of integers at a steady interval goes to it instead, as
  // the cache keeps it (points [begin, end) of `run`, which is valid during
  // the call only), not unpacked: a fold can read the packed bytes.
  using PointRunVisitor =
      std::function<void(size_t field, const Column& column, size_t begin, size_t end)>;
  using PackedRunVisitor =
      std::function<void(size_t field, const storage::PackedRun& run, size_t begin, size_t end)>;
  virtual Status ScanSeries(SeriesRef series, std::span<const std::string> fields, int64_t start_ns,
                            int64_t end_ns, const PointRunVisitor& fn,
                            const PackedRunVisitor* packed) = 0;
  // ScanSeries of many series at once, by the ids ListSeries gave:
  // fn(s, field, column, begin, end) hands over runs of fields[field] of
  // series ids[s], the series in the order of `ids`. The same runs as one
  // ScanSeries a series, for one look at the catalog and one pass of one
  // store iterator a call instead of a snapshot and an iterator a series (a
  // fleet-wide fold reads 100,000 series; ids in ascending order let the
  // iterator step forward through the blocks it has loaded). Every series'
  // unflushed points in range are copied when the call starts: a fold over a
  // fleet makes one call a chunk of tens of series (the query layer: 32).
  // InvalidArgument for an id the catalog never gave.
  using SeriesRunVisitor =
      std::function<void(size_t s, size_t field, const Column& column, size_t begin, size_t end)>;
  using SeriesPackedVisitor = std::function<void(
      size_t s, size_t field, const storage::PackedRun& run, size_t begin, size_t end)>;
  virtual Status ScanSeries(std::span<const SeriesId> ids, std::span<const std::string> fields,
                            int64_t start_ns, int64_t end_ns, const SeriesRunVisitor& fn,
                            const SeriesPackedVisitor* packed) = 0;
  // The smallest and largest timestamp of the points of `fields` of series
  // `ids` in [start_ns, end_ns) (*first > *last when there is none), from the
  // stored chunks' headers and the unflushed points: a chunk is decoded only
  // where a bound of the range cuts it. For a reader that must find where
  // the data begins or ends before it reads (a raw SELECT with LIMIT over an
  // open range). A chunk whose header cannot be read is left out and the
  // call then returns Corruption naming it. InvalidArgument for an id the
  // catalog never gave.
  virtual Status TimeExtent(std::span<const SeriesId> ids, std::span<const std::string> fields,
                            int64_t start_ns, int64_t end_ns, int64_t* first, int64_t* last) = 0;

  // Visits the rows of tier `tier` (an index into storage::kTiers) of a
  // series' fields whose buckets start in [start_ns, end_ns): fn(i, rows,
  // begin, end) hands over rows [begin, end) of fields[i], in runs (a run's
  // rows ascend; runs of one field do not overlap). Fields that are not
  // numeric or have no points there get no call. Only the parts named by
  // `parts` (storage::RollupParts) are sure to be filled. Points not yet
  // flushed count: their buckets are computed from the raw points, so the
  // rows always equal what the raw points give. `rows` is valid during the
  // call only. NotFound when the series does not exist. A stored block
  // that cannot be read (a damaged table) is logged and its series-field
  // skipped from there: the other fields and series are visited, and the
  // call then returns Corruption naming the block.
  // The tiers kept (Options::tiers): bit t for storage::kTiers[t].
  virtual uint32_t KeptTiers() const = 0;
  using RollupVisitor =
      std::function<void(size_t field, const RollupColumn& rows, size_t begin, size_t end)>;
  virtual Status ScanRollups(SeriesRef series, std::span<const std::string> fields, size_t tier,
                             int64_t start_ns, int64_t end_ns, uint32_t parts,
                             const RollupVisitor& fn) = 0;
  // ScanRollups of many series at once, by the ids ListSeries gave:
  // fn(s, field, rows, begin, end) hands over rows of fields[field] of
  // series ids[s], the series in the order of `ids`. The same rows as one
  // ScanRollups a series, for one look at the catalog, the unflushed points
  // and the window cache a call instead of one a series (a fleet-wide fold
  // over a tier reads hundreds of series). InvalidArgument for an id the
  // catalog never gave.
  using SeriesRollupVisitor = std::function<void(size_t s, size_t field, const RollupColumn& rows,
                                                 size_t begin, size_t end)>;
  virtual Status ScanRollups(std::span<const SeriesId> ids, std::span<const std::string> fields,
                             size_t tier, int64_t start_ns, int64_t end_ns, uint32_t parts,
                             const SeriesRollupVisitor& fn) = 0;
  // The same for string fields: tally rows (storage/tally.h: samples per
  // value per bucket), unflushed points counted likewise.
  using TallyVisitor =
      std::function<void(size_t field, const TallyColumn& rows, size_t begin, size_t end)>;
  virtual Status ScanTallies(SeriesRef series, std::span<const std::string> fields, size_t tier,
                             int64_t start_ns, int64_t end_ns, const TallyVisitor& fn) = 0;

  // Definitions: small named texts the database keeps beside its data, such
  // as alert rules (kind "alert", the rule's CREATE ALERT text). A put is
  // synced before it returns and replaces any definition of that kind and
  // name; Compact and restarts keep them. Kinds and names are non-empty and
  // hold no NUL byte (InvalidArgument otherwise).
  //
  // Kind "prometheus_measurement" (kPrometheusMeasurementKind) names a
  // measurement whose fields are Prometheus metrics (written by a scrape,
  // remote write or `import --format prom`): PromQL calls its field f the
  // metric f, where a line-protocol measurement m's field f is m_f.
  virtual Status PutDefinition(std::string_view kind, std::string_view name,
                               std::string_view text) = 0;
  // NotFound naming the definition when there is none.
  virtual Status DeleteDefinition(std::string_view kind, std::string_view name) = 0;
  // Every definition of `kind` as (name, text), in name order.
  virtual Status ListDefinitions(std::string_view kind,
                                 std::vector<std::pair<std::string, std::string>>* out) = 0;

  // Followers of the write-ahead log: readers of every acknowledged write,
  // in order, that outlive restarts (the server forwards to remote-write
  // receivers this way). A follower is a name and a position that the Db
  // keeps durably. The log from the lowest follower's position on is kept,
  // after the Db itself is done with it, until that follower has read it.
  //
  // FollowLog registers `name` at the end of the log (it follows what is
  // written from now on) or, when it follows already, leaves it where it
  // stands; *position gets where that is. Names are non-empty, without NUL.
  virtual Status FollowLog(std::string_view name, LogPosition* position) = 0;
  // Records durably that `name` has read what lies before `position`; the
  // log below every follower is deleted. NotFound for a name not following.
  virtual Status AdvanceLog(std::string_view name, LogPosition position) = 0;
  // Stops following: the log it held is freed. NotFound when not following.
  virtual Status UnfollowLog(std::string_view name) = 0;
  // Every follower and its position, by name.
  virtual Status LogFollowers(std::vector<std::pair<std::string, LogPosition>>* out) = 0;
  // Reads the writes logged from `from` on, oldest first: `each` gets the
  // points of one Write (deletes are passed over) and the position after
  // it. Stops after about `max_bytes` of log (at least one write), at the
  // end of the log, or at an error from `each` (returned). *end gets the
  // position after the last write read.
  virtual Status ReadLog(
      LogPosition from, uint64_t max_bytes,
      const std::function<Status(std::span<const LoggedPoint> points, LogPosition next)>& each,
      LogPosition* end) = 0;
  // Bytes of log from `from` to its end.
  virtual uint64_t LogBytesFrom(LogPosition from) = 0;

  virtual DbStats GetStats() = 0;

  // Flushes, syncs and releases the data directory. Later calls return an
  // error. Calling it twice is harmless.
  virtual Status Close() = 0;
};

// The library version, "0.1.0".
const char* Version();

}  // namespace gpulse
