// The read path: chunks from a LevelDB snapshot, then the sealed head, then
// the head, each newer source winning on equal timestamps.

#include <algorithm>
#include <array>
#include <span>

#include "engine/chunk_parts.h"
#include "engine/column_ops.h"
#include "engine/db_impl.h"
#include "storage/chunk_codec.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

std::string SeriesName(const Series& series) {
  std::string name = series.measurement;
  for (const Tag& t : series.tags) {
    name += ',';
    name += t.key;
    name += '=';
    name += t.value;
  }
  return name;
}

Status DbImpl::Read(const ReadRequest& request, std::vector<SeriesColumn>* out) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  if (request.start_ns >= request.end_ns) return Status::Ok();

  // What the head and the sealed head hold is copied under the lock; the
  // store is read from a snapshot taken after it (LazySnapshot), so a flush
  // finishing meanwhile cannot make a point vanish (it is then in both
  // places, which the merge tolerates).
  struct Pending {
    uint32_t series_id;
    Series series;
    Column sealed;
    Column head;
  };
  std::vector<Pending> pending;
  uint32_t field_id = 0;
  FieldType type = FieldType::kFloat;
  uint64_t epoch = 0;
  {
    ReaderLock l(&mu_);
    const FieldEntry* field = index_.FindField(request.measurement, request.field);
    if (!field) {
      return Status::NotFound("measurement " + request.measurement + " has no field " +
                              request.field);
    }
    field_id = field->id;
    type = field->type;
    for (uint32_t id : index_.Match(request.measurement, request.tags)) {
      Pending p{id, index_.series(id).series, {}, {}};
      p.sealed.type = p.head.type = type;
      if (imm_) imm_->CopyRange(id, field_id, request.start_ns, request.end_ns, &p.sealed);
      head_->CopyRange(id, field_id, request.start_ns, request.end_ns, &p.head);
      pending.push_back(std::move(p));
    }
    epoch = window_cache_.epoch();
  }
  LazySnapshot snapshot(store_.get());

  for (Pending& p : pending) {
    SeriesColumn result{std::move(p.series), {}};
    result.column.type = type;
    GPULSE_RETURN_IF_ERROR(ReadChunks(&snapshot, p.series_id, field_id, request.start_ns,
                                      request.end_ns, epoch, &result.column));
    MergeNewer(p.sealed, &result.column);
    MergeNewer(p.head, &result.column);
    if (!result.column.ts.empty()) out->push_back(std::move(result));
  }
  return Status::Ok();
}

uint32_t DbImpl::FindSeriesIdLocked(SeriesRef series) const {
  if (series.series == nullptr) return series.id < index_.series_count() ? series.id : kNoId;
  // The key is built in a buffer each thread keeps: a query reads hundreds
  // of series, and a key of a GPU's tags is past the small-string size.
  thread_local std::string key;
  key = series.series->measurement;
  for (const Tag& t : series.series->tags) storage::AppendSeriesKeyTag(&key, t.key, t.value);
  return index_.FindSeries(key);
}

std::string DbImpl::NoSeries(SeriesRef series) {
  if (series.series == nullptr) return "no series with id " + std::to_string(series.id);
  return "no series " + SeriesName(*series.series);
}

DbImpl::Unflushed DbImpl::UnflushedInLocked(int64_t start_ns, int64_t end_ns) const {
  const auto may_hold = [&](const Head& h) {
    return !h.empty() && h.min_ts() < end_ns && h.max_ts() >= start_ns;
  };
  return {imm_ && may_hold(*imm_), may_hold(*head_)};
}

void DbImpl::SnapshotFieldLocked(uint32_t series_id, const FieldEntry& field, int64_t start_ns,
                                 int64_t end_ns, Unflushed in, SeriesSnapshot::Field* f) const {
  f->id = field.id;
  f->type = f->sealed.type = f->head.type = field.type;
  f->sealed.Clear();
  f->head.Clear();
  if (in.sealed) imm_->CopyRange(series_id, field.id, start_ns, end_ns, &f->sealed);
  if (in.head) head_->CopyRange(series_id, field.id, start_ns, end_ns, &f->head);
}

void DbImpl::SnapshotFieldsLocked(std::span<const std::string> fields, int64_t start_ns,
                                  int64_t end_ns, SeriesSnapshot* out) const {
  const Unflushed in = UnflushedInLocked(start_ns, end_ns);
  const std::string& measurement = index_.series(out->series_id).series.measurement;
  out->fields.resize(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldEntry* field = index_.FindField(measurement, fields[i]);
    if (field) {
      SnapshotFieldLocked(out->series_id, *field, start_ns, end_ns, in, &out->fields[i]);
    } else {
      out->fields[i].id = kNoId;
    }
  }
}

