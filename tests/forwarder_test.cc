// Forwarding to remote-write receivers (server/forwarder.h) against a real
// HTTP receiver on a loopback port that decodes what it gets as a
// Prometheus receiver does: names and labels as the Prometheus face maps
// them, stale markers as stale NaNs, every sample delivered through a
// receiver that answers 503 for a while, a 400's samples dropped and
// counted, the log kept across a restart while the receiver is away, and a
// target taken out of the config freeing its log; a backfill of a stored
// range. The config file's "remote_write" entries and their errors too.

#include "server/forwarder.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "prompb.pb.h"
#include "server/config.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/sources.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_server.h"

namespace gpulse::server {
namespace {

using namespace std::chrono_literals;

// A remote-write receiver: answers `status` (204 by default) and keeps
// what it took, by series ("__name__{a=1,b=2}"), as (ms, value) samples.
class Receiver {
 public:
  Receiver()
      : server_(Options(), [this](const Request& r, const RequestContext&) { return Handle(r); }) {
    const Status s = server_.Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(server_.port()) + "/api/v1/write";
  }
  void Answer(http::status status) { status_ = status; }

  std::map<std::string, std::map<int64_t, double>> series() const {
    std::lock_guard<std::mutex> l(mu_);
    return series_;
  }
  size_t requests() const { return requests_; }
  std::vector<std::string> headers() const {
    std::lock_guard<std::mutex> l(mu_);
    return headers_;
  }

 private:
  static HttpServerOptions Options() {
    HttpServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.drain_timeout = 500ms;
    return options;
  }

  Response Handle(const Request& r) {
    ++requests_;
    Response res{status_.load(), r.version()};
    res.prepare_payload();
    if (status_.load() != http::status::no_content) return res;
    std::string raw;
    prompb::WriteRequest request;
    EXPECT_EQ(r[http::field::content_encoding], "snappy");
    EXPECT_EQ(r[http::field::content_type], "application/x-protobuf");
    if (!snappy::Uncompress(r.body().data(), r.body().size(), &raw) ||
        !request.ParseFromString(raw)) {
      ADD_FAILURE() << "not a snappy WriteRequest";
      return res;
    }
    std::lock_guard<std::mutex> l(mu_);
    headers_.emplace_back(r[http::field::authorization]);
    for (const prompb::TimeSeries& ts : request.timeseries()) {
      std::string name, labels;
      std::string last;
      for (const prompb::Label& label : ts.labels()) {
        EXPECT_LT(last, label.name()) << "labels sorted by name, each once";
        last = label.name();
        if (label.name() == "__name__") {
          name = label.value();
        } else {
          labels += (labels.empty() ? "" : ",") + label.name() + "=" + label.value();
        }
      }
      auto& samples = series_[name + "{" + labels + "}"];
      for (const prompb::Sample& s : ts.samples()) samples[s.timestamp()] = s.value();
    }
    return res;
  }

