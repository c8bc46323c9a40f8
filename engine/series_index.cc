#include "engine/series_index.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <memory>

#include "engine/store_status.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

namespace {

// Appends `id` to an ascending list, keeping it ascending (ids arrive in
// ascending order on write; Load may see them in key order).
void InsertSorted(std::vector<uint32_t>* ids, uint32_t id) {
  if (ids->empty() || ids->back() < id) {
    ids->push_back(id);
  } else if (!std::binary_search(ids->begin(), ids->end(), id)) {
    ids->insert(std::lower_bound(ids->begin(), ids->end(), id), id);
  }
}

std::vector<uint32_t> Intersect(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

Series ToSeries(const std::string& measurement,
                std::vector<std::pair<std::string, std::string>> tags) {
  Series series{measurement, {}};
  series.tags.reserve(tags.size());
  for (auto& [k, v] : tags) series.tags.push_back(Tag{std::move(k), std::move(v)});
  return series;
}

}  // namespace

// The value of the db tag in a canonical series key (measurement, then
// \0 key \0 value per tag), empty when it has none. Only key positions are
// compared: a tag whose value is "db" is not the db tag.
std::string_view DatabaseOfSeriesKey(std::string_view series_key) {
  size_t at = series_key.find('\0');  // past the measurement
  while (at != std::string_view::npos) {
    const size_t key_end = series_key.find('\0', at + 1);
    if (key_end == std::string_view::npos) return {};
    const std::string_view key = series_key.substr(at + 1, key_end - at - 1);
    const size_t value_end = series_key.find('\0', key_end + 1);
    const std::string_view value = series_key.substr(
        key_end + 1,
        (value_end == std::string_view::npos ? series_key.size() : value_end) - key_end - 1);
    if (key == "db") return value;
    if (key > "db") return {};  // tags are in key order
    at = value_end;
  }
  return {};
}

Status SeriesIndex::Load(leveldb::DB* db) {
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(std::string(1, storage::kSeriesPrefix));
       it->Valid() && it->key()[0] == storage::kSeriesPrefix; it->Next()) {
    std::string measurement;
    std::vector<std::pair<std::string, std::string>> tags;
    const leveldb::Slice key = it->key();
    const std::string canonical = it->value().ToString();
    if (key.size() != 5 || !storage::ParseCanonicalSeriesKey(canonical, &measurement, &tags)) {
      return Status::Corruption("series catalog: unreadable entry");
    }
    const uint32_t id = storage::GetU32BE(key.data() + 1);
    if (id != series_.size()) {
      return Status::Corruption("series catalog: ids not dense at " + std::to_string(id));
    }
    series_.push_back(SeriesEntry{id, canonical, ToSeries(measurement, std::move(tags))});
    series_by_key_.insert(id);
    InsertSorted(&measurements_[measurement].series, id);
  }
  for (it->Seek(std::string(1, storage::kFieldPrefix));
       it->Valid() && it->key()[0] == storage::kFieldPrefix; it->Next()) {
    FieldEntry entry;
    uint8_t type = 0;
    const leveldb::Slice key = it->key();
    if (key.size() != 5 ||
        !storage::ParseFieldValueBytes(it->value().ToString(), &type, &entry.measurement,
                                       &entry.name) ||
        !storage::IsValidFieldType(type)) {
      return Status::Corruption("field catalog: unreadable entry");
    }
    entry.id = storage::GetU32BE(key.data() + 1);
    entry.type = static_cast<FieldType>(type);
    if (entry.id != fields_.size()) {
      return Status::Corruption("field catalog: ids not dense at " + std::to_string(entry.id));
    }
    InsertField(std::move(entry));
  }
  for (it->Seek(std::string(1, storage::kDroppedPrefix));
       it->Valid() && it->key()[0] == storage::kDroppedPrefix; it->Next()) {
    const leveldb::Slice key = it->key();
    if (key.size() != 5 || storage::GetU32BE(key.data() + 1) >= series_.size()) {
      return Status::Corruption("dropped series: unreadable entry");
    }
    SeriesEntry& entry = series_[storage::GetU32BE(key.data() + 1)];
    if (!entry.dropped) {
      entry.dropped = true;
      ++dropped_;
      std::erase(measurements_[entry.series.measurement].series, entry.id);
    }
  }
  for (const SeriesEntry& entry : series_) {
    if (!entry.dropped) ++live_by_database_[std::string(DatabaseOfSeriesKey(entry.canonical_key))];
  }
  // The tag postings come from the durable inverted index (a dropped
  // series keeps its keys, for when it is written again).
  for (it->Seek(std::string(1, storage::kIndexPrefix));
       it->Valid() && it->key()[0] == storage::kIndexPrefix; it->Next()) {
    storage::IndexKeyParts parts;
    if (!storage::ParseIndexKey(std::string_view(it->key().data(), it->key().size()), &parts) ||
        parts.series_id >= series_.size()) {
      return Status::Corruption("inverted index: unreadable entry");
    }
    if (series_[parts.series_id].dropped) continue;
    Post(parts.measurement, parts.tag_key, parts.tag_value, parts.series_id);
  }
  if (!it->status().ok()) return Status::Corruption("catalog scan: " + it->status().ToString());
  // One new version for the whole catalog as loaded: no other Db of the
  // process, nor this directory's last opening, had it.
  version_ = NewVersion();
  for (auto& [name, postings] : measurements_) postings.version = version_;
  return Status::Ok();
}