Status DbImpl::TakeSeriesSnapshot(SeriesRef series, std::span<const std::string> fields,
                                  int64_t start_ns, int64_t end_ns, SeriesSnapshot* out) {
  ReaderLock l(&mu_);
  out->series_id = FindSeriesIdLocked(series);
  if (out->series_id == kNoId) return Status::NotFound(NoSeries(series));
  SnapshotFieldsLocked(fields, start_ns, end_ns, out);
  out->epoch = window_cache_.epoch();
  return Status::Ok();
}

Status DbImpl::ReadMerged(const SeriesSnapshot& snap, size_t f, int64_t start, int64_t end,
                          Column* out) {
  const SeriesSnapshot::Field& field = snap.fields[f];
  out->Clear();
  out->type = field.type;
  GPULSE_RETURN_IF_ERROR(
      ReadChunks(snap.store, snap.series_id, field.id, start, end, snap.epoch, out));
  for (const Column* c : {&field.sealed, &field.head}) {
    if (c->ts.empty()) continue;
    if (c->ts.front() >= start && c->ts.back() < end) {
      MergeNewer(*c, out);
    } else {
      Column part;
      part.type = field.type;
      AppendRange(*c, start, end, &part);
      MergeNewer(part, out);
    }
  }
  return Status::Ok();
}

Status DbImpl::ReadSeries(SeriesRef series, std::span<const std::string> fields, int64_t start_ns,
                          int64_t end_ns, std::vector<Column>* out) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  out->assign(fields.size(), Column{});
  if (start_ns >= end_ns) return Status::Ok();
  LazySnapshot store(store_.get());
  SeriesSnapshot snap(&store);
  GPULSE_RETURN_IF_ERROR(TakeSeriesSnapshot(series, fields, start_ns, end_ns, &snap));
  for (size_t i = 0; i < fields.size(); ++i) {
    if (snap.fields[i].id == kNoId) continue;
    GPULSE_RETURN_IF_ERROR(ReadMerged(snap, i, start_ns, end_ns, &(*out)[i]));
  }
  return Status::Ok();
}

// A range of at most this many windows is looked up in the window cache
// first, and answered without touching the store when every window is there.
constexpr size_t kCacheFirstWindows = 16;

bool DbImpl::CachedFirst(int64_t start, int64_t end) const {
  size_t n = 0;
  for (int64_t w = storage::WindowStart(start, window_ns_); w < end;
       w = storage::NextWindowStart(w, window_ns_)) {
    if (++n > kCacheFirstWindows) return false;
  }
  return n > 0;
}

Status DbImpl::ReadChunks(LazySnapshot* snapshot, uint32_t series_id, uint32_t field_id,
                          int64_t start, int64_t end, uint64_t epoch, Column* out) {
  return EmitChunks(snapshot, series_id, field_id, out->type, start, end, epoch,
                    [&](const Column& window) { AppendRange(window, start, end, out); });
}

Status DbImpl::ScanSeries(SeriesRef series, std::span<const std::string> fields, int64_t start_ns,
                          int64_t end_ns, const PointRunVisitor& fn,
                          const PackedRunVisitor* packed) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  if (start_ns >= end_ns) return Status::Ok();
  LazySnapshot store(store_.get());
  SeriesSnapshot snap(&store);
  GPULSE_RETURN_IF_ERROR(TakeSeriesSnapshot(series, fields, start_ns, end_ns, &snap));
  auto forward_packed = [&](size_t f, const storage::PackedRun& run, size_t b, size_t e) {
    (*packed)(f, run, b, e);
  };
  const FieldPackedEmitter emit_packed = forward_packed;
  return ScanSnapshot(snap, start_ns, end_ns, fn, packed != nullptr ? &emit_packed : nullptr,
                      nullptr);
}

