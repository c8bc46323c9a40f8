// Token scopes end to end on a loopback port: a token reads and writes only
// its databases, whatever the query text, the parameters or a line's own
// `db` tag say. The regression tests are named after the defects a hostile
// probe found (2026-11-26); the matrix below runs every endpoint and
// statement kind with each kind of token and with none.

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/config.h"
#include "server/http_api.h"
#include "server/metrics.h"
#include "server/sources.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_server.h"

namespace gpulse::server {
namespace {

using json = nlohmann::json;
using test::HttpClient;
using test::HttpReply;

using Headers = std::map<std::string, std::string>;

// The tokens of the probe: an administrator, a reader of dbA, a writer of
// dbA, and a reader-writer of dbB (and, in SetUp, one of several databases).
const Headers kAdmin{{"Authorization", "Token admin-token-123"}};
const Headers kReadA{{"Authorization", "Token readA-token-123"}};
const Headers kWriteA{{"Authorization", "Token writeA-token-123"}};
const Headers kReadWriteB{{"Authorization", "Token rwB-token-123"}};
const Headers kNoToken{};

class ServerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.tokens = {{"admin", "admin-token-123", {"*"}, {"*"}},
                      {"rA", "readA-token-123", {"dbA"}, {}},
                      {"wA", "writeA-token-123", {}, {"dbA"}},
                      {"rwB", "rwB-token-123", {"dbB"}, {"dbB"}},
                      {"multi", "multi-token-123", {"dbA", "dbB"}, {"dbA", "dbC"}}};
    test::UseQuietTestDb(&config_.db);
    const Status s = server_.Start(dir_.path(), config_, &metrics_, &sources_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    client_.emplace(server_.port());
    // One point in each database and one untagged (written with no db=).
    ASSERT_EQ(client_->Post("/write?db=dbA", "sec,k=a v=1i 1000000000", kAdmin).status, 204);
    ASSERT_EQ(client_->Post("/write?db=dbB", "sec,k=b v=2i 1000000000", kAdmin).status, 204);
    ASSERT_EQ(client_->Post("/write", "sec,k=u v=4i 1000000000", kAdmin).status, 204);
  }

  HttpReply Get(const std::string& q, const std::string& extra, const Headers& token) {
    return client_->Get("/query?q=" + PercentEncode(q) + (extra.empty() ? "" : "&" + extra), token);
  }

  HttpReply Post(const std::string& q, const std::string& extra, const Headers& token) {
    Headers headers = token;
    headers["Content-Type"] = "application/x-www-form-urlencoded";
    return client_->Post("/query", "q=" + PercentEncode(q) + (extra.empty() ? "" : "&" + extra),
                         headers);
  }

  // sum(v) of measurement sec as `token` sees it with `extra` parameters;
  // nullopt when the answer has no rows.
  std::optional<int64_t> Sum(const std::string& extra, const Headers& token) {
    const HttpReply r = Get("SELECT sum(v) FROM sec", extra, token);
    EXPECT_EQ(r.status, 200) << r.body;
    const json body = json::parse(r.body);
    const json& result = body["results"][0];
    if (!result.contains("series")) return std::nullopt;
    return result["series"][0]["values"][0][1].get<int64_t>();
  }