uint32_t SeriesIndex::FindSeries(std::string_view canonical_key) const {
  const auto it = series_by_key_.find(canonical_key);
  return it == series_by_key_.end() ? kNoId : *it;
}

const FieldEntry* SeriesIndex::FindField(std::string_view measurement,
                                         std::string_view name) const {
  const auto m = measurements_.find(measurement);
  if (m == measurements_.end()) return nullptr;
  const auto f = m->second.fields.find(name);
  return f == m->second.fields.end() ? nullptr : &fields_[f->second];
}

const FieldEntry* SeriesIndex::FindSeriesField(uint32_t series_id, std::string_view name,
                                               size_t position_hint, size_t fields_hint) {
  SeriesEntry& entry = series_[series_id];
  if (position_hint < entry.fields.size() && fields_[entry.fields[position_hint]].name == name) {
    return &fields_[entry.fields[position_hint]];
  }
  // A series of a few fields scans its cache; a wide one (a point of
  // 100,000 fields) goes to the measurement's hash of fields instead, and
  // caches a field only at its position, so the cache stays positional.
  constexpr size_t kScanUpTo = 64;
  const bool wide = entry.fields.size() > kScanUpTo;
  if (!wide) {
    for (const uint32_t id : entry.fields) {
      if (fields_[id].name == name) return &fields_[id];
    }
  }
  const FieldEntry* field = FindField(entry.series.measurement, name);
  if (field && (!wide || position_hint == entry.fields.size())) {
    if (entry.fields.empty()) entry.fields.reserve(std::min(fields_hint, kScanUpTo));
    entry.fields.push_back(field->id);
  }
  return field;
}

uint64_t SeriesIndex::NewVersion() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

void SeriesIndex::Changed(std::string_view measurement) {
  version_ = NewVersion();
  auto it = measurements_.find(measurement);
  if (it == measurements_.end())
    it = measurements_.emplace(std::string(measurement), MeasurementPostings()).first;
  it->second.version = version_;
}

uint64_t SeriesIndex::version(std::string_view measurement) const {
  const auto it = measurements_.find(measurement);
  return it == measurements_.end() ? version_ : it->second.version;
}

uint32_t SeriesIndex::AddSeries(std::string canonical_key, leveldb::WriteBatch* batch) {
  const uint32_t id = static_cast<uint32_t>(series_.size());
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> tags;
  storage::ParseCanonicalSeriesKey(canonical_key, &measurement, &tags);
  Changed(measurement);
  batch->Put(storage::SeriesKey(id), canonical_key);
  for (const auto& [k, v] : tags) {
    batch->Put(storage::IndexKey(measurement, k, v, id), leveldb::Slice());
    Post(measurement, k, v, id);
  }
  InsertSorted(&measurements_[measurement].series, id);
  ++live_by_database_[std::string(DatabaseOfSeriesKey(canonical_key))];
  series_.push_back(
      SeriesEntry{id, std::move(canonical_key), ToSeries(measurement, std::move(tags))});
  series_by_key_.insert(id);
  return id;
}

uint64_t SeriesIndex::LiveSeriesIn(std::string_view database) const {
  const auto it = live_by_database_.find(database);
  return it == live_by_database_.end() ? 0 : it->second;
}

void SeriesIndex::Drop(uint32_t id, leveldb::WriteBatch* batch) {
  SeriesEntry& entry = series_[id];
  batch->Put(storage::DroppedSeriesKey(id), leveldb::Slice());
  if (entry.dropped) return;
  Changed(entry.series.measurement);
  entry.dropped = true;
  entry.max_ts = INT64_MIN;
  ++dropped_;
  --live_by_database_[std::string(DatabaseOfSeriesKey(entry.canonical_key))];
  Unpost(entry);
}