Status DbImpl::ScanSeries(std::span<const SeriesId> ids, std::span<const std::string> fields,
                          int64_t start_ns, int64_t end_ns, const SeriesRunVisitor& fn,
                          const SeriesPackedVisitor* packed) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  if (start_ns >= end_ns || ids.empty()) return Status::Ok();
  LazySnapshot store(store_.get());
  std::vector<SeriesSnapshot> snaps;
  GPULSE_RETURN_IF_ERROR(TakeSnapshots(ids, fields, start_ns, end_ns, &store, &snaps));
  // A series whose stored data cannot be read is left from there, as one
  // ScanSeries of it would stop; the others are still read, with a new
  // iterator (a damaged block leaves LevelDB's in error), and the first
  // damage is the call's answer.
  Status damage;
  StoreCursor cursor;  // destroyed before the snapshot it reads is released
  // The first window of each series' fields is looked up in the cache for
  // kLookupSeries series at a time, under one hold of its lock.
  constexpr size_t kLookupSeries = 256;
  const size_t nf = fields.size();
  std::vector<std::shared_ptr<const PackedWindow>> first_cached;
  std::vector<WindowKey> keys;
  std::vector<size_t> key_at;
  std::vector<std::shared_ptr<const PackedWindow>> found;
  for (size_t s = 0; s < snaps.size(); ++s) {
    if (s % kLookupSeries == 0) {
      const size_t n = std::min(kLookupSeries, snaps.size() - s);
      first_cached.assign(n * nf, nullptr);
      keys.clear();
      key_at.clear();
      for (size_t k = 0; k < n; ++k) {
        for (size_t i = 0; i < nf; ++i) {
          const SeriesSnapshot::Field& field = snaps[s + k].fields[i];
          if (field.id == kNoId) continue;
          const int64_t until = StoredUntil(field, start_ns, end_ns);
          if (until == start_ns || !CachedFirst(start_ns, until)) continue;
          keys.push_back(
              {snaps[s + k].series_id, field.id, storage::WindowStart(start_ns, window_ns_)});
          key_at.push_back(k * nf + i);
        }
      }
      found.assign(keys.size(), nullptr);
      window_cache_.Lookup(keys, found.data());
      for (size_t k = 0; k < keys.size(); ++k) first_cached[key_at[k]] = std::move(found[k]);
    }
    const std::span<const std::shared_ptr<const PackedWindow>> cached(
        first_cached.data() + (s % kLookupSeries) * nf, nf);
    auto forward_packed = [&](size_t f, const storage::PackedRun& run, size_t b, size_t e) {
      (*packed)(s, f, run, b, e);
    };
    const FieldPackedEmitter emit_packed = forward_packed;
    const Status st = ScanSnapshot(
        snaps[s], start_ns, end_ns,
        [&](size_t f, const Column& column, size_t b, size_t e) { fn(s, f, column, b, e); },
        packed != nullptr ? &emit_packed : nullptr, &cursor, cached);
    if (st.ok()) continue;
    if (!st.IsCorruption()) return st;
    if (damage.ok()) damage = st;
    cursor.reset();
  }
  return damage;
}

Status DbImpl::TakeSnapshots(std::span<const SeriesId> ids, std::span<const std::string> fields,
                             int64_t start_ns, int64_t end_ns, LazySnapshot* store,
                             std::vector<SeriesSnapshot>* out) {
  // Every series' fields and unflushed points under one hold of the state
  // lock, as one ScanSeries a series would take them (the window cache's
  // epoch read with them).
  out->clear();
  out->reserve(ids.size());
  ReaderLock l(&mu_);
  // Read once, before any of these snapshots' store reads: an epoch older
  // than one read a series only has the cache refuse more of their decodes.
  const uint64_t epoch = window_cache_.epoch();
  for (const SeriesId id : ids) {
    if (id >= index_.series_count()) {
      return Status::InvalidArgument("no series with id " + std::to_string(id));
    }
    SeriesSnapshot& snap = out->emplace_back(store);
    snap.series_id = id;
    SnapshotFieldsLocked(fields, start_ns, end_ns, &snap);
    snap.epoch = epoch;
  }
  return Status::Ok();
}

