// The write path: validate, resolve against the catalog, log, apply.

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "engine/column_ops.h"
#include "engine/db_impl.h"
#include "engine/store_status.h"
#include "leveldb/write_batch.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

namespace {

bool ValidName(std::string_view name) {
  return !name.empty() && name.find('\0') == std::string_view::npos;
}

// Checks what can be checked of a point without the catalog, and appends its
// canonical series key to *key. Returns an empty string when it is valid,
// else why not.
// A field key that appears twice in `fields`, or "". Pairwise for the few
// fields of a usual point; sorted for a wide one, so that a line of 100,000
// fields costs n log n, not n^2 (it took 30 s).
std::string RepeatedFieldKey(std::span<const FieldRef> fields) {
  constexpr size_t kPairwiseUpTo = 32;
  if (fields.size() <= kPairwiseUpTo) {
    for (size_t i = 1; i < fields.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (fields[j].key == fields[i].key) return std::string(fields[i].key);
      }
    }
    return std::string();
  }
  thread_local std::vector<std::string_view> keys;
  keys.clear();
  for (const FieldRef& f : fields) keys.push_back(f.key);
  std::sort(keys.begin(), keys.end());
  const auto twice = std::adjacent_find(keys.begin(), keys.end());
  return twice == keys.end() ? std::string() : std::string(*twice);
}

// Why `p` is past one of `limits`, or "": the bound, its setting and what
// the point has (measured before anything of the point is looked at).
std::string CheckLimits(const PointRef& p, const Options::PointLimits& limits) {
  const auto past = [](const std::string& what, size_t has, const char* unit, size_t most,
                       const char* setting) {
    return what + " has " + std::to_string(has) + " " + unit + "; at most " + std::to_string(most) +
           " (limit " + setting + ")";
  };
  if (p.fields.size() > limits.max_fields) {
    return past("the point", p.fields.size(), "fields", limits.max_fields, "max_fields");
  }
  if (p.tags.size() > limits.max_tags) {
    return past("the point", p.tags.size(), "tags", limits.max_tags, "max_tags");
  }
  if (p.measurement.size() > limits.max_name_bytes) {
    return past("the measurement name", p.measurement.size(), "bytes", limits.max_name_bytes,
                "max_name_bytes");
  }
  for (const TagRef& t : p.tags) {
    if (t.key.size() > limits.max_name_bytes) {
      return past("a tag key", t.key.size(), "bytes", limits.max_name_bytes, "max_name_bytes");
    }
    if (t.value.size() > limits.max_tag_value_bytes) {
      return past("the value of tag " + std::string(t.key), t.value.size(), "bytes",
                  limits.max_tag_value_bytes, "max_tag_value_bytes");
    }
  }
  for (const FieldRef& f : p.fields) {
    if (f.key.size() > limits.max_name_bytes) {
      return past("a field key", f.key.size(), "bytes", limits.max_name_bytes, "max_name_bytes");
    }
  }
  return std::string();
}

