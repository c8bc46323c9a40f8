// The forwarder (forwarder.h): log follower, point -> sample mapping, sharded
// remote-write senders with retries and a bandwidth cap.

#include "server/forwarder.h"

#include <snappy.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "ingest/lp_format.h"
#include "prompb.pb.h"
#include "server/http_client.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"

namespace gpulse::server {

namespace {

namespace http = boost::beast::http;

constexpr std::string_view kFollowerPrefix = "remote_write:";
// A tier target's cursor: a definition of this kind, named as the target.
constexpr std::string_view kTierCursorKind = "remote_write_tier";

// Prometheus' stale marker: a NaN no arithmetic produces.
const double kStaleNaN = std::bit_cast<double>(uint64_t{0x7ff0000000000002});

int64_t FloorMillis(int64_t ns) { return ns / 1'000'000 - (ns % 1'000'000 < 0 ? 1 : 0); }

double NumberOf(const FieldValueRef& v) {
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const uint64_t* u = std::get_if<uint64_t>(&v)) return static_cast<double>(*u);
  return std::get<bool>(v) ? 1 : 0;
}

void Log(const std::string& line) { std::fprintf(stderr, "gpulse: %s\n", line.c_str()); }

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

// The identity of a label set (sorted, unique names): names and values
// joined by NUL bytes, which no name or value holds.
void LabelsKey(const Labels& labels, std::string* key) {
  key->clear();
  for (const auto& [name, value] : labels) {
    key->append(name);
    key->push_back('\0');
    key->append(value);
    key->push_back('\0');
  }
}

}  // namespace

std::string FollowerName(const RemoteWriteTarget& target) {
  return std::string(kFollowerPrefix) + target.name;
}

// A request body, ready to send.
struct Body {
  std::string bytes;  // a snappy-compressed WriteRequest, or lines
  uint64_t samples = 0;
};

// Points mapped to a target's samples (or lines) and cut into bodies of at
// most max_samples_per_send samples, each series always in the same shard
// so that its samples stay in order. One thread uses a Batcher.
class Batcher {
 public:
  Batcher(const RemoteWriteTarget& target, Db* db, size_t shards)
      : target_(target), db_(db), shards_(shards) {
    measurements_.insert(target_.measurements.begin(), target_.measurements.end());
    fields_.insert(target_.fields.begin(), target_.fields.end());
  }

  bool Sends(std::string_view measurement) const {
    return measurements_.empty() || measurements_.count(measurement) != 0;
  }

  void Add(const LoggedPoint& p) {
    const std::string_view key = p.series_key;
    const std::string_view measurement = key.substr(0, key.find('\0'));
    if (!Sends(measurement)) return;
    std::span<const FieldRef> fields = p.fields;
    if (!fields_.empty()) {
      kept_.clear();
      for (const FieldRef& f : p.fields) {
        std::string_view name = f.key;
        if (IsStaleField(name)) name.remove_prefix(kStaleFieldPrefix.size());
        if (std::holds_alternative<std::string_view>(f.value) || fields_.count(name) != 0) {
          kept_.push_back(f);
        }
      }
      fields = kept_;
    }
    if (target_.protocol == RemoteWriteTarget::Protocol::kInflux) {
      return AddLine(key, measurement, p.timestamp_ns, fields);
    }
    AddSamples(key, measurement, p.timestamp_ns, fields);
  }

  // Cuts what each shard holds into a body.
  void SealAll() {
    for (Shard& shard : shards_) Seal(&shard);
  }

  // Forgets everything held, sealed or not.
  void Discard() {
    for (Shard& shard : shards_) {
      shard.request.Clear();
      shard.series.clear();
      shard.lines.clear();
      shard.samples = 0;
      shard.bodies.clear();
    }
  }

  size_t shards() const { return shards_.size(); }
  std::vector<Body>& bodies(size_t shard) { return shards_[shard].bodies; }

  // Samples held, sealed or not.
  uint64_t samples() const {
    uint64_t n = 0;
    for (const Shard& shard : shards_) {
      n += shard.samples;
      for (const Body& body : shard.bodies) n += body.samples;
    }
    return n;
  }

 private:
  struct Shard {
    prompb::WriteRequest request;
    std::string lines;                            // line protocol, for an influx target
    std::unordered_map<std::string, int> series;  // LabelsKey -> index in request
    uint64_t samples = 0;
    std::vector<Body> bodies;
  };