Status DbImpl::TimeExtent(std::span<const SeriesId> ids, std::span<const std::string> fields,
                          int64_t start_ns, int64_t end_ns, int64_t* first, int64_t* last) {
  *first = INT64_MAX;
  *last = INT64_MIN;
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  if (start_ns >= end_ns || ids.empty()) return Status::Ok();
  LazySnapshot store(store_.get());
  std::vector<SeriesSnapshot> snaps;
  GPULSE_RETURN_IF_ERROR(TakeSnapshots(ids, fields, start_ns, end_ns, &store, &snaps));
  const auto take = [&](int64_t t) {
    *first = std::min(*first, t);
    *last = std::max(*last, t);
  };
  Status damage;
  StoreCursor it;  // destroyed before the snapshot it reads is released
  for (const SeriesSnapshot& snap : snaps) {
    for (const SeriesSnapshot::Field& field : snap.fields) {
      if (field.id == kNoId) continue;
      for (const Column* c : {&field.sealed, &field.head}) {  // sorted, in range
        if (!c->ts.empty()) {
          take(c->ts.front());
          take(c->ts.back());
        }
      }
      if (!it) {
        leveldb::ReadOptions read_options;
        read_options.snapshot = store.get();
        it.reset(store_->NewIterator(read_options));
      }
      it->Seek(storage::ChunkKey(storage::kRawTier, snap.series_id, field.id,
                                 storage::WindowStart(start_ns, window_ns_)));
      for (; it->Valid(); it->Next()) {
        storage::ChunkKeyParts key;
        const leveldb::Slice k = it->key();
        if (!storage::ParseChunkKey(std::string_view(k.data(), k.size()), &key) ||
            key.tier != storage::kRawTier || key.series_id != snap.series_id ||
            key.field_id != field.id || key.window_start >= end_ns) {
          break;
        }
        const std::string_view value(it->value().data(), it->value().size());
        storage::ChunkInfo info;
        Status read = storage::ReadChunkInfo(value, key.window_start, &info);
        if (read.ok() && info.count > 0 && info.max_ts >= start_ns && info.min_ts < end_ns) {
          if (info.min_ts >= start_ns && info.max_ts < end_ns) {
            take(info.min_ts);
            take(info.max_ts);
          } else {  // cut by a bound of the range: its points in it
            Column part;
            read = storage::DecodeChunk(value, key.window_start, &part);
            const auto b = std::lower_bound(part.ts.begin(), part.ts.end(), start_ns);
            const auto e = std::lower_bound(b, part.ts.end(), end_ns);
            if (read.ok() && b < e) {
              take(*b);
              take(*(e - 1));
            }
          }
        }
        if (!read.ok() && damage.ok()) {
          damage = Status::Corruption("chunk of series " + std::to_string(key.series_id) +
                                      " field " + std::to_string(key.field_id) + " window " +
                                      std::to_string(key.window_start) + " part " +
                                      std::to_string(key.part) + ": " + read.message());
        }
      }
      if (!it->status().ok()) return Status::IOError("read chunks: " + it->status().ToString());
    }
  }
  return damage;
}

int64_t DbImpl::StoredUntil(const SeriesSnapshot::Field& field, int64_t start_ns, int64_t end_ns) {
  int64_t fresh = end_ns;
  for (const Column* c : {&field.sealed, &field.head}) {
    if (!c->ts.empty()) fresh = std::min(fresh, c->ts.front());
  }
  return std::max(fresh, start_ns);
}

Status DbImpl::ScanSnapshot(const SeriesSnapshot& snap, int64_t start_ns, int64_t end_ns,
                            FieldRunEmitter fn, const FieldPackedEmitter* packed,
                            StoreCursor* cursor,
                            std::span<const std::shared_ptr<const PackedWindow>> first_cached) {
  for (size_t i = 0; i < snap.fields.size(); ++i) {
    const SeriesSnapshot::Field& field = snap.fields[i];
    if (field.id == kNoId) continue;
    // Before the first unflushed point (the snapshot's sealed and head
    // points are the range's), the stored windows are the answer as they
    // are; from it on, the merge decides.
    const int64_t fresh = StoredUntil(field, start_ns, end_ns);
    if (fresh > start_ns) {
      auto packed_window = [&](const storage::PackedRun& window) {
        const size_t b = window.IndexOf(start_ns);
        const size_t e = std::max(b, window.IndexOf(fresh));
        if (b < e) (*packed)(i, window, b, e);
      };
      const PackedEmitter emit_packed = packed_window;
      GPULSE_RETURN_IF_ERROR(EmitChunks(
          snap.store, snap.series_id, field.id, field.type, start_ns, fresh, snap.epoch,
          [&](const Column& window) {
            const auto b = std::lower_bound(window.ts.begin(), window.ts.end(), start_ns);
            const auto e = std::lower_bound(b, window.ts.end(), fresh);
            if (b < e) {
              fn(i, window, static_cast<size_t>(b - window.ts.begin()),
                 static_cast<size_t>(e - window.ts.begin()));
            }
          },
          packed != nullptr ? &emit_packed : nullptr, cursor,
          !first_cached.empty() && CachedFirst(start_ns, fresh) ? &first_cached[i] : nullptr));
    }
    if (fresh < end_ns) {
      Column rest;
      GPULSE_RETURN_IF_ERROR(ReadMerged(snap, i, fresh, end_ns, &rest));
      if (!rest.ts.empty()) fn(i, rest, 0, rest.ts.size());
    }
  }
  return Status::Ok();
}