void SeriesIndex::Revive(uint32_t id, leveldb::WriteBatch* batch) {
  SeriesEntry& entry = series_[id];
  if (!entry.dropped) return;
  Changed(entry.series.measurement);
  batch->Delete(storage::DroppedSeriesKey(id));
  entry.dropped = false;
  --dropped_;
  ++live_by_database_[std::string(DatabaseOfSeriesKey(entry.canonical_key))];
  InsertSorted(&measurements_[entry.series.measurement].series, id);
  for (const Tag& t : entry.series.tags) Post(entry.series.measurement, t.key, t.value, id);
}

void SeriesIndex::Unpost(const SeriesEntry& entry) {
  const auto m = measurements_.find(entry.series.measurement);
  if (m == measurements_.end()) return;
  std::erase(m->second.series, entry.id);
  for (const Tag& t : entry.series.tags) {
    const auto key = m->second.tags.find(t.key);
    if (key == m->second.tags.end()) continue;
    const auto value = key->second.find(t.value);
    if (value == key->second.end()) continue;
    std::erase(value->second, entry.id);
    if (value->second.empty()) key->second.erase(value);
    if (key->second.empty()) m->second.tags.erase(key);
  }
}

Status SeriesIndex::Rewrite(leveldb::DB* db) const {
  leveldb::WriteBatch batch;
  const auto write = [&](bool last) -> Status {
    if (!last && batch.ApproximateSize() < (8 << 20)) return Status::Ok();
    leveldb::WriteOptions sync;
    sync.sync = last;
    const leveldb::Status s = db->Write(sync, &batch);
    batch.Clear();
    return StoreStatus("rewrite catalog", s);
  };
  for (const SeriesEntry& entry : series_) {
    batch.Put(storage::SeriesKey(entry.id), entry.canonical_key);
    for (const Tag& t : entry.series.tags) {
      batch.Put(storage::IndexKey(entry.series.measurement, t.key, t.value, entry.id),
                leveldb::Slice());
    }
    if (entry.dropped) batch.Put(storage::DroppedSeriesKey(entry.id), leveldb::Slice());
    GPULSE_RETURN_IF_ERROR(write(false));
  }
  for (const FieldEntry& f : fields_) {
    batch.Put(storage::FieldKey(f.id),
              storage::FieldValueBytes(static_cast<uint8_t>(f.type), f.measurement, f.name));
    GPULSE_RETURN_IF_ERROR(write(false));
  }
  return write(true);
}

uint32_t SeriesIndex::AddField(std::string_view measurement, std::string_view name, FieldType type,
                               leveldb::WriteBatch* batch) {
  const uint32_t id = static_cast<uint32_t>(fields_.size());
  Changed(measurement);
  batch->Put(storage::FieldKey(id),
             storage::FieldValueBytes(static_cast<uint8_t>(type), measurement, name));
  InsertField(FieldEntry{id, type, std::string(measurement), std::string(name)});
  return id;
}

void SeriesIndex::Post(std::string_view measurement, std::string_view key, std::string_view value,
                       uint32_t id) {
  auto& values = measurements_[std::string(measurement)].tags[std::string(key)];
  InsertSorted(&values[std::string(value)], id);
}

void SeriesIndex::InsertField(FieldEntry entry) {
  measurements_[entry.measurement].fields.emplace(entry.name, entry.id);
  fields_.push_back(std::move(entry));
}

void SeriesIndex::SortByKey(std::vector<uint32_t>* ids) const {
  MutexLock l(&order_mu_);
  if (by_key_.size() < series_.size()) {
    const auto by_key = [&](uint32_t a, uint32_t b) {
      return series_[a].canonical_key < series_[b].canonical_key;
    };
    std::vector<uint32_t> added(series_.size() - by_key_.size());
    for (size_t i = 0; i < added.size(); ++i) added[i] = static_cast<uint32_t>(by_key_.size() + i);
    std::sort(added.begin(), added.end(), by_key);
    std::vector<uint32_t> merged;
    merged.reserve(series_.size());
    std::merge(by_key_.begin(), by_key_.end(), added.begin(), added.end(),
               std::back_inserter(merged), by_key);
    by_key_.swap(merged);
    rank_.resize(by_key_.size());
    for (size_t i = 0; i < by_key_.size(); ++i) rank_[by_key_[i]] = static_cast<uint32_t>(i);
  }
  // The comparator runs under the lock, but the analysis sees it apart.
  const uint32_t* rank = rank_.data();
  std::sort(ids->begin(), ids->end(), [&](uint32_t a, uint32_t b) { return rank[a] < rank[b]; });
}