  // Whether a measurement's fields are Prometheus metrics (kept by name).
  // The definition is written before the measurement's first point, so a
  // measurement not known yet is looked up again.
  bool IsPrometheus(std::string_view measurement) {
    if (const auto it = kinds_.find(measurement); it != kinds_.end()) return it->second;
    std::vector<std::pair<std::string, std::string>> defs;
    if (db_->ListDefinitions(kPrometheusMeasurementKind, &defs).ok()) {
      for (const auto& [name, text] : defs) kinds_[name] = true;
    }
    const auto [it, added] = kinds_.emplace(std::string(measurement), false);
    return it->second;
  }

  void AddSamples(std::string_view key, std::string_view measurement, int64_t timestamp_ns,
                  std::span<const FieldRef> fields) {
    const bool prom = IsPrometheus(measurement);
    // Tags: '\0' name '\0' value, repeated.
    labels_.clear();
    for (size_t pos = key.find('\0'); pos != std::string_view::npos;) {
      const size_t value_at = key.find('\0', pos + 1);
      if (value_at == std::string_view::npos) break;
      const size_t next = key.find('\0', value_at + 1);
      const std::string_view name = key.substr(pos + 1, value_at - pos - 1);
      const std::string_view value = key.substr(
          value_at + 1, (next == std::string_view::npos ? key.size() : next) - value_at - 1);
      labels_.emplace_back(Renamed(name), value);
      pos = next;
    }
    for (const FieldRef& f : fields) {
      if (const auto* s = std::get_if<std::string_view>(&f.value); s != nullptr && !s->empty()) {
        labels_.emplace_back(Renamed(f.key), *s);
      }
    }
    for (const auto& label : target_.labels) {
      std::erase_if(labels_, [&](const auto& l) { return l.first == label.first; });
      labels_.emplace_back(label.first, label.second);
    }
    std::stable_sort(labels_.begin(), labels_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    labels_.erase(std::unique(labels_.begin(), labels_.end(),
                              [](const auto& a, const auto& b) { return a.first == b.first; }),
                  labels_.end());
    std::erase_if(labels_, [](const auto& l) { return l.first == "__name__"; });
    LabelsKey(labels_, &base_key_);
    const int64_t ms = FloorMillis(timestamp_ns);
    for (const FieldRef& f : fields) {
      if (std::holds_alternative<std::string_view>(f.value)) continue;
      std::string_view field = f.key;
      double value = NumberOf(f.value);
      if (IsStaleField(field)) {
        if (value == 0) continue;
        field.remove_prefix(kStaleFieldPrefix.size());
        value = kStaleNaN;
      }
      name_.clear();
      if (!prom) name_.append(measurement).push_back('_');
      name_.append(field);
      AddSample(ms, value);
    }
  }

  std::string_view Renamed(std::string_view name) const {
    for (const auto& [from, to] : target_.rename_labels) {
      if (from == name) return to;
    }
    return name;
  }

  // Adds the sample of the series named name_ with labels_ (whose key is
  // base_key_).
  void AddSample(int64_t ms, double value) {
    key_.assign(name_);
    key_.push_back('\0');
    key_.append(base_key_);
    Shard& shard = shards_[std::hash<std::string>{}(key_) % shards_.size()];
    auto [it, added] = shard.series.try_emplace(key_, shard.request.timeseries_size());
    prompb::TimeSeries* ts;
    if (added) {
      ts = shard.request.add_timeseries();
      bool named = false;
      auto add = [ts](std::string_view name, std::string_view value) {
        prompb::Label* l = ts->add_labels();
        l->set_name(std::string(name));
        l->set_value(std::string(value));
      };
      for (const auto& [name, v] : labels_) {
        if (!named && name > std::string_view("__name__")) {
          add("__name__", name_);
          named = true;
        }
        add(name, v);
      }
      if (!named) add("__name__", name_);
    } else {
      ts = shard.request.mutable_timeseries(it->second);
    }
    prompb::Sample* sample = ts->add_samples();
    sample->set_value(value);
    sample->set_timestamp(ms);
    if (++shard.samples >= target_.max_samples_per_send) Seal(&shard);
  }

  // A point as a line of line protocol: its tags renamed and the target's
  // labels set as tags; fields, string fields and nanoseconds as they are.
  void AddLine(std::string_view key, std::string_view measurement, int64_t timestamp_ns,
               std::span<const FieldRef> fields) {
    size_t numeric = 0;
    for (const FieldRef& f : fields) numeric += !std::holds_alternative<std::string_view>(f.value);
    if (numeric == 0) return;  // the fields filter left only string fields
    tags_.clear();
    for (size_t pos = key.find('\0'); pos != std::string_view::npos;) {
      const size_t value_at = key.find('\0', pos + 1);
      if (value_at == std::string_view::npos) break;
      const size_t next = key.find('\0', value_at + 1);
      const std::string_view name = Renamed(key.substr(pos + 1, value_at - pos - 1));
      const std::string_view value = key.substr(
          value_at + 1, (next == std::string_view::npos ? key.size() : next) - value_at - 1);
      tags_.push_back({name, value});
      pos = next;
    }
    for (const auto& label : target_.labels) {
      std::erase_if(tags_, [&](const TagRef& t) { return t.key == label.first; });
      tags_.push_back({label.first, label.second});
    }
    PointRef point;
    point.measurement = measurement;
    point.tags = tags_;
    point.fields = fields;
    point.timestamp_ns = timestamp_ns;
    Shard& shard = shards_[std::hash<std::string_view>{}(key) % shards_.size()];
    ingest::AppendLineProtocol(point, &shard.lines);
    shard.samples += fields.size();
    if (shard.samples >= target_.max_samples_per_send) Seal(&shard);
  }

  void Seal(Shard* shard) {
    if (shard->samples == 0) return;
    Body body;
    body.samples = shard->samples;
    shard->samples = 0;
    if (target_.protocol == RemoteWriteTarget::Protocol::kInflux) {
      body.bytes.swap(shard->lines);
    } else {
      std::string bytes;
      shard->request.SerializeToString(&bytes);
      snappy::Compress(bytes.data(), bytes.size(), &body.bytes);
      shard->request.Clear();
      shard->series.clear();
    }
    shard->bodies.push_back(std::move(body));
  }

  const RemoteWriteTarget& target_;
  Db* const db_;
  std::set<std::string, std::less<>> measurements_, fields_;
  std::vector<Shard> shards_;
  // Scratch.
  std::map<std::string, bool, std::less<>> kinds_;
  std::vector<FieldRef> kept_;
  Labels labels_;
  std::vector<TagRef> tags_;
  std::string name_, base_key_, key_;
};

// One target: its log position, its shards' clients, its figures; and the
// backfills sent to it.
class Forwarder::Sender {
 public:
  Sender(RemoteWriteTarget target, Db* db)
      : target_(std::move(target)),
        db_(db),
        live_(target_, db, static_cast<size_t>(std::max(1, target_.shards))) {}
  ~Sender() { Stop(); }