  storage::ScratchDir dir_;
  ServerConfig config_;
  ServerMetrics metrics_;
  SourceRegistry sources_;
  test::TestServer server_;
  std::optional<HttpClient> client_;
};

// Defect 1: a read token scoped to dbA read every database when db= was left
// off. Now it reads dbA, and only dbA, whatever else the request says.
TEST_F(ServerAuthTest, ReadTokenWithoutDbReadsEveryDatabase) {
  const HttpReply r = Get("SELECT count(*) FROM sec GROUP BY db", "", kReadA);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("dbB"), std::string::npos) << r.body;
  const json series = json::parse(r.body)["results"][0]["series"];
  ASSERT_EQ(series.size(), 1u) << r.body;
  EXPECT_EQ(series[0]["values"][0][1], 1) << r.body;
  EXPECT_EQ(Sum("", kReadA), 1);
  EXPECT_EQ(Sum("db=dbA", kReadA), 1);
  EXPECT_EQ(Sum("", kAdmin), 7);  // the administrator sees all three points
  // Another database by db=, by FROM, in a subquery, or in a SHOW: refused.
  EXPECT_EQ(Get("SELECT sum(v) FROM sec", "db=dbB", kReadA).status, 403);
  EXPECT_EQ(Get("SELECT sum(v) FROM \"dbB\"..\"sec\"", "", kReadA).status, 403);
  EXPECT_EQ(Get("SELECT sum(v) FROM \"dbB\".\"autogen\".\"sec\"", "db=dbA", kReadA).status, 403);
  EXPECT_EQ(Get("SELECT sum(s) FROM (SELECT v AS s FROM \"dbB\"..sec)", "db=dbA", kReadA).status,
            403);
  EXPECT_EQ(Get("SHOW TAG VALUES FROM \"dbB\"..sec WITH KEY = k", "", kReadA).status, 403);
  // Rules and sources span every database: naming one would not help.
  const HttpReply sources = Get("SHOW SOURCES", "", kReadA);
  EXPECT_NE(sources.body.find("may not read every database (it may read dbA)"), std::string::npos)
      << sources.body;
  const HttpReply denied = Get("SELECT sum(v) FROM sec", "db=dbB", kReadA);
  EXPECT_NE(denied.body.find("may not read database dbB (it may read dbA)"), std::string::npos)
      << denied.body;
  // Naming its own database in FROM reads exactly that database.
  const HttpReply own = Get("SELECT sum(v) FROM \"dbA\"..sec", "", kReadA);
  ASSERT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(json::parse(own.body)["results"][0]["series"][0]["values"][0][1], 1) << own.body;
}

// A statement that names two databases is refused before anything runs.
TEST_F(ServerAuthTest, OneStatementReadsOneDatabase) {
  const HttpReply r = Get("SELECT sum(v) FROM \"dbA\"..sec, \"dbB\"..sec", "", kAdmin);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("names databases dbA and dbB"), std::string::npos) << r.body;
}

// Defect 2: a write token for dbA wrote into dbB through the line's own `db`
// tag, with ?db=dbA or with no ?db= at all. Now such lines are rejected and
// named, and the good lines of the same request are kept.
TEST_F(ServerAuthTest, WriteTokenWritesOtherDatabaseThroughDbTag) {
  for (const std::string target : {"/write?db=dbA", "/write", "/api/v2/write?bucket=dbA"}) {
    SCOPED_TRACE(target);
    const HttpReply r = client_->Post(
        target, "sec,db=dbB,k=evil2 v=67i 2000000000\nsec,k=good v=10i 2000000000", kWriteA);
    ASSERT_EQ(r.status, 400) << r.body;
    const json body = json::parse(r.body);
    EXPECT_EQ(body["rejected"], 1) << r.body;
    EXPECT_EQ(body["written"], 1) << r.body;
    EXPECT_EQ(body["lines"][0]["line"], 1) << r.body;
    EXPECT_NE(body["error"].get<std::string>().find("its db tag names database dbB"),
              std::string::npos)
        << r.body;
  }
  EXPECT_EQ(Sum("db=dbB", kAdmin), 2);   // dbB's readers see nothing new
  EXPECT_EQ(Sum("db=dbA", kAdmin), 11);  // the good lines landed in dbA, once (same time)
  // A line tagged with its own database is fine.
  EXPECT_EQ(client_->Post("/write", "sec,db=dbA,k=own v=5i 3000000000", kWriteA).status, 204);
  EXPECT_EQ(Sum("db=dbA", kAdmin), 16);
  // An administrator's lines still go where their db tag says.
  EXPECT_EQ(client_->Post("/write?db=dbA", "sec,db=dbB,k=moved v=100i 4000000000", kAdmin).status,
            204);
  EXPECT_EQ(Sum("db=dbB", kAdmin), 102);
}

// A token of several databases must name one: with none, a write would land
// untagged and a query would read every database.
TEST_F(ServerAuthTest, TokenOfSeveralDatabasesNamesOne) {
  const Headers multi{{"Authorization", "Token multi-token-123"}};
  const HttpReply write = client_->Post("/write", "sec,k=m v=1000i 6000000000", multi);
  EXPECT_EQ(write.status, 403) << write.body;
  EXPECT_NE(write.body.find("it may write dbA, dbC: name one with ?db="), std::string::npos)
      << write.body;
  EXPECT_EQ(client_->Post("/write?db=dbC", "sec,k=m v=1000i 6000000000", multi).status, 204);
  const HttpReply read = Get("SELECT sum(v) FROM sec", "", multi);
  EXPECT_EQ(read.status, 403) << read.body;
  EXPECT_NE(read.body.find("it may read dbA, dbB: name one"), std::string::npos) << read.body;
  EXPECT_EQ(Sum("db=dbB", multi), 2);
  const HttpReply named = Get("SELECT sum(v) FROM \"dbA\"..sec", "", multi);
  EXPECT_EQ(named.status, 200) << named.body;
  EXPECT_EQ(Get("SELECT sum(v) FROM sec", "db=dbC", multi).status, 403);  // write-only there
}

