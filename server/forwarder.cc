// The forwarder (forwarder.h): log follower, point -> sample mapping, sharded
// remote-write senders with retries and a bandwidth cap.

#include "server/forwarder.h"

#include <snappy.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "ingest/lp_format.h"
#include "prompb.pb.h"
#include "server/http_client.h"

namespace gpulse::server {

namespace {

namespace http = boost::beast::http;

constexpr std::string_view kFollowerPrefix = "remote_write:";

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

// One target: its log position, its shards and their clients, its figures.
class Forwarder::Sender {
 public:
  Sender(RemoteWriteTarget target, Db* db) : target_(std::move(target)), db_(db) {
    measurements_.insert(target_.measurements.begin(), target_.measurements.end());
  }
  ~Sender() { Stop(); }

  Status Start() {
    LogPosition at;
    GPULSE_RETURN_IF_ERROR(db_->FollowLog(FollowerName(target_), &at));
    shards_.resize(static_cast<size_t>(std::max(1, target_.shards)));
    for (Shard& shard : shards_) {
      HttpClient::Options options;
      options.timeout = target_.timeout;
      options.authorization = target_.authorization;
      if (target_.protocol == RemoteWriteTarget::Protocol::kPrometheus) {
        options.headers = {{"Content-Encoding", "snappy"},
                           {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
      }
      options.cancelled = [this] { return stopping_.load(); };
      GPULSE_RETURN_IF_ERROR(HttpClient::Open(target_.url, options, &shard.client));
    }
    {
      MutexLock l(&mu_);
      position_ = at;
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
    double lag_seconds = 0;
  };
  Figures Snapshot() const {
    Figures f;
    LogPosition at;
    std::chrono::steady_clock::time_point as_of;
    {
      MutexLock l(&mu_);
      at = position_;
      as_of = sent_as_of_;
    }
    f.sent = sent_;
    f.dropped = dropped_;
    f.failed = failed_;
    f.bytes = bytes_;
    f.pending_bytes = db_->LogBytesFrom(at);
    if (f.pending_bytes > 0) {
      f.lag_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - as_of).count();
    }
    return f;
  }

 private:
  struct Body {
    std::string bytes;  // snappy-compressed WriteRequest
    uint64_t samples = 0;
  };
  struct Shard {
    std::unique_ptr<HttpClient> client;
    prompb::WriteRequest request;
    std::string lines;                            // line protocol, for an influx target
    std::unordered_map<std::string, int> series;  // LabelsKey -> index in request
    uint64_t samples = 0;
    std::vector<Body> bodies;
  };

  void Loop() {
    auto backoff = target_.min_backoff;
    while (!stopping_) {
      bool progressed = false;
      const Status s = Round(&progressed);
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
          for (const LoggedPoint& p : points) AddPoint(p);
          return Status::Ok();
        },
        &end);
    if (!read.ok()) {
      // What was read is read again next round.
      for (Shard& shard : shards_) Discard(&shard);
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
    for (Shard& shard : shards_) Seal(&shard);
    std::vector<Status> results(shards_.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (shards_[i].bodies.empty()) continue;
      threads.emplace_back([this, i, &results] { results[i] = SendAll(&shards_[i]); });
    }
    for (std::thread& t : threads) t.join();
    for (Shard& shard : shards_) shard.bodies.clear();
    for (const Status& r : results) GPULSE_RETURN_IF_ERROR(r);
    GPULSE_RETURN_IF_ERROR(db_->AdvanceLog(FollowerName(target_), end));
    MutexLock l(&mu_);
    position_ = end;
    if (whole) sent_as_of_ = read_at;
    *progressed = true;
    return Status::Ok();
  }

  bool Sends(std::string_view measurement) {
    return measurements_.empty() || measurements_.count(measurement) != 0;
  }

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

  void AddPoint(const LoggedPoint& p) {
    const std::string_view key = p.series_key;
    size_t at = key.find('\0');
    const std::string_view measurement = key.substr(0, at);
    if (!Sends(measurement)) return;
    if (target_.protocol == RemoteWriteTarget::Protocol::kInflux) return AddLine(p, measurement);
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
    for (const FieldRef& f : p.fields) {
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
    const int64_t ms = FloorMillis(p.timestamp_ns);
    for (const FieldRef& f : p.fields) {
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
  void AddLine(const LoggedPoint& p, std::string_view measurement) {
    const std::string_view key = p.series_key;
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
    point.fields = p.fields;
    point.timestamp_ns = p.timestamp_ns;
    Shard& shard = shards_[std::hash<std::string_view>{}(key) % shards_.size()];
    ingest::AppendLineProtocol(point, &shard.lines);
    shard.samples += p.fields.size();
    if (shard.samples >= target_.max_samples_per_send) Seal(&shard);
  }

  void Discard(Shard* shard) {
    shard->request.Clear();
    shard->series.clear();
    shard->lines.clear();
    shard->samples = 0;
    shard->bodies.clear();
  }

  void Seal(Shard* shard) {
    if (shard->samples == 0) return;
    if (target_.protocol == RemoteWriteTarget::Protocol::kInflux) {
      Body body;
      body.bytes.swap(shard->lines);
      body.samples = shard->samples;
      shard->bodies.push_back(std::move(body));
      shard->samples = 0;
      return;
    }
    std::string bytes;
    shard->request.SerializeToString(&bytes);
    Body body;
    snappy::Compress(bytes.data(), bytes.size(), &body.bytes);
    body.samples = shard->samples;
    shard->bodies.push_back(std::move(body));
    shard->request.Clear();
    shard->series.clear();
    shard->samples = 0;
  }

  Status SendAll(Shard* shard) {
    for (const Body& body : shard->bodies) GPULSE_RETURN_IF_ERROR(Send(shard, body));
    return Status::Ok();
  }

  // Sends one body until it is taken or refused for good; Cancelled when
  // stopping first.
  Status Send(Shard* shard, const Body& body) {
    auto backoff = target_.min_backoff;
    while (!stopping_) {
      Throttle(body.bytes.size());
      HttpReply reply;
      const bool influx = target_.protocol == RemoteWriteTarget::Protocol::kInflux;
      const Status s = shard->client->Send(
          http::verb::post, shard->client->target(),
          influx ? "text/plain; charset=utf-8" : "application/x-protobuf", "", body.bytes, &reply);
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
  std::set<std::string, std::less<>> measurements_;
  std::vector<Shard> shards_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> sent_{0}, dropped_{0}, failed_{0}, bytes_{0};

  // The round's scratch, used by the sender's thread only.
  std::map<std::string, bool, std::less<>> kinds_;
  Labels labels_;
  std::vector<TagRef> tags_;
  std::string name_, base_key_, key_;

  mutable Mutex mu_;
  CondVar wake_;
  LogPosition position_ GPULSE_GUARDED_BY(mu_);
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
  metric("gpulse_forward_samples_dropped_total", "counter",
         "Samples dropped because a receiver refused them with a 4xx other than 429.",
         [](const F& f) { return f.dropped; });
  metric("gpulse_forward_sends_failed_total", "counter",
         "Sends that failed (5xx, 429, network) and were retried.",
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
    while (sender->Snapshot().pending_bytes > 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status::Busy("remote_write " + sender->name() + ": " +
                            std::to_string(sender->Snapshot().pending_bytes) +
                            " bytes of log not sent");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return Status::Ok();
}

}  // namespace gpulse::server
