// Alert rules on a running server (server/alerts.h): points arrive over
// HTTP, the test drives the evaluation clock (AlertManager::EvaluateAt, what
// the server's minute loop calls), and reads the states back from
// /api/v1/alerts, /api/v1/alerts/active, SHOW ALERTS and the webhook
// receiver. Pending -> firing after FOR, resolved when WHEN fails, resolved
// by hand, silence in maintenance, the built-in freshness rule, rule errors,
// and the endpoints' refusals.

#include "server/alerts.h"

#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "query/fleet/nodes.h"
#include "query/runtime/format.h"
#include "server/http_api.h"
#include "server/http_server.h"
#include "tests/support/fleet_db.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_server.h"
#include "tests/support/time_units.h"

namespace gpulse::server {
namespace {

using nlohmann::json;
using test::HttpClient;

using gpulse::test::kMinute;
using gpulse::test::kSecond;
constexpr int64_t kT0 = 1794218400LL * kSecond;  // 2026-11-09T10:00:00Z, a Monday

// An HTTP endpoint that records the webhook bodies it receives.
class HookReceiver {
 public:
  HookReceiver()
      : server_({.host = "127.0.0.1", .port = 0}, [this](const Request& r, const RequestContext&) {
          std::lock_guard<std::mutex> l(mu_);
          bodies_.push_back(json::parse(r.body()));
          Response res{http::status::no_content, r.version()};
          return res;
        }) {
    EXPECT_TRUE(server_.Start().ok());
  }
  ~HookReceiver() { server_.Stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/hook"; }

  // Waits up to 5 s for `n` bodies.
  std::vector<json> WaitFor(size_t n) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> l(mu_);
        if (bodies_.size() >= n) return bodies_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::lock_guard<std::mutex> l(mu_);
    return bodies_;
  }

 private:
  std::mutex mu_;
  std::vector<json> bodies_;
  HttpServer server_;
};

class AlertsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::UseQuietTestDb(&config_.db);
    config_.alerts.freshness_rule = false;  // its own test turns it on
    ASSERT_TRUE(server_.Start(dir_.path(), config_, &metrics_, &sources_).ok());
    client_.emplace(server_.port());
  }

  test::HttpReply Query(const std::string& q) {
    return client_->Post("/query", "q=" + PercentEncode(q),
                         {{"Content-Type", "application/x-www-form-urlencoded"}});
  }

  void Write(const std::string& lines) {
    const test::HttpReply r = client_->Post("/write?db=fleet&precision=s", lines);
    ASSERT_EQ(r.status, 204) << r.body;
  }

  // Node temperatures for the minute starting at t.
  void Minute(int64_t t, double n1, double n2) {
    const std::string ts = " " + std::to_string(t / kSecond);
    Write("gpu,node=n1 temp_c=" + std::to_string(n1) + ts +
          "\ngpu,node=n2 temp_c=" + std::to_string(n2) + ts + "\n");
  }

  // Delivers the minute at the clock's time (temperatures of n1 and n2),
  // advances the clock a minute, and evaluates the rules as of then.
  void Step(double n1, double n2) {
    Minute(t_, n1, n2);
    t_ += kMinute;
    server_.alerts()->EvaluateAt(t_);
  }

  json Active() {
    const test::HttpReply r = client_->Get("/api/v1/alerts/active");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["alerts"];
  }

  // The state of the only instance of the active list, or "" when there is none.
  std::string State() {
    const json a = Active();
    if (a.empty()) return "";
    EXPECT_EQ(a.size(), 1u) << a.dump();
    return a[0]["state"];
  }

  void CreateHotRule(const std::string& extra = "") {
    const test::HttpReply r = Query(
        "CREATE ALERT hot ON SELECT max(temp_c) FROM gpu WHERE time > now() - 2m GROUP BY node "
        "WHEN value > 85 FOR 3m SEVERITY page OWNER infra" +
        extra);
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(json::parse(r.body)["results"][0].count("error"), 0u) << r.body;
  }

  storage::ScratchDir dir_;
  ServerConfig config_;
  ServerMetrics metrics_;
  SourceRegistry sources_;
  test::TestServer server_;
  std::optional<HttpClient> client_;
  int64_t t_ = kT0;  // the evaluation clock
};

