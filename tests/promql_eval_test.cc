// PromQL over what gpulse stores, through /api/v1/query and
// /api/v1/query_range: line protocol's field f of measurement m is the
// metric m_f, string fields are labels at their time, a token sees only its
// databases, and Prometheus' envelope and error codes come back. (Prometheus
// semantics themselves are checked against the real Prometheus by
// tests/clients/promql_diff.py.)

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/config.h"
#include "server/http_api.h"
#include "server/metrics.h"
#include "server/sources.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/served_test.h"
#include "tests/support/test_server.h"

namespace gpulse {
namespace {

using json = nlohmann::json;

class PromqlEvalTest : public test::ServedTest {
 protected:
  void SetUp() override {
    config_.tokens = {{"admin", "admin-token-123", {"*"}, {"*"}},
                      {"readerA", "readA-token-123", {"dbA"}, {}}};
    StartServer();
  }

  void Write(const std::string& db, const std::string& lines) {
    const test::HttpReply r = client_->Post("/write?precision=s&db=" + db, lines,
                                            {{"Authorization", "Token admin-token-123"}});
    ASSERT_EQ(r.status, 204) << r.body;
  }

  test::HttpReply Ask(const std::string& path, const std::string& query,
                      const std::string& rest = "&time=600",
                      const std::string& token = "admin-token-123") {
    return client_->Get(path + "?query=" + server::PercentEncode(query) + rest,
                        {{"Authorization", "Bearer " + token}});
  }