  std::atomic<http::status> status_{http::status::no_content};
  std::atomic<size_t> requests_{0};
  mutable std::mutex mu_;
  std::map<std::string, std::map<int64_t, double>> series_;  // GUARDED_BY(mu_)
  std::vector<std::string> headers_;                         // GUARDED_BY(mu_)
  HttpServer server_;  // last: its threads call Handle until it is destroyed
};

Options TestOptions() {
  Options options;
  test::UseQuietTestDb(&options);
  return options;
}

RemoteWriteTarget Target(const std::string& url) {
  RemoteWriteTarget t;
  t.name = "central";
  t.url = url;
  t.min_backoff = 5ms;
  t.max_backoff = 50ms;
  t.timeout = 2000ms;
  return t;
}

// GPU g's point at second s: util (float), mem_used (integer), healthy
// (bool), and who ran on it (a string field, so a label).
Point GpuPoint(int g, int s) {
  Point p;
  p.measurement = "gpu";
  p.tags = {{"gpu", std::to_string(g)}, {"host", "n1"}};
  p.fields = {{"util", 50.0 + s},
              {"mem_used", int64_t{1000 + s}},
              {"healthy", true},
              {"pod", std::string("train-") + std::to_string(g)}};
  p.timestamp_ns = int64_t{1'700'000'000 + s} * 1'000'000'000;
  return p;
}

Status WriteGpus(Db* db, int gpus, int first_second, int seconds) {
  std::vector<Point> points;
  for (int s = first_second; s < first_second + seconds; ++s) {
    for (int g = 0; g < gpus; ++g) points.push_back(GpuPoint(g, s));
  }
  return db->Write(points);
}

TEST(ForwarderTest, SendsEveryPointAsTheFaceNamesIt) {
  storage::ScratchDir dir;
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(TestOptions(), dir.path(), &db).ok());
  Receiver receiver;
  RemoteWriteTarget target = Target(receiver.url());
  target.labels = {{"region", "A"}};
  target.rename_labels = {{"host", "node"}};
  target.authorization = "Bearer s3cret";
  Forwarder forwarder({target}, db.get());
  ASSERT_TRUE(forwarder.Start().ok());

  ASSERT_TRUE(WriteGpus(db.get(), 2, 0, 3).ok());
  // A Prometheus measurement keeps its metric names; its stale marker
  // arrives as the stale NaN.
  ASSERT_TRUE(db->PutDefinition(kPrometheusMeasurementKind, "dcgm", "").ok());
  Point temp;
  temp.measurement = "dcgm";
  temp.tags = {{"gpu", "0"}, {"instance", "n1:9400"}};
  temp.fields = {{"DCGM_FI_DEV_GPU_TEMP", 41.0}};
  temp.timestamp_ns = 1'700'000'000'000'000'000;
  Point stale = temp;
  stale.fields = {{StaleFieldOf("DCGM_FI_DEV_GPU_TEMP"), true}};
  stale.timestamp_ns += 15'000'000'000;
  ASSERT_TRUE(db->Write({temp, stale}).ok());
  ASSERT_TRUE(forwarder.Drain(10s).ok());

  const auto got = receiver.series();
  ASSERT_EQ(got.size(), 2u * 3 + 1) << "util, mem_used and healthy of 2 GPUs, and the temperature";
  const auto& util = got.at("gpu_util{gpu=0,node=n1,pod=train-0,region=A}");
  ASSERT_EQ(util.size(), 3u);
  EXPECT_EQ(util.at(1'700'000'002'000), 52.0);
  EXPECT_EQ(got.at("gpu_mem_used{gpu=1,node=n1,pod=train-1,region=A}").at(1'700'000'001'000),
            1001.0);
  EXPECT_EQ(got.at("gpu_healthy{gpu=1,node=n1,pod=train-1,region=A}").at(1'700'000'000'000), 1.0);
  const auto& dcgm = got.at("DCGM_FI_DEV_GPU_TEMP{gpu=0,instance=n1:9400,region=A}");
  ASSERT_EQ(dcgm.size(), 2u);
  EXPECT_EQ(dcgm.at(1'700'000'000'000), 41.0);
  EXPECT_EQ(std::bit_cast<uint64_t>(dcgm.at(1'700'000'015'000)), 0x7ff0000000000002u);
  for (const std::string& h : receiver.headers()) EXPECT_EQ(h, "Bearer s3cret");

  std::string metrics;
  forwarder.AppendMetrics(&metrics);
  EXPECT_NE(metrics.find("gpulse_forward_samples_sent_total{target=\"central\"} 20\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gpulse_forward_pending_bytes{target=\"central\"} 0\n"),
            std::string::npos);
  forwarder.Stop();
}

TEST(ForwarderTest, RetriesThroughAnOutageAndDropsWhatIsRefused) {
  storage::ScratchDir dir;
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(TestOptions(), dir.path(), &db).ok());
  Receiver receiver;
  receiver.Answer(http::status::service_unavailable);
  RemoteWriteTarget target = Target(receiver.url());
  target.shards = 3;
  target.max_samples_per_send = 7;  // many requests a round
  Forwarder forwarder({target}, db.get());
  ASSERT_TRUE(forwarder.Start().ok());
  ASSERT_TRUE(WriteGpus(db.get(), 8, 0, 10).ok());
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(receiver.series().empty());
  EXPECT_TRUE(forwarder.Drain(10ms).IsBusy());
  receiver.Answer(http::status::no_content);
  ASSERT_TRUE(forwarder.Drain(10s).ok());
  const auto got = receiver.series();
  ASSERT_EQ(got.size(), 8u * 3);
  for (const auto& [series, samples] : got) EXPECT_EQ(samples.size(), 10u) << series;