TEST_F(AlertsTest, PendingFiresAfterForAndResolvesWithWebhooks) {
  HookReceiver hook;
  CreateHotRule(" WEBHOOK '" + hook.url() + "'");
  AlertManager* alerts = server_.alerts();
  auto step = [&](double n2) { Step(70, n2); };
  step(70);
  EXPECT_EQ(State(), "");
  step(95);  // WHEN holds from here
  EXPECT_EQ(State(), "pending");
  const int64_t since = t_;
  step(96);
  step(97);
  EXPECT_EQ(State(), "pending");  // 2 minutes held, FOR is 3
  step(96);
  json a = Active();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["state"], "firing");
  EXPECT_EQ(a[0]["rule"], "hot");
  EXPECT_EQ(a[0]["group"], json({{"node", "n2"}}));
  EXPECT_EQ(a[0]["severity"], "page");
  EXPECT_EQ(a[0]["owner"], "infra");
  EXPECT_EQ(a[0]["values"]["value"], 96.0);
  EXPECT_EQ(a[0]["active_since"], "2026-11-09T10:02:00Z");
  EXPECT_EQ(a[0]["fired_at"], "2026-11-09T10:05:00Z");
  EXPECT_EQ(t_ - since, 3 * kMinute);
  // The same in Prometheus' shape, for its clients (Grafana's alert lists).
  const json prom = json::parse(client_->Get("/api/v1/alerts").body);
  EXPECT_EQ(prom["status"], "success");
  ASSERT_EQ(prom["data"]["alerts"].size(), 1u) << prom.dump();
  EXPECT_EQ(prom["data"]["alerts"][0]["labels"],
            json({{"alertname", "hot"}, {"node", "n2"}, {"severity", "page"}}));
  EXPECT_EQ(prom["data"]["alerts"][0]["state"], "firing");
  EXPECT_EQ(prom["data"]["alerts"][0]["activeAt"], "2026-11-09T10:02:00Z");
  EXPECT_EQ(prom["data"]["alerts"][0]["value"], "9.6000000000e+01");
  const json rules = json::parse(client_->Get("/api/v1/rules").body);
  ASSERT_EQ(rules["data"]["groups"].size(), 1u) << rules.dump();
  const json& rule = rules["data"]["groups"][0]["rules"][0];
  EXPECT_EQ(rule["name"], "hot");
  EXPECT_EQ(rule["type"], "alerting");
  EXPECT_EQ(rule["state"], "firing");
  EXPECT_EQ(rule["duration"], 180.0);
  EXPECT_EQ(rule["health"], "ok");
  EXPECT_EQ(rule["labels"], json({{"severity", "page"}}));
  EXPECT_EQ(rule["annotations"], json({{"owner", "infra"}}));
  EXPECT_EQ(rule["alerts"].size(), 1u);
  EXPECT_EQ(rule["query"].get<std::string>().rfind("CREATE ALERT hot", 0), 0u) << rule.dump();
  EXPECT_EQ(json::parse(client_->Get("/api/v1/rules?type=record").body)["data"]["groups"].size(),
            0u);

  step(70);  // the window (now - 2m, now) now holds one cool minute only
  EXPECT_EQ(State(), "");
  const json all = json::parse(client_->Get("/api/v1/alerts").body);
  ASSERT_EQ(all["alerts"].size(), 1u);
  EXPECT_EQ(all["alerts"][0]["state"], "resolved");
  EXPECT_EQ(all["alerts"][0]["resolved_at"], "2026-11-09T10:06:00Z");
  ASSERT_EQ(all["rules"].size(), 1u);
  EXPECT_EQ(all["rules"][0]["name"], "hot");
  EXPECT_TRUE(all["rules"][0]["error"].is_null());

  const std::vector<json> bodies = hook.WaitFor(2);
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0]["state"], "firing");
  EXPECT_EQ(bodies[0]["summary"], "alert hot {node=n2} is firing");
  EXPECT_EQ(bodies[1]["state"], "resolved");
  EXPECT_EQ(bodies[1]["id"], bodies[0]["id"]);
  EXPECT_EQ(alerts->Counters().fired, 1u);
  EXPECT_EQ(alerts->Counters().resolved, 1u);
  // The same counters for Prometheus.
  const std::string metrics = client_->Get("/metrics").body;
  EXPECT_NE(metrics.find("gpulse_alerts_fired_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("gpulse_alerts_resolved_total 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("gpulse_alert_evaluations_total "), std::string::npos);
}

