#include "query/syntax/parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpulse::query {
namespace {

// parse -> ToString -> parse -> ToString; the two texts must agree. Returns
// the canonical text, or "ERROR: ..." naming the step that failed.
std::string RoundTrip(const std::string& text) {
  Result<StatementList> first = ParseQuery(text);
  if (!first.ok()) return "ERROR: " + first.status().message();
  std::string canonical = QueryToString(*first);
  Result<StatementList> second = ParseQuery(canonical);
  if (!second.ok()) return "ERROR on reparse of [" + canonical + "]: " + second.status().message();
  std::string again = QueryToString(*second);
  if (again != canonical) return "ERROR: not stable: [" + canonical + "] then [" + again + "]";
  return canonical;
}

struct ValidCase {
  std::string input;
  std::string canonical;  // ToString() of the parse; empty: same as input
};

TEST(QueryParserTest, ValidQueriesRoundTrip) {
  const ValidCase kCases[] = {
      // What Telegraf's InfluxDB output sends at its start.
      {"CREATE DATABASE \"telegraf\"", "CREATE DATABASE telegraf"},
      {"create database \"my-fleet\"", "CREATE DATABASE \"my-fleet\""},
      {"SELECT count(distinct(job)) FROM gpu", ""},
      // What Grafana's InfluxDB data source sends.
      {"SELECT mean(\"util\") FROM \"gpu\" WHERE (\"node\" = 'n1') AND time >= now() - 6h and "
       "time <= now() GROUP BY time(1m), \"gpu\" fill(null)",
       "SELECT mean(util) FROM gpu WHERE node = 'n1' AND time >= now() - 6h AND time <= now() "
       "GROUP BY time(1m), gpu FILL(null)"},
      {"SELECT mean(\"value\") FROM \"cpu\" WHERE (\"host\" =~ /^(a|b)$/) AND time >= "
       "1704067200000ms and time <= 1704153600000ms GROUP BY time(30s), \"host\" fill(none)",
       "SELECT mean(value) FROM cpu WHERE host =~ /^(a|b)$/ AND time >= 1704067200000ms AND "
       "time <= 1704153600000ms GROUP BY time(30s), host FILL(none)"},
      {"SELECT mean(\"util\") FROM \"autogen\".\"gpu\" WHERE time > now() - 1h GROUP BY "
       "time(10s) fill(previous)",
       "SELECT mean(util) FROM autogen.gpu WHERE time > now() - 1h GROUP BY time(10s) "
       "FILL(previous)"},
      {"SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)gp/ LIMIT 100", ""},
      {"SHOW TAG KEYS FROM \"gpu\"", "SHOW TAG KEYS FROM gpu"},
      {"SHOW TAG VALUES FROM \"gpu\" WITH KEY = \"node\" WHERE \"sku\" =~ /^(H100|A100)$/",
       "SHOW TAG VALUES FROM gpu WITH KEY = node WHERE sku =~ /^(H100|A100)$/"},
      {"SHOW FIELD KEYS FROM \"gpu\"", "SHOW FIELD KEYS FROM gpu"},
      {"SHOW RETENTION POLICIES on \"telegraf\"", "SHOW RETENTION POLICIES ON telegraf"},
      {"SHOW DATABASES", ""},
      // The harness queries (shared/bench/peers/systems.py, workload.py).
      {"SELECT count(*) FROM \"gpu\" WHERE time >= '2024-01-01T00:00:00Z' AND time < "
       "'2024-01-08T00:00:00Z'",
       "SELECT count(*) FROM gpu WHERE time >= '2024-01-01T00:00:00Z' AND time < "
       "'2024-01-08T00:00:00Z'"},
      {"SELECT mean(\"util\") FROM \"gpu\" WHERE \"node\" = 'n0001' AND time >= "
       "'2024-01-04T12:00:00Z' AND time < '2024-01-04T13:00:00Z' GROUP BY time(1m), \"gpu\"",
       "SELECT mean(util) FROM gpu WHERE node = 'n0001' AND time >= '2024-01-04T12:00:00Z' AND "
       "time < '2024-01-04T13:00:00Z' GROUP BY time(1m), gpu"},
      {"SELECT mean(\"util\") FROM \"gpu\" WHERE time >= 1704067200s AND time < 1704672000s "
       "GROUP BY time(1h)",
       "SELECT mean(util) FROM gpu WHERE time >= 1704067200s AND time < 1704672000s GROUP BY "
       "time(1h)"},
      {"SELECT percentile(\"util\", 95) FROM \"gpu\" WHERE time >= 1704067200s AND time < "
       "1704672000s GROUP BY time(1d), \"sku\"",
       "SELECT percentile(util, 95) FROM gpu WHERE time >= 1704067200s AND time < 1704672000s "
       "GROUP BY time(1d), sku"},
      {"SELECT max(\"temp_c\") FROM \"gpu\" WHERE time >= 1704585600s AND time < 1704672000s "
       "GROUP BY time(5m), \"node\"",
       "SELECT max(temp_c) FROM gpu WHERE time >= 1704585600s AND time < 1704672000s GROUP BY "
       "time(5m), node"},
      {"SELECT count(\"peak\") FROM (SELECT max(\"util\") AS \"peak\" FROM \"gpu\" WHERE time >= "
       "1704067200s AND time < 1704153600s GROUP BY time(15m), \"node\", \"gpu\") WHERE \"peak\" "
       "= 0 AND time >= 1704067200s AND time < 1704153600s GROUP BY time(15m)",
       "SELECT count(peak) FROM (SELECT max(util) AS peak FROM gpu WHERE time >= 1704067200s AND "
       "time < 1704153600s GROUP BY time(15m), node, gpu) WHERE peak = 0 AND time >= 1704067200s "
       "AND time < 1704153600s GROUP BY time(15m)"},
      {"SELECT last(*) FROM \"gpu\" WHERE time >= '2024-01-07T23:00:00Z' AND time < "
       "'2024-01-08T00:00:00Z' GROUP BY *",
       "SELECT last(*) FROM gpu WHERE time >= '2024-01-07T23:00:00Z' AND time < "
       "'2024-01-08T00:00:00Z' GROUP BY *"},
      // The architecture sketch.
      {"SELECT mean(util), p95(util), max(temp_c) FROM gpu WHERE region = 'us-east' AND sku =~ "
       "/H100/ AND time >= now() - 24h GROUP BY node, time(15m) FILL(null)",
       ""},
      {"SELECT sum(gpu_minutes) / 60 AS gpu_hours FROM gpu WHERE time >= '2026-11-01' GROUP BY "
       "team, time(1d)",
       ""},
      // Expressions.
      {"SELECT (a + b) * c, a + b * c, -a, -(a + b), a - -5, -2.5 * x, a % 3 FROM m", ""},
      {"SELECT a - (b - c), (a - b) - c, ((a)) FROM m", "SELECT a - (b - c), a - b - c, a FROM m"},
      {"SELECT a / b / 2, sum(x) / 60 FROM m", ""},
      {"SELECT *, \"gpu util\", \"select\", \"a\\\"b\" FROM m", ""},
      {"SELECT \"util\"::field, node::TAG FROM gpu GROUP BY \"node\"::tag",
       "SELECT util::field, node::tag FROM gpu GROUP BY node::tag"},
      {"SELECT a FROM m WHERE s = 'it\\'s' AND x = 1.5e3 AND y > 0.25 AND b = true",
       "SELECT a FROM m WHERE s = 'it\\'s' AND x = 1500.0 AND y > 0.25 AND b = TRUE"},
      {"SELECT a AS \"b c\", d AS e FROM m", ""},
      // Functions.
      {"SELECT count(x), sum(x), mean(x), median(x), min(x), max(x), first(x), last(x), "
       "spread(x), stddev(x), percentile(x, 99.9), p50(x), p90(x), p95(x), p99(x), distinct(x), "
       "integral(x, 1s) FROM m",
       ""},
      {"SELECT derivative(mean(x), 1s), non_negative_derivative(max(x)), difference(x), rate(x, "
       "1m), increase(x), moving_average(mean(x), 5), cumulative_sum(sum(x)) FROM m GROUP BY "
       "time(1m)",
       ""},
      {"SELECT top(util, node, 3), bottom(util, 5) FROM gpu", ""},
      {"SELECT MEAN(x), Max(y) FROM m", "SELECT mean(x), max(y) FROM m"},
      {"SELECT mean(util), BASELINE(mean(util), 7d) FROM gpu GROUP BY sku, time(1h)",
       "SELECT mean(util), baseline(mean(util), 7d) FROM gpu GROUP BY sku, time(1h)"},
      // FROM.
      {"SELECT a FROM m1, \"db\".\"rp\".\"m2\", db..m3, /^gpu_/, \"my measurement\"",
       "SELECT a FROM m1, db.rp.m2, db..m3, /^gpu_/, \"my measurement\""},
      {"SELECT a FROM /a\\/b/", ""},
      {"SELECT a FROM (SELECT b FROM (SELECT c FROM m))", ""},
      {"SELECT x FROM (SELECT a / b AS x FROM m), /^m/", ""},
      // WHERE.
      {"SELECT a FROM m WHERE a = 1 OR b = 2 AND NOT c = 3", ""},
      {"SELECT a FROM m WHERE (a = 1 OR b = 2) AND c <> 'x'",
       "SELECT a FROM m WHERE (a = 1 OR b = 2) AND c != 'x'"},
      {"SELECT a FROM m WHERE NOT (a = 1 OR b = 2)", ""},
      {"SELECT a FROM m WHERE node IN ('n1', 'n2') AND gpu NOT IN ('0') AND sku !~ /A100/", ""},
      {"SELECT a FROM m WHERE a < 1 AND b <= 2 AND c > 3 AND d >= 4 AND e != 5", ""},
      {"SELECT a FROM m WHERE a IN ((b = 1), 2 + 3, -c) AND x = -(-5) AND y = a * -b",
       "SELECT a FROM m WHERE a IN ((b = 1), 2 + 3, -c) AND x = 5 AND y = a * -b"},
      {"SELECT -(-a), -5m, 1e21, 1e-7, \"\xC2\xB5\" FROM \"select\" WHERE t = 'a\\nb'",
       "SELECT -(-a), -5m, 1e+21, 1e-07, \"\xC2\xB5\" FROM \"select\" WHERE t = 'a\\nb'"},
      {"SELECT a FROM m WHERE time >= '2026-11-01' AND time < '2026-11-02T00:00:00.5+02:00'", ""},
      {"SELECT a FROM m WHERE time > 1704067200000000000 AND time > now() - 1mo", ""},
      {"SELECT a FROM m WHERE time >= now() - 1h30m AND time > 1704067200s - 7d", ""},
      {"SELECT a FROM m WHERE time >= '2026-11-01 12:30:00' AND time < 1704067200000000u", ""},
      // GROUP BY, FILL, ORDER BY, LIMIT, tz.
      {"SELECT mean(a) FROM m GROUP BY time(1h, 15m), *", ""},
      {"SELECT mean(a) FROM m GROUP BY time(1d, -2h) fill(linear)",
       "SELECT mean(a) FROM m GROUP BY time(1d, -2h) FILL(linear)"},
      {"SELECT mean(a) FROM m GROUP BY time(1mo) FILL(0)", ""},
      {"SELECT mean(a) FROM m GROUP BY time(1w) FILL(-1)", ""},
      {"SELECT mean(a) FROM m GROUP BY time(1m) FILL(2.5)", ""},
      {"SELECT a FROM m ORDER BY time DESC LIMIT 10 OFFSET 5 SLIMIT 2 SOFFSET 1 "
       "tz('Europe/Paris')",
       ""},
      {"SELECT a FROM m order by TIME", "SELECT a FROM m ORDER BY time ASC"},
      {"select a\n  -- a comment\nfrom m\nwhere b = 1 -- another\n", "SELECT a FROM m WHERE b = 1"},
      // SHOW, EXPLAIN.
      {"SHOW MEASUREMENTS", ""},
      {"SHOW MEASUREMENTS WITH MEASUREMENT = gpu", ""},
      {"SHOW TAG KEYS", ""},
      {"SHOW TAG KEYS FROM gpu WHERE node = 'n1' LIMIT 5 OFFSET 1", ""},
      {"SHOW TAG VALUES WITH KEY IN (\"node\", \"sku\") WHERE region = 'us-east'",
       "SHOW TAG VALUES WITH KEY IN (node, sku) WHERE region = 'us-east'"},
      {"SHOW TAG VALUES FROM gpu WITH KEY =~ /^n/", ""},
      {"SHOW TAG VALUES FROM gpu WITH KEY != node", ""},
      {"SHOW FIELD KEYS", ""},
      {"SHOW SERIES", ""},
      {"SHOW SERIES FROM gpu WHERE node = 'n1' LIMIT 10", ""},
      {"SHOW SERIES CARDINALITY", ""},
      {"SHOW SERIES CARDINALITY FROM gpu WHERE sku = 'H100'", ""},
      {"SHOW SOURCES", ""},
      {"SHOW STALE", ""},
      {"SHOW STALE 5m", ""},
      {"SHOW RETENTION POLICIES", ""},
      {"EXPLAIN SELECT mean(util) FROM gpu GROUP BY time(1h)", ""},
      {"delete from gpu where node = 'n1' and time < '2024-01-02'",
       "DELETE FROM gpu WHERE node = 'n1' AND time < '2024-01-02'"},
      {"DELETE FROM gpu", ""},
      {"DELETE FROM /^gp/, cpu WHERE time >= now() - 1h", ""},
      {"DELETE WHERE sku = 'A100'", ""},
      {"DROP SERIES FROM gpu WHERE node IN ('n1', 'n2')", ""},
      {"DROP SERIES WHERE node =~ /^old-/", ""},
      {"DROP SERIES FROM gpu", ""},
      {"drop measurement \"gpu\"", "DROP MEASUREMENT gpu"},
      // Several statements.
      {"SELECT a FROM m; SHOW MEASUREMENTS;", "SELECT a FROM m; SHOW MEASUREMENTS"},
      {"SHOW DATABASES ; SHOW TAG KEYS FROM gpu ; SELECT * FROM gpu",
       "SHOW DATABASES; SHOW TAG KEYS FROM gpu; SELECT * FROM gpu"},
      // Domain statements (syntax only).
      {"NORTHSTAR", ""},
      {"NORTHSTAR BY region OVER 24h EVERY 15m", ""},
      {"NORTHSTAR BY region OVER 7d EVERY 1d OFFSET 6h tz('Europe/Paris')", ""},
      {"NORTHSTAR BY region, sku WHERE sku =~ /H100/ OVER 7d", ""},
      {"DECOMPOSE NORTHSTAR BETWEEN now()-48h AND now()-24h VERSUS now()-24h AND now() BY "
       "region",
       "DECOMPOSE NORTHSTAR BETWEEN now() - 48h AND now() - 24h VERSUS now() - 24h AND now() BY "
       "region"},
      {"DECOMPOSE NORTHSTAR BETWEEN '2026-11-01' AND '2026-11-02' VERSUS 1704067200s AND "
       "1704153600s",
       ""},
  };
  for (const ValidCase& c : kCases) {
    std::string want = c.canonical.empty() ? c.input : c.canonical;
    EXPECT_EQ(RoundTrip(c.input), want) << c.input;
  }
}

// Every line of the examples block in docs/query-language.md parses and
// round-trips, so the document cannot drift from the parser.
TEST(QueryParserTest, DocumentedExamplesRoundTrip) {
  std::ifstream in(std::string(GPULSE_SOURCE_DIR) + "/docs/query-language.md");
  ASSERT_TRUE(in.is_open());
  std::stringstream buf;
  buf << in.rdbuf();
  std::string doc = buf.str();
  size_t begin = doc.find("```sql\n", doc.find("## Examples"));
  ASSERT_NE(begin, std::string::npos);
  begin += 7;
  size_t end = doc.find("```", begin);
  std::istringstream lines(doc.substr(begin, end - begin));
  int examples = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with("--")) continue;
    ++examples;
    EXPECT_EQ(RoundTrip(line).rfind("ERROR", 0), std::string::npos)
        << line << ": " << RoundTrip(line);
  }
  EXPECT_EQ(examples, 58);
}