namespace {

// The column a cached window unpacks into: one per thread, reused, so that
// the unpacked window stays in the CPU's caches for the fold that reads it;
// a call made while the thread's one is in use (an emitter that reads the
// Db again) gets its own.
class ScratchColumn {
 public:
  ScratchColumn() : column_(depth_++ == 0 ? &shared_ : &own_) {}
  ~ScratchColumn() { --depth_; }
  ScratchColumn(const ScratchColumn&) = delete;
  ScratchColumn& operator=(const ScratchColumn&) = delete;
  Column* get() { return column_; }

 private:
  static thread_local Column shared_;
  static thread_local int depth_;
  Column own_;
  Column* column_;
};
thread_local Column ScratchColumn::shared_;
thread_local int ScratchColumn::depth_ = 0;

}  // namespace

Status DbImpl::EmitChunks(LazySnapshot* snapshot, uint32_t series_id, uint32_t field_id,
                          FieldType type, int64_t start, int64_t end, uint64_t epoch,
                          WindowEmitter emit, const PackedEmitter* emit_packed, StoreCursor* cursor,
                          const std::shared_ptr<const PackedWindow>* first_cached) {
  // A cached window, packed when it can go so, else as a column.
  storage::PackedRun run;
  auto emit_cached = [&](const PackedWindow& window, Column* scratch) {
    if (emit_packed != nullptr && window.Packed(&run)) {
      (*emit_packed)(run);
    } else {
      emit(window.View(scratch, start, end));
    }
  };
  // The windows of the range, when they are few. A cache entry is a window
  // as the store held it after the latest flush that wrote it (an empty
  // column: the window has no chunk), so when all are cached the store's
  // iterator (a seek loads the data block that holds the chunks) is not
  // needed. Entries from before a flush are refused (WindowCache::Insert).
  // In arrays on the stack: this runs for every series a query reads.
  std::array<int64_t, kCacheFirstWindows> window_starts;
  size_t nwindows = 0;
  for (int64_t w = storage::WindowStart(start, window_ns_); w < end;
       w = storage::NextWindowStart(w, window_ns_)) {
    if (nwindows == kCacheFirstWindows) {
      nwindows = 0;
      break;
    }
    window_starts[nwindows++] = w;
  }
  const std::span<const int64_t> windows(window_starts.data(), nwindows);
  // The store is read from the first window not cached; that one is not
  // looked up again there (the cache counts lookups to choose what it
  // keeps: one read, one lookup).
  int64_t from = storage::WindowStart(start, window_ns_);
  int64_t missed = INT64_MIN;
  size_t next_window = 0;  // windows[next_window..] not seen in the store yet
  if (!windows.empty()) {
    std::array<std::shared_ptr<const PackedWindow>, kCacheFirstWindows> hits;
    size_t nhits = 0;
    for (int64_t w : windows) {
      auto cached = nhits == 0 && first_cached != nullptr
                        ? *first_cached
                        : window_cache_.Lookup(WindowKey{series_id, field_id, w});
      if (!cached) break;
      hits[nhits++] = std::move(cached);
    }
    ScratchColumn scratch;
    for (size_t h = 0; h < nhits; ++h) emit_cached(*hits[h], scratch.get());
    if (nhits == windows.size()) return Status::Ok();
    from = missed = windows[nhits];
    next_window = nhits;
  }
  // Remembers windows the store has no chunk of, up to `upto`.
  auto note_absent = [&](int64_t upto) {
    while (next_window < windows.size() && windows[next_window] < upto) {
      Column none;
      none.type = type;
      window_cache_.Insert(WindowKey{series_id, field_id, windows[next_window]}, std::move(none),
                           epoch);
      ++next_window;
    }
  };

  StoreCursor own;
  StoreCursor& it = cursor != nullptr ? *cursor : own;
  if (!it) {
    leveldb::ReadOptions read_options;
    read_options.snapshot = snapshot != nullptr ? snapshot->get() : nullptr;
    it.reset(store_->NewIterator(read_options));
  }
  const std::string first = storage::ChunkKey(storage::kRawTier, series_id, field_id, from);
  Column window;
  window.type = type;
  it->Seek(first);
  while (it->Valid()) {
    storage::ChunkKeyParts parts;
    const leveldb::Slice key = it->key();
    if (!storage::ParseChunkKey(std::string_view(key.data(), key.size()), &parts) ||
        parts.tier != storage::kRawTier || parts.series_id != series_id ||
        parts.field_id != field_id || parts.window_start >= end) {
      break;
    }
    note_absent(parts.window_start);
    if (next_window < windows.size() && windows[next_window] == parts.window_start) ++next_window;
    const WindowKey cache_key{series_id, field_id, parts.window_start};
    if (auto cached = parts.window_start == missed ? nullptr : window_cache_.Lookup(cache_key)) {
      ScratchColumn scratch;
      emit_cached(*cached, scratch.get());
      // Step over the window's parts without reading them.
      const storage::ChunkKeyParts window_parts = parts;
      while (it->Valid()) {
        const leveldb::Slice k = it->key();
        if (!storage::ParseChunkKey(std::string_view(k.data(), k.size()), &parts) ||
            !parts.SameWindow(window_parts)) {
          break;
        }
        it->Next();
      }
      continue;
    }
    // Reads every part of this window, merged; leaves `it` at the next window.
    const Status read = ReadWindowParts(it.get(), parts, &window);
    if (read.IsCorruption()) LogDamage(read, cache_key);
    GPULSE_RETURN_IF_ERROR(read);
    emit(window);
    window_cache_.Insert(cache_key, window, epoch);
  }
  if (!it->status().ok()) return Status::IOError("read chunks: " + it->status().ToString());
  note_absent(INT64_MAX);
  return Status::Ok();
}