std::string CheckPoint(const PointRef& p, std::string* key) {
  if (!ValidName(p.measurement)) return "measurement must be non-empty and free of NUL bytes";
  if (p.fields.empty()) return "point has no fields";
  if (p.timestamp_ns > kMaxTimestampNs) {
    return "timestamp " + std::to_string(p.timestamp_ns) +
           " is past the latest time gpulse keeps (" + std::to_string(kMaxTimestampNs) + " ns)";
  }
  // Agents send tags sorted (line protocol recommends it); sort only when not.
  thread_local std::vector<const TagRef*> tags;
  tags.clear();
  bool sorted = true;
  for (const TagRef& t : p.tags) {
    if (!ValidName(t.key)) return "tag keys must be non-empty and free of NUL bytes";
    if (!ValidName(t.value)) {
      return "tag " + std::string(t.key) + " has an empty value or a NUL byte";
    }
    if (t.key == "time") return "'time' is not a valid tag key";
    if (!tags.empty() && !(tags.back()->key < t.key)) sorted = false;
    tags.push_back(&t);
  }
  if (!sorted) {
    std::sort(tags.begin(), tags.end(),
              [](const TagRef* a, const TagRef* b) { return a->key < b->key; });
    for (size_t i = 1; i < tags.size(); ++i) {
      if (tags[i]->key == tags[i - 1]->key) {
        return "tag key " + std::string(tags[i]->key) + " appears twice";
      }
    }
  }
  for (const FieldRef& f : p.fields) {
    if (!ValidName(f.key)) return "field keys must be non-empty and free of NUL bytes";
    if (f.key == "time") return "'time' is not a valid field key";
  }
  if (std::string twice = RepeatedFieldKey(p.fields); !twice.empty()) {
    return "field key " + twice + " appears twice";
  }
  key->append(p.measurement);
  for (const TagRef* t : tags) {
    storage::AppendSeriesKeyTag(key, t->key, t->value);
  }
  return std::string();
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? INT64_MAX : out;
}

int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_sub_overflow(a, b, &out) ? INT64_MIN : out;
}

std::string_view MeasurementOf(std::string_view series_key) {
  return series_key.substr(0, series_key.find('\0'));
}

}  // namespace

bool DbImpl::RoomLocked() const {
  return !imm_pending_ || head_bytes_ < head_budget_ || shutting_down_ || !bg_error_.ok() ||
         store_full_;
}

Status DbImpl::WaitForRoom() {
  MutexLock l(&bg_mu_);
  // A full disk does not hold writers here: their WAL appends fail (or
  // succeed) at once, and the flusher's recovery needs the Db to itself.
  if (options_.wait_when_full) {
    while (!RoomLocked()) bg_cv_.Wait(&bg_mu_);
  } else if (!RoomLocked()) {
    ++writes_refused_full_;
    return Status::ResourceExhausted("the head is full (" + std::to_string(head_bytes_) +
                                     " bytes) and the previous flush is still running; retry");
  }
  return Status::Ok();
}

void DbImpl::MaybeScheduleFlush() {
  bool full = head_bytes_ >= head_budget_;
  // The WAL keeps every unflushed point, at about 23 bytes a value on the
  // fleet load where the head takes 1 to 4: bound it as well, so a restart
  // replays at most wal_budget_ (about 8 s for 1 GiB at the 130 MB/s
  // replay measured).
  if (!full) full = wal_->total_bytes() >= wal_budget_;
  if (!full) {
    ReaderLock l(&mu_);
    // A head that spans more than a chunk window holds a closed window:
    // flush it so chunks are written whole and the WAL stays short.
    full = !head_->empty() && head_->bytes() >= (1u << 20) &&
           head_->max_ts() >= SaturatingAdd(head_->min_ts(), window_ns_);
  }
  if (!full) return;
  {
    MutexLock l(&bg_mu_);
    if (imm_pending_ || flush_requested_) return;
    flush_requested_ = true;
  }
  bg_cv_.SignalAll();
}

// The slices of the accepted points, for Db::DataVersion (a batch's points
// mostly share measurement and slice: runs of them are noted once).
void DbImpl::TouchSlices(std::span<const PointRef> points, const std::vector<size_t>& view_index,
                         const std::vector<PointView>& views, const std::vector<size_t>& accepted) {
  // A batch mixes a few measurements (gpu, node, ...) in a few slices: past
  // kFewPairs (a backfill over months), pairs are deduplicated by sorting
  // instead of looked up one by one (quadratic: 66,000 hours took 8 s).
  constexpr size_t kFewPairs = 64;
  thread_local std::vector<std::pair<std::string_view, int64_t>> touched;
  touched.clear();
  size_t last = 0;  // the pair the previous point matched
  bool many = false;
  for (size_t i : accepted) {
    const std::pair<std::string_view, int64_t> pair{points[view_index[i]].measurement,
                                                    DataVersions::SliceOf(views[i].timestamp_ns)};
    if (!touched.empty() && touched[last] == pair) continue;
    if (many) {
      last = touched.size();
      touched.push_back(pair);
      continue;
    }
    const auto seen = std::find(touched.begin(), touched.end(), pair);
    last = static_cast<size_t>(seen - touched.begin());
    if (seen == touched.end()) touched.push_back(pair);
    many = touched.size() > kFewPairs;
  }
  if (many) {
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  }
  versions_.Touch(touched);
}