// The tree with every binary and unary node in parentheses.
std::string Sexp(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kBinary:
      return "(" + Sexp(*e.children[0]) + " " + std::string(BinaryOpText(e.binary_op)) + " " +
             Sexp(*e.children[1]) + ")";
    case ExprKind::kUnary:
      return std::string(e.unary_op == UnaryOp::kNot ? "(NOT " : "(- ") + Sexp(*e.children[0]) +
             ")";
    case ExprKind::kIn: {
      std::string out = "(" + Sexp(*e.children[0]) + (e.negated ? " NOT IN [" : " IN [");
      for (size_t i = 1; i < e.children.size(); ++i) {
        out += (i > 1 ? ", " : "") + Sexp(*e.children[i]);
      }
      return out + "])";
    }
    case ExprKind::kCall: {
      std::string out = e.text + "(";
      for (size_t i = 0; i < e.children.size(); ++i) {
        out += (i > 0 ? ", " : "") + Sexp(*e.children[i]);
      }
      return out + ")";
    }
    default:
      return e.ToString();
  }
}

TEST(QueryParserTest, PrecedenceTable) {
  const std::pair<std::string, std::string> kCases[] = {
      {"a OR b AND c", "(a OR (b AND c))"},
      {"a AND b OR c", "((a AND b) OR c)"},
      {"NOT a = 1 AND b = 2", "((NOT (a = 1)) AND (b = 2))"},
      {"NOT NOT a", "(NOT (NOT a))"},
      {"a + b * c - d", "((a + (b * c)) - d)"},
      {"a - b - c", "((a - b) - c)"},
      {"a / b % c", "((a / b) % c)"},
      {"-a * b", "((- a) * b)"},
      {"-(a + b)", "(- (a + b))"},
      {"- - a", "(- (- a))"},
      {"a - -5", "(a - -5)"},
      {"-(5)", "-5"},
      {"a + 1 > b * 2 OR c", "(((a + 1) > (b * 2)) OR c)"},
      {"x IN (1, 2) AND y NOT IN ('a')", "((x IN [1, 2]) AND (y NOT IN ['a']))"},
      {"time >= now() - 6h AND time <= now()", "((time >= (now() - 6h)) AND (time <= now()))"},
      {"host =~ /a/ OR host !~ /b/", "((host =~ /a/) OR (host !~ /b/))"},
      {"mean(a + b) / 2", "(mean((a + b)) / 2)"},
  };
  for (const auto& [input, want] : kCases) {
    Result<std::unique_ptr<Expr>> e = ParseExpression(input);
    ASSERT_TRUE(e.ok()) << input << ": " << e.status().message();
    EXPECT_EQ(Sexp(**e), want) << input;
    // And the canonical text gives the same tree back.
    Result<std::unique_ptr<Expr>> again = ParseExpression((*e)->ToString());
    ASSERT_TRUE(again.ok()) << (*e)->ToString();
    EXPECT_EQ(Sexp(**again), want) << (*e)->ToString();
  }
}