  // A 400 is final: the samples are dropped and counted, and what follows
  // goes on.
  receiver.Answer(http::status::bad_request);
  ASSERT_TRUE(WriteGpus(db.get(), 1, 100, 1).ok());
  ASSERT_TRUE(forwarder.Drain(10s).ok());
  std::string metrics;
  forwarder.AppendMetrics(&metrics);
  EXPECT_NE(metrics.find("gpulse_forward_samples_dropped_total{target=\"central\"} 3\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gpulse_forward_samples_sent_total{target=\"central\"} 240\n"),
            std::string::npos);
  EXPECT_EQ(metrics.find("gpulse_forward_sends_failed_total{target=\"central\"} 0\n"),
            std::string::npos);
  forwarder.Stop();
}

TEST(ForwarderTest, KeepsTheLogForATargetAcrossARestart) {
  storage::ScratchDir dir;
  Receiver receiver;
  receiver.Answer(http::status::service_unavailable);
  {
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(TestOptions(), dir.path(), &db).ok());
    Forwarder forwarder({Target(receiver.url())}, db.get());
    ASSERT_TRUE(forwarder.Start().ok());
    ASSERT_TRUE(WriteGpus(db.get(), 4, 0, 30).ok());
    ASSERT_TRUE(db->Flush().ok());  // the engine is done with the log
    ASSERT_TRUE(WriteGpus(db.get(), 4, 30, 30).ok());
    forwarder.Stop();
    EXPECT_GT(db->GetStats().wal_held_bytes, 0u);
    ASSERT_TRUE(db->Close().ok());
  }
  receiver.Answer(http::status::no_content);
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(TestOptions(), dir.path(), &db).ok());
  Forwarder forwarder({Target(receiver.url())}, db.get());
  ASSERT_TRUE(forwarder.Start().ok());
  ASSERT_TRUE(forwarder.Drain(10s).ok());
  const auto got = receiver.series();
  ASSERT_EQ(got.size(), 4u * 3);
  for (const auto& [series, samples] : got) EXPECT_EQ(samples.size(), 60u) << series;
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(db->GetStats().wal_held_bytes, 0u);
  forwarder.Stop();

  // Out of the config: the follower goes, and with it the hold on the log.
  Forwarder none({}, db.get());
  ASSERT_TRUE(none.Start().ok());
  std::vector<std::pair<std::string, LogPosition>> followers;
  ASSERT_TRUE(db->LogFollowers(&followers).ok());
  EXPECT_TRUE(followers.empty());
}

// gpulse to gpulse over line protocol: the central node gets every field,
// string fields and nanoseconds included, with the target's labels as tags.
TEST(ForwarderTest, SendsLineProtocolToAnotherGpulse) {
  storage::ScratchDir dir;
  ServerMetrics metrics;
  SourceRegistry sources;
  ServerConfig central_config;
  test::UseQuietTestDb(&central_config.db);
  central_config.alerts.evaluate = false;
  test::TestServer central;
  ASSERT_TRUE(central.Start(dir.path() + "/central", central_config, &metrics, &sources).ok());

  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(TestOptions(), dir.path() + "/node", &db).ok());
  RemoteWriteTarget target =
      Target("http://127.0.0.1:" + std::to_string(central.port()) + "/write?db=fleet");
  target.protocol = RemoteWriteTarget::Protocol::kInflux;
  target.labels = {{"site", "A"}};
  target.measurements = {"gpu"};
  Forwarder forwarder({target}, db.get());
  ASSERT_TRUE(forwarder.Start().ok());
  std::vector<Point> points;
  for (int s = 0; s < 3; ++s) {
    Point p = GpuPoint(s % 2, s);
    p.timestamp_ns += 123;  // nanoseconds travel
    points.push_back(p);
  }
  Point other = points[0];
  other.measurement = "not_sent";
  points.push_back(other);
  ASSERT_TRUE(db->Write(points).ok());
  ASSERT_TRUE(forwarder.Drain(10s).ok());

  const StatementResult r = test::RunFirst(central.db(), "SELECT * FROM gpu GROUP BY *");
  ASSERT_EQ(r.series.size(), 2u);
  const ResultSeries& gpu0 = r.series[0];
  EXPECT_EQ(gpu0.tags,
            (std::vector<Tag>{{"db", "fleet"}, {"gpu", "0"}, {"host", "n1"}, {"site", "A"}}));
  ASSERT_EQ(gpu0.values.size(), 2u);
  std::map<std::string, QueryValue> row;
  for (size_t c = 0; c < gpu0.columns.size(); ++c) row[gpu0.columns[c]] = gpu0.values[1][c];
  EXPECT_EQ(std::get<int64_t>(row["time"]), int64_t{1'700'000'002} * 1'000'000'000 + 123);
  EXPECT_EQ(std::get<double>(row["util"]), 52.0);
  EXPECT_EQ(std::get<int64_t>(row["mem_used"]), 1002);
  EXPECT_EQ(std::get<bool>(row["healthy"]), true);
  EXPECT_EQ(std::get<std::string>(row["pod"]), "train-0");
  const StatementResult none = test::RunFirst(central.db(), "SHOW MEASUREMENTS");
  ASSERT_EQ(none.series.size(), 1u);
  EXPECT_EQ(none.series[0].values.size(), 1u) << "only gpu was sent";
  forwarder.Stop();
}