std::vector<uint32_t> SeriesIndex::Match(std::string_view measurement,
                                         const std::vector<TagMatcher>& matchers) const {
  std::vector<uint32_t> out;
  std::vector<const std::vector<uint32_t>*> lists;
  for (const auto& [name, postings] : measurements_) {
    if (!measurement.empty() && name != measurement) continue;
    if (matchers.empty()) {
      out.insert(out.end(), postings.series.begin(), postings.series.end());
      continue;
    }
    // Each matcher's postings (a dropped series is in none), intersected
    // from the shortest: one node's 8 series out of a fleet's, without a
    // copy of the measurement's every id.
    lists.clear();
    for (const TagMatcher& m : matchers) {
      const auto key = postings.tags.find(m.key);
      if (key == postings.tags.end()) break;
      const auto value = key->second.find(m.value);
      if (value == key->second.end()) break;
      lists.push_back(&value->second);
    }
    if (lists.size() < matchers.size()) continue;  // a matcher has no series
    std::sort(lists.begin(), lists.end(),
              [](const auto* x, const auto* y) { return x->size() < y->size(); });
    std::vector<uint32_t> ids = *lists[0];
    for (size_t i = 1; i < lists.size() && !ids.empty(); ++i) ids = Intersect(ids, *lists[i]);
    out.insert(out.end(), ids.begin(), ids.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> SeriesIndex::Measurements() const {
  std::vector<std::string> out;
  for (const auto& [name, postings] : measurements_) {
    // A measurement whose series were all dropped is gone.
    if (!postings.series.empty()) out.push_back(name);
  }
  return out;
}

namespace {

// Whether sorted id lists a and b share an id: each id of the shorter
// looked up in the longer (a tag value's few series against a database's
// many).
bool Meet(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  const auto& small = a.size() <= b.size() ? a : b;
  const auto& large = a.size() <= b.size() ? b : a;
  auto from = large.begin();
  for (uint32_t id : small) {
    from = std::lower_bound(from, large.end(), id);
    if (from == large.end()) return false;
    if (*from == id) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> SeriesIndex::TagKeysWithin(std::string_view measurement,
                                                    const std::vector<TagMatcher>& scope) const {
  if (scope.empty()) return TagKeys(measurement);
  const auto m = measurements_.find(measurement);
  if (m == measurements_.end()) return {};
  const std::vector<uint32_t> in = Match(measurement, scope);
  const bool all = in.size() == m->second.series.size();
  std::vector<std::string> out;
  for (const auto& [key, values] : m->second.tags) {
    for (const auto& [value, ids] : values) {
      if (all || Meet(ids, in)) {
        out.push_back(key);
        break;
      }
    }
  }
  return out;
}

std::vector<std::string> SeriesIndex::TagValuesWithin(std::string_view measurement,
                                                      std::string_view key,
                                                      const std::vector<TagMatcher>& scope) const {
  if (scope.empty()) return TagValues(measurement, key);
  const auto m = measurements_.find(measurement);
  if (m == measurements_.end()) return {};
  const auto k = m->second.tags.find(key);
  if (k == m->second.tags.end()) return {};
  const std::vector<uint32_t> in = Match(measurement, scope);
  const bool all = in.size() == m->second.series.size();
  std::vector<std::string> out;
  for (const auto& [value, ids] : k->second) {
    if (all || Meet(ids, in)) out.push_back(value);
  }
  return out;
}

size_t SeriesIndex::CountWithin(std::string_view measurement,
                                const std::vector<TagMatcher>& scope) const {
  const auto m = measurements_.find(measurement);
  if (m == measurements_.end()) return 0;
  return scope.empty() ? m->second.series.size() : Match(measurement, scope).size();
}

std::vector<std::string> SeriesIndex::TagKeys(std::string_view measurement) const {
  std::vector<std::string> out;
  const auto m = measurements_.find(measurement);
  if (m == measurements_.end()) return out;
  for (const auto& [key, values] : m->second.tags) out.push_back(key);
  return out;
}

std::vector<std::string> SeriesIndex::TagValues(std::string_view measurement,
                                                std::string_view key) const {
  std::vector<std::string> out;
  const auto m = measurements_.find(measurement);
  if (m == measurements_.end()) return out;
  const auto k = m->second.tags.find(key);
  if (k == m->second.tags.end()) return out;
  for (const auto& [value, ids] : k->second) out.push_back(value);
  return out;
}

std::vector<FieldInfo> SeriesIndex::Fields(std::string_view measurement) const {
  std::vector<FieldInfo> out;
  const auto m = measurements_.find(measurement);
  if (m == measurements_.end()) return out;
  for (const auto& [name, id] : m->second.fields) out.push_back(FieldInfo{name, fields_[id].type});
  return out;
}

}  // namespace gpulse::engine