TEST(QueryParserTest, SelectStatementFields) {
  Result<std::unique_ptr<Statement>> r = ParseStatement(
      "SELECT max(util) AS peak FROM db.rp.gpu, other WHERE node = 'n1' GROUP BY time(15m), gpu "
      "FILL(previous) ORDER BY time DESC LIMIT 3 SOFFSET 2 tz('UTC')");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)->kind, StatementKind::kSelect);
  const auto& s = static_cast<const SelectStatement&>(**r);
  ASSERT_EQ(s.fields.size(), 1u);
  EXPECT_EQ(s.fields[0].alias, "peak");
  EXPECT_EQ(s.fields[0].expr->kind, ExprKind::kCall);
  EXPECT_EQ(s.fields[0].expr->text, "max");
  ASSERT_EQ(s.sources.size(), 2u);
  EXPECT_EQ(s.sources[0].measurement.database, "db");
  EXPECT_EQ(s.sources[0].measurement.retention_policy, "rp");
  EXPECT_EQ(s.sources[0].measurement.name, "gpu");
  EXPECT_EQ(s.sources[1].measurement.database, "");
  EXPECT_EQ(s.sources[1].measurement.name, "other");
  ASSERT_NE(s.condition, nullptr);
  EXPECT_EQ(s.condition->binary_op, BinaryOp::kEq);
  ASSERT_EQ(s.dimensions.size(), 2u);
  EXPECT_EQ(s.dimensions[0]->ToString(), "time(15m)");
  EXPECT_EQ(s.dimensions[1]->kind, ExprKind::kVarRef);
  EXPECT_EQ(s.fill, FillKind::kPrevious);
  EXPECT_EQ(s.order, SortOrder::kDesc);
  EXPECT_EQ(s.limit, 3);
  EXPECT_EQ(s.offset, std::nullopt);
  EXPECT_EQ(s.soffset, 2);
  EXPECT_EQ(s.timezone, "UTC");
  EXPECT_EQ(s.pos.offset, 0u);
}

