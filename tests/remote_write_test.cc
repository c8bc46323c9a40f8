// Prometheus remote write: request bodies decoded into points
// (ingest/remote_write.h), and /api/v1/write on a loopback port: 204, the
// samples stored as the scrape mapping stores them, 400/413/415 for bodies
// that cannot be read, a partial write's 400, stale markers counted and not
// stored, and token scopes.

#include <gtest/gtest.h>
#include <snappy.h>

#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ingest/remote_write.h"
#include "remote_write.pb.h"
#include "server/config.h"
#include "server/http_api.h"
#include "server/metrics.h"
#include "server/sources.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_server.h"

namespace gpulse {
namespace {

using json = nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;
using Samples = std::vector<std::pair<double, int64_t>>;  // value, milliseconds

double StaleNaN() {
  double v;
  const uint64_t bits = ingest::kStaleNaNBits;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

void AddSeries(prompb::WriteRequest* request, const Labels& labels, const Samples& samples) {
  prompb::TimeSeries* series = request->add_timeseries();
  for (const auto& [name, value] : labels) {
    prompb::Label* l = series->add_labels();
    l->set_name(name);
    l->set_value(value);
  }
  for (const auto& [value, ms] : samples) {
    prompb::Sample* s = series->add_samples();
    s->set_value(value);
    s->set_timestamp(ms);
  }
}

std::string Body(const prompb::WriteRequest& request) {
  std::string compressed;
  snappy::Compress(request.SerializeAsString().data(), request.ByteSizeLong(), &compressed);
  return compressed;
}

// Two GPUs' temperature and power at two scrapes, as Prometheus sends them:
// one series per metric and label set, the metric name in __name__.
prompb::WriteRequest TwoGpus() {
  prompb::WriteRequest request;
  for (const char* gpu : {"0", "1"}) {
    const double base = gpu[0] == '0' ? 40 : 50;
    AddSeries(&request,
              {{"__name__", "DCGM_FI_DEV_GPU_TEMP"},
               {"gpu", gpu},
               {"instance", "n1:9400"},
               {"job", "dcgm"},
               {"pod", gpu[0] == '0' ? "train-7" : ""}},
              {{base, 1'700'000'000'000}, {base + 1, 1'700'000'015'000}});
    AddSeries(&request,
              {{"__name__", "DCGM_FI_DEV_POWER_USAGE"},
               {"gpu", gpu},
               {"instance", "n1:9400"},
               {"job", "dcgm"},
               {"pod", gpu[0] == '0' ? "train-7" : ""}},
              {{base * 5.5, 1'700'000'000'000}, {base * 5.5 + 0.25, 1'700'000'015'000}});
  }
  return request;
}

// The batch's points as owning Points, for the checks below.
Status Decode(const std::string& body, size_t max_bytes, const ingest::PromMappingOptions& options,
              std::vector<Point>* points, ingest::RemoteWriteStats* stats) {
  ingest::RemoteWriteBatch batch;
  const Status s = batch.Parse(body, max_bytes, options);
  *stats = batch.stats();
  points->clear();
  for (const PointRef& ref : batch.points()) {
    Point& p = points->emplace_back();
    p.measurement = std::string(ref.measurement);
    for (const TagRef& t : ref.tags) p.tags.push_back({std::string(t.key), std::string(t.value)});
    for (const FieldRef& f : ref.fields) {
      if (const auto* text = std::get_if<std::string_view>(&f.value)) {
        p.fields.push_back({std::string(f.key), std::string(*text)});
      } else {
        p.fields.push_back({std::string(f.key), std::get<double>(f.value)});
      }
    }
    p.timestamp_ns = ref.timestamp_ns;
  }
  return s;
}

const std::string* TagOf(const Point& p, const std::string& key) {
  for (const Tag& t : p.tags) {
    if (t.key == key) return &t.value;
  }
  return nullptr;
}

const FieldValue* FieldOf(const Point& p, const std::string& key) {
  for (const Field& f : p.fields) {
    if (f.key == key) return &f.value;
  }
  return nullptr;
}

TEST(RemoteWriteDecodeTest, EachLabelSetAndTimestampIsOnePointWithAFieldPerMetric) {
  std::vector<Point> points;
  ingest::RemoteWriteStats stats;
  ingest::PromMappingOptions mapping;
  mapping.measurement = "dcgm";
  ASSERT_TRUE(Decode(Body(TwoGpus()), 1 << 20, mapping, &points, &stats).ok());
  EXPECT_EQ(stats.series, 4u);
  EXPECT_EQ(stats.samples, 8u);
  ASSERT_EQ(points.size(), 4u);  // 2 GPUs x 2 scrapes
  for (const Point& p : points) {
    EXPECT_EQ(p.measurement, "dcgm");
    ASSERT_NE(TagOf(p, "gpu"), nullptr);
    EXPECT_EQ(*TagOf(p, "job"), "dcgm");
    EXPECT_EQ(*TagOf(p, "instance"), "n1:9400");
    EXPECT_EQ(TagOf(p, "pod"), nullptr);  // an attribution label: a string field
    const bool gpu0 = *TagOf(p, "gpu") == "0";
    const bool second = p.timestamp_ns == 1'700'000'015'000'000'000;
    EXPECT_TRUE(second || p.timestamp_ns == 1'700'000'000'000'000'000);
    const double temp = (gpu0 ? 40 : 50) + (second ? 1 : 0);
    EXPECT_EQ(std::get<double>(*FieldOf(p, "DCGM_FI_DEV_GPU_TEMP")), temp);
    EXPECT_EQ(std::get<double>(*FieldOf(p, "DCGM_FI_DEV_POWER_USAGE")),
              (gpu0 ? 220 : 275) + (second ? 0.25 : 0));
    if (gpu0) {
      EXPECT_EQ(std::get<std::string>(*FieldOf(p, "pod")), "train-7");
    } else {
      EXPECT_EQ(FieldOf(p, "pod"), nullptr);  // pod="" is no label
    }
  }
}

TEST(RemoteWriteDecodeTest, StaleMarkersAreCountedNotStoredAndOtherNaNsAreKept) {
  prompb::WriteRequest request;
  AddSeries(&request, {{"__name__", "up"}, {"job", "dcgm"}},
            {{1, 1000}, {StaleNaN(), 2000}, {std::nan(""), 3000}});
  std::vector<Point> points;
  ingest::RemoteWriteStats stats;
  ASSERT_TRUE(Decode(Body(request), 1 << 20, {}, &points, &stats).ok());
  EXPECT_EQ(stats.samples, 3u);
  EXPECT_EQ(stats.stale_markers, 1u);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].measurement, "prometheus");  // the default
  EXPECT_EQ(points[0].timestamp_ns, 1'000'000'000);
  EXPECT_EQ(points[1].timestamp_ns, 3'000'000'000);
  EXPECT_TRUE(std::isnan(std::get<double>(points[1].fields[0].value)));
  EXPECT_FALSE(ingest::IsStaleMarker(std::get<double>(points[1].fields[0].value)));
}

TEST(RemoteWriteDecodeTest, BodiesThatCannotBeReadSayWhy) {
  std::vector<Point> points;
  ingest::RemoteWriteStats stats;
  Status s = Decode("DCGM_FI_DEV_GPU_TEMP 1", 1 << 20, {}, &points, &stats);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("snappy"), std::string::npos) << s.message();
  std::string not_protobuf;
  const std::string text = "this is not a protobuf message at all";
  snappy::Compress(text.data(), text.size(), &not_protobuf);
  s = Decode(not_protobuf, 1 << 20, {}, &points, &stats);
  EXPECT_EQ(s.message(), "remote write body is not a protobuf WriteRequest");
  s = Decode(Body(TwoGpus()), 16, {}, &points, &stats);
  EXPECT_TRUE(s.IsResourceExhausted()) << s.ToString();
  EXPECT_TRUE(points.empty());
}

TEST(RemoteWriteDecodeTest, ASeriesWithoutAMetricNameIsLeftOutAndNamed) {
  prompb::WriteRequest request;
  AddSeries(&request, {{"job", "dcgm"}, {"gpu", "3"}}, {{1, 1000}, {2, 2000}});
  AddSeries(&request, {{"__name__", "up"}, {"job", "dcgm"}}, {{1, 1000}});
  std::vector<Point> points;
  ingest::RemoteWriteStats stats;
  ASSERT_TRUE(Decode(Body(request), 1 << 20, {}, &points, &stats).ok());
  EXPECT_EQ(points.size(), 1u);
  EXPECT_EQ(stats.nameless, 2u);
  EXPECT_EQ(stats.first_error, "series {job=\"dcgm\", gpu=\"3\"} has no metric name (__name__)");
}

class RemoteWriteServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.tokens = {{"admin", "admin-token-123", {"*"}, {"*"}},
                      {"wA", "writeA-token-123", {}, {"dbA"}}};
    test::UseQuietTestDb(&config_.db);
    const Status s = server_.Start(dir_.path(), config_, &metrics_, &sources_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    client_.emplace(server_.port());
  }