  Status Start() {
    LogPosition at;
    int64_t cursor = 0;
    if (tiered()) {
      GPULSE_RETURN_IF_ERROR(StartTier(&cursor));
    } else {
      GPULSE_RETURN_IF_ERROR(db_->FollowLog(FollowerName(target_), &at));
    }
    GPULSE_RETURN_IF_ERROR(OpenClients(&clients_));
    {
      MutexLock l(&mu_);
      position_ = at;
      cursor_ = cursor;
      sent_as_of_ = std::chrono::steady_clock::now();
    }
    stopping_ = false;
    thread_ = std::thread([this] { Loop(); });
    return Status::Ok();
  }

  void Stop() {
    {
      MutexLock l(&mu_);
      stopping_ = true;
    }
    wake_.SignalAll();
    if (thread_.joinable()) thread_.join();
  }

  const std::string& name() const { return target_.name; }

  // What /metrics shows of the target.
  struct Figures {
    uint64_t sent = 0, dropped = 0, failed = 0, bytes = 0, pending_bytes = 0;
    uint64_t backfilled = 0;
    double lag_seconds = 0;
  };
  Figures Snapshot() const {
    Figures f;
    LogPosition at;
    int64_t cursor = 0;
    std::chrono::steady_clock::time_point as_of;
    {
      MutexLock l(&mu_);
      at = position_;
      cursor = cursor_;
      as_of = sent_as_of_;
    }
    f.sent = sent_;
    f.dropped = dropped_;
    f.failed = failed_;
    f.bytes = bytes_;
    f.backfilled = backfilled_;
    if (tiered()) {
      // How long the oldest bucket not sent has been due.
      const int64_t due = NowNs() - target_.tier_lag_ns - Width();
      if (cursor != 0 && cursor <= due) f.lag_seconds = static_cast<double>(due - cursor) / 1e9;
      return f;
    }
    f.pending_bytes = db_->LogBytesFrom(at);
    if (f.pending_bytes > 0) {
      f.lag_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - as_of).count();
    }
    return f;
  }