TEST(QueryParserTest, LiteralValues) {
  Result<std::unique_ptr<Expr>> e = ParseExpression("a = -9223372036854775807");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->children[1]->kind, ExprKind::kInteger);
  EXPECT_EQ((*e)->children[1]->int_value, -9223372036854775807);
  e = ParseExpression("1h30m");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->duration, (std::vector<DurationPart>{{1, "h"}, {30, "m"}}));
  e = ParseExpression("x =~ /a\\/b\\d/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->children[1]->text, "a/b\\d");
  EXPECT_EQ((*e)->ToString(), "x =~ /a\\/b\\d/");
  e = ParseExpression("0.1 + 2.0");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->ToString(), "0.1 + 2.0");
}

struct ErrorCase {
  std::string input;
  int line;
  int column;
  std::string message;  // ParseError::ToString() contains it
};

TEST(QueryParserTest, ErrorTable) {
  const ErrorCase kCases[] = {
      {"CREATE DATABASE fleet WITH DURATION 30d", 1, 23, "CREATE DATABASE takes a name only"},
      {"CREATE DATABASE", 1, 16, "found end of input"},
      {"", 1, 1,
       "expected SELECT, SHOW, EXPLAIN, DELETE, DROP, CREATE, NORTHSTAR, DECOMPOSE, ANOMALIES or "
       "ROLLOUTS, "
       "found end of "
       "input"},
      {"SELECT mean(x) WHERE a = 1", 1, 16, "expected FROM, found WHERE"},
      {"SELECT mean(\"util\"), max(x) WHERE a = 1", 1, 29, "expected FROM, found WHERE"},
      {"SELECT FROM m", 1, 8, "expected expression, found FROM"},
      {"SELECT a FROM", 1, 14, "expected measurement or (, found end of input"},
      {"SELECT a FROM m WHERE", 1, 22, "expected expression, found end of input"},
      {"SELECT a FROM m WHERE a = 1 GROUP time(1m)", 1, 35, "expected BY, found time"},
      {"SELECT a FROM m GROUP BY time(x)", 1, 26,
       "time() takes a bucket duration and an optional offset"},
      {"SELECT a FROM m GROUP BY mean(x)", 1, 26, "expected tag key, * or time(...), found mean"},
      {"SELECT a FROM m FILL(zero)", 1, 22,
       "expected none, null, previous, linear or a number, found zero"},
      {"SELECT foo(x) FROM m", 1, 8, "unknown function foo()"},
      {"SELECT percentile(x) FROM m", 1, 8, "percentile() takes 2 arguments, found 1"},
      {"SELECT percentile(x, 101) FROM m", 1, 22,
       "percentile() takes a percentile from 0 to 100 second"},
      {"SELECT mean(x, y) FROM m", 1, 8, "mean() takes 1 argument, found 2"},
      {"SELECT derivative() FROM m", 1, 8, "derivative() takes 1 to 2 arguments, found 0"},
      {"SELECT top(x) FROM m", 1, 8, "top() takes at least 2 arguments, found 1"},
      {"SELECT top(x, 0) FROM m", 1, 15, "top() takes a positive integer count last"},
      {"SELECT derivative(x, 5) FROM m", 1, 22, "derivative() takes a duration unit second"},
      {"SELECT moving_average(x, 1s) FROM m", 1, 26,
       "moving_average() takes a positive integer window second"},
      {"SELECT baseline(util, 7d) FROM m", 1, 17,
       "baseline() takes an aggregate such as mean(util) first"},
      {"SELECT baseline(mean(util), 7) FROM m", 1, 29, "baseline() takes a duration window"},
      {"SELECT time(1m) FROM m", 1, 8, "time() is only valid in GROUP BY"},
      {"SELECT a FROM m WHERE time > '2026-13-01'", 1, 30,
       "invalid time '2026-13-01': expected RFC3339 ('2026-11-01T00:00:00Z') or a date "
       "('2026-11-01')"},
      {"SELECT a FROM m WHERE 'yesterday' <= time", 1, 23, "invalid time 'yesterday'"},
      {"SELECT a FROM m WHERE time > '2026-11-01T10:00:00'", 1, 30, "invalid time"},
      {"DECOMPOSE NORTHSTAR BETWEEN 'x' AND now() VERSUS now() AND now()", 1, 29,
       "invalid time 'x'"},
      {"SELECT a FROM m LIMIT x", 1, 23, "expected integer, found x"},
      {"SELECT a FROM m LIMIT -1", 1, 23, "expected integer, found -"},
      {"SELECT a FROM m ORDER BY util", 1, 26, "expected time, found util"},
      {"SELECT a FROM m WHERE (a = 1", 1, 29, "expected ), found end of input"},
      {"SELECT a FROM m extra", 1, 17, "expected ; or end of input, found extra"},
      {"SELECT a FROM m;;", 1, 17,
       "expected SELECT, SHOW, EXPLAIN, DELETE, DROP, CREATE, NORTHSTAR, DECOMPOSE, ANOMALIES or "
       "ROLLOUTS, "
       "found ;"},
      {"SELECT a AS FROM m", 1, 13, "expected identifier, found FROM"},
      {"DELETE", 1, 7, "expected WHERE, found end of input"},
      {"DELETE gpu", 1, 8, "expected WHERE, found gpu"},
      {"DROP SERIES", 1, 12, "expected WHERE, found end of input"},
      {"DROP gpu", 1, 6, "expected SERIES, MEASUREMENT, ALERT or SEASON, found gpu"},
      {"DROP MEASUREMENT /gpu/", 1, 18, "expected measurement"},
      {"DELETE FROM (SELECT a FROM m)", 1, 13, "expected measurement"},
      {"SELECT a::int FROM m", 1, 11, "expected field or tag, found int"},
      {"SELECT a FROM a.b.c.d", 1, 21, "at most database.policy.measurement"},
      {"SELECT a FROM m WHERE a IN 1", 1, 28, "expected (, found 1"},
      {"SELECT a FROM m tz(Paris)", 1, 20, "expected time zone name as a string"},
      {"SHOW TAG VALUES FROM m", 1, 23, "expected WITH, found end of input"},
      {"SHOW TAG VALUES WITH KEY node", 1, 26, "expected =, !=, =~, !~ or IN, found node"},
      {"SHOW TAG VALUES WITH KEY =~ 'x'", 1, 29, "expected regex, found 'x'"},
      {"SHOW TAG", 1, 9, "expected KEYS or VALUES, found end of input"},
      {"SHOW FOO", 1, 6, "expected MEASUREMENTS, TAG KEYS, TAG VALUES, FIELD KEYS, SERIES, "},
      {"SHOW SERIES CARDINALITY LIMIT 5", 1, 25, "expected ; or end of input, found LIMIT"},
      {"EXPLAIN SHOW MEASUREMENTS", 1, 9, "expected SELECT, found SHOW"},
      {"NORTHSTAR OVER 5", 1, 16, "expected duration, found 5"},
      {"DECOMPOSE NORTHSTAR BETWEEN now() AND now()", 1, 44, "expected VERSUS, found end of input"},
      {"SELECT a\nFROM m\nWHERE b = 'x", 3, 11, "unterminated string"},
      {"SELECT a\nFROM m\nWHERE b = = 2", 3, 11, "expected expression, found ="},
      {"SELECT a FROM m WHERE host =~ /x", 1, 31, "unterminated regex"},
      {"SELECT a FROM m WHERE a = 1 # x", 1, 29, "unexpected character '#'"},
  };
  for (const ErrorCase& c : kCases) {
    ParseError error;
    Result<StatementList> r = ParseQuery(c.input, &error);
    ASSERT_FALSE(r.ok()) << c.input;
    EXPECT_TRUE(r.status().IsInvalidArgument()) << c.input;
    EXPECT_EQ(r.status().message(), error.ToString()) << c.input;
    EXPECT_EQ(error.pos.line, c.line) << c.input << ": " << error.ToString();
    EXPECT_EQ(error.pos.column, c.column) << c.input << ": " << error.ToString();
    EXPECT_NE(error.ToString().find(c.message), std::string::npos)
        << c.input << ": " << error.ToString();
  }
}