TEST_F(AlertsTest, ResolvedByHandStaysQuietUntilTheConditionClearsOnce) {
  CreateHotRule();
  auto step = [&](double n2) { Step(70, n2); };
  for (int i = 0; i < 5; ++i) step(95);
  ASSERT_EQ(State(), "firing");
  const std::string id = Active()[0]["id"];

  EXPECT_EQ(client_->Post("/api/v1/alerts/nope/resolve", "").status, 404);
  const test::HttpReply r = client_->Post("/api/v1/alerts/" + id + "/resolve", "");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["resolved"], 1);
  const json listed = json::parse(client_->Get("/api/v1/alerts").body)["alerts"];
  ASSERT_EQ(listed.size(), 1u) << listed.dump();
  EXPECT_EQ(listed[0]["state"], "resolved");
  EXPECT_EQ(listed[0]["resolved_by_hand"], true);
  for (int i = 0; i < 5; ++i) step(95);
  EXPECT_EQ(State(), "");  // still hot, but acknowledged
  step(70);
  step(70);
  step(70);
  step(95);
  EXPECT_EQ(State(), "pending");  // re-armed by the cool minutes
  // A rule's name resolves all its instances.
  for (int i = 0; i < 3; ++i) step(95);
  ASSERT_EQ(State(), "firing");
  EXPECT_EQ(json::parse(client_->Post("/api/v1/alerts/hot/resolve", "").body)["resolved"], 1);
}

TEST_F(AlertsTest, PlannedMaintenanceHoldsAlertsBack) {
  CreateHotRule();
  // n2 is in a kernel-patch window from 10:01 to 10:20.
  Write("maintenance,node=n2,reason=kernel-patch end=" + std::to_string(kT0 + 20 * kMinute) + "i " +
        std::to_string((kT0 + kMinute) / kSecond) + "\n");
  AlertManager* alerts = server_.alerts();
  for (int i = 0; i < 10; ++i) Step(95, 95);
  // n1 fires; n2 stays silent, and the suppressions are counted.
  const json a = Active();
  ASSERT_EQ(a.size(), 1u) << a.dump();
  EXPECT_EQ(a[0]["group"], json({{"node", "n1"}}));
  EXPECT_EQ(a[0]["state"], "firing");
  EXPECT_EQ(alerts->Counters().suppressed, 10u);
}

// ACTION degrade: a firing alert marks its node degraded, in the audit
// trail under the rule's name, and its webhook is asked to drain the node.
// A status already set (by a person or an earlier firing) is left alone.
TEST_F(AlertsTest, ActionDegradeMarksTheNodeAndAsksToDrainIt) {
  Write("node,node=n1 healthy=1i,gpu_count=8i,gpu_inventory=8i " + std::to_string(kT0 / kSecond) +
        "\nnode,node=n2 healthy=1i,gpu_count=8i,gpu_inventory=8i " + std::to_string(kT0 / kSecond) +
        "\n");
  HookReceiver hook;
  CreateHotRule(" WEBHOOK '" + hook.url() + "' ACTION degrade");
  for (int i = 0; i < 5; ++i) Step(70, 95);
  ASSERT_EQ(State(), "firing");
  const int64_t fired = t_ - kMinute;
  const std::vector<json> bodies = hook.WaitFor(1);
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(bodies[0]["action"], json::parse(R"({"kind": "degrade", "node": "n2",
      "intent": "drain the node and migrate its workloads"})"));
  const json n2 = json::parse(client_->Get("/api/v1/nodes/n2?db=fleet").body);
  EXPECT_EQ(n2["status"], "degraded") << client_->Get("/api/v1/alerts").body;
  EXPECT_EQ(n2["status_actor"], "rule:hot");
  EXPECT_EQ(n2["active_alerts"], 1);
  EXPECT_EQ(json::parse(client_->Get("/api/v1/nodes/n1?db=fleet").body)["status"], "healthy");
  json trail = json::parse(client_->Get("/api/v1/actions?db=fleet").body)["actions"];
  ASSERT_EQ(trail.size(), 1u) << trail.dump();
  EXPECT_EQ(trail[0]["action"], "degrade");
  EXPECT_EQ(trail[0]["before"], "healthy");
  EXPECT_EQ(trail[0]["after"], "degraded");
  EXPECT_EQ(trail[0]["actor"], "rule:hot");
  EXPECT_EQ(trail[0]["time"], query::Rfc3339(fired));
  const json rules = json::parse(client_->Get("/api/v1/alerts").body)["rules"];
  EXPECT_EQ(rules[0]["action"], "degrade");
  EXPECT_EQ(rules[0]["last_fired"], query::Rfc3339(fired));
  EXPECT_EQ(server_.alerts()->Counters().actions, 1u);
  // Resolved and fired again: the node is degraded already.
  Step(70, 70);
  Step(70, 70);
  for (int i = 0; i < 5; ++i) Step(70, 95);
  ASSERT_EQ(State(), "firing");
  trail = json::parse(client_->Get("/api/v1/actions?db=fleet").body)["actions"];
  EXPECT_EQ(trail.size(), 1u) << trail.dump();
  // The source must name a node in each group.
  const test::HttpReply r = Query(
      "CREATE ALERT fleet_hot ON SELECT max(temp_c) FROM gpu WHERE time > now() - 2m "
      "WHEN value > 85 SEVERITY page OWNER infra ACTION degrade");
  EXPECT_NE(r.body.find("the source must group by node"), std::string::npos) << r.body;
}