// A backfill sends a stored range as the log's sends sent it: the same
// series, names, labels and stale markers, flushed points and the head's
// alike; the fields filter keeps the named fields (string fields still
// label them).
TEST(ForwarderTest, BackfillSendsAStoredRangeAsTheLogSentIt) {
  storage::ScratchDir dir;
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(TestOptions(), dir.path(), &db).ok());
  Receiver live, history, some;
  Forwarder forwarder({Target(live.url())}, db.get());
  ASSERT_TRUE(forwarder.Start().ok());
  ASSERT_TRUE(WriteGpus(db.get(), 3, 0, 40).ok());
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(WriteGpus(db.get(), 3, 40, 20).ok());  // in the head
  ASSERT_TRUE(db->PutDefinition(kPrometheusMeasurementKind, "dcgm", "").ok());
  Point temp;
  temp.measurement = "dcgm";
  temp.tags = {{"gpu", "0"}};
  temp.fields = {{"DCGM_FI_DEV_GPU_TEMP", 41.0}};
  temp.timestamp_ns = int64_t{1'700'000'030} * 1'000'000'000;
  Point stale = temp;
  stale.fields = {{StaleFieldOf("DCGM_FI_DEV_GPU_TEMP"), true}};
  stale.timestamp_ns += 15'000'000'000;
  ASSERT_TRUE(db->Write({temp, stale}).ok());
  ASSERT_TRUE(forwarder.Drain(10s).ok());
  forwarder.Stop();

  // Seconds 20 to 49: across the flush.
  const int64_t start = int64_t{1'700'000'020} * 1'000'000'000;
  const int64_t end = int64_t{1'700'000'050} * 1'000'000'000;
  RemoteWriteTarget all = Target(history.url());
  all.name = "history";
  all.shards = 2;
  RemoteWriteTarget filtered = Target(some.url());
  filtered.name = "some";
  filtered.fields = {"util", "DCGM_FI_DEV_GPU_TEMP"};
  Forwarder backfill({all, filtered}, db.get());  // not started: the log is not followed
  BackfillResult result;
  ASSERT_TRUE(backfill.Backfill("history", start, end, &result).ok());
  EXPECT_EQ(result.series, 3u + 1);
  EXPECT_EQ(result.points, 3u * 30 + 2);
  EXPECT_EQ(result.samples, 3u * 30 * 3 + 2);

  std::map<std::string, std::map<int64_t, double>> want;
  for (const auto& [series, samples] : live.series()) {
    for (const auto& [ms, value] : samples) {
      if (ms >= start / 1'000'000 && ms < end / 1'000'000) want[series][ms] = value;
    }
  }
  const auto got = history.series();
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [series, samples] : want) {
    ASSERT_EQ(got.count(series), 1u) << series;
    const auto& sent = got.at(series);
    ASSERT_EQ(sent.size(), samples.size()) << series;
    for (const auto& [ms, value] : samples) {
      EXPECT_EQ(std::bit_cast<uint64_t>(sent.at(ms)), std::bit_cast<uint64_t>(value))
          << series << " at " << ms;
    }
  }
  EXPECT_EQ(std::bit_cast<uint64_t>(got.at("DCGM_FI_DEV_GPU_TEMP{gpu=0}").at(1'700'000'045'000)),
            0x7ff0000000000002u);

  ASSERT_TRUE(backfill.Backfill("some", start, end, &result).ok());
  const auto few = some.series();
  ASSERT_EQ(few.size(), 3u + 1) << "util of each GPU and the temperature";
  EXPECT_EQ(few.at("gpu_util{gpu=2,host=n1,pod=train-2}").size(), 30u);
  EXPECT_EQ(few.at("DCGM_FI_DEV_GPU_TEMP{gpu=0}").size(), 2u) << "its stale marker goes with it";

  std::string metrics;
  backfill.AppendMetrics(&metrics);
  EXPECT_NE(metrics.find("gpulse_forward_backfilled_samples_total{target=\"history\"} 272\n"),
            std::string::npos)
      << metrics;
  EXPECT_TRUE(backfill.Backfill("nobody", start, end, &result).IsNotFound());
  EXPECT_TRUE(backfill.Backfill("history", end, start, &result).IsInvalidArgument());
}

// A target of the 5-minute tier gets each field's mean over each closed
// bucket, stamped a second before the bucket ends, from a first run that
// goes backfill_ns back; a backfill of it sends the same buckets.
TEST(ForwarderTest, ATierTargetGetsEachClosedBucketsMean) {
  storage::ScratchDir dir;
  std::unique_ptr<Db> db;
  Options options = TestOptions();
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  RemoteWriteTarget unkept = Target("http://127.0.0.1:1/api/v1/write");
  unkept.tier = 0;
  const Status refused = Forwarder({unkept}, db.get()).Start();
  EXPECT_TRUE(refused.IsInvalidArgument());
  EXPECT_NE(refused.ToString().find("the 5m tier is not kept"), std::string::npos)
      << refused.ToString();
  ASSERT_TRUE(db->Close().ok());
  options.tiers = {"5m", "1h", "1d"};
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  constexpr int64_t kMinute = 60'000'000'000, kFive = 5 * kMinute;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t base = now / kFive * kFive - 6 * kFive;  // six closed buckets
  std::vector<Point> points;
  for (int m = 0; m < 30; ++m) {
    for (int g = 0; g < 2; ++g) {
      Point p = GpuPoint(g, 0);
      p.fields = {{"util", 100.0 * g + m}, {"pod", std::string("p") + std::to_string(m)}};
      p.timestamp_ns = base + m * kMinute;
      points.push_back(p);
    }
  }
  ASSERT_TRUE(db->Write(points).ok());
  ASSERT_TRUE(db->Flush().ok());

  Receiver live, history;
  RemoteWriteTarget tier = Target(live.url());
  tier.tier = 0;  // 5m
  tier.tier_lag_ns = 0;
  tier.tier_backfill_ns = 3'600'000'000'000;
  Forwarder forwarder({tier}, db.get());
  ASSERT_TRUE(forwarder.Start().ok());
  ASSERT_TRUE(forwarder.Drain(10s).ok());
  forwarder.Stop();
  const auto got = live.series();
  ASSERT_EQ(got.size(), 2u) << "no pod label: a bucket has no one string value";
  for (int g = 0; g < 2; ++g) {
    const auto& util = got.at("gpu_util{gpu=" + std::to_string(g) + ",host=n1}");
    ASSERT_EQ(util.size(), 6u);
    for (int k = 0; k < 6; ++k) {
      const int64_t ms = (base + (k + 1) * kFive) / 1'000'000 - 1000;
      ASSERT_EQ(util.count(ms), 1u) << k;
      EXPECT_DOUBLE_EQ(util.at(ms), 100.0 * g + 5 * k + 2) << k;
    }
  }

  // Restarted, it goes on from its cursor: nothing is sent again.
  const size_t requests = live.requests();
  Forwarder again({tier}, db.get());
  ASSERT_TRUE(again.Start().ok());
  ASSERT_TRUE(again.Drain(10s).ok());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(live.requests(), requests);
  again.Stop();

  tier.url = history.url();
  Forwarder backfill({tier}, db.get());
  BackfillResult result;
  ASSERT_TRUE(backfill.Backfill("central", base + kFive, base + 3 * kFive, &result).ok());
  EXPECT_EQ(result.samples, 2u * 2);
  const auto some = history.series();
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some.at("gpu_util{gpu=1,host=n1}").size(), 2u);
  EXPECT_DOUBLE_EQ(some.at("gpu_util{gpu=1,host=n1}").at((base + 2 * kFive) / 1'000'000 - 1000),
                   100.0 + 5 + 2);
}