void DbImpl::LogDamage(const Status& why, const WindowKey& window) {
  {
    MutexLock l(&damage_mu_);
    // Once per window, and at most a few thousand windows: a damaged table
    // read by every dashboard refresh must not flood the log.
    if (logged_damage_.size() >= 4096 ||
        !logged_damage_
             .insert({window.tier, window.series_id, window.field_id, window.window_start})
             .second) {
      return;
    }
  }
  const std::string from =
      storage::ChunkKey(window.tier, window.series_id, window.field_id, window.window_start);
  const std::string to = storage::ChunkKey(window.tier, window.series_id, window.field_id,
                                           window.window_start, UINT16_MAX);
  Log("damaged stored data, left out of answers: " + why.message() + " (store keys " +
      storage::KeyHex(from) + " .. " + storage::KeyHex(to) +
      "); `gpulse verify` lists the damaged parts and can drop them");
}

Status DbImpl::ListMeasurements(std::vector<std::string>* out) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  ReaderLock l(&mu_);
  *out = index_.Measurements();
  return Status::Ok();
}

Status DbImpl::ListSeries(std::string_view measurement, const std::vector<TagMatcher>& tags,
                          std::vector<Series>* out, std::vector<SeriesId>* ids_out) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  ReaderLock l(&mu_);
  std::vector<uint32_t> ids = index_.Match(measurement, tags);
  // Key order: the canonical key separates names by a zero byte, so
  // comparing keys compares measurement, then tags in turn.
  index_.SortByKey(&ids);
  out->reserve(out->size() + ids.size());
  for (uint32_t id : ids) out->push_back(index_.series(id).series);
  if (ids_out) ids_out->insert(ids_out->end(), ids.begin(), ids.end());
  return Status::Ok();
}

Status DbImpl::ListTagKeys(std::string_view measurement, const std::vector<TagMatcher>& scope,
                           std::vector<std::string>* out) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  ReaderLock l(&mu_);
  *out = index_.TagKeysWithin(measurement, scope);
  return Status::Ok();
}

Status DbImpl::ListTagValues(std::string_view measurement, std::string_view key,
                             const std::vector<TagMatcher>& scope, std::vector<std::string>* out) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  ReaderLock l(&mu_);
  *out = index_.TagValuesWithin(measurement, key, scope);
  return Status::Ok();
}

Status DbImpl::CountSeries(std::string_view measurement, const std::vector<TagMatcher>& scope,
                           uint64_t* count) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  ReaderLock l(&mu_);
  *count = index_.CountWithin(measurement, scope);
  return Status::Ok();
}

Status DbImpl::CatalogVersion(std::string_view measurement, uint64_t* version) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  ReaderLock l(&mu_);
  *version = index_.version(measurement);
  return Status::Ok();
}

Status DbImpl::ListFields(std::string_view measurement, std::vector<FieldInfo>* out) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  ReaderLock l(&mu_);
  *out = index_.Fields(measurement);
  return Status::Ok();
}

}  // namespace gpulse::engine