Status DbImpl::Write(std::span<const PointRef> points, WriteResult* result) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  GPULSE_RETURN_IF_ERROR(WaitForRoom());
  WriteResult local;
  WriteResult* out = result ? result : &local;
  *out = WriteResult();

  // Canonical keys go into one buffer; views point into it once it is full.
  std::string keys;
  std::vector<size_t> key_ends;
  std::vector<size_t> view_index;  // views[i] is points[view_index[i]]
  key_ends.reserve(points.size());
  view_index.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const size_t start = keys.size();
    std::string why = CheckLimits(points[i], options_.point_limits);
    if (why.empty()) why = CheckPoint(points[i], &keys);
    if (!why.empty()) {
      keys.resize(start);
      out->rejected.push_back({i, std::move(why)});
      continue;
    }
    key_ends.push_back(keys.size());
    view_index.push_back(i);
  }
  std::vector<PointView> views(view_index.size());
  for (size_t v = 0; v < views.size(); ++v) {
    const size_t start = v == 0 ? 0 : key_ends[v - 1];
    const PointRef& p = points[view_index[v]];
    views[v].series_key = std::string_view(keys).substr(start, key_ends[v] - start);
    views[v].timestamp_ns = p.timestamp_ns;
    views[v].fields = p.fields;
  }
  // Encoded before taking the write mutex, so concurrent writers overlap
  // here; re-encoded under it only if the catalog rejects some point.
  std::string record;
  EncodeWalBatch(views, &record);

  uint64_t wal_end = 0;
  bool wrote = false;
  {
    MutexLock l(&write_mu_);
    GPULSE_RETURN_IF_ERROR(CheckOpen());
    {
      MutexLock bg(&bg_mu_);
      if (!bg_error_.ok()) return bg_error_;
    }
    ResolvedBatch resolved;
    std::vector<size_t> accepted;
    std::vector<WriteResult::Rejected> rejected;
    // With a new-series budget, each point's series is looked up once here
    // and the lookups are handed to ResolveLocked, not made twice.
    thread_local std::vector<uint32_t> known;
    const bool budget = options_.cardinality.max_new_series_per_minute > 0;
    if (budget) {
      known.resize(views.size());
      for (size_t i = 0; i < views.size(); ++i)
        known[i] = IndexForWriter().FindSeries(views[i].series_key);
    }
    uint64_t retry_after = 0;
    if (budget && !TakeNewSeriesLocked(views, known, &retry_after)) {
      out->rejected.clear();
      out->series_rate_limited = true;
      out->retry_after_seconds = retry_after;
      return Status::ResourceExhausted(
          "too many new series: this write adds more than the " +
          std::to_string(options_.cardinality.max_new_series_per_minute) +
          " a minute allowed (limit max_new_series_per_minute); nothing was written, retry in " +
          std::to_string(retry_after) + " s");
    }
    GPULSE_RETURN_IF_ERROR(ResolveLocked(views, &resolved, &accepted, &rejected,
                                         /*limit_series=*/true, budget ? &known : nullptr));
    for (WriteResult::Rejected& r : rejected) {
      r.index = view_index[r.index];
      out->rejected.push_back(std::move(r));
    }
    if (!accepted.empty()) {
      if (accepted.size() != views.size()) {
        std::vector<PointView> logged;
        logged.reserve(accepted.size());
        for (size_t i : accepted) logged.push_back(views[i]);
        record.clear();
        EncodeWalBatch(logged, &record);
      }
      const Status appended = wal_->Append(record, &wal_end);
      wal_full_ = appended.IsNoSpace();
      GPULSE_RETURN_IF_ERROR(appended);
      ApplyLocked(resolved);
      out->values_written += resolved.values.size();
      wrote = true;
      TouchSlices(points, view_index, views, accepted);
    }
  }
  if (wrote && options_.sync_policy == SyncPolicy::kEveryBatch) {
    GPULSE_RETURN_IF_ERROR(wal_->SyncTo(wal_end));
  }
  if (wrote) MaybeScheduleFlush();

  out->points_written = points.size() - out->rejected.size();
  if (out->rejected.empty()) return Status::Ok();
  std::sort(out->rejected.begin(), out->rejected.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  const auto& first = out->rejected.front();
  return Status::InvalidArgument(std::to_string(out->rejected.size()) + " of " +
                                 std::to_string(points.size()) + " points rejected; first: point " +
                                 std::to_string(first.index) + ": " + first.reason);
}

}  // namespace gpulse::engine

