// StatementReach (query/syntax/statement_reach.h): which database each statement
// reads or changes, table-driven over every statement kind; and the
// executor's own enforcement of QueryOptions::readable_databases, for
// programs that embed the library without the server in front.

#include "query/syntax/statement_reach.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/query.h"
#include "query/syntax/parser.h"
#include "tests/support/quiet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::query {
namespace {

// "db:<name>", "every", "names" or "error", with "+write" for changes.
std::string Describe(const std::string& text, const std::string& query_database) {
  Result<std::unique_ptr<Statement>> st = ParseStatement(text);
  EXPECT_TRUE(st.ok()) << text << ": " << st.status().ToString();
  if (!st.ok()) return "unparsed";
  const Result<Reach> r = StatementReach(**st, query_database);
  if (!r.ok()) return "error";
  std::string out;
  switch (r->kind) {
    case Reach::Kind::kDatabase:
      out = "db:" + r->database;
      break;
    case Reach::Kind::kEverything:
      out = "every";
      break;
    case Reach::Kind::kNames:
      out = "names";
      break;
  }
  return out + (r->changes ? "+write" : "");
}

TEST(StatementReachTest, EachStatementKind) {
  struct Case {
    std::string text, query_database, want;
  };
  const std::vector<Case> cases = {
      {"SELECT v FROM m", "", "db:"},
      {"SELECT v FROM m", "a", "db:a"},
      {"SELECT v FROM \"b\"..m", "a", "db:b"},
      {"SELECT v FROM b.rp.m", "", "db:b"},
      {"SELECT v FROM b..m, m", "a", "db:b"},
      {"SELECT v FROM b..m, c..m", "", "error"},
      {"SELECT v FROM (SELECT v FROM b..m)", "a", "db:b"},
      {"SELECT v FROM (SELECT v FROM b..m), c..n", "", "error"},
      {"SELECT v FROM /re/", "a", "db:a"},
      {"EXPLAIN SELECT v FROM b..m", "", "db:b"},
      {"SHOW MEASUREMENTS", "a", "db:a"},
      {"SHOW TAG VALUES FROM b..m WITH KEY = k", "a", "db:b"},
      {"SHOW RETENTION POLICIES ON b", "a", "db:b"},
      {"SHOW DATABASES", "a", "names"},
      {"SHOW SOURCES", "a", "every"},
      {"SHOW ALERTS", "a", "every"},
      {"SHOW SEASONS", "a", "every"},
      {"SHOW STALE", "a", "db:a"},
      {"SHOW KPIS", "", "db:"},
      {"NORTHSTAR OVER 1h", "a", "db:a"},
      {"DECOMPOSE NORTHSTAR BETWEEN now() - 2h AND now() - 1h VERSUS now() - 1h AND now()", "a",
       "db:a"},
      {"ANOMALIES OVER 1h", "", "db:"},
      {"ROLLOUTS OVER 6h", "a", "db:a"},
      {"DELETE FROM m", "a", "db:a+write"},
      {"DELETE FROM b..m", "a", "db:b+write"},
      {"DROP SERIES FROM m", "", "db:+write"},
      {"DROP MEASUREMENT m", "a", "db:a+write"},
      {"CREATE SEASON s FROM '2026-01-01' TO '2026-01-02'", "a", "every+write"},
      {"DROP ALERT x", "a", "every+write"},
      {"CREATE ALERT x ON NORTHSTAR WHEN value < 0.5 SEVERITY page OWNER infra", "a",
       "every+write"},
      {"CREATE ALERT x ON ROLLOUTS WHEN evidence >= 3 SEVERITY page OWNER infra", "a",
       "every+write"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Describe(c.text, c.query_database), c.want)
        << c.text << " (query database \"" << c.query_database << "\")";
  }
}

TEST(StatementReachTest, TwoDatabasesIsAnErrorAtTheStatement) {
  Result<std::unique_ptr<Statement>> st = ParseStatement("SELECT v FROM a..m, b..m");
  ASSERT_TRUE(st.ok());
  const Result<Reach> r = StatementReach(**st, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "line 1, column 1: the statement names databases a and b; one statement reads one "
            "database");
}

// Through gpulse::Query: FROM "db".."m" reads that database, and a caller with
// readable_databases gets PermissionDenied past them, statement by
// statement, and SHOW DATABASES lists only its own.
TEST(StatementReachTest, ExecutorRunsOnTheReachedDatabaseAndEnforcesTheScope) {
  storage::ScratchDir dir;
  std::unique_ptr<Db> db = test::OpenQuietDb(dir.path());
  ASSERT_NE(db, nullptr);
  std::vector<Point> points;
  for (const auto& [database, v] : {std::pair<std::string, int64_t>{"a", 1}, {"b", 2}, {"", 4}}) {
    Point p;
    p.measurement = "m";
    if (!database.empty()) p.tags = {{"db", database}};
    p.fields = {{"v", v}};
    p.timestamp_ns = 1'000'000'000;
    points.push_back(p);
  }
  ASSERT_TRUE(db->Write(points).ok());
  const auto sum = [&](const std::string& q, const QueryOptions& options) -> Result<int64_t> {
    QueryResult result;
    GPULSE_RETURN_IF_ERROR(gpulse::Query(db.get(), q, options, &result));
    const StatementResult& st = result.statements.at(0);
    if (!st.status.ok()) return st.status;
    return std::get<int64_t>(st.series.at(0).values.at(0).at(1));
  };
  QueryOptions all;
  EXPECT_EQ(*sum("SELECT sum(v) FROM m", all), 7);
  EXPECT_EQ(*sum("SELECT sum(v) FROM \"b\"..m", all), 2);
  all.database = "a";
  EXPECT_EQ(*sum("SELECT sum(v) FROM m", all), 1);
  EXPECT_EQ(*sum("SELECT sum(v) FROM b..m", all), 2);

  QueryOptions scoped;
  scoped.readable_databases = std::vector<std::string>{"a"};
  EXPECT_TRUE(sum("SELECT sum(v) FROM m", scoped).status().IsPermissionDenied());
  scoped.database = "a";
  EXPECT_EQ(*sum("SELECT sum(v) FROM m", scoped), 1);
  const Result<int64_t> other = sum("SELECT sum(v) FROM b..m", scoped);
  ASSERT_TRUE(other.status().IsPermissionDenied()) << other.status().ToString();
  EXPECT_EQ(other.status().message(), "the caller may not read database b (it may read a)");
  EXPECT_TRUE(sum("SELECT sum(v) FROM (SELECT v FROM b..m)", scoped).status().IsPermissionDenied());

  QueryResult shown;
  ASSERT_TRUE(
      gpulse::Query(db.get(), "SHOW DATABASES; SHOW SOURCES; SHOW ALERTS", scoped, &shown).ok());
  ASSERT_EQ(shown.statements.size(), 3u);
  ASSERT_TRUE(shown.statements[0].status.ok());
  ASSERT_EQ(shown.statements[0].series.size(), 1u);
  EXPECT_EQ(shown.statements[0].series[0].values,
            (std::vector<std::vector<QueryValue>>{{QueryValue(std::string("a"))}}));
  EXPECT_TRUE(shown.statements[1].status.IsPermissionDenied());
  EXPECT_TRUE(shown.statements[2].status.IsPermissionDenied());

  // SHOW STALE of a scoped caller reports its database, not the server's
  // pushing hosts and scrape targets of every database (show_sources).
  int asked = 0;
  for (QueryOptions* o : {&all, &scoped}) {
    o->show_sources = [&asked](ResultSeries* out) {
      ++asked;
      out->columns = {"kind", "name", "up", "last_seen", "points", "requests", "error"};
    };
  }
  QueryResult stale;
  ASSERT_TRUE(gpulse::Query(db.get(), "SHOW STALE", all, &stale).ok());
  EXPECT_EQ(asked, 1);
  ASSERT_TRUE(gpulse::Query(db.get(), "SHOW STALE", scoped, &stale).ok());
  EXPECT_EQ(asked, 1) << "a scoped SHOW STALE asked for every source";
}

}  // namespace
}  // namespace gpulse::query
