// The Prometheus API endpoints that need no PromQL, on a loopback port: what
// Grafana's Prometheus data source reads of the server (buildinfo), empty
// exemplars, and the health and readiness probes, none of which needs a
// token.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/config.h"
#include "server/metrics.h"
#include "server/sources.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/served_test.h"
#include "tests/support/test_server.h"

namespace gpulse {
namespace {

using json = nlohmann::json;

class PromApiTest : public test::ServedTest {
 protected:
  void SetUp() override {
    config_.tokens = {{"admin", "admin-token-123", {"*"}, {"*"}}};
    StartServer();
  }
};

TEST_F(PromApiTest, BuildInfoNamesAPrometheusVersionAndNoFeatures) {
  const test::HttpReply r = client_->Get("/api/v1/status/buildinfo");
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  EXPECT_EQ(body["status"], "success");
  EXPECT_EQ(body["data"]["version"], "2.42.0");
  EXPECT_EQ(body["data"]["revision"], std::string("gpulse ") + Version());
  EXPECT_FALSE(body["data"].contains("features"));
  EXPECT_EQ(client_->Post("/api/v1/status/buildinfo", "").status, 405);
}

TEST_F(PromApiTest, ExemplarsAreEmptyAndTheProbesAnswer) {
  const test::HttpReply ex = client_->Get("/api/v1/query_exemplars?query=up&start=0&end=1");
  ASSERT_EQ(ex.status, 200);
  EXPECT_EQ(json::parse(ex.body), json::parse(R"({"status":"success","data":[]})"));
  const test::HttpReply healthy = client_->Get("/-/healthy");
  EXPECT_EQ(healthy.status, 200);
  EXPECT_EQ(healthy.body, "gpulse is Healthy.\n");
  const test::HttpReply ready = client_->Get("/-/ready");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "gpulse is Ready.\n");
}

}  // namespace
}  // namespace gpulse