// Defect 3: SHOW DATABASES listed every database to a token scoped to one.
TEST_F(ServerAuthTest, ShowDatabasesListsEveryName) {
  const auto names = [&](const Headers& token) {
    const HttpReply r = Get("SHOW DATABASES", "", token);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["results"][0]["series"][0]["values"];
  };
  EXPECT_EQ(names(kAdmin), json::parse(R"([["dbA"], ["dbB"]])"));
  EXPECT_EQ(names(kReadA), json::parse(R"([["dbA"]])"));
  EXPECT_EQ(names(kReadWriteB), json::parse(R"([["dbB"]])"));
  EXPECT_EQ(names(kWriteA), json::parse("[]"));
  // Nor does /metrics name them: its series count by database is scoped too.
  const std::string metrics = client_->Get("/metrics", kReadA).body;
  EXPECT_NE(metrics.find("gpulse_database_series{db=\"dbA\"} 1"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("dbB"), std::string::npos) << metrics;
  EXPECT_NE(client_->Get("/metrics", kAdmin).body.find("gpulse_database_series{db=\"dbB\"} 1"),
            std::string::npos);
}

// Every endpoint and statement kind, with each kind of token and none: the
// status each must get. Writes go to measurement `scratch`, so that the
// table's order does not matter.
TEST_F(ServerAuthTest, ScopeMatrix) {
  struct Case {
    std::string name;
    http::verb method;
    std::string target;  // for /query: the q= text
    std::string params;  // more query parameters (db=...), or the write body
    int admin, read_a, write_a, rw_b, none;
  };
  const auto get = http::verb::get, post = http::verb::post, put = http::verb::put;
  const std::string line = "scratch,k=x v=1i 5000000000";
  const std::vector<Case> cases = {
      // /query: SELECT in its forms.
      {"select db=dbA", get, "SELECT sum(v) FROM sec", "db=dbA", 200, 200, 403, 403, 401},
      {"select db=dbB", get, "SELECT sum(v) FROM sec", "db=dbB", 200, 403, 403, 200, 401},
      {"select no db", get, "SELECT sum(v) FROM sec", "", 200, 200, 403, 200, 401},
      {"select FROM dbB", get, "SELECT sum(v) FROM \"dbB\"..sec", "", 200, 403, 403, 200, 401},
      {"select FROM dbB.rp", get, "SELECT v FROM \"dbB\".\"autogen\".sec", "db=dbA", 200, 403, 403,
       200, 401},
      {"subquery of dbB", get, "SELECT sum(s) FROM (SELECT v AS s FROM \"dbB\"..sec)", "", 200, 403,
       403, 200, 401},
      {"regex FROM", get, "SELECT sum(v) FROM /se/", "db=dbB", 200, 403, 403, 200, 401},
      {"explain dbB", get, "EXPLAIN SELECT sum(v) FROM sec", "db=dbB", 200, 403, 403, 200, 401},
      // SHOW.
      {"show measurements", get, "SHOW MEASUREMENTS", "db=dbB", 200, 403, 403, 200, 401},
      {"show tag values FROM dbB", get, "SHOW TAG VALUES FROM \"dbB\"..sec WITH KEY = k", "", 200,
       403, 403, 200, 401},
      {"show field keys", get, "SHOW FIELD KEYS", "", 200, 200, 403, 200, 401},
      {"show series", get, "SHOW SERIES", "db=dbA", 200, 200, 403, 403, 401},
      {"show retention policies ON dbB", get, "SHOW RETENTION POLICIES ON dbB", "", 200, 403, 403,
       200, 401},
      {"show databases", get, "SHOW DATABASES", "", 200, 200, 200, 200, 401},
      {"show sources", get, "SHOW SOURCES", "", 200, 403, 403, 403, 401},
      {"show alerts", get, "SHOW ALERTS", "db=dbA", 200, 403, 403, 403, 401},
      {"show seasons", get, "SHOW SEASONS", "", 200, 403, 403, 403, 401},
      {"show stale", get, "SHOW STALE", "db=dbB", 200, 403, 403, 200, 401},
      {"show kpis", get, "SHOW KPIS", "db=dbB", 200, 403, 403, 200, 401},
      // Fleet statements.
      {"northstar dbB", get, "NORTHSTAR OVER 1h", "db=dbB", 200, 403, 403, 200, 401},
      {"anomalies dbA", get, "ANOMALIES OVER 1h", "db=dbA", 200, 200, 403, 403, 401},
      {"rollouts dbB", get, "ROLLOUTS OVER 6h", "db=dbB", 200, 403, 403, 200, 401},
      // Statements that change data: read and write on their database.
      {"delete dbB", post, "DELETE FROM scratch", "db=dbB", 200, 403, 403, 200, 401},
      {"delete FROM dbB", post, "DELETE FROM \"dbB\"..scratch", "db=dbA", 200, 403, 403, 200, 401},
      {"drop series no db", post, "DROP SERIES FROM scratch", "", 200, 403, 403, 200, 401},
      {"drop measurement dbA", post, "DROP MEASUREMENT scratch", "db=dbA", 200, 403, 403, 403, 401},
      {"drop alert", post, "DROP ALERT nothing", "db=dbB", 200, 403, 403, 403, 401},
      {"create season", post, "CREATE SEASON s FROM '2026-01-01' TO '2026-01-02'", "db=dbB", 200,
       403, 403, 403, 401},
      // The write endpoints (params is the body).
      {"write dbA", post, "/write?db=dbA", line, 204, 403, 204, 403, 401},
      {"write dbB", post, "/write?db=dbB", line, 204, 403, 403, 204, 401},
      {"write no db", post, "/write", line, 204, 403, 204, 204, 401},
      {"write dbA, line tagged dbB", post, "/write?db=dbA", "scratch,db=dbB v=1i 5000000000", 204,
       403, 400, 403, 401},
      {"v2 write dbB", post, "/api/v2/write?bucket=dbB", line, 204, 403, 403, 204, 401},
      // The server's own endpoints.
      {"metrics", get, "/metrics", "", 200, 200, 403, 200, 401},
      {"sources", get, "/api/v1/sources", "", 200, 403, 403, 403, 401},
      {"alerts", get, "/api/v1/alerts", "", 200, 403, 403, 403, 401},
      {"active alerts", get, "/api/v1/alerts/active", "", 200, 403, 403, 403, 401},
      {"resolve", post, "/api/v1/alerts/none/resolve", "", 404, 403, 403, 403, 401},
      {"compact", post, "/api/v1/compact", "", 200, 403, 403, 403, 401},
      // Read and write on every database; this server forwards nowhere: 404.
      {"backfill", post, "/api/v1/forward/backfill?target=x&start=0&end=60", "", 404, 403, 403, 403,
       401},
      // The fleet: a token of one database reads its nodes without naming it;
      // a status change takes read and write there.
      {"nodes", get, "/api/v1/nodes", "", 200, 200, 403, 200, 401},
      {"nodes db=dbB", get, "/api/v1/nodes?db=dbB", "", 200, 403, 403, 200, 401},
      {"node dbA", get, "/api/v1/nodes/nx?db=dbA", "", 404, 404, 403, 403, 401},
      {"node status dbA", put, "/api/v1/nodes/nx/status?db=dbA", "", 404, 403, 403, 403, 401},
      {"actions dbA", get, "/api/v1/actions?db=dbA", "", 200, 200, 403, 403, 401},
      {"latest dbB", get, "/api/v1/metrics/latest?db=dbB", "", 200, 403, 403, 200, 401},
      {"ping", get, "/ping", "", 204, 204, 204, 204, 204},
      {"health", get, "/health", "", 200, 200, 200, 200, 200},
  };
  const std::vector<std::pair<const char*, const Headers*>> tokens = {{"admin", &kAdmin},
                                                                      {"rA", &kReadA},
                                                                      {"wA", &kWriteA},
                                                                      {"rwB", &kReadWriteB},
                                                                      {"none", &kNoToken}};
  for (const Case& c : cases) {
    const int want[] = {c.admin, c.read_a, c.write_a, c.rw_b, c.none};
    for (size_t t = 0; t < tokens.size(); ++t) {
      const Headers& token = *tokens[t].second;
      HttpReply r;
      if (c.target.starts_with("/")) {
        r = client_->Send(c.method, c.target, c.method == post ? c.params : "", token);
      } else if (c.method == get) {
        r = Get(c.target, c.params, token);
      } else {
        r = Post(c.target, c.params, token);
      }
      EXPECT_EQ(r.status, want[t]) << c.name << " with " << tokens[t].first << ": " << r.body;
    }
  }
}

}  // namespace
}  // namespace gpulse::server
