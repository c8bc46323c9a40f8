// Prometheus remote write and remote read. Write: request bodies decoded
// into points (ingest/remote_write.h), and /api/v1/write on a loopback
// port: 204, the samples stored as the scrape mapping stores them,
// 400/413/415 for bodies that cannot be read, a partial write's 400, stale
// markers kept apart (PromQL ends the series there; InfluxQL does not see
// them), and token scopes. Read (server/prom_remote_read.h): /api/v1/read's
// SAMPLES and STREAMED_XOR_CHUNKS answers, read back here with a decoder of
// Prometheus' frame and XOR chunk formats written from their description,
// and its refusals.

#include <gtest/gtest.h>
#include <snappy.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <bit>
#include <boost/crc.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ingest/remote_write.h"
#include "prompb.pb.h"
#include "server/config.h"
#include "server/http_api.h"
#include "server/metrics.h"
#include "server/prom_remote_read.h"
#include "server/sources.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/served_test.h"
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
      } else if (const auto* flag = std::get_if<bool>(&f.value)) {
        p.fields.push_back({std::string(f.key), *flag});
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

// A stale marker is the bool field __stale__.<metric> of the point at its
// time, without the series' attribution labels; another NaN is a value.
TEST(RemoteWriteDecodeTest, StaleMarkersAreKeptApartAndOtherNaNsAreValues) {
  prompb::WriteRequest request;
  AddSeries(&request, {{"__name__", "up"}, {"job", "dcgm"}, {"pod", "train-7"}},
            {{1, 1000}, {StaleNaN(), 2000}, {std::nan(""), 3000}});
  std::vector<Point> points;
  ingest::RemoteWriteStats stats;
  ASSERT_TRUE(Decode(Body(request), 1 << 20, {}, &points, &stats).ok());
  EXPECT_EQ(stats.samples, 3u);
  EXPECT_EQ(stats.stale_markers, 1u);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].measurement, "prometheus");  // the default
  EXPECT_EQ(points[0].timestamp_ns, 1'000'000'000);
  EXPECT_NE(FieldOf(points[0], "pod"), nullptr);
  EXPECT_EQ(points[1].timestamp_ns, 2'000'000'000);
  ASSERT_EQ(points[1].fields.size(), 1u);
  EXPECT_EQ(points[1].fields[0].key, "__stale__.up");
  EXPECT_EQ(std::get<bool>(points[1].fields[0].value), true);
  EXPECT_EQ(points[2].timestamp_ns, 3'000'000'000);
  const FieldValue* nan = FieldOf(points[2], "up");
  ASSERT_NE(nan, nullptr);
  EXPECT_TRUE(std::isnan(std::get<double>(*nan)));
  EXPECT_FALSE(ingest::IsStaleMarker(std::get<double>(*nan)));
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

// A WriteRequest of TimeSeries messages given as bytes (each may be two
// messages concatenated, which protobuf merges: fields in any order).
std::string RawRequest(const std::vector<std::string>& series) {
  std::string raw;
  {  // the streams trim `raw` to what was written when they close
    google::protobuf::io::StringOutputStream stream(&raw);
    google::protobuf::io::CodedOutputStream out(&stream);
    for (const std::string& bytes : series) {
      out.WriteTag(google::protobuf::internal::WireFormatLite::MakeTag(
          1, google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
      out.WriteVarint32(static_cast<uint32_t>(bytes.size()));
      out.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
    }
  }
  return raw;
}

// The bytes of one TimeSeries: `first`'s labels and samples, then `then`'s.
std::string SplitSeries(const Labels& first, const Samples& samples, const Labels& then) {
  prompb::WriteRequest a, b;
  AddSeries(&a, first, samples);
  AddSeries(&b, then, {});
  return a.timeseries(0).SerializeAsString() + b.timeseries(0).SerializeAsString();
}

// A series whose labels after __name__ are the series' before it, byte for
// byte, is read as that run (ReadSeries' fast path); one that has a label
// more, one less, or __name__ not first is read label by label, and each
// keeps its own tags.
TEST(RemoteWriteDecodeTest, ALabelSetLikeThePreviousOnesButNotEqualKeepsItsOwnTags) {
  prompb::WriteRequest request;
  const Labels gpu_job = {{"gpu", "0"}, {"job", "x"}};
  const auto with = [](const char* name, Labels rest) {
    rest.insert(rest.begin(), {"__name__", name});
    return rest;
  };
  AddSeries(&request, with("a", gpu_job), {{1, 1000}});
  AddSeries(&request, with("b", gpu_job), {{2, 1000}});     // the run: one point with a
  AddSeries(&request, with("b2", gpu_job), {{2.5, 1000}});  // the run of a run
  AddSeries(&request, with("c", {{"gpu", "0"}, {"job", "x"}, {"zone", "z"}}), {{3, 1000}});
  AddSeries(&request, with("h", {{"gpu", "0"}, {"job", "x"}, {"zone", "z"}}), {{4, 1000}});
  AddSeries(&request, with("d", {{"gpu", "0"}}), {{5, 1000}});
  AddSeries(&request, {{"job", "y"}}, {{6, 1000}});  // nameless: left out
  AddSeries(&request, with("f", gpu_job), {{7, 1000}});
  AddSeries(&request, {{"Zone", "1"}, {"__name__", "g"}}, {{8, 1000}});
  AddSeries(&request, {{"Zone", "1"}, {"__name__", "i"}}, {{9, 1000}});
  AddSeries(&request, with("k", gpu_job), {{11, 1000}});
  // A series whose run matches and is followed by a sample, then a label
  // more: the labels of a message may come in any order, and Prometheus'
  // own decoder merges them (a second TimeSeries message, concatenated).
  const std::string raw =
      request.SerializeAsString() +
      RawRequest({SplitSeries(with("j", gpu_job), {{10, 1000}}, {{"zone", "z"}})});
  std::string body;
  snappy::Compress(raw.data(), raw.size(), &body);
  std::vector<Point> points;
  ingest::RemoteWriteStats stats;
  ASSERT_TRUE(Decode(body, 1 << 20, {}, &points, &stats).ok());
  EXPECT_EQ(stats.nameless, 1u);
  EXPECT_EQ(stats.series, 12u);
  std::map<std::string, std::map<std::string, double>> fields_by_tags;
  for (const Point& p : points) {
    std::string tags;
    for (const Tag& t : p.tags) tags += t.key + "=" + t.value + ",";
    for (const Field& f : p.fields) fields_by_tags[tags][f.key] = std::get<double>(f.value);
  }
  const std::map<std::string, std::map<std::string, double>> want = {
      {"gpu=0,job=x,", {{"a", 1}, {"b", 2}, {"b2", 2.5}, {"f", 7}, {"k", 11}}},
      {"gpu=0,job=x,zone=z,", {{"c", 3}, {"h", 4}, {"j", 10}}},
      {"gpu=0,", {{"d", 5}}},
      {"Zone=1,", {{"g", 8}, {"i", 9}}},
  };
  EXPECT_EQ(fields_by_tags, want);
  EXPECT_EQ(points.size(), 4u);
}

// Two series whose bytes after __name__ are alike but hold a sample between
// their labels: the run is not labels alone, so each series' sample is read.
TEST(RemoteWriteDecodeTest, ASampleBetweenLabelsIsReadWhenTheBytesRepeat) {
  const std::string raw =
      RawRequest({SplitSeries({{"__name__", "m1"}, {"a", "1"}}, {{1, 1000}}, {{"b", "2"}}),
                  SplitSeries({{"__name__", "m2"}, {"a", "1"}}, {{1, 1000}}, {{"b", "2"}})});
  std::string body;
  snappy::Compress(raw.data(), raw.size(), &body);
  std::vector<Point> points;
  ingest::RemoteWriteStats stats;
  ASSERT_TRUE(Decode(body, 1 << 20, {}, &points, &stats).ok());
  EXPECT_EQ(stats.samples, 2u);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(*TagOf(points[0], "a"), "1");
  EXPECT_EQ(*TagOf(points[0], "b"), "2");
  ASSERT_NE(FieldOf(points[0], "m1"), nullptr);
  ASSERT_NE(FieldOf(points[0], "m2"), nullptr);
}
class RemoteWriteServerTest : public test::ServedTest {
 protected:
  void SetUp() override {
    config_.tokens = {{"admin", "admin-token-123", {"*"}, {"*"}},
                      {"wA", "writeA-token-123", {}, {"dbA"}}};
    StartServer();
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

// PromQL's `up` at `seconds`, as {"labels": value} text.
std::string InstantAt(test::HttpClient& client, const std::string& query, int64_t seconds) {
  const test::HttpReply r = client.Get(
      "/api/v1/query?time=" + std::to_string(seconds) + "&query=" + server::PercentEncode(query),
      {{"Authorization", "Bearer admin-token-123"}});
  EXPECT_EQ(r.status, 200) << r.body;
  const json answer = json::parse(r.body);
  std::string out;
  for (const json& s : answer["data"]["result"]) {
    out += s["metric"].dump() + "=" + s["value"][1].get<std::string>() + " ";
  }
  return out;
}

// A stale marker ends the series for PromQL at its time (not 5 minutes
// after its last sample), counted; InfluxQL neither lists nor reads it.
TEST_F(RemoteWriteServerTest, StaleMarkersEndTheSeriesForPromQLAndInfluxQLNeverSeesThem) {
  prompb::WriteRequest request;
  AddSeries(&request, {{"__name__", "up"}, {"job", "dcgm"}},
            {{1, 1'700'000'000'000}, {StaleNaN(), 1'700'000'015'000}});
  ASSERT_EQ(Send("/api/v1/write", Body(request)).status, 204);
  EXPECT_EQ(metrics_.remote_write_stale_markers.load(), 1u);
  EXPECT_EQ(Query("SELECT count(up), mean(up) FROM prometheus")["series"][0]["values"].dump(),
            R"([["1970-01-01T00:00:00Z",1,1]])");
  EXPECT_EQ(Query("SELECT * FROM prometheus")["series"][0]["values"].size(), 1u);
  EXPECT_EQ(Query("SHOW FIELD KEYS FROM prometheus")["series"][0]["values"].dump(),
            R"([["up","float"]])");
  EXPECT_EQ(InstantAt(*client_, "up", 1'700'000'010), R"({"__name__":"up","job":"dcgm"}=1 )");
  EXPECT_EQ(InstantAt(*client_, "up", 1'700'000'015), "");
  EXPECT_EQ(InstantAt(*client_, "count_over_time(up[1m])", 1'700'000'030), R"({"job":"dcgm"}=1 )");
  EXPECT_EQ(InstantAt(*client_, "{__name__=~\"__stale__.*\"}", 1'700'000'015), "");
}

// One GPU whose pod changes: Prometheus ends {pod="a"} with a stale marker
// at the scrape where {pod="b"} begins, then {pod="b"} ends too. Each
// series is seen until its own marker.
TEST_F(RemoteWriteServerTest, AStaleMarkerEndsTheSeriesOfItsOwnLabels) {
  constexpr int64_t t0 = 1'700'000'000'000;
  prompb::WriteRequest request;
  AddSeries(&request, {{"__name__", "util"}, {"gpu", "0"}, {"pod", "a"}},
            {{10, t0}, {11, t0 + 15'000}, {StaleNaN(), t0 + 30'000}});
  AddSeries(&request, {{"__name__", "util"}, {"gpu", "0"}, {"pod", "b"}},
            {{20, t0 + 30'000}, {21, t0 + 45'000}, {StaleNaN(), t0 + 60'000}});
  ASSERT_EQ(Send("/api/v1/write?measurement=dcgm", Body(request)).status, 204);
  EXPECT_EQ(InstantAt(*client_, "util", 1'700'000'020),
            R"({"__name__":"util","gpu":"0","pod":"a"}=11 )");
  EXPECT_EQ(InstantAt(*client_, "util", 1'700'000'050),
            R"({"__name__":"util","gpu":"0","pod":"b"}=21 )");
  EXPECT_EQ(InstantAt(*client_, "util", 1'700'000'060), "");
  EXPECT_EQ(Query("SELECT util, pod FROM dcgm")["series"][0]["values"].dump(),
            R"([["2023-11-14T22:13:20Z",10,"a"],["2023-11-14T22:13:35Z",11,"a"],)"
            R"(["2023-11-14T22:13:50Z",20,"b"],["2023-11-14T22:14:05Z",21,"b"]])");
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

// --- remote read ---

// Prometheus' XOR chunk read back, from the format's description (a
// big-endian count; varint first time, 64-bit first value; uvarint delta;
// then deltas of deltas behind 0, 10, 110, 1110, 1111 in 0, 14, 17, 20, 64
// bits; values as XORs behind 0, 10 (the previous window) or 11 (5 bits of
// leading zeros, 6 of length)).
class ChunkReader {
 public:
  explicit ChunkReader(const std::string& data) : data_(data) {}

  bool Read(std::vector<int64_t>* times, std::vector<uint64_t>* values) {
    if (data_.size() < 2) return false;
    const size_t n =
        static_cast<size_t>((static_cast<uint8_t>(data_[0]) << 8) | static_cast<uint8_t>(data_[1]));
    bit_ = 16;
    int64_t t = 0;
    uint64_t v = 0, delta = 0;
    int leading = 0, trailing = 0;
    for (size_t i = 0; i < n; ++i) {
      if (i == 0) {
        const uint64_t z = Uvarint();
        t = static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
        v = Bits(64);
      } else {
        if (i == 1) {
          delta = Uvarint();
        } else {
          int prefix = 0;
          while (prefix < 4 && Bits(1) == 1) ++prefix;
          static constexpr int kWidth[] = {0, 14, 17, 20, 64};
          int64_t dod = 0;
          if (prefix > 0) {
            const int w = kWidth[prefix];
            uint64_t raw = Bits(w);
            if (w < 64 && raw > (uint64_t{1} << (w - 1))) raw -= uint64_t{1} << w;
            dod = static_cast<int64_t>(raw);
          }
          delta = static_cast<uint64_t>(static_cast<int64_t>(delta) + dod);
        }
        t += static_cast<int64_t>(delta);
        if (Bits(1) == 1) {
          if (Bits(1) == 1) {
            leading = static_cast<int>(Bits(5));
            int length = static_cast<int>(Bits(6));
            if (length == 0) length = 64;
            trailing = 64 - leading - length;
          }
          v ^= Bits(64 - leading - trailing) << trailing;
        }
      }
      if (bit_ > data_.size() * 8) return false;
      times->push_back(t);
      values->push_back(v);
    }
    return true;
  }

 private:
  uint64_t Bits(int n) {
    uint64_t out = 0;
    for (int i = 0; i < n; ++i, ++bit_) {
      const size_t byte = bit_ / 8;
      const int b =
          byte < data_.size() ? (static_cast<uint8_t>(data_[byte]) >> (7 - bit_ % 8)) & 1 : 0;
      out = (out << 1) | static_cast<uint64_t>(b);
    }
    return out;
  }
  uint64_t Uvarint() {
    uint64_t out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint64_t b = Bits(8);
      out |= (b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    return out;
  }

  const std::string& data_;
  size_t bit_ = 0;
};

uint64_t BitsOf(double v) { return std::bit_cast<uint64_t>(v); }

// A series as read back: labels as text, samples' times and value bits.
struct ReadSeries {
  std::string labels;
  std::vector<int64_t> times;
  std::vector<uint64_t> values;
  friend bool operator==(const ReadSeries&, const ReadSeries&) = default;
};

std::string LabelText(const google::protobuf::RepeatedPtrField<prompb::Label>& labels) {
  std::string out;
  for (const prompb::Label& l : labels) out += l.name() + "=" + l.value() + ",";
  return out;
}

prompb::ReadRequest ReadOf(std::vector<prompb::LabelMatcher> matchers, int64_t start, int64_t end,
                           bool streamed) {
  prompb::ReadRequest request;
  prompb::Query* q = request.add_queries();
  q->set_start_timestamp_ms(start);
  q->set_end_timestamp_ms(end);
  for (auto& m : matchers) *q->add_matchers() = std::move(m);
  if (streamed) request.add_accepted_response_types(prompb::ReadRequest::STREAMED_XOR_CHUNKS);
  return request;
}

prompb::LabelMatcher MatcherOf(prompb::LabelMatcher::Type type, const std::string& name,
                               const std::string& value) {
  prompb::LabelMatcher m;
  m.set_type(type);
  m.set_name(name);
  m.set_value(value);
  return m;
}

class RemoteReadTest : public RemoteWriteServerTest {
 protected:
  test::HttpReply Read(const prompb::ReadRequest& request,
                       const std::string& target = "/api/v1/read",
                       const std::string& token = "admin-token-123") {
    std::string body;
    snappy::Compress(request.SerializeAsString().data(), request.ByteSizeLong(), &body);
    return client_->Post(target, body,
                         {{"Content-Type", "application/x-protobuf"},
                          {"Content-Encoding", "snappy"},
                          {"X-Prometheus-Remote-Read-Version", "0.1.0"},
                          {"Authorization", "Bearer " + token}});
  }

  // A SAMPLES answer's series of its one query.
  std::vector<ReadSeries> Samples(const prompb::ReadRequest& request) {
    const test::HttpReply r = Read(request);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.at("Content-Type"), "application/x-protobuf");
    EXPECT_EQ(r.headers.at("Content-Encoding"), "snappy");
    std::string bytes;
    EXPECT_TRUE(snappy::Uncompress(r.body.data(), r.body.size(), &bytes));
    prompb::ReadResponse response;
    EXPECT_TRUE(response.ParseFromString(bytes));
    std::vector<ReadSeries> out;
    if (response.results_size() != 1) {
      ADD_FAILURE() << response.results_size() << " results";
      return out;
    }
    for (const prompb::TimeSeries& ts : response.results(0).timeseries()) {
      ReadSeries& s = out.emplace_back();
      s.labels = LabelText(ts.labels());
      for (const prompb::Sample& smp : ts.samples()) {
        s.times.push_back(smp.timestamp());
        s.values.push_back(BitsOf(smp.value()));
      }
    }
    return out;
  }

  // A STREAMED_XOR_CHUNKS answer's series (a series cut over frames joined),
  // every frame's CRC and every chunk's bounds checked; *chunks counts them.
  std::vector<ReadSeries> Streamed(const prompb::ReadRequest& request, size_t* chunks = nullptr) {
    const test::HttpReply r = Read(request);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers.at("Content-Type"),
              "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse");
    std::vector<ReadSeries> out;
    size_t at = 0, count = 0;
    while (at < r.body.size()) {
      uint64_t length = 0;
      for (int shift = 0; at < r.body.size(); shift += 7) {
        const auto b = static_cast<uint8_t>(r.body[at++]);
        length |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (b < 0x80) break;
      }
      if (at + 4 + length > r.body.size()) {
        ADD_FAILURE() << "a frame runs past the body";
        break;
      }
      uint32_t crc = 0;
      for (int i = 0; i < 4; ++i) crc = (crc << 8) | static_cast<uint8_t>(r.body[at++]);
      const std::string message = r.body.substr(at, length);
      at += length;
      boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> castagnoli;
      castagnoli.process_bytes(message.data(), message.size());
      EXPECT_EQ(castagnoli.checksum(), crc);
      prompb::ChunkedReadResponse frame;
      EXPECT_TRUE(frame.ParseFromString(message));
      EXPECT_EQ(frame.query_index(), 0);
      for (const prompb::ChunkedSeries& cs : frame.chunked_series()) {
        const std::string labels = LabelText(cs.labels());
        if (out.empty() || out.back().labels != labels) out.push_back({labels, {}, {}});
        for (const prompb::Chunk& c : cs.chunks()) {
          ++count;
          EXPECT_EQ(c.type(), prompb::Chunk::XOR);
          std::vector<int64_t> times;
          std::vector<uint64_t> values;
          EXPECT_TRUE(ChunkReader(c.data()).Read(&times, &values));
          EXPECT_LE(times.size(), 120u);
          if (times.empty()) continue;
          EXPECT_EQ(c.min_time_ms(), times.front());
          EXPECT_EQ(c.max_time_ms(), times.back());
          out.back().times.insert(out.back().times.end(), times.begin(), times.end());
          out.back().values.insert(out.back().values.end(), values.begin(), values.end());
        }
      }
    }
    if (chunks != nullptr) *chunks = count;
    return out;
  }
};

TEST(XorChunkTest, OneSampleIsItsTimeAsAVarintAndItsValuesBits) {
  const std::vector<int64_t> times{1000};
  const std::vector<double> values{1.0};
  // Count 1; 1000 zig-zagged is 2000, the uvarint d0 0f; 1.0 is 3ff0....
  EXPECT_EQ(server::EncodeXorChunk(times, values),
            std::string("\x00\x01\xd0\x0f\x3f\xf0\x00\x00\x00\x00\x00\x00", 12));
}

// Times with every width of delta of deltas (each edge of Prometheus'
// ranges), negative and huge ones; values equal, close, far apart, NaN,
// the stale marker, infinities, zeros: each read back bit for bit.
TEST(XorChunkTest, EveryEncodingReadsBackBitForBit) {
  std::vector<int64_t> times{-5000, -4000};
  for (int64_t d : std::initializer_list<int64_t>{0, 1, -1, 8191, 8192, -8191, 8193, 65536, -65535,
                                                  65537, 524288, -524287, 524289, int64_t{1} << 40,
                                                  -(int64_t{1} << 40), 15000, 15000, 15001}) {
    const int64_t last_delta = times[times.size() - 1] - times[times.size() - 2];
    times.push_back(times.back() + last_delta + d);
  }
  std::vector<double> values;
  const double pool[] = {1.5,        1.5,      1.25,      1e300, -0.0,         0.0, std::nan(""),
                         StaleNaN(), INFINITY, -INFINITY, 3.0,   3.0000000001, 42,  1e-300};
  for (size_t i = 0; i < times.size(); ++i) values.push_back(pool[i % std::size(pool)]);
  const std::string chunk = server::EncodeXorChunk(times, values);
  std::vector<int64_t> got_times;
  std::vector<uint64_t> got_values;
  ASSERT_TRUE(ChunkReader(chunk).Read(&got_times, &got_values));
  EXPECT_EQ(got_times, times);
  std::vector<uint64_t> want;
  for (double v : values) want.push_back(BitsOf(v));
  EXPECT_EQ(got_values, want);
}

// Both answers carry the same series, sorted by labels, attribution labels
// and the stale marker included.
TEST_F(RemoteReadTest, SamplesAndStreamedChunksAnswerTheSameSeries) {
  prompb::WriteRequest request = TwoGpus();
  AddSeries(&request,
            {{"__name__", "DCGM_FI_DEV_GPU_TEMP"},
             {"gpu", "1"},
             {"instance", "n1:9400"},
             {"job", "dcgm"}},
            {{StaleNaN(), 1'700'000'030'000}});
  ASSERT_EQ(Send("/api/v1/write?measurement=dcgm", Body(request)).status, 204);
  const auto read = [](bool streamed) {
    return ReadOf({MatcherOf(prompb::LabelMatcher::EQ, "__name__", "DCGM_FI_DEV_GPU_TEMP"),
                   MatcherOf(prompb::LabelMatcher::RE, "gpu", "0|1")},
                  1'700'000'000'000, 1'700'000'060'000, streamed);
  };
  const std::vector<ReadSeries> samples = Samples(read(false));
  const std::vector<ReadSeries> want{
      {"__name__=DCGM_FI_DEV_GPU_TEMP,gpu=0,instance=n1:9400,job=dcgm,pod=train-7,",
       {1'700'000'000'000, 1'700'000'015'000},
       {BitsOf(40), BitsOf(41)}},
      {"__name__=DCGM_FI_DEV_GPU_TEMP,gpu=1,instance=n1:9400,job=dcgm,",
       {1'700'000'000'000, 1'700'000'015'000, 1'700'000'030'000},
       {BitsOf(50), BitsOf(51), BitsOf(StaleNaN())}}};
  EXPECT_EQ(samples, want);
  EXPECT_EQ(Streamed(read(true)), want);
  // The query's range: both ends included.
  const std::vector<ReadSeries> one =
      Samples(ReadOf({MatcherOf(prompb::LabelMatcher::EQ, "gpu", "0"),
                      MatcherOf(prompb::LabelMatcher::NEQ, "__name__", "DCGM_FI_DEV_POWER_USAGE")},
                     1'700'000'015'000, 1'700'000'015'000, false));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].times, std::vector<int64_t>{1'700'000'015'000});
}

// A long series is cut into chunks of 120 samples, in frames of about a
// megabyte: 20,000 samples of noisy values take a few frames.
TEST_F(RemoteReadTest, ALongSeriesComesInChunksOf120AcrossFrames) {
  prompb::WriteRequest request;
  ::gpulse::Samples samples;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20'000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    samples.push_back({static_cast<double>(x % 1'000'000) / 7.0, 1'700'000'000'000 + i * 1000});
  }
  AddSeries(&request, {{"__name__", "noise"}, {"job", "n"}}, samples);
  ASSERT_EQ(Send("/api/v1/write", Body(request)).status, 204);
  size_t chunks = 0;
  const std::vector<ReadSeries> got =
      Streamed(ReadOf({MatcherOf(prompb::LabelMatcher::EQ, "__name__", "noise")}, 0,
                      2'000'000'000'000, true),
               &chunks);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(chunks, 167u);  // 166 of 120 and one of 80
  ASSERT_EQ(got[0].times.size(), samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    ASSERT_EQ(got[0].times[i], samples[i].second) << i;
    ASSERT_EQ(got[0].values[i], BitsOf(samples[i].first)) << i;
  }
}

TEST_F(RemoteReadTest, RequestsItCannotAnswerAreRefusedWithTheReason) {
  ASSERT_EQ(Send("/api/v1/write", Body(TwoGpus())).status, 204);
  const auto up = MatcherOf(prompb::LabelMatcher::EQ, "__name__", "DCGM_FI_DEV_GPU_TEMP");
  // Not snappy; not a ReadRequest; not compressed at all.
  const auto post = [&](const std::string& body, const std::string& encoding) {
    return client_->Post(
        "/api/v1/read", body,
        {{"Content-Encoding", encoding}, {"Authorization", "Bearer admin-token-123"}});
  };
  EXPECT_EQ(post("garbage", "snappy").status, 400);
  std::string junk;
  snappy::Compress("\xff\xff\xff", 3, &junk);
  EXPECT_EQ(post(junk, "snappy").status, 400);
  EXPECT_EQ(post("", "").status, 415);
  // No matcher that selects anything by itself.
  test::HttpReply r = Read(ReadOf({MatcherOf(prompb::LabelMatcher::RE, "gpu", ".*")}, 0, 1, false));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("at least one matcher"), std::string::npos) << r.body;
  r = Read(ReadOf({MatcherOf(prompb::LabelMatcher::RE, "gpu", "(")}, 0, 1, false));
  EXPECT_EQ(r.status, 400);
  // A range that ends before it starts.
  r = Read(ReadOf({up}, 10, 5, false));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("before it starts"), std::string::npos) << r.body;
  // Only a response type gpulse does not have.
  prompb::ReadRequest odd = ReadOf({up}, 0, 1, false);
  odd.add_accepted_response_types(static_cast<prompb::ReadRequest::ResponseType>(7));
  r = Read(odd);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("response type"), std::string::npos) << r.body;
  EXPECT_EQ(Read(ReadOf({up}, 0, 1, false), "/api/v1/read", "no-such-token").status, 401);
  EXPECT_EQ(client_->Get("/api/v1/read").status, 405);
}

// A token that reads one database reads only its series.
TEST_F(RemoteReadTest, ATokenReadsOnlyItsDatabase) {
  config_.tokens.push_back({"rA", "readA-token-123", {"dbA"}, {}});
  ASSERT_TRUE(server_.Stop().ok());
  ASSERT_NO_FATAL_FAILURE(StartServer());
  prompb::WriteRequest request;
  AddSeries(&request, {{"__name__", "up"}, {"job", "x"}}, {{1, 1'700'000'000'000}});
  ASSERT_EQ(Send("/api/v1/write?db=dbA", Body(request)).status, 204);
  ASSERT_EQ(Send("/api/v1/write?db=dbB", Body(request)).status, 204);
  const prompb::ReadRequest read =
      ReadOf({MatcherOf(prompb::LabelMatcher::EQ, "__name__", "up")}, 0, 2'000'000'000'000, false);
  EXPECT_EQ(Samples(read).size(), 2u);  // the admin reads both, db labels apart
  const test::HttpReply r = Read(read, "/api/v1/read", "readA-token-123");
  ASSERT_EQ(r.status, 200) << r.body;
  std::string bytes;
  ASSERT_TRUE(snappy::Uncompress(r.body.data(), r.body.size(), &bytes));
  prompb::ReadResponse response;
  ASSERT_TRUE(response.ParseFromString(bytes));
  ASSERT_EQ(response.results(0).timeseries_size(), 1);
  EXPECT_EQ(LabelText(response.results(0).timeseries(0).labels()), "__name__=up,job=x,");
  EXPECT_EQ(Read(read, "/api/v1/read?db=dbB", "readA-token-123").status, 403);
}

}  // namespace
}  // namespace gpulse