namespace gpulse {

FieldType TypeOf(const FieldValueRef& value) {
  static constexpr FieldType kByIndex[] = {FieldType::kFloat, FieldType::kInt, FieldType::kUint,
                                           FieldType::kBool, FieldType::kString};
  return kByIndex[value.index()];
}

FieldValueRef ToRef(const FieldValue& value) {
  return std::visit(
      [](const auto& v) -> FieldValueRef {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
          return std::string_view(v);
        } else {
          return v;
        }
      },
      value);
}

Status Db::Write(const std::vector<Point>& points, WriteResult* result) {
  // Flat arrays of references, so the batch costs three allocations.
  size_t tag_count = 0, field_count = 0;
  for (const Point& p : points) {
    tag_count += p.tags.size();
    field_count += p.fields.size();
  }
  std::vector<TagRef> tags;
  std::vector<FieldRef> fields;
  std::vector<PointRef> refs;
  tags.reserve(tag_count);
  fields.reserve(field_count);
  refs.reserve(points.size());
  for (const Point& p : points) {
    const size_t first_tag = tags.size(), first_field = fields.size();
    for (const Tag& t : p.tags) tags.push_back(TagRef{t.key, t.value});
    for (const Field& f : p.fields) fields.push_back(FieldRef{f.key, ToRef(f.value)});
    refs.push_back(PointRef{
        p.measurement, std::span<const TagRef>(tags).subspan(first_tag, p.tags.size()),
        std::span<const FieldRef>(fields).subspan(first_field, p.fields.size()), p.timestamp_ns});
  }
  return Write(std::span<const PointRef>(refs), result);
}

}  // namespace gpulse