  test::HttpReply Send(const std::string& target, const std::string& body,
                       const std::string& token = "admin-token-123",
                       const std::string& encoding = "snappy") {
    std::map<std::string, std::string> headers{{"Content-Type", "application/x-protobuf"},
                                               {"X-Prometheus-Remote-Write-Version", "0.1.0"},
                                               {"Authorization", "Bearer " + token}};
    if (!encoding.empty()) headers["Content-Encoding"] = encoding;
    return client_->Post(target, body, headers);
  }

  json Query(const std::string& q) {
    const test::HttpReply r = client_->Get("/query?q=" + server::PercentEncode(q),
                                           {{"Authorization", "Token admin-token-123"}});
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["results"][0];
  }

  storage::ScratchDir dir_;
  server::ServerConfig config_;
  server::ServerMetrics metrics_;
  server::SourceRegistry sources_;
  test::TestServer server_;
  std::optional<test::HttpClient> client_;
};

TEST_F(RemoteWriteServerTest, SamplesAreStoredAsAScrapeWouldStoreThem) {
  const test::HttpReply r = Send("/api/v1/write?measurement=dcgm", Body(TwoGpus()));
  ASSERT_EQ(r.status, 204) << r.body;
  const json result =
      Query("SELECT DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_POWER_USAGE, pod FROM dcgm GROUP BY gpu");
  ASSERT_EQ(result["series"].size(), 2u) << result.dump();
  EXPECT_EQ(result["series"][0]["tags"]["gpu"], "0");
  EXPECT_EQ(result["series"][0]["values"].dump(),
            R"([["2023-11-14T22:13:20Z",40,220,"train-7"],)"
            R"(["2023-11-14T22:13:35Z",41,220.25,"train-7"]])");
  EXPECT_EQ(result["series"][1]["values"].dump(),
            R"([["2023-11-14T22:13:20Z",50,275,null],["2023-11-14T22:13:35Z",51,275.25,null]])");
  EXPECT_EQ(metrics_.remote_write_samples.load(), 8u);
  EXPECT_EQ(metrics_.values_received.load(), 10u);  // 8 samples and 2 pod fields
}

// What came in by remote write keeps its metric names and labels for PromQL:
// the measurement is marked as Prometheus data, the pod (a string field)
// is a label again.
TEST_F(RemoteWriteServerTest, PromQLReadsWhatCameInUnderItsOwnNames) {
  ASSERT_EQ(Send("/api/v1/write?measurement=dcgm", Body(TwoGpus())).status, 204);
  const test::HttpReply r =
      client_->Get("/api/v1/query?time=1700000015&query=" +
                       server::PercentEncode("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}"),
                   {{"Authorization", "Bearer admin-token-123"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["data"]["result"].dump(),
            R"([{"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP","gpu":"0","instance":"n1:9400",)"
            R"("job":"dcgm","pod":"train-7"},"value":[1700000015,"41"]}])");
}

// Prometheus sends its targets' metadata apart from the samples; it is
// kept for /api/v1/metadata, unit included.
TEST_F(RemoteWriteServerTest, MetadataIsKeptForTheMetadataApi) {
  prompb::WriteRequest request;
  prompb::MetricMetadata* m = request.add_metadata();
  m->set_type(prompb::MetricMetadata::GAUGE);
  m->set_metric_family_name("DCGM_FI_DEV_GPU_TEMP");
  m->set_help("GPU temperature (in C).\nSecond line.");
  m->set_unit("celsius");
  ASSERT_EQ(Send("/api/v1/write", Body(request)).status, 204);
  const test::HttpReply r =
      client_->Get("/api/v1/metadata", {{"Authorization", "Bearer admin-token-123"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["data"].dump(),
            R"({"DCGM_FI_DEV_GPU_TEMP":[{"help":"GPU temperature (in C).\nSecond line.",)"
            R"("type":"gauge","unit":"celsius"}]})");
  EXPECT_EQ(metrics_.remote_write_samples.load(), 0u);
}

TEST_F(RemoteWriteServerTest, UnreadableBodiesAreRefusedAndNothingIsStored) {
  EXPECT_EQ(Send("/api/v1/write", Body(TwoGpus()), "admin-token-123", "").status, 415);
  EXPECT_EQ(Send("/api/v1/write", Body(TwoGpus()), "admin-token-123", "gzip").status, 415);
  const test::HttpReply bad = Send("/api/v1/write", "garbage");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("snappy"), std::string::npos) << bad.body;
  EXPECT_EQ(client_->Get("/api/v1/write").status, 405);
  EXPECT_FALSE(Query("SHOW MEASUREMENTS").contains("series"));
}

TEST_F(RemoteWriteServerTest, APartialWriteStoresTheRestAndAnswers400) {
  prompb::WriteRequest request = TwoGpus();
  AddSeries(&request, {{"job", "dcgm"}}, {{1, 1'700'000'000'000}});
  const test::HttpReply r = Send("/api/v1/write?measurement=dcgm", Body(request));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"],
            "partial write: 4 points written; 1 samples of series without a metric name (series "
            "{job=\"dcgm\"} has no metric name (__name__))");
  EXPECT_EQ(Query("SELECT count(DCGM_FI_DEV_GPU_TEMP) FROM dcgm")["series"][0]["values"][0][1], 4);
}

TEST_F(RemoteWriteServerTest, StaleMarkersEndNothingStoredAndAreCounted) {
  prompb::WriteRequest request;
  AddSeries(&request, {{"__name__", "up"}, {"job", "dcgm"}},
            {{1, 1'700'000'000'000}, {StaleNaN(), 1'700'000'015'000}});
  ASSERT_EQ(Send("/api/v1/write", Body(request)).status, 204);
  EXPECT_EQ(Query("SELECT count(up), mean(up) FROM prometheus")["series"][0]["values"].dump(),
            R"([["1970-01-01T00:00:00Z",1,1]])");
  EXPECT_EQ(metrics_.remote_write_stale_markers.load(), 1u);
}

// A token scoped to dbA writes only there: the request's database wins over
// a series' own db label, and naming another database is refused.
TEST_F(RemoteWriteServerTest, ATokenWritesOnlyItsDatabase) {
  prompb::WriteRequest request;
  AddSeries(&request, {{"__name__", "up"}, {"db", "dbB"}, {"job", "dcgm"}},
            {{1, 1'700'000'000'000}});
  EXPECT_EQ(Send("/api/v1/write?db=dbB", Body(request), "writeA-token-123").status, 403);
  EXPECT_EQ(Send("/api/v1/write", Body(request), "no-such-token").status, 401);
  ASSERT_EQ(Send("/api/v1/write", Body(request), "writeA-token-123").status, 204);
  const json result = Query("SELECT up FROM prometheus GROUP BY db, exported_db");
  ASSERT_EQ(result["series"].size(), 1u) << result.dump();
  EXPECT_EQ(result["series"][0]["tags"]["db"], "dbA");
  EXPECT_EQ(result["series"][0]["tags"]["exported_db"], "dbB");
}

}  // namespace
}  // namespace gpulse
