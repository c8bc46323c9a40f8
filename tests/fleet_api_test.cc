// The fleet's REST API (server/http_api_fleet.cc over query/fleet/nodes.h)
// on a loopback port: nodes with their inventory, driver and status; a
// node's GPUs and series; the latest value of every GPU field; status
// changes with who and why, kept in the audit trail across a restart, and
// a maintenance window that NORTHSTAR leaves out; errors and token scopes.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/served_test.h"

namespace gpulse {
namespace {

using json = nlohmann::json;
using Headers = std::map<std::string, std::string>;
namespace http = boost::beast::http;

const Headers kAdmin{{"Authorization", "Token admin-token-123"}};
const Headers kReadA{{"Authorization", "Token read-a-token-123"}};
const Headers kWriteA{{"Authorization", "Token write-a-token-123"}};

constexpr int64_t kMinuteNs = 60'000'000'000;

class FleetApiTest : public test::ServedTest {
 protected:
  void SetUp() override {
    config_.tokens = {{"admin", "admin-token-123", {"*"}, {"*"}},
                      {"reader", "read-a-token-123", {"dbA"}, {}},
                      {"ops", "write-a-token-123", {"dbA"}, {"dbA"}}};
    ASSERT_NO_FATAL_FAILURE(StartServer());
    // Ten minutes of two nodes in dbA (n2 reports 7 of its 8 GPUs) and one
    // in dbB, ending a minute ago, in whole minutes.
    t0_ = (WallClockNanos() / kMinuteNs - 10) * kMinuteNs;
    std::string a, b;
    for (int m = 0; m < 10; ++m) {
      const std::string t = " " + std::to_string(t0_ + m * kMinuteNs) + "\n";
      for (const char* node : {"n1", "n2"}) {
        const bool short_one = std::string(node) == "n2";
        a += std::string("node,region=us,cluster=us-c0,node=") + node +
             ",sku=H100 gpu_count=" + (short_one ? "7i" : "8i") +
             ",gpu_inventory=8i,healthy=1i,maintenance=0i,driver_version=\"535.183.01\"" + t;
        for (int g = 0; g < 2; ++g) {
          a += std::string("gpu,region=us,cluster=us-c0,node=") + node +
               ",gpu=" + std::to_string(g) + ",sku=H100 util=" + std::to_string(50 + m + g) +
               "i,temp=60i,xid=" + (m == 3 && g == 1 ? "79i" : "0i") + ",job=\"job-7\"" + t;
          // A second point 30 s into the minute: the step's mean is m + g + 50.5.
          a += std::string("gpu,region=us,cluster=us-c0,node=") + node +
               ",gpu=" + std::to_string(g) + ",sku=H100 util=" + std::to_string(51 + m + g) + "i " +
               std::to_string(t0_ + m * kMinuteNs + 30'000'000'000) + "\n";
        }
      }
      b += "node,region=eu,cluster=eu-c0,node=n9,sku=A100 gpu_count=8i,gpu_inventory=8i,"
           "healthy=0i,maintenance=0i" +
           t;
    }
    ASSERT_EQ(client_->Post("/write?db=dbA", a, kAdmin).status, 204);
    ASSERT_EQ(client_->Post("/write?db=dbB", b, kAdmin).status, 204);
  }

  json GetJson(const std::string& target, const Headers& token = kAdmin, int want = 200) {
    const test::HttpReply r = client_->Get(target, token);
    EXPECT_EQ(r.status, want) << target << ": " << r.body;
    return json::parse(r.body, nullptr, false);
  }

  test::HttpReply Put(const std::string& target, const std::string& body,
                      const Headers& token = kAdmin) {
    return client_->Send(http::verb::put, target, body, token);
  }

  int64_t t0_ = 0;
};

TEST_F(FleetApiTest, NodesListTheirPlaceInventoryDriverAndStatus) {
  const json a = GetJson("/api/v1/nodes?db=dbA");
  ASSERT_EQ(a["nodes"].size(), 2u) << a.dump();
  const json& n1 = a["nodes"][0];
  EXPECT_EQ(n1["node"], "n1");
  EXPECT_EQ(n1["database"], "dbA");
  EXPECT_EQ(n1["region"], "us");
  EXPECT_EQ(n1["cluster"], "us-c0");
  EXPECT_EQ(n1["sku"], "H100");
  EXPECT_EQ(n1["gpus_seen"], 8);
  EXPECT_EQ(n1["gpus_expected"], 8);
  EXPECT_EQ(n1["driver"], "535.183.01");
  EXPECT_EQ(n1["status"], "healthy");
  EXPECT_EQ(n1["status_set"], false);
  EXPECT_EQ(n1["active_alerts"], 0);
  EXPECT_GE(n1["last_report_age_s"].get<int64_t>(), 60);
  // A GPU short of the inventory: degraded by the agent's own report.
  EXPECT_EQ(a["nodes"][1]["node"], "n2");
  EXPECT_EQ(a["nodes"][1]["gpus_seen"], 7);
  EXPECT_EQ(a["nodes"][1]["status"], "degraded");
  // Every database, each row naming its own; healthy=0 is degraded too.
  const json all = GetJson("/api/v1/nodes");
  ASSERT_EQ(all["nodes"].size(), 3u);
  EXPECT_EQ(all["nodes"][2]["node"], "n9");
  EXPECT_EQ(all["nodes"][2]["database"], "dbB");
  EXPECT_EQ(all["nodes"][2]["status"], "degraded");
}

TEST_F(FleetApiTest, ANodeShowsItsGpusAndTheirSeries) {
  const json n1 = GetJson("/api/v1/nodes/n1?db=dbA");
  ASSERT_EQ(n1["gpus"].size(), 2u) << n1.dump();
  EXPECT_EQ(n1["gpus"][1]["gpu"], "1");
  EXPECT_EQ(n1["gpus"][1]["latest"]["util"], 51 + 9 + 1);  // the 30 s point of the last minute
  EXPECT_EQ(n1["gpus"][1]["job"], "");                     // that point carried no job
  EXPECT_EQ(n1["alerts"], json::array());
  const std::string start = std::to_string(t0_ / 1'000'000'000);
  const std::string end = std::to_string(t0_ / 1'000'000'000 + 600);
  const json m = GetJson("/api/v1/nodes/n1/metrics?db=dbA&fields=util,xid&start=" + start +
                         "&end=" + end + "&step=1m");
  ASSERT_EQ(m["series"].size(), 4u) << m.dump();  // 2 GPUs x 2 fields
  EXPECT_EQ(m["step_s"], 60);
  const json& util1 = m["series"][2];
  EXPECT_EQ(util1["gpu"], "1");
  EXPECT_EQ(util1["field"], "util");
  ASSERT_EQ(util1["points"].size(), 10u);
  EXPECT_EQ(util1["points"][4][0], static_cast<double>(t0_ / 1'000'000'000 + 240));
  EXPECT_DOUBLE_EQ(util1["points"][4][1].get<double>(), 50.5 + 4 + 1);
  // XIDs are codes: a step shows the largest, not a mean.
  const json& xid1 = m["series"][3];
  EXPECT_EQ(xid1["points"][3][1], 79);
  // A five-minute step averages both minutes' points.
  const json five = GetJson("/api/v1/nodes/n1/metrics?db=dbA&fields=util&start=" + start +
                            "&end=" + end + "&step=300");
  EXPECT_DOUBLE_EQ(five["series"][0]["points"][0][1].get<double>(), 50.5 + 2);
}

TEST_F(FleetApiTest, LatestValuesOfEveryGpuField) {
  const json all = GetJson("/api/v1/metrics/latest?db=dbA&within=1h");
  ASSERT_EQ(all["gpus"].size(), 4u) << all.dump();
  EXPECT_EQ(all["truncated"], false);
  EXPECT_EQ(all["gpus"][0]["node"], "n1");
  EXPECT_EQ(all["gpus"][0]["values"]["util"], 60);
  EXPECT_EQ(all["gpus"][0]["values"]["temp"], 60);
  EXPECT_EQ(all["gpus"][0]["values"]["xid"], 0);
  const json one = GetJson("/api/v1/metrics/latest?db=dbA&within=1h&node=n2&fields=util&limit=1");
  ASSERT_EQ(one["gpus"].size(), 1u);
  EXPECT_EQ(one["truncated"], true);
  EXPECT_EQ(one["gpus"][0]["values"].size(), 1u);
  // Nothing reported in the last ten seconds.
  EXPECT_EQ(GetJson("/api/v1/metrics/latest?db=dbA&within=10s")["gpus"].size(), 0u);
  const json bad = GetJson("/api/v1/metrics/latest?db=dbA&fields=nope", kAdmin, 400);
  EXPECT_EQ(bad["error"], "'nope' is not a numeric field of measurement gpu");
}

TEST_F(FleetApiTest, StatusChangesAreAuditedKeptAndPlanMaintenance) {
  test::HttpReply r =
      Put("/api/v1/nodes/n1/status?db=dbA",
          R"({"status": "maintenance", "reason": "firmware 1.2", "by": "alice"})", kWriteA);
  ASSERT_EQ(r.status, 200) << r.body;
  json change = json::parse(r.body);
  EXPECT_EQ(change["before"], "healthy");
  EXPECT_EQ(change["after"], "maintenance");
  EXPECT_EQ(change["actor"], "alice via token:ops");
  json n1 = GetJson("/api/v1/nodes/n1?db=dbA");
  EXPECT_EQ(n1["status"], "maintenance");
  EXPECT_EQ(n1["status_set"], true);
  EXPECT_EQ(n1["status_reason"], "firmware 1.2");
  // The window NORTHSTAR and BASELINE leave out, open until the node leaves.
  const auto window_ends = [&] {
    const test::HttpReply q = client_->Get(
        "/query?db=dbA&q=" + server::PercentEncode("SELECT \"end\" FROM maintenance"), kAdmin);
    EXPECT_EQ(q.status, 200) << q.body;
    return json::parse(q.body)["results"][0]["series"][0]["values"];
  };
  ASSERT_EQ(window_ends().size(), 1u);
  EXPECT_GT(window_ends()[0][1].get<int64_t>(), WallClockNanos() + 365 * 24 * 60 * kMinuteNs);

  r = Put("/api/v1/nodes/n1/status?db=dbA", R"({"status": "healthy", "reason": "done"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["before"], "maintenance");
  EXPECT_EQ(json::parse(r.body)["actor"], "token:admin");
  EXPECT_LE(window_ends()[0][1].get<int64_t>(), WallClockNanos());
  ASSERT_EQ(
      Put("/api/v1/nodes/n2/status?db=dbA", R"({"status": "degraded", "reason": "ecc"})").status,
      200);
  EXPECT_EQ(GetJson("/api/v1/nodes/n1?db=dbA")["status"], "healthy");

  // The trail outlives a restart: it is data, written through the WAL.
  ASSERT_TRUE(server_.Stop().ok());
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const json trail = GetJson("/api/v1/actions?db=dbA");
  ASSERT_EQ(trail["actions"].size(), 3u) << trail.dump();
  EXPECT_EQ(trail["actions"][0]["node"], "n2");  // newest first
  EXPECT_EQ(trail["actions"][0]["after"], "degraded");
  EXPECT_EQ(trail["actions"][1]["reason"], "done");
  EXPECT_EQ(trail["actions"][2]["action"], "status");
  EXPECT_EQ(trail["actions"][2]["actor"], "alice via token:ops");
  EXPECT_EQ(GetJson("/api/v1/actions?db=dbA&node=n1&limit=1")["actions"].size(), 1u);
  EXPECT_EQ(GetJson("/api/v1/nodes/n2?db=dbA")["status_actor"], "token:admin");
}

TEST_F(FleetApiTest, BadRequestsAreNamed) {
  const auto error = [&](const test::HttpReply& r, int status) {
    EXPECT_EQ(r.status, status) << r.body;
    return json::parse(r.body, nullptr, false).value("error", "");
  };
  EXPECT_EQ(error(client_->Get("/api/v1/nodes/n7?db=dbA", kAdmin), 404), "no node 'n7'");
  EXPECT_EQ(
      error(Put("/api/v1/nodes/n1/status?db=dbA", R"({"status": "broken", "reason": "x"})"), 400),
      "status 'broken' is not healthy, degraded or maintenance");
  EXPECT_NE(error(Put("/api/v1/nodes/n1/status?db=dbA", R"({"status": "degraded"})"), 400)
                .find("reason is required"),
            std::string::npos);
  EXPECT_NE(error(Put("/api/v1/nodes/n1/status?db=dbA", "degraded"), 400).find("JSON object"),
            std::string::npos);
  EXPECT_EQ(error(client_->Get("/api/v1/nodes/n1/metrics?db=dbA&start=200&end=100", kAdmin), 400),
            "end must be after start");
  EXPECT_NE(
      error(client_->Get("/api/v1/nodes/n1/metrics?db=dbA&start=0&end=1000000&step=1", kAdmin), 400)
          .find("more than 11000 steps"),
      std::string::npos);
  EXPECT_EQ(error(client_->Get("/api/v1/nodes/n1/metrics?db=dbA&start=yesterday", kAdmin), 400),
            "bad start 'yesterday': Unix seconds or RFC 3339 (2026-11-01T00:00:00Z)");
  EXPECT_EQ(error(client_->Get("/api/v1/nodes/n1/gpus?db=dbA", kAdmin), 404),
            "no such endpoint: /api/v1/nodes/n1/gpus (see docs/http-api.md)");
  EXPECT_EQ(client_->Post("/api/v1/nodes", "", kAdmin).status, 405);
  EXPECT_EQ(client_->Get("/api/v1/nodes/n1/status?db=dbA", kAdmin).status, 405);
  EXPECT_EQ(error(client_->Get("/api/v1/actions?limit=0", kAdmin), 400),
            "bad limit '0': a whole number from 1 to 100000");
  // A node of the same name in two databases must be named by one.
  ASSERT_EQ(client_->Post("/write?db=dbB", "node,node=n1 gpu_count=1i", kAdmin).status, 204);
  EXPECT_EQ(error(client_->Get("/api/v1/nodes/n1", kAdmin), 400),
            "node 'n1' is in several databases (dbA, dbB): name one with db=");
}

TEST_F(FleetApiTest, TokensSeeAndSetOnlyTheirDatabases) {
  // A token of one database reads that database's nodes without naming it.
  const json mine = GetJson("/api/v1/nodes", kReadA);
  ASSERT_EQ(mine["nodes"].size(), 2u);
  EXPECT_EQ(GetJson("/api/v1/nodes?db=dbB", kReadA, 403)["error"],
            "this token may not read database dbB (it may read dbA: name one with db=)");
  EXPECT_EQ(GetJson("/api/v1/actions?db=dbB", kReadA, 403).size(), 1u);
  EXPECT_EQ(GetJson("/api/v1/metrics/latest?db=dbB", kReadA, 403).size(), 1u);
  EXPECT_EQ(
      Put("/api/v1/nodes/n1/status", R"({"status": "degraded", "reason": "x"})", kReadA).status,
      403);
  EXPECT_EQ(client_->Get("/api/v1/nodes", {}).status, 401);
  EXPECT_EQ(GetJson("/api/v1/nodes/n1", kWriteA)["database"], "dbA");
}

}  // namespace
}  // namespace gpulse
