// SeriesIndex: the catalog of series and fields, in memory, and its durable
// form in LevelDB (the 'S', 'F' and 'I' keys of storage/key_layout.h).
//
// Series and fields are few (one series per GPU, a dozen fields per
// measurement) and long-lived, so the whole catalog is loaded at open and
// looked up in hash maps on every write. New entries are assigned the next
// id and their LevelDB records are appended to the caller's batch.
//
// Thread safety: none inside, but for SortByKey. DbImpl guards it: writers
// mutate it holding both the write mutex and the exclusive state lock;
// readers hold the state lock shared. The per-series field cache
// (SeriesEntry::fields) is only touched by writers, under the write mutex.
// SortByKey may be called by several readers at once (it guards the order
// it keeps with its own mutex).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/gpulse.h"
#include "storage/mutex.h"

namespace leveldb {
class DB;
class WriteBatch;
}  // namespace leveldb

namespace gpulse::engine {

inline constexpr uint32_t kNoId = UINT32_MAX;

struct SeriesEntry {
  uint32_t id = kNoId;
  std::string canonical_key;
  Series series;
  // Dropped (DROP SERIES): out of every listing and match until written
  // again. The id stays taken, so ids stay dense.
  bool dropped = false;
  // Newest timestamp written since open, for the out-of-order window.
  int64_t max_ts = INT64_MIN;
  // The ids of the fields this series was written with, so the write path
  // finds a field by a short scan (comparing names in the catalog's field
  // list) instead of two map lookups per value. Ids only: a copy of each
  // name took 40 bytes a series-field, and growth one by one room for 16
  // of a ten-field series (64 MB at 100,000 GPUs).
  std::vector<uint32_t> fields;
};

struct FieldEntry {
  uint32_t id = kNoId;
  FieldType type = FieldType::kFloat;
  std::string measurement;
  std::string name;
};

// The value of the db tag in a canonical series key, empty when it has none
// (the series of no database).
std::string_view DatabaseOfSeriesKey(std::string_view series_key);

class SeriesIndex {
 public:
  SeriesIndex() = default;
  // Not copied or moved: the key set refers to series_.
  SeriesIndex(const SeriesIndex&) = delete;
  SeriesIndex& operator=(const SeriesIndex&) = delete;

  // Reads the catalog from `db`. Corruption when an entry cannot be parsed.
  Status Load(leveldb::DB* db);

  // The id of the series with this canonical key, or kNoId.
  uint32_t FindSeries(std::string_view canonical_key) const;
  const SeriesEntry& series(uint32_t id) const { return series_[id]; }
  SeriesEntry& mutable_series(uint32_t id) { return series_[id]; }
  size_t series_count() const { return series_.size(); }
  size_t live_series_count() const { return series_.size() - dropped_; }
  // Live series of each database ("" for series without a db tag).
  uint64_t LiveSeriesIn(std::string_view database) const;
  const std::map<std::string, uint64_t, std::less<>>& live_by_database() const {
    return live_by_database_;
  }

  // The field of `measurement` named `name`, or nullptr.
  const FieldEntry* FindField(std::string_view measurement, std::string_view name) const;
  // The same for the measurement of series `series_id`, through the series'
  // field cache (filled on a miss: hence not const). `position_hint` is where
  // the field likely is in the cache (its position in the point);
  // `fields_hint` how many fields the point has, which an empty cache takes
  // room for.
  const FieldEntry* FindSeriesField(uint32_t series_id, std::string_view name,
                                    size_t position_hint = 0, size_t fields_hint = 0);
  const FieldEntry& field(uint32_t id) const { return fields_[id]; }
  size_t field_count() const { return fields_.size(); }

  // Adds a series (the key must be new and valid) and queues its catalog and
  // index records in *batch. Returns its id.
  uint32_t AddSeries(std::string canonical_key, leveldb::WriteBatch* batch);
  // Adds a field (must be new) and queues its catalog record. Returns its id.
  uint32_t AddField(std::string_view measurement, std::string_view name, FieldType type,
                    leveldb::WriteBatch* batch);

  // Takes a series out of the listings and postings and queues its
  // dropped-series record; Revive undoes it (a write to a dropped series).
  void Drop(uint32_t id, leveldb::WriteBatch* batch);
  // Writes every catalog entry the index holds (series, their index keys,
  // drop marks, fields) again, in batches: after a store write failed part
  // way (the disk filled), so that no id the head uses is missing there.
  Status Rewrite(leveldb::DB* db) const;
  void Revive(uint32_t id, leveldb::WriteBatch* batch);