// Maintenance set on a node's status (query/fleet/nodes.h: a window in the
// maintenance measurement) holds its alerts back as a scheduled window does.
TEST_F(AlertsTest, MaintenanceSetOnANodesStatusHoldsItsAlertsBack) {
  Write("node,node=n2 healthy=1i " + std::to_string(kT0 / kSecond) + "\n");
  query::NodeAction action{.action = "status", .actor = "test", .reason = "firmware"};
  bool changed = false;
  ASSERT_TRUE(query::SetNodeStatus(server_.db(), {}, "n2", query::NodeStatus::kMaintenance, kT0,
                                   &action, &changed)
                  .ok());
  ASSERT_TRUE(changed);
  CreateHotRule();
  for (int i = 0; i < 6; ++i) Step(95, 95);
  const json a = Active();
  ASSERT_EQ(a.size(), 1u) << a.dump();
  EXPECT_EQ(a[0]["group"], json({{"node", "n1"}}));
  EXPECT_EQ(server_.alerts()->Counters().suppressed, 6u);
}

TEST_F(AlertsTest, DroppingARuleResolvesItsFiringAlertsAndBadResolvePathsAreRefused) {
  HookReceiver hook;
  CreateHotRule(" WEBHOOK '" + hook.url() + "'");
  for (int i = 0; i < 5; ++i) Step(95, 70);
  ASSERT_EQ(State(), "firing");
  ASSERT_EQ(Query("DROP ALERT hot").status, 200);
  Step(95, 70);
  EXPECT_TRUE(Active().empty());
  const json all = json::parse(client_->Get("/api/v1/alerts").body)["alerts"];
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0]["state"], "resolved");
  const std::vector<json> bodies = hook.WaitFor(2);
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[1]["state"], "resolved");
  EXPECT_EQ(client_->Post("/api/v1/alerts/resolve", "").status, 404);
  EXPECT_EQ(client_->Post("/api/v1/alerts//resolve", "").status, 404);
}