  // Whether everything due was sent: the whole log, or a tier target's
  // buckets up to tier_lag_ns ago.
  bool Drained() const {
    if (!tiered()) return Snapshot().pending_bytes == 0;
    MutexLock l(&mu_);
    return cursor_ >= FloorToBucket(NowNs() - target_.tier_lag_ns);
  }

  // Sends what the store holds of [start_ns, end_ns) (a tier target: the
  // buckets that start in it), through clients of its own (the log's sends
  // go on meanwhile).
  Status Backfill(int64_t start_ns, int64_t end_ns, BackfillResult* result) {
    bool idle = false;
    if (!backfilling_.compare_exchange_strong(idle, true)) {
      return Status::Busy("remote_write " + target_.name + ": a backfill is already running");
    }
    struct Done {
      std::atomic<bool>* flag;
      ~Done() { *flag = false; }
    } done{&backfilling_};
    *result = BackfillResult();
    std::vector<std::unique_ptr<HttpClient>> clients;
    GPULSE_RETURN_IF_ERROR(OpenClients(&clients));
    GPULSE_RETURN_IF_ERROR(SendStored(start_ns, end_ns, clients, kBackfillAttempts, result));
    backfilled_ += result->samples;
    return Status::Ok();
  }

 private:
  bool tiered() const { return target_.tier >= 0; }
  int64_t Width() const { return storage::kTiers[target_.tier].width_ns; }
  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t FloorToBucket(int64_t ns) const { return storage::WindowStart(ns, Width()); }

  // A tier target: the tier must be kept; a log follower of the same name
  // (the target sent raw points before) is let go; the cursor is where the
  // last run stopped, or backfill_ns before the first run.
  Status StartTier(int64_t* cursor) {
    if ((db_->KeptTiers() & (1u << target_.tier)) == 0) {
      return Status::InvalidArgument("remote_write " + target_.name + ": the " +
                                     storage::kTiers[target_.tier].name +
                                     " tier is not kept (storage.tiers)");
    }
    std::vector<std::pair<std::string, LogPosition>> followers;
    GPULSE_RETURN_IF_ERROR(db_->LogFollowers(&followers));
    for (const auto& [name, position] : followers) {
      if (name == FollowerName(target_)) GPULSE_RETURN_IF_ERROR(db_->UnfollowLog(name));
    }
    std::vector<std::pair<std::string, std::string>> defs;
    GPULSE_RETURN_IF_ERROR(db_->ListDefinitions(kTierCursorKind, &defs));
    *cursor = FloorToBucket(NowNs() - target_.tier_lag_ns - target_.tier_backfill_ns);
    for (const auto& [name, text] : defs) {
      if (name != target_.name) continue;
      if (std::from_chars(text.data(), text.data() + text.size(), *cursor).ec != std::errc()) {
        return Status::Corruption("remote_write " + target_.name + ": its cursor '" + text +
                                  "' is not a time");
      }
    }
    return Status::Ok();
  }

  // A tier target's round: the buckets that closed tier_lag_ns ago or
  // earlier and were not sent yet, then the cursor moved past them.
  Status TierRound(bool* progressed) {
    int64_t from;
    {
      MutexLock l(&mu_);
      from = cursor_;
    }
    const int64_t until = FloorToBucket(NowNs() - target_.tier_lag_ns);
    if (until <= from) return Status::Ok();
    BackfillResult sent;
    GPULSE_RETURN_IF_ERROR(SendStored(from, until, clients_, 0, &sent));
    GPULSE_RETURN_IF_ERROR(
        db_->PutDefinition(kTierCursorKind, target_.name, std::to_string(until)));
    MutexLock l(&mu_);
    cursor_ = until;
    sent_as_of_ = std::chrono::steady_clock::now();
    *progressed = true;
    return Status::Ok();
  }