  // Ids of the series of `measurement` (all measurements when empty) whose
  // tags match every matcher, ascending.
  std::vector<uint32_t> Match(std::string_view measurement,
                              const std::vector<TagMatcher>& matchers) const;

  // Sorts `ids` by their series' canonical keys (bytewise: measurement,
  // then tag by tag). The order of every series is kept, and brought up to
  // date with the series added since (merged in: they are few), so a
  // listing sorts by comparing numbers, not keys: a fleet's 640 series took
  // 370 k instructions to sort by key.
  void SortByKey(std::vector<uint32_t>* ids) const;

  std::vector<std::string> Measurements() const;
  std::vector<std::string> TagKeys(std::string_view measurement) const;
  std::vector<std::string> TagValues(std::string_view measurement, std::string_view key) const;

  // The same among the measurement's series that match every one of
  // `scope` (a query's database), from the postings: a value is kept when
  // its postings meet the scope's, without listing a series. An empty
  // scope is every series.
  std::vector<std::string> TagKeysWithin(std::string_view measurement,
                                         const std::vector<TagMatcher>& scope) const;
  std::vector<std::string> TagValuesWithin(std::string_view measurement, std::string_view key,
                                           const std::vector<TagMatcher>& scope) const;
  // How many of the measurement's series match every one of `scope`.
  size_t CountWithin(std::string_view measurement, const std::vector<TagMatcher>& scope) const;
  std::vector<FieldInfo> Fields(std::string_view measurement) const;

  // The version of a measurement's part of the catalog (Db::CatalogVersion):
  // it changes with every series or field of the measurement added, dropped
  // or revived, to a value no catalog of this process had before (so what
  // was kept of one Db is never taken for another's). A measurement never
  // written has the version of the catalog's last change.
  uint64_t version(std::string_view measurement) const;

 private:
  // A version no catalog of the process has had.
  static uint64_t NewVersion();
  void Changed(std::string_view measurement);

  struct MeasurementPostings {
    uint64_t version = 0;          // see version()
    std::vector<uint32_t> series;  // ascending
    // tag key -> tag value -> series ids, ascending
    std::map<std::string, std::map<std::string, std::vector<uint32_t>>, std::less<>> tags;
    std::map<std::string, uint32_t, std::less<>> fields;  // name -> field id
  };

  void Post(std::string_view measurement, std::string_view key, std::string_view value,
            uint32_t id);
  void InsertField(FieldEntry entry);
  // Removes `id` from the measurement's series and tag postings, dropping
  // tag values and keys left with no series.
  void Unpost(const SeriesEntry& entry);

  // Series ids hashed and compared by their entries' canonical keys, and
  // looked up by a key: the set keeps ids only, where a map from a copy of
  // each key took 110 bytes more a series (11 MB at 100,000 GPUs).
  struct KeyOfId {
    using is_transparent = void;
    const std::vector<SeriesEntry>* series;
    std::string_view operator()(uint32_t id) const { return (*series)[id].canonical_key; }
    std::string_view operator()(std::string_view key) const { return key; }
  };
  struct IdHash : KeyOfId {
    template <typename T>
    size_t operator()(const T& x) const {
      return std::hash<std::string_view>()(KeyOfId::operator()(x));
    }
  };
  struct IdEqual : KeyOfId {
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return KeyOfId::operator()(a) == KeyOfId::operator()(b);
    }
  };

  uint64_t version_ = NewVersion();  // of the last change
  std::vector<SeriesEntry> series_;  // by id
  size_t dropped_ = 0;               // entries with dropped set
  // Ids by canonical key (a series is added to series_ first).
  std::unordered_set<uint32_t, IdHash, IdEqual> series_by_key_{0, IdHash{{&series_}},
                                                               IdEqual{{&series_}}};
  std::vector<FieldEntry> fields_;  // by id
  std::map<std::string, MeasurementPostings, std::less<>> measurements_;
  std::map<std::string, uint64_t, std::less<>> live_by_database_;  // see LiveSeriesIn

  mutable Mutex order_mu_;
  // ids [0, size) in key order
  mutable std::vector<uint32_t> by_key_ GPULSE_GUARDED_BY(order_mu_);
  // rank_[id]: its place in by_key_
  mutable std::vector<uint32_t> rank_ GPULSE_GUARDED_BY(order_mu_);
};

}  // namespace gpulse::engine