TEST(QueryParserTest, ErrorFieldsAndCaret) {
  const std::string text = "SELECT mean(util), p95(util) WHERE node = 'n1'";
  ParseError error;
  ASSERT_FALSE(ParseQuery(text, &error).ok());
  EXPECT_EQ(error.pos.offset, 29u);
  EXPECT_EQ(error.found, "WHERE");
  EXPECT_EQ(error.expected, "FROM");
  EXPECT_EQ(error.ToString(), "line 1, column 30: expected FROM, found WHERE");
  EXPECT_EQ(FormatErrorWithCaret(text, error), "line 1, column 30: expected FROM, found WHERE\n" +
                                                   text + "\n" + std::string(29, ' ') + "^");
}

TEST(QueryParserTest, NestingIsBounded) {
  auto nested = [](int depth) {
    return "SELECT " + std::string(depth, '(') + "a" + std::string(depth, ')') + " FROM m";
  };
  // The statement is one level, so 127 parentheses fit and the 128th fails.
  EXPECT_TRUE(ParseQuery(nested(127)).ok());
  ParseError at_limit;
  ASSERT_FALSE(ParseQuery(nested(128), &at_limit).ok());
  EXPECT_EQ(at_limit.pos.column, 7 + 128);
  ParseError error;
  ASSERT_FALSE(ParseQuery(nested(200), &error).ok());
  EXPECT_EQ(error.ToString(), "line 1, column 135: nesting deeper than 128 levels");

  std::string subqueries = "SELECT a FROM m";
  for (int i = 0; i < 200; ++i) subqueries = "SELECT a FROM (" + subqueries + ")";
  ASSERT_FALSE(ParseQuery(subqueries, &error).ok());
  EXPECT_NE(error.message.find("nesting deeper than 128 levels"), std::string::npos);

  std::string chain = "SELECT a";
  for (int i = 0; i < 1200; ++i) chain += " + a";
  ASSERT_FALSE(ParseQuery(chain + " FROM m", &error).ok());
  EXPECT_EQ(error.ToString(), "line 1, column 8: expression deeper than 1000 levels");

  std::string minus = "SELECT " + std::string(300, ' ');
  for (int i = 0; i < 300; ++i) minus[7 + i] = i % 2 == 0 ? '-' : ' ';
  ASSERT_FALSE(ParseQuery(minus + "a FROM m", &error).ok());
  EXPECT_NE(error.message.find("nesting deeper than 128 levels"), std::string::npos);

  ASSERT_FALSE(ParseQuery(std::string(kMaxQueryBytes + 1, ' '), &error).ok());
  EXPECT_EQ(error.ToString(), "line 1, column 1: query longer than 1048576 bytes");
}