  // What the store holds of [start_ns, end_ns), measurement by measurement
  // and series by series in chunks, each series' points (or buckets) in
  // time order, sent through `clients` in rounds of about the log's size.
  Status SendStored(int64_t start_ns, int64_t end_ns,
                    std::vector<std::unique_ptr<HttpClient>>& clients, int attempts,
                    BackfillResult* result) {
    Batcher batch(target_, db_, clients.size());
    const uint64_t round = std::max<uint64_t>(target_.read_bytes / 24, 1);
    auto send = [&]() {
      const uint64_t samples = batch.samples();
      GPULSE_RETURN_IF_ERROR(SendBatch(&batch, clients, attempts));
      result->samples += samples;
      return Status::Ok();
    };
    std::vector<std::string> measurements;
    GPULSE_RETURN_IF_ERROR(db_->ListMeasurements(&measurements));
    for (const std::string& measurement : measurements) {
      if (!batch.Sends(measurement)) continue;
      std::vector<FieldInfo> infos;
      GPULSE_RETURN_IF_ERROR(db_->ListFields(measurement, &infos));
      std::vector<std::string> fields;
      for (const FieldInfo& info : infos) {
        // A tier has the numeric fields' means: no string field labels
        // them, and a stale marker ends no bucket.
        if (tiered() && (!storage::HasRollups(info.type) || IsStaleField(info.name))) continue;
        fields.push_back(info.name);
      }
      if (fields.empty()) continue;
      std::vector<Series> series;
      std::vector<SeriesId> ids;
      GPULSE_RETURN_IF_ERROR(db_->ListSeries(measurement, {}, &series, &ids));
      for (size_t first = 0; first < ids.size(); first += kStoredSeries) {
        const size_t n = std::min(kStoredSeries, ids.size() - first);
        const auto some = std::span(series).subspan(first, n);
        const auto their = std::span(ids).subspan(first, n);
        GPULSE_RETURN_IF_ERROR(
            tiered() ? ReadBuckets(some, their, fields, start_ns, end_ns, &batch, result)
                     : ReadPoints(some, their, fields, start_ns, end_ns, &batch, result));
        if (batch.samples() >= round) GPULSE_RETURN_IF_ERROR(send());
      }
    }
    return send();
  }

  // Series read by one store scan.
  static constexpr size_t kStoredSeries = 256;
  // A backfill's request is tried this often (about 20 s of backoff at the
  // defaults), then the backfill fails, naming why: someone is waiting for
  // it, where the log's sends wait for the receiver as long as it takes.
  static constexpr int kBackfillAttempts = 10;

  Status OpenClients(std::vector<std::unique_ptr<HttpClient>>* clients) {
    clients->resize(static_cast<size_t>(std::max(1, target_.shards)));
    for (auto& client : *clients) {
      HttpClient::Options options;
      options.timeout = target_.timeout;
      options.authorization = target_.authorization;
      options.tls_ca_file = target_.tls_ca_file;
      options.tls_cert_file = target_.tls_cert_file;
      options.tls_key_file = target_.tls_key_file;
      if (target_.protocol == RemoteWriteTarget::Protocol::kPrometheus) {
        options.headers = {{"Content-Encoding", "snappy"},
                           {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
      }
      options.cancelled = [this] { return stopping_.load(); };
      GPULSE_RETURN_IF_ERROR(HttpClient::Open(target_.url, options, &client));
    }
    return Status::Ok();
  }

  // A stored value: its time, its field (an index into the fields read)
  // and its value (a string points into the read's own copies).
  struct StoredValue {
    int64_t ts;
    uint32_t field;
    FieldValueRef value;
  };

  // The points of `series` (ids `ids`) in [start_ns, end_ns), into `batch`:
  // each series' values gathered field by field, then sent point by point.
  Status ReadPoints(std::span<const Series> series, std::span<const SeriesId> ids,
                    const std::vector<std::string>& fields, int64_t start_ns, int64_t end_ns,
                    Batcher* batch, BackfillResult* result) {
    std::vector<std::vector<StoredValue>> values(ids.size());
    std::deque<std::string> strings;
    GPULSE_RETURN_IF_ERROR(db_->ScanSeries(
        ids, fields, start_ns, end_ns,
        [&](size_t s, size_t field, const Column& c, size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) {
            FieldValueRef v;
            switch (c.type) {
              case FieldType::kFloat:
                v = c.floats[i];
                break;
              case FieldType::kInt:
                v = c.ints[i];
                break;
              case FieldType::kUint:
                v = c.uints[i];
                break;
              case FieldType::kBool:
                v = c.bools[i] != 0;
                break;
              case FieldType::kString:
                v = std::string_view(strings.emplace_back(c.strings[i]));
                break;
            }
            values[s].push_back({c.ts[i], static_cast<uint32_t>(field), v});
          }
        },
        nullptr));
    AddStored(series, fields, &values, batch, result);
    return Status::Ok();
  }

  // The tier's buckets of `series` that start in [start_ns, end_ns), into
  // `batch`: a point a bucket, stamped a second before the bucket ends (a
  // sample at T tells of the minutes before T), each field's mean its value.
  Status ReadBuckets(std::span<const Series> series, std::span<const SeriesId> ids,
                     const std::vector<std::string>& fields, int64_t start_ns, int64_t end_ns,
                     Batcher* batch, BackfillResult* result) {
    std::vector<std::vector<StoredValue>> means(ids.size());
    const int64_t stamp = Width() - 1'000'000'000;
    GPULSE_RETURN_IF_ERROR(db_->ScanRollups(
        ids, fields, static_cast<size_t>(target_.tier), start_ns, end_ns, storage::kRollupSum,
        [&](size_t s, size_t field, const RollupColumn& rows, size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) {
            if (rows.count[i] == 0) continue;
            means[s].push_back({rows.bucket[i] + stamp, static_cast<uint32_t>(field),
                                rows.dsum[i] / static_cast<double>(rows.count[i])});
          }
        }));
    AddStored(series, fields, &means, batch, result);
    return Status::Ok();
  }