TEST(ForwarderTest, ConfigFileTargets) {
  storage::ScratchDir dir;
  const std::string path = dir.path() + "/gpulse.json";
  auto load = [&](const std::string& text, ServerConfig* config) {
    std::ofstream(path) << text;
    return LoadConfigFile(path, config);
  };
  ServerConfig config;
  ASSERT_TRUE(load(R"({"remote_write": [
      {"url": "http://vm:8428/api/v1/write", "labels": {"region": "A"},
       "basic_auth": {"username": "user", "password": "pass"}, "shards": 8},
      {"name": "mimir", "url": "http://mimir/api/v1/push", "authorization": "Bearer t",
       "measurements": ["gpu"], "fields": ["util"], "max_mb_per_second": 2},
      {"name": "central", "url": "http://gpulse-central:8086/write?db=fleet",
       "protocol": "influx", "resolution": "1h", "lag_minutes": 10, "backfill_hours": 24}],
      "ledger_export": {"every_minutes": 1, "backfill_hours": 2}})",
                   &config)
                  .ok());
  ASSERT_EQ(config.remote_write.size(), 3u);
  EXPECT_EQ(config.remote_write[2].protocol, RemoteWriteTarget::Protocol::kInflux);
  EXPECT_EQ(config.remote_write[0].tier, -1);
  EXPECT_EQ(config.remote_write[2].tier, 1);
  EXPECT_EQ(config.remote_write[2].tier_lag_ns, 600'000'000'000);
  EXPECT_EQ(config.remote_write[2].tier_backfill_ns, 86'400'000'000'000);
  EXPECT_TRUE(config.ledger_export.enabled);
  EXPECT_EQ(config.ledger_export.every_ns, 60'000'000'000);
  EXPECT_EQ(config.ledger_export.backfill_ns, 7200'000'000'000);
  EXPECT_EQ(config.remote_write[0].name, "http://vm:8428/api/v1/write");
  EXPECT_EQ(config.remote_write[0].authorization, "Basic dXNlcjpwYXNz");
  EXPECT_EQ(config.remote_write[0].shards, 8);
  EXPECT_EQ(config.remote_write[1].max_bytes_per_second, 2u << 20);
  EXPECT_EQ(config.remote_write[1].measurements, std::vector<std::string>{"gpu"});
  EXPECT_EQ(config.remote_write[1].fields, std::vector<std::string>{"util"});

  const std::pair<const char*, const char*> bad[] = {
      {R"({"remote_write": [{"url": "ftp://vm/api/v1/write"}]})", "remote_write[0].url"},
      {R"({"remote_write": [{"url": "https://vm/w", "tls": {"ca_file": "/no/such/ca.pem"}}]})",
       "remote_write[0].tls.ca_file: cannot read /no/such/ca.pem"},
      {R"({"remote_write": [{"url": "https://vm/w", "tls": {"ca": "x"}}]})", "unknown key \"ca\""},
      {R"({"remote_write": [{"url": "http://a/w"}, {"url": "http://a/w"}]})",
       "remote_write[1].name"},
      {R"({"remote_write": [{"url": "http://a/w", "shards": 0}]})", "remote_write[0].shards"},
      {R"({"remote_write": [{"url": "http://a/w", "sharding": 2}]})", "unknown key \"sharding\""},
      {R"({"remote_write": [{"url": "http://a/w", "basic_auth": {"username": "u"}}]})",
       "remote_write[0].basic_auth"},
      {R"({"remote_write": [{"url": "http://a/w", "protocol": "graphite"}]})",
       "remote_write[0].protocol"},
      {R"({"ledger_export": {"every_minutes": 7}})", "ledger_export.every_minutes"},
      {R"({"remote_write": [{"url": "http://a/w", "fields": ["__stale__.util"]}]})",
       "remote_write[0].fields"},
      {R"({"remote_write": [{"url": "http://a/w", "resolution": "10m"}]})",
       "remote_write[0].resolution"},
      {R"({"remote_write": [{"url": "http://a/w", "lag_minutes": 3}]})",
       "lag_minutes and backfill_hours are for a tier"},
  };
  for (const auto& [text, error] : bad) {
    ServerConfig c;
    const Status s = load(text, &c);
    EXPECT_TRUE(s.IsInvalidArgument()) << text;
    EXPECT_NE(s.ToString().find(error), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace gpulse::server