TEST(QueryParserTest, ParseStatementWantsExactlyOne) {
  EXPECT_TRUE(ParseStatement("SHOW SOURCES;").ok());
  ParseError error;
  Result<std::unique_ptr<Statement>> r = ParseStatement("SHOW SOURCES; SHOW STALE", &error);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "line 1, column 15: expected one statement, found 2");
}

TEST(QueryParserTest, TimeStringsAreChecked) {
  // Valid forms round-trip unchanged; the parser only checks them.
  for (const char* t :
       {"'2026-11-01'", "'2026-11-01T00:00:00Z'", "'2024-02-29T23:59:59.123456789Z'",
        "'2026-11-01T02:00:00+02:00'", "'2026-11-01 08:00:00'"}) {
    std::string q = std::string("time >= ") + t;
    Result<std::unique_ptr<Expr>> e = ParseExpression(q);
    ASSERT_TRUE(e.ok()) << q << ": " << e.status().message();
    EXPECT_EQ((*e)->ToString(), q);
  }
  for (const char* t : {"'2023-02-29'", "'2026-11-01T24:00:00Z'", "'2026-1-01'", "'2026-11-01Z'",
                        "'2026-11-01T00:00:00.Z'", "'3000-01-01'"}) {
    EXPECT_FALSE(ParseExpression(std::string("time < ") + t).ok()) << t;
  }
  // Strings compared with anything but time are left alone.
  EXPECT_TRUE(ParseExpression("node = 'yesterday'").ok());
}

}  // namespace
}  // namespace gpulse::query