  // Each series' values, sorted by time and field, as points into `batch`.
  void AddStored(std::span<const Series> series, const std::vector<std::string>& fields,
                 std::vector<std::vector<StoredValue>>* values, Batcher* batch,
                 BackfillResult* result) {
    std::string key;
    std::vector<FieldRef> point;
    for (size_t s = 0; s < series.size(); ++s) {
      std::vector<StoredValue>& v = (*values)[s];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end(), [](const StoredValue& a, const StoredValue& b) {
        return a.ts != b.ts ? a.ts < b.ts : a.field < b.field;
      });
      key.assign(series[s].measurement);
      for (const Tag& tag : series[s].tags) storage::AppendSeriesKeyTag(&key, tag.key, tag.value);
      ++result->series;
      for (size_t i = 0; i < v.size();) {
        point.clear();
        size_t j = i;
        for (; j < v.size() && v[j].ts == v[i].ts; ++j) {
          point.push_back({fields[v[j].field], v[j].value});
        }
        LoggedPoint p;
        p.series_key = key;
        p.timestamp_ns = v[i].ts;
        p.fields = point;
        batch->Add(p);
        ++result->points;
        i = j;
      }
    }
  }

  void Loop() {
    auto backoff = target_.min_backoff;
    while (!stopping_) {
      bool progressed = false;
      const Status s = tiered() ? TierRound(&progressed) : Round(&progressed);
      if (!s.ok() && !s.IsCancelled()) {
        Log("remote_write " + target_.name + ": " + s.ToString());
        Wait(backoff);
        backoff = std::min(backoff * 2, target_.max_backoff);
        continue;
      }
      backoff = target_.min_backoff;
      if (!progressed) Wait(std::chrono::milliseconds(100));
    }
  }

  void Wait(std::chrono::milliseconds how_long) {
    MutexLock l(&mu_);
    if (!stopping_) wake_.WaitFor(&mu_, how_long);
  }

  // Reads what follows the position, sends it, and moves the position.
  Status Round(bool* progressed) {
    LogPosition from, end;
    {
      MutexLock l(&mu_);
      from = position_;
    }
    const Status read = db_->ReadLog(
        from, target_.read_bytes,
        [this](std::span<const LoggedPoint> points, LogPosition) {
          for (const LoggedPoint& p : points) live_.Add(p);
          return Status::Ok();
        },
        &end);
    if (!read.ok()) {
      live_.Discard();  // what was read is read again next round
      return read;
    }
    // Whether this round holds everything logged before `read_at`.
    const auto read_at = std::chrono::steady_clock::now();
    const bool whole = db_->LogBytesFrom(end) == 0;
    if (end == from) {
      MutexLock l(&mu_);
      if (whole) sent_as_of_ = read_at;
      return Status::Ok();
    }
    GPULSE_RETURN_IF_ERROR(SendBatch(&live_, clients_));
    GPULSE_RETURN_IF_ERROR(db_->AdvanceLog(FollowerName(target_), end));
    MutexLock l(&mu_);
    position_ = end;
    if (whole) sent_as_of_ = read_at;
    *progressed = true;
    return Status::Ok();
  }

  // Seals what `batch` holds and sends each shard's bodies through its
  // client, the shards in parallel, each body tried `attempts` times (0:
  // until it goes); the batch is empty after, whatever the outcome.
  Status SendBatch(Batcher* batch, std::vector<std::unique_ptr<HttpClient>>& clients,
                   int attempts = 0) {
    batch->SealAll();
    std::vector<Status> results(batch->shards());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < batch->shards(); ++i) {
      if (batch->bodies(i).empty()) continue;
      threads.emplace_back([this, i, batch, attempts, &clients, &results] {
        for (const Body& body : batch->bodies(i)) {
          results[i] = Send(clients[i].get(), body, attempts);
          if (!results[i].ok()) break;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    batch->Discard();
    for (const Status& r : results) GPULSE_RETURN_IF_ERROR(r);
    return Status::Ok();
  }

  // Sends one body until it is taken or refused for good; Cancelled when
  // stopping first. With `attempts`, IOError naming the last failure once
  // that many have failed.
  Status Send(HttpClient* client, const Body& body, int attempts = 0) {
    auto backoff = target_.min_backoff;
    for (int attempt = 1; !stopping_; ++attempt) {
      Throttle(body.bytes.size());
      HttpReply reply;
      const bool influx = target_.protocol == RemoteWriteTarget::Protocol::kInflux;
      const Status s = client->Send(http::verb::post, client->target(),
                                    influx ? "text/plain; charset=utf-8" : "application/x-protobuf",
                                    "", body.bytes, &reply);
      if (s.ok() && reply.status / 100 == 2) {
        sent_ += body.samples;
        bytes_ += body.bytes.size();
        return Status::Ok();
      }
      if (s.ok() && reply.status / 100 == 4 && reply.status != 429) {
        dropped_ += body.samples;
        Log("remote_write " + target_.name + ": " + std::to_string(body.samples) +
            " samples refused with " + std::to_string(reply.status) +
            " and dropped: " + reply.body.substr(0, 200));
        return Status::Ok();
      }
      ++failed_;
      if (attempts > 0 && attempt >= attempts) {
        return s.ok()
                   ? Status::IOError(client->url() + ": answered " + std::to_string(reply.status) +
                                     " " + reply.body.substr(0, 200))
                   : s;
      }
      auto wait = backoff;
      if (s.ok() && reply.status == 429) {
        int64_t seconds = 0;
        const std::string& after = reply.retry_after;
        if (std::from_chars(after.data(), after.data() + after.size(), seconds).ec == std::errc() &&
            seconds > 0) {
          wait = std::max(wait, std::chrono::milliseconds(std::min<int64_t>(seconds, 300) * 1000));
        }
      }
      Wait(wait);
      backoff = std::min(backoff * 2, target_.max_backoff);
    }
    return Status::Cancelled("stopping");
  }

  // Holds a send of `bytes` until the bandwidth cap allows it.
  void Throttle(uint64_t bytes) {
    if (target_.max_bytes_per_second == 0) return;
    std::chrono::steady_clock::time_point start;
    {
      MutexLock l(&mu_);
      const auto now = std::chrono::steady_clock::now();
      start = std::max(now, next_send_);
      next_send_ =
          start +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(static_cast<double>(bytes) /
                                            static_cast<double>(target_.max_bytes_per_second)));
      while (!stopping_ && std::chrono::steady_clock::now() < start) wake_.WaitUntil(&mu_, start);
    }
  }

  const RemoteWriteTarget target_;
  Db* const db_;
  Batcher live_;  // the log's rounds, on the sender's thread
  std::vector<std::unique_ptr<HttpClient>> clients_;
  std::thread thread_;
  std::atomic<bool> stopping_{false}, backfilling_{false};
  std::atomic<uint64_t> sent_{0}, dropped_{0}, failed_{0}, bytes_{0}, backfilled_{0};

  mutable Mutex mu_;
  CondVar wake_;
  LogPosition position_ GPULSE_GUARDED_BY(mu_);
  // A tier target's next bucket to send (ns).
  int64_t cursor_ GPULSE_GUARDED_BY(mu_) = 0;
  // Everything logged before this was sent: the lag is its age while
  // anything is pending.
  std::chrono::steady_clock::time_point sent_as_of_ GPULSE_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point next_send_ GPULSE_GUARDED_BY(mu_);
};

Forwarder::Forwarder(std::vector<RemoteWriteTarget> targets, Db* db) : db_(db) {
  for (RemoteWriteTarget& t : targets) {
    senders_.push_back(std::make_unique<Sender>(std::move(t), db));
  }
}

Forwarder::~Forwarder() { Stop(); }

Status Forwarder::Start() {
  std::set<std::string> configured;
  for (const auto& sender : senders_)
    configured.insert(std::string(kFollowerPrefix) + sender->name());
  std::vector<std::pair<std::string, LogPosition>> followers;
  GPULSE_RETURN_IF_ERROR(db_->LogFollowers(&followers));
  for (const auto& [name, position] : followers) {
    if (name.starts_with(kFollowerPrefix) && configured.count(name) == 0) {
      Log("remote_write " + name.substr(kFollowerPrefix.size()) +
          ": no longer configured; the log kept for it is freed");
      GPULSE_RETURN_IF_ERROR(db_->UnfollowLog(name));
    }
  }
  for (const auto& sender : senders_) GPULSE_RETURN_IF_ERROR(sender->Start());
  return Status::Ok();
}

void Forwarder::Stop() {
  for (const auto& sender : senders_) sender->Stop();
}

Status Forwarder::Backfill(std::string_view target, int64_t start_ns, int64_t end_ns,
                           BackfillResult* result) {
  if (start_ns >= end_ns) {
    return Status::InvalidArgument("a backfill's start must come before its end");
  }
  for (const auto& sender : senders_) {
    if (sender->name() == target) return sender->Backfill(start_ns, end_ns, result);
  }
  return Status::NotFound("no remote_write target is named \"" + std::string(target) + "\"");
}

std::vector<std::string> Forwarder::TargetNames() const {
  std::vector<std::string> names;
  for (const auto& sender : senders_) names.push_back(sender->name());
  return names;
}

void Forwarder::AppendMetrics(std::string* out) const {
  if (senders_.empty()) return;
  std::vector<std::pair<std::string, Sender::Figures>> all;
  for (const auto& sender : senders_) all.emplace_back(sender->name(), sender->Snapshot());
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    out->append("# HELP ").append(name).append(" ").append(help).append("\n");
    out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
    for (const auto& [target, f] : all) {
      char number[64];
      std::snprintf(number, sizeof(number), "%.17g", static_cast<double>(value(f)));
      out->append(name).append("{target=\"").append(target).append("\"} ").append(number);
      out->append("\n");
    }
  };
  using F = Sender::Figures;
  metric("gpulse_forward_samples_sent_total", "counter",
         "Samples a remote-write receiver acknowledged.", [](const F& f) { return f.sent; });
  metric("gpulse_forward_backfilled_samples_total", "counter",
         "Samples of stored history that backfills sent (in samples_sent too when acknowledged).",
         [](const F& f) { return f.backfilled; });
  metric("gpulse_forward_samples_dropped_total", "counter",
         "Samples dropped because a receiver refused them with a 4xx other than 429.",
         [](const F& f) { return f.dropped; });
  metric("gpulse_forward_sends_failed_total", "counter",
         "Sends that failed (5xx, 429, network, TLS) and were retried.",
         [](const F& f) { return f.failed; });
  metric("gpulse_forward_bytes_sent_total", "counter",
         "Request bytes (snappy-compressed) receivers acknowledged.",
         [](const F& f) { return f.bytes; });
  metric("gpulse_forward_pending_bytes", "gauge",
         "Bytes of write-ahead log not yet sent to the target.",
         [](const F& f) { return f.pending_bytes; });
  metric("gpulse_forward_lag_seconds", "gauge",
         "Age of the oldest write not yet sent to the target; 0 when it has everything.",
         [](const F& f) { return f.lag_seconds; });
}

Status Forwarder::Drain(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& sender : senders_) {
    while (!sender->Drained()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status::Busy("remote_write " + sender->name() + ": " +
                            std::to_string(sender->Snapshot().pending_bytes) +
                            " bytes of log (or buckets of its tier) not sent");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return Status::Ok();
}

}  // namespace gpulse::server