TEST_F(AlertsTest, RulesAndSeasonsNeedATokenThatMayWriteEveryDatabase) {
  ASSERT_TRUE(server_.Stop().ok());
  config_.tokens = {{"team-a", "token-for-team-a", {"a"}, {"a"}},
                    {"admin", "token-for-admins", {"*"}, {"*"}}};
  ASSERT_TRUE(server_.Start(dir_.path(), config_, &metrics_, &sources_).ok());
  client_.emplace(server_.port());
  const std::string rule =
      "CREATE ALERT leak ON SELECT last(secret) FROM m WHERE time > now() - 5m WHEN value > 0 "
      "SEVERITY info OWNER a";
  for (const std::string& q :
       {rule, std::string("CREATE SEASON s FROM '2026-11-01' TO '2026-11-02'"),
        std::string("DROP ALERT other_teams_rule")}) {
    const test::HttpReply r = client_->Post("/query?db=a&q=" + PercentEncode(q), "",
                                            {{"Authorization", "Token token-for-team-a"}});
    EXPECT_EQ(r.status, 403) << q << ": " << r.body;
  }
  const test::HttpReply r = client_->Post("/query?db=a&q=" + PercentEncode(rule), "",
                                          {{"Authorization", "Token token-for-admins"}});
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(AlertsTest, ASeasonHoldsBackOnlyRulesThatCompareWithABaseline) {
  CreateHotRule();
  ASSERT_EQ(Query("CREATE SEASON launch FROM '2026-11-09' TO '2026-11-10'").status, 200);
  AlertManager* alerts = server_.alerts();
  for (int i = 0; i < 5; ++i) Step(95, 70);
  EXPECT_EQ(State(), "firing");  // a fixed threshold is still a fixed threshold
  EXPECT_EQ(alerts->Counters().suppressed, 0u);
}

TEST_F(AlertsTest, ShowAlertsGivesStatesAndDroppingARuleEndsItsAlerts) {
  CreateHotRule();
  AlertManager* alerts = server_.alerts();
  Minute(kT0, 95, 70);
  alerts->EvaluateAt(kT0 + kMinute);
  json shown = json::parse(Query("SHOW ALERTS").body)["results"][0]["series"][0];
  EXPECT_EQ(shown["columns"], json({"name", "severity", "owner", "state", "group", "since", "value",
                                    "id", "last_evaluated", "error"}));
  ASSERT_EQ(shown["values"].size(), 1u);
  EXPECT_EQ(shown["values"][0][0], "hot");
  EXPECT_EQ(shown["values"][0][3], "pending");
  EXPECT_EQ(shown["values"][0][4], "node=n1");

  // Without POST, rules do not change; without a write token neither (tested in server_test).
  EXPECT_EQ(client_->Get("/query?q=" + PercentEncode("DROP ALERT hot")).status, 405);
  ASSERT_EQ(Query("DROP ALERT hot").status, 200);
  alerts->EvaluateAt(kT0 + 2 * kMinute);
  EXPECT_TRUE(Active().empty());
  shown = json::parse(Query("SHOW ALERTS").body)["results"][0]["series"][0];
  EXPECT_TRUE(shown["values"].empty()) << shown.dump();
}

TEST_F(AlertsTest, ARuleThatFailsKeepsItsStateAndSaysWhy) {
  // Rules are evaluated under the server's query limits: at most 2 series here.
  ASSERT_TRUE(server_.Stop().ok());
  config_.query_limits.max_series = 2;
  ASSERT_TRUE(server_.Start(dir_.path(), config_, &metrics_, &sources_).ok());
  client_.emplace(server_.port());
  CreateHotRule();
  AlertManager* alerts = server_.alerts();
  for (int i = 0; i < 5; ++i) Step(95, 70);
  ASSERT_EQ(State(), "firing");
  // A third node appears: the rule now reads 3 series and fails each minute.
  for (int i = 0; i < 3; ++i) {
    Write("gpu,node=n3 temp_c=60 " + std::to_string(t_ / kSecond) + "\n");
    Step(70, 70);
  }
  const std::vector<AlertRuleStatus> rules = alerts->Rules();
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_NE(rules[0].last_error.find("max_series"), std::string::npos) << rules[0].last_error;
  EXPECT_EQ(alerts->Counters().errors, 3u);
  // n1 cooled down meanwhile, but nobody could tell: it is still firing.
  EXPECT_EQ(State(), "firing");
  const json all = json::parse(client_->Get("/api/v1/alerts").body);
  EXPECT_NE(all["rules"][0]["error"].get<std::string>().find("max_series"), std::string::npos);
}

TEST_F(AlertsTest, TheFreshnessRuleReportsASilentAgent) {
  ASSERT_TRUE(server_.Stop().ok());
  config_.alerts.freshness_rule = true;
  ASSERT_TRUE(server_.Start(dir_.path(), config_, &metrics_, &sources_).ok());
  client_.emplace(server_.port());
  // A small fleet whose node agent goes silent for 3 hours from 06:00 on its day.
  const int64_t start = kT0 - 10 * 60 * kMinute;  // 2026-11-09T00:00Z
  test::SimulateInto(server_.db(), test::SmallFleet(4, 1, 5, start, {"silent-agent@6h/3h"}));
  AlertManager* alerts = server_.alerts();
  alerts->EvaluateAt(start + 5 * 60 * kMinute);
  EXPECT_TRUE(Active().empty()) << Active().dump();
  alerts->EvaluateAt(start + 7 * 60 * kMinute);
  const json a = Active();
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a[0]["rule"], "collection_contract");
  EXPECT_EQ(a[0]["state"], "firing");
  EXPECT_EQ(a[0]["group"]["kind"], "silent_node");
  alerts->EvaluateAt(start + 10 * 60 * kMinute);
  EXPECT_TRUE(Active().empty()) << Active().dump();
}

TEST(AlertsNoEvaluationTest, TheEndpointsSayRulesAreNotEvaluated) {
  storage::ScratchDir dir;
  ServerConfig config;
  test::UseQuietTestDb(&config.db);
  config.alerts.evaluate = false;
  ServerMetrics metrics;
  SourceRegistry sources;
  test::TestServer server;
  ASSERT_TRUE(server.Start(dir.path(), config, &metrics, &sources).ok());
  HttpClient client(server.port());
  const test::HttpReply r = client.Get("/api/v1/alerts");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("alerts.evaluate is false"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace gpulse::server