namespace gpulse::engine {

bool DbImpl::TakeNewSeriesLocked(const std::vector<PointView>& views,
                                 const std::vector<uint32_t>& known,
                                 uint64_t* retry_after_seconds) {
  const uint64_t per_minute = options_.cardinality.max_new_series_per_minute;
  if (per_minute == 0) return true;
  std::unordered_set<std::string_view> fresh;
  for (size_t i = 0; i < views.size(); ++i) {
    if (known[i] == kNoId) fresh.insert(views[i].series_key);
  }
  if (fresh.empty()) return true;
  constexpr int64_t kMinuteNs = 60'000'000'000;
  const int64_t now = WallClockNanos();
  const double capacity = static_cast<double>(per_minute);
  if (new_series_budget_ < 0) {
    new_series_budget_ = capacity;
  } else if (now > new_series_budget_at_) {
    new_series_budget_ = std::min(
        capacity, new_series_budget_ +
                      capacity * static_cast<double>(now - new_series_budget_at_) / kMinuteNs);
  }
  new_series_budget_at_ = now;
  // A batch larger than a whole minute's budget passes when the budget is
  // full, and leaves it in debt: later batches wait that much longer.
  const double want = std::min(static_cast<double>(fresh.size()), capacity);
  if (new_series_budget_ >= want) {
    new_series_budget_ -= static_cast<double>(fresh.size());
    return true;
  }
  series_refused_rate_ += fresh.size();
  *retry_after_seconds =
      static_cast<uint64_t>(std::ceil((want - new_series_budget_) / capacity * 60.0));
  return false;
}

Status DbImpl::ResolveLocked(const std::vector<PointView>& views, ResolvedBatch* resolved,
                             std::vector<size_t>* accepted,
                             std::vector<WriteResult::Rejected>* rejected, bool limit_series,
                             const std::vector<uint32_t>* known) {
  const uint64_t max_series = limit_series ? options_.cardinality.max_series_per_database : 0;
  leveldb::WriteBatch catalog;
  bool catalog_changed = false;
  // A point behind the raw retention would land in a chunk window the next
  // retention pass deletes, and could recompute a tier bucket whose raw
  // points are gone.
  const bool by_database = !retention_by_db_.empty();
  const int64_t now = any_raw_retention_ ? WallClockNanos() : 0;
  const int64_t raw_cut = now == 0 ? INT64_MIN : RawRetentionCut({}, now);
  resolved->points.reserve(views.size());
  resolved->values.reserve(views.size() * (views.empty() ? 0 : views[0].fields.size()));
  for (size_t i = 0; i < views.size(); ++i) {
    const PointView& v = views[i];
    const std::string_view measurement = MeasurementOf(v.series_key);
    const int64_t cut = by_database ? RawRetentionCut(v.series_key, now) : raw_cut;
    if (v.timestamp_ns < cut) {
      rejected->push_back({i, "timestamp " + std::to_string(v.timestamp_ns) +
                                  " is older than the raw retention (" +
                                  std::to_string((now - cut) / 3'600'000'000'000) + "h)"});
      continue;
    }
    // A series first seen earlier in this batch was added since `known` was
    // taken: look those up again.
    uint32_t series_id = known != nullptr && (*known)[i] != kNoId
                             ? (*known)[i]
                             : IndexForWriter().FindSeries(v.series_key);
    if (series_id != kNoId && options_.out_of_order_window.count() > 0) {
      const int64_t newest = IndexForWriter().series(series_id).max_ts;
      if (newest != INT64_MIN &&
          v.timestamp_ns < SaturatingSub(newest, options_.out_of_order_window.count())) {
        rejected->push_back({i, "timestamp " + std::to_string(v.timestamp_ns) +
                                    " is older than the newest point of its series by more "
                                    "than the out-of-order window"});
        continue;
      }
    }
    // Field types first, so a rejected point adds nothing to the catalog.
    // Ids, not entry pointers, are kept: adding a field may move the entries.
    thread_local std::vector<uint32_t> field_ids;
    field_ids.assign(v.fields.size(), kNoId);
    std::string why;
    for (size_t k = 0; k < v.fields.size() && why.empty(); ++k) {
      const FieldRef& f = v.fields[k];
      const FieldEntry* field = series_id != kNoId
                                    ? FindSeriesFieldForWriter(series_id, f.key, k, v.fields.size())
                                    : IndexForWriter().FindField(measurement, f.key);
      if (field == nullptr) continue;
      if (field->type != TypeOf(f.value)) {
        why = "field " + std::string(f.key) + " is " + storage::FieldTypeName(field->type) +
              " in measurement " + std::string(measurement) + ", not " +
              storage::FieldTypeName(TypeOf(f.value));
      }
      field_ids[k] = field->id;
    }
    if (!why.empty()) {
      rejected->push_back({i, std::move(why)});
      continue;
    }
    if (series_id == kNoId && max_series > 0) {
      const std::string_view database = DatabaseOfSeriesKey(v.series_key);
      if (IndexForWriter().LiveSeriesIn(database) >= max_series) {
        ++series_refused_cap_;
        rejected->push_back(
            {i, (database.empty() ? std::string("the series of no database")
                                  : "database " + std::string(database)) +
                    " already holds " + std::to_string(IndexForWriter().LiveSeriesIn(database)) +
                    " series; at most " + std::to_string(max_series) +
                    " (limit max_series_per_database): this point's series is new"});
        continue;
      }
    }
    if (series_id == kNoId) {
      WriterLock l(&mu_);
      series_id = index_.AddSeries(std::string(v.series_key), &catalog);
      catalog_changed = true;
    } else if (IndexForWriter().series(series_id).dropped) {
      WriterLock l(&mu_);
      index_.Revive(series_id, &catalog);
      catalog_changed = true;
    }
    ResolvedBatch::Point p{series_id, v.timestamp_ns,
                           static_cast<uint32_t>(resolved->values.size()),
                           static_cast<uint32_t>(v.fields.size())};
    for (size_t k = 0; k < v.fields.size(); ++k) {
      const FieldRef& f = v.fields[k];
      if (field_ids[k] == kNoId) {
        WriterLock l(&mu_);
        field_ids[k] = index_.AddField(measurement, f.key, TypeOf(f.value), &catalog);
        catalog_changed = true;
      }
      resolved->values.push_back({field_ids[k], TypeOf(f.value), &f.value});
    }
    resolved->points.push_back(p);
    accepted->push_back(i);
  }
  if (catalog_changed) {
    // Not synced: until a flush (which syncs) references these ids, WAL
    // replay can recreate any catalog entry a crash loses.
    const Status s = StoreStatus("write catalog", store_->Write(leveldb::WriteOptions(), &catalog));
    if (s.IsNoSpace()) {
      // The index has these ids already: the store gets them all again once
      // space returns (RecoverFromNoSpace) before any flush refers to them.
      store_full_ = true;
      bg_cv_.SignalAll();
    }
    GPULSE_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

void DbImpl::ApplyLocked(const ResolvedBatch& batch) {
  WriterLock l(&mu_);
  // Column entries kAhead points ahead, open-block ends kAhead / 2: each
  // load has that many points' appends of time to arrive.
  constexpr size_t kAhead = 2;
  const std::vector<ResolvedBatch::Point>& points = batch.points;
  for (size_t i = 0; i < points.size() && i < kAhead; ++i) {
    head_->PrefetchEntries(points[i].series_id);
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const ResolvedBatch::Point& p = points[i];
    if (i + kAhead < points.size()) head_->PrefetchEntries(points[i + kAhead].series_id);
    if (i + kAhead / 2 < points.size()) head_->PrefetchEnds(points[i + kAhead / 2].series_id);
    SeriesEntry& series = index_.mutable_series(p.series_id);
    if (p.ts > series.max_ts) series.max_ts = p.ts;
    for (uint32_t k = 0; k < p.value_count; ++k) {
      const ResolvedBatch::Value& v = batch.values[p.first_value + k];
      head_->Append(p.series_id, v.field_id, v.type, p.ts, *v.value, k, p.value_count);
    }
  }
  head_bytes_ = head_->bytes();
  values_written_ += batch.values.size();
}

Status DbImpl::ReplayRecord(std::string_view record) {
  if (WalRecordKind(record) == kWalDeleteV1) return ReplayDelete(record);
  DecodedBatch batch;
  GPULSE_RETURN_IF_ERROR(DecodeWalBatch(record, &batch));
  const std::vector<PointView>& views = batch.points;
  ResolvedBatch resolved;
  std::vector<size_t> accepted;
  std::vector<WriteResult::Rejected> rejected;
  MutexLock l(&write_mu_);
  GPULSE_RETURN_IF_ERROR(ResolveLocked(views, &resolved, &accepted, &rejected));
  for (const auto& r : rejected) Log("WAL replay skipped a point: " + r.reason);
  ApplyLocked(resolved);
  return Status::Ok();
}

}  // namespace gpulse::engine