  // The result of an instant query that must succeed.
  json Result(const std::string& query, const std::string& rest = "&time=600") {
    const test::HttpReply r = Ask("/api/v1/query", query, rest);
    EXPECT_EQ(r.status, 200) << r.body;
    const json body = json::parse(r.body);
    EXPECT_EQ(body["status"], "success");
    return body["data"]["result"];
  }
};

TEST_F(PromqlEvalTest, ALineProtocolFieldIsTheMetricMeasurementUnderscoreField) {
  Write("dbA", "gpu,host=a,gpu=0 util=50,temp=61i 540\ngpu,host=a,gpu=1 util=70,temp=65i 540");
  const json r = Result("gpu_util{gpu=\"1\"}");
  EXPECT_EQ(r.dump(), R"([{"metric":{"__name__":"gpu_util","db":"dbA","gpu":"1","host":"a"},)"
                      R"("value":[600,"70"]}])");
  // An integer field is a float sample like any other; the name as such is
  // no metric.
  EXPECT_EQ(Result("sum(gpu_temp)")[0]["value"][1], "126");
  EXPECT_TRUE(Result("util").empty());
  EXPECT_EQ(Result("count({__name__=~\"gpu_.*\"})")[0]["value"][1], "4");
}

TEST_F(PromqlEvalTest, StringFieldsAreLabelsOfTheSamplesTheyAccompany) {
  // GPU 0 runs pod p1, then p2: one stored series, two PromQL series, and a
  // sum by pod without a series per pod in the catalog.
  Write("dbA",
        "gpu,host=a,gpu=0 util=10,pod=\"p1\" 60\ngpu,host=a,gpu=0 util=20,pod=\"p1\" 120\n"
        "gpu,host=a,gpu=0 util=90,pod=\"p2\" 180\ngpu,host=a,gpu=1 util=40,pod=\"p2\" 180");
  // At 180 s p2 runs on both GPUs: p1's series ended when GPU 0's pod
  // changed, as a series that leaves a scrape ends in Prometheus.
  const json by_pod = Result("sum by (pod) (gpu_util)", "&time=180");
  ASSERT_EQ(by_pod.size(), 1u) << by_pod.dump();
  EXPECT_EQ(by_pod[0].dump(), R"({"metric":{"pod":"p2"},"value":[180,"130"]})");
  const json over_time = Result("sum by (pod) (max_over_time(gpu_util[5m]))", "&time=180");
  ASSERT_EQ(over_time.size(), 2u) << over_time.dump();
  for (const json& s : over_time) {
    EXPECT_EQ(s["value"][1], s["metric"]["pod"] == "p1" ? "20" : "130") << s.dump();
  }
  EXPECT_EQ(Result("gpu_util{pod=\"p1\"}", "&time=150").size(), 1u);
}

TEST_F(PromqlEvalTest, ARangeQueryAnswersAMatrixAtTheSteps) {
  Write("dbA", "gpu,host=a util=1 0\ngpu,host=a util=2 60\ngpu,host=a util=3 120");
  const test::HttpReply r =
      Ask("/api/v1/query_range", "gpu_util * 10", "&start=0&end=150&step=30s");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["data"].dump(),
            R"({"result":[{"metric":{"db":"dbA","host":"a"},"values":[[0,"10"],[30,"10"],)"
            R"([60,"20"],[90,"20"],[120,"30"],[150,"30"]]}],"resultType":"matrix"})");
  // An instant query of a range vector gives its samples.
  const json raw = Result("gpu_util[1m]", "&time=120");
  EXPECT_EQ(raw[0]["values"].dump(), R"([[60,"2"],[120,"3"]])");
}

TEST_F(PromqlEvalTest, ErrorsUsePrometheusCodes) {
  Write("dbA", "gpu,host=a,gpu=0 util=1 0\ngpu,host=b,gpu=0 util=2 0");
  const test::HttpReply parse = Ask("/api/v1/query", "sum(gpu_util");
  EXPECT_EQ(parse.status, 400);
  EXPECT_EQ(json::parse(parse.body)["errorType"], "bad_data");
  EXPECT_NE(parse.body.find("column 13"), std::string::npos) << parse.body;
  // gpu=0 twice on the right: many-to-many.
  const test::HttpReply exec = Ask("/api/v1/query", "gpu_util + on(gpu) gpu_util", "&time=0");
  EXPECT_EQ(exec.status, 422) << exec.body;
  EXPECT_EQ(json::parse(exec.body)["errorType"], "execution");
  EXPECT_EQ(Ask("/api/v1/query_range", "1", "&start=0&end=100000&step=1").status, 400);
  EXPECT_EQ(Ask("/api/v1/query_range", "gpu_util[5m]", "&start=0&end=60&step=15").status, 400);
  EXPECT_EQ(Ask("/api/v1/query", "1", "&time=yesterday").status, 400);
  EXPECT_EQ(Ask("/api/v1/query", "1", "&time=1e12").status, 400);  // past the year 5000
  // Durations near int64's end read nothing, and a subquery of too many
  // steps is refused rather than run.
  EXPECT_TRUE(Result("gpu_util offset 100000000y", "&time=0").empty());
  EXPECT_EQ(Result("count_over_time(gpu_util[100000000y])", "&time=0").size(), 2u);
  const test::HttpReply steps = Ask("/api/v1/query", "max_over_time(gpu_util[1y:1ms])");
  EXPECT_EQ(steps.status, 422) << steps.body;
  EXPECT_NE(steps.body.find("11,000,000 steps"), std::string::npos) << steps.body;
}

TEST_F(PromqlEvalTest, ATokenSeesOnlyItsDatabases) {
  Write("dbA", "gpu,host=a util=1 0");
  Write("dbB", "gpu,host=b util=2 0");
  EXPECT_EQ(Result("count(gpu_util)", "&time=0")[0]["value"][1], "2");
  const test::HttpReply a = Ask("/api/v1/query", "gpu_util", "&time=0", "readA-token-123");
  ASSERT_EQ(a.status, 200) << a.body;
  const json seen = json::parse(a.body)["data"]["result"];
  ASSERT_EQ(seen.size(), 1u) << seen.dump();
  EXPECT_EQ(seen[0]["metric"]["host"], "a");
  EXPECT_EQ(Ask("/api/v1/query", "gpu_util", "&time=0&db=dbB", "readA-token-123").status, 403);
  EXPECT_EQ(Ask("/api/v1/query", "gpu_util", "&time=0", "no-such-token").status, 401);
}

// /api/v1/series, /api/v1/labels, /api/v1/label/<name>/values: what the
// metric browser and Grafana's template variables call.
TEST_F(PromqlEvalTest, TheListingsNameWhatQueriesSee) {
  Write("dbA", "gpu,host=a,gpu=0 util=1,pod=\"p1\" 60\ngpu,host=a,gpu=0 util=2,pod=\"p2\" 120");
  Write("dbB", "gpu,host=b util=3 60");
  const auto data = [&](const std::string& target, const std::string& token = "admin-token-123") {
    const test::HttpReply r = client_->Get(target, {{"Authorization", "Bearer " + token}});
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    return json::parse(r.body)["data"];
  };
  EXPECT_EQ(data("/api/v1/series?match[]=gpu_util&start=0&end=200").dump(),
            R"([{"__name__":"gpu_util","db":"dbA","gpu":"0","host":"a","pod":"p1"},)"
            R"({"__name__":"gpu_util","db":"dbA","gpu":"0","host":"a","pod":"p2"},)"
            R"({"__name__":"gpu_util","db":"dbB","host":"b"}])");
  // Only the series with samples in the range; match[]s are a union.
  EXPECT_EQ(data("/api/v1/series?match[]=gpu_util&start=100&end=200").dump(),
            R"([{"__name__":"gpu_util","db":"dbA","gpu":"0","host":"a","pod":"p2"}])");
  EXPECT_EQ(
      data("/api/v1/series?match[]=gpu_util{host=%22b%22}&match[]=gpu_util{pod=%22p1%22}").size(),
      2u);
  EXPECT_EQ(data("/api/v1/series?match[]=gpu_util&limit=1").size(), 1u);
  EXPECT_EQ(data("/api/v1/labels").dump(), R"(["__name__","db","gpu","host","pod"])");
  EXPECT_EQ(data("/api/v1/labels?match[]=gpu_util{host=%22b%22}").dump(),
            R"(["__name__","db","host"])");
  EXPECT_EQ(data("/api/v1/label/__name__/values").dump(), R"(["gpu_util"])");
  EXPECT_EQ(data("/api/v1/label/pod/values").dump(), R"(["p1","p2"])");
  EXPECT_EQ(data("/api/v1/label/host/values").dump(), R"(["a","b"])");
  EXPECT_EQ(data("/api/v1/label/host/values?match[]=gpu_util{pod=%22p2%22}").dump(), R"(["a"])");
  // A token of dbA sees dbA alone, without its db label.
  EXPECT_EQ(data("/api/v1/label/host/values", "readA-token-123").dump(), R"(["a"])");
  EXPECT_EQ(data("/api/v1/labels", "readA-token-123").dump(), R"(["__name__","gpu","host","pod"])");
  EXPECT_EQ(client_->Get("/api/v1/series", {{"Authorization", "Bearer admin-token-123"}}).status,
            400);
  const test::HttpReply bad = client_->Get("/api/v1/series?match[]=gpu_util{",
                                           {{"Authorization", "Bearer admin-token-123"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["errorType"], "bad_data");
}

}  // namespace
}  // namespace gpulse
