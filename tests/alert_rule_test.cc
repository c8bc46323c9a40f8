// Alert rules, the language and engine side (query/fleet/alert_rule.h): CREATE
// ALERT / DROP ALERT / SHOW ALERTS parse, print, compile with their defaults
// and refuse what cannot run; rules are stored durably; a rule's evaluation
// at an instant gives one sample per group, with the baseline from the same
// instant of earlier days of the same kind, planned maintenance left out.
// The state machine and the HTTP side are in alerts_test.cc.

#include "query/fleet/alert_rule.h"
#include "query/executor.h"

#include <gtest/gtest.h>

#include "engine/gpulse.h"
#include "query/fleet/kpis.h"
#include "query/query.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
using gpulse::test::kMinute;
constexpr int64_t kMonday = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

std::string Canonical(const std::string& text) {
  Result<std::unique_ptr<query::Statement>> s = query::ParseStatement(text);
  if (!s.ok()) return "ERROR: " + s.status().message();
  const std::string printed = (*s)->ToString();
  Result<std::unique_ptr<query::Statement>> again = query::ParseStatement(printed);
  if (!again.ok()) return "ERROR on reparse of [" + printed + "]: " + again.status().message();
  EXPECT_EQ((*again)->ToString(), printed);
  return printed;
}

std::string CompileError(const std::string& text) {
  Result<query::AlertRule> r = query::CompileAlertRule(text);
  return r.ok() ? "" : r.status().message();
}

TEST(AlertRuleSyntaxTest, StatementsRoundTrip) {
  EXPECT_EQ(Canonical("create alert ns_drop on northstar by region when value < baseline - 3 * "
                      "mad for 15m severity page owner infra"),
            "CREATE ALERT ns_drop ON NORTHSTAR BY region WHEN value < baseline - 3 * mad FOR 15m "
            "SEVERITY page OWNER infra");
  EXPECT_EQ(Canonical("CREATE ALERT hot ON SELECT max(temp_c) FROM gpu WHERE time > now() - 5m "
                      "GROUP BY node WHEN value > 90 SEVERITY ticket OWNER \"ml platform\" "
                      "WEBHOOK 'http://hooks:9000/x'"),
            "CREATE ALERT hot ON SELECT max(temp_c) FROM gpu WHERE time > now() - 5m GROUP BY "
            "node WHEN value > 90 SEVERITY ticket OWNER \"ml platform\" WEBHOOK "
            "'http://hooks:9000/x'");
  EXPECT_EQ(Canonical("CREATE ALERT t ON KPI thermal_throttled_share OVER 15m WHEN value > 0.02 "
                      "AND deviation > 4 BASELINE 14d FOR 10m SEVERITY info OWNER infra"),
            "CREATE ALERT t ON KPI thermal_throttled_share OVER 15m WHEN value > 0.02 AND "
            "deviation > 4 BASELINE 14d FOR 10m SEVERITY info OWNER infra");
  EXPECT_EQ(Canonical("CREATE ALERT xid ON NORTHSTAR BY node WHEN hardware > 0.2 SEVERITY page "
                      "OWNER infra action DEGRADE"),
            "CREATE ALERT xid ON NORTHSTAR BY node WHEN hardware > 0.2 SEVERITY page OWNER "
            "infra ACTION degrade");
  EXPECT_EQ(Canonical("DROP ALERT ns_drop"), "DROP ALERT ns_drop");
  EXPECT_EQ(Canonical("SHOW ALERTS"), "SHOW ALERTS");
  EXPECT_EQ(Canonical("create season black_friday from '2026-11-27' to now() + 3d"),
            "CREATE SEASON black_friday FROM '2026-11-27' TO now() + 3d");
  EXPECT_EQ(Canonical("DROP SEASON black_friday"), "DROP SEASON black_friday");
  EXPECT_EQ(Canonical("SHOW SEASONS"), "SHOW SEASONS");
  EXPECT_EQ(Canonical("CREATE TABLE t"),
            "ERROR: line 1, column 8: expected ALERT or SEASON, found TABLE");
  // The rule's words are not reserved elsewhere.
  EXPECT_EQ(Canonical("SELECT owner, severity, alert FROM create WHERE when = 'for'"),
            "SELECT owner, severity, alert FROM create WHERE when = 'for'");
}

TEST(AlertRuleSyntaxTest, ErrorsSayWhatWasExpectedAndWhere) {
  EXPECT_EQ(Canonical("CREATE ALERT a ON NORTHSTAR WHEN value < 0.5 OWNER infra"),
            "ERROR: line 1, column 46: expected SEVERITY, found OWNER");
  EXPECT_EQ(Canonical("CREATE ALERT a ON NORTHSTAR WHEN value < 0.5 SEVERITY urgent OWNER x"),
            "ERROR: line 1, column 55: expected page, ticket or info, found urgent");
  EXPECT_EQ(Canonical("CREATE ALERT a ON gpu WHEN value < 0.5 SEVERITY page OWNER x"),
            "ERROR: line 1, column 19: expected NORTHSTAR, ROLLOUTS, SELECT or KPI, found gpu");
  EXPECT_EQ(Canonical("CREATE ALERT a ON KPI k WHEN v > 1 SEVERITY page OWNER x WEBHOOK url"),
            "ERROR: line 1, column 66: expected the webhook's URL as a 'string', found url");
  EXPECT_EQ(Canonical("CREATE ALERT a ON NORTHSTAR WHEN value < 0.5 FOR soon SEVERITY page "
                      "OWNER x"),
            "ERROR: line 1, column 50: expected duration, found soon");
  EXPECT_EQ(Canonical("CREATE ALERT a ON NORTHSTAR BY node WHEN value < 0.5 SEVERITY page OWNER "
                      "x ACTION reboot"),
            "ERROR: line 1, column 83: expected degrade (the one action: mark the node "
            "degraded), found reboot");
}

TEST(AlertRuleCompileTest, DefaultsAreWrittenIntoTheStoredText) {
  Result<query::AlertRule> r = query::CompileAlertRule(
      "CREATE ALERT ns ON NORTHSTAR BY cluster WHEN value < baseline - 3 * sigma SEVERITY page "
      "OWNER infra");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text,
            "CREATE ALERT ns ON NORTHSTAR BY cluster OVER 30m WHEN value < baseline - 3 * sigma "
            "SEVERITY page OWNER infra");
  EXPECT_TRUE(r->uses_baseline);
  EXPECT_EQ(r->baseline_history_ns, 7 * kDay);
  EXPECT_EQ(r->for_ns, 0);
  EXPECT_EQ(r->severity, query::Severity::kPage);

  r = query::CompileAlertRule(
      "CREATE ALERT k ON KPI job_success_rate WHEN value < 0.9 FOR 20m SEVERITY ticket OWNER ml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text,
            "CREATE ALERT k ON KPI job_success_rate OVER 1h WHEN value < 0.9 FOR 20m SEVERITY "
            "ticket OWNER ml");
  EXPECT_FALSE(r->uses_baseline);
  EXPECT_EQ(r->for_ns, 20 * kMinute);

  // A rollout is watched over the last six hours unless the rule says.
  r = query::CompileAlertRule(
      "create alert bad_rollout on rollouts when evidence >= 3 severity page owner infra");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text,
            "CREATE ALERT bad_rollout ON ROLLOUTS OVER 6h WHEN evidence >= 3 SEVERITY page OWNER "
            "infra");
  EXPECT_EQ(Canonical("CREATE ALERT r ON ROLLOUTS WHERE region = 'us-east' OVER 12h WHEN "
                      "evidence >= 4 SEVERITY ticket OWNER ml"),
            "CREATE ALERT r ON ROLLOUTS WHERE region = 'us-east' OVER 12h WHEN evidence >= 4 "
            "SEVERITY ticket OWNER ml");
}

TEST(AlertRuleCompileTest, RulesThatCannotRunAreRefused) {
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR OVER 1h EVERY 5m WHEN value < 0.5 "
                         "SEVERITY page OWNER x"),
            "line 1, column 43: a rule's NORTHSTAR has one value per group at each evaluation: "
            "leave out EVERY");
  EXPECT_EQ(CompileError("CREATE ALERT a ON SELECT mean(util) FROM gpu WHEN value < 0.5 SEVERITY "
                         "page OWNER x"),
            "line 1, column 19: a rule's SELECT must bound time from below relative to now(), "
            "such as WHERE time > now() - 15m: it runs every minute");
  // A fixed date, or only an upper bound, would read more every minute.
  for (const char* where : {"time > '2026-11-01T00:00:00Z'", "time < now()"}) {
    const std::string error =
        CompileError(std::string("CREATE ALERT a ON SELECT mean(util) FROM gpu WHERE ") + where +
                     " WHEN value < 0.5 SEVERITY page OWNER x");
    EXPECT_NE(error.find("line 1, column 19: a rule's SELECT must bound time from below"),
              std::string::npos)
        << where << ": " << error;
  }
  EXPECT_EQ(CompileError("CREATE ALERT a ON SELECT mean(util) FROM gpu WHERE time > now() - 5m "
                         "OR time < now() - 1h WHEN value < 0.5 SEVERITY page OWNER x"),
            "line 1, column 52: conditions on time must be joined to the rest with AND, not OR "
            "or NOT");
  EXPECT_EQ(CompileError("CREATE ALERT a ON KPI nope WHEN value < 0.5 SEVERITY page OWNER x"),
            "alert a: no KPI is called nope (SHOW KPIS lists them)");
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR WHEN value < 0.5 BASELINE 14d SEVERITY "
                         "page OWNER x"),
            "line 1, column 55: BASELINE sets the history that WHEN's baseline, mad, sigma or "
            "deviation compare with; WHEN names none of them");
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR WHEN value < baseline BASELINE 36h "
                         "SEVERITY page OWNER x"),
            "line 1, column 60: BASELINE compares with whole days of history, from 1d to 90d");
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR WHEN mean(value) < 0.5 SEVERITY page "
                         "OWNER x"),
            "line 1, column 34: WHEN compares numbers; it may call math functions (abs, "
            "round...) and baseline(), mad(), sigma(), deviation(), not mean()");
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR WHEN value > baseline(value, 7d) SEVERITY "
                         "page OWNER x"),
            "line 1, column 42: baseline() takes one expression: the value whose history it "
            "reads");
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR WHEN value > baseline(sigma(value)) "
                         "SEVERITY page OWNER x"),
            "line 1, column 51: sigma() cannot be nested");
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR WHEN value < 0.5 SEVERITY page OWNER x "
                         "WEBHOOK 'ftp://hooks/x'"),
            "alert a: the webhook 'ftp://hooks/x' is not an http:// or https:// URL");
  EXPECT_EQ(CompileError("CREATE ALERT collection_contract ON NORTHSTAR WHEN value < 0.5 SEVERITY "
                         "page OWNER x"),
            "alert collection_contract: the name is the built-in freshness rule's");
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR BY region WHEN value < 0.5 SEVERITY page "
                         "OWNER x ACTION degrade"),
            "alert a: ACTION degrade marks the node of each alert degraded; the source must "
            "group by node (NORTHSTAR ... BY node, or a SELECT ... GROUP BY node)");
  EXPECT_EQ(CompileError("CREATE ALERT a ON NORTHSTAR WHEN value =~ /x/ SEVERITY page OWNER x"),
            "line 1, column 34: WHEN compares numbers, not patterns");
}

class AlertRuleDbTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    db_.reset();
    db_ = test::OpenQuietDb(dir_.path());
    ASSERT_NE(db_, nullptr);
  }

  StatementResult Run(const std::string& q, int64_t now = 0) {
    return test::RunFirst(db_.get(), q, now);
  }

  void Temp(const std::string& node, int64_t t, double celsius) {
    const Status s = db_->Write({Point{"gpu", {{"node", node}}, {{"temp_c", celsius}}, t}});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::vector<query::AlertSample> Evaluate(const std::string& text, int64_t now) {
    Result<query::AlertRule> rule = query::CompileAlertRule(text);
    EXPECT_TRUE(rule.ok()) << rule.status().ToString();
    std::vector<query::AlertSample> out;
    if (!rule.ok()) return out;
    const Status s = query::EvaluateAlertRule(db_.get(), &query::Execute, *rule, {}, now, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

TEST_F(AlertRuleDbTest, RulesAreStoredAcrossRestartsAndDroppedByName) {
  const int64_t now = kMonday + 10 * kHour;
  Temp("n1", now - kMinute, 70);
  const std::string rule =
      "CREATE ALERT hot ON SELECT max(temp_c) FROM gpu WHERE time > now() - 5m GROUP BY node "
      "WHEN value > 85 FOR 5m SEVERITY page OWNER infra";
  StatementResult r = Run(rule, now);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], "alert hot created; now 1 group(s), 0 meeting WHEN");
  // The same definition again changes nothing; another one under the name is refused.
  r = Run(rule, now);
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.notes.at(0), "alert hot exists with this definition; unchanged");
  r = Run("CREATE ALERT hot ON NORTHSTAR WHEN value < 0.5 SEVERITY page OWNER infra", now);
  EXPECT_EQ(r.status.message(), "alert hot exists with another definition; DROP ALERT it first");

  Reopen();
  r = Run("SHOW ALERTS");
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.series.size(), 1u);
  EXPECT_EQ(r.series[0].columns,
            (std::vector<std::string>{"name", "severity", "owner", "state", "definition"}));
  ASSERT_EQ(r.series[0].values.size(), 1u);
  EXPECT_EQ(r.series[0].values[0][0], QueryValue(std::string("hot")));
  EXPECT_EQ(r.series[0].values[0][1], QueryValue(std::string("page")));
  EXPECT_EQ(r.series[0].values[0][4], QueryValue(rule));

  EXPECT_TRUE(db_->Compact().ok());  // a compaction keeps definitions
  EXPECT_TRUE(Run("DROP ALERT hot").status.ok());
  EXPECT_EQ(Run("DROP ALERT hot").status.message(), "no alert 'hot'");
  Reopen();
  EXPECT_TRUE(Run("SHOW ALERTS").series.at(0).values.empty());
}

TEST_F(AlertRuleDbTest, ARuleWhoseSourceCannotAnswerIsRefusedAtCreate) {
  const int64_t now = kMonday + 10 * kHour;
  Temp("n1", now - kMinute, 70);
  StatementResult r =
      Run("CREATE ALERT a ON SELECT max(temp_c) FROM gpu WHERE time > now() - 5m GROUP BY node "
          "WHEN temperature > 85 SEVERITY page OWNER infra",
          now);
  EXPECT_EQ(r.status.message(),
            "alert a: line 1, column 90: WHEN names temperature, which the source does not "
            "answer; it has max, value");
  ASSERT_TRUE(
      db_->Write({Point{"gpu", {{"node", "n1"}}, {{"job", std::string("j1")}}, now - 1}}).ok());
  r =
      Run("CREATE ALERT a ON SELECT mean(job) FROM gpu WHERE time > now() - 5m WHEN value > 1 "
          "SEVERITY page OWNER infra",
          now);
  // The position is in the CREATE ALERT statement as written: mean( is its
  // 26th column.
  EXPECT_EQ(r.status.message(),
            "alert a, source [SELECT mean(job) FROM gpu WHERE time > now() - 5m]: line 1, column "
            "26: mean() cannot take the string field 'job'");
  EXPECT_TRUE(Run("SHOW ALERTS").series.at(0).values.empty());
}

TEST_F(AlertRuleDbTest, ASelectRuleHasOneSamplePerGroupFromItsNewestValue) {
  const int64_t now = kMonday + 10 * kHour;
  for (int m = 10; m >= 1; --m) {
    Temp("n1", now - m * kMinute, 70);
    Temp("n2", now - m * kMinute, m <= 3 ? 95 : 70);  // heating up in the last 3 minutes
  }
  const auto samples = Evaluate(
      "CREATE ALERT hot ON SELECT max(temp_c) FROM gpu WHERE time > now() - 10m GROUP BY "
      "node, time(1m) WHEN value > 85 SEVERITY page OWNER infra",
      now);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(query::GroupText(samples[0].group), "node=n1");
  EXPECT_FALSE(samples[0].active);
  EXPECT_EQ(query::GroupText(samples[1].group), "node=n2");
  // Separators inside a value are escaped: these two groups stay apart.
  EXPECT_EQ(query::GroupText({{"a", "x,b=y"}}), "a=x\\,b\\=y");
  EXPECT_NE(query::GroupText({{"a", "x,b=y"}}), query::GroupText({{"a", "x"}, {"b", "y"}}));
  EXPECT_TRUE(samples[1].active);
  EXPECT_EQ(samples[1].columns.at("value"), QueryValue(95.0));
  // Seen from 5 minutes earlier, n2 was still cool: the source sees only up to its instant.
  EXPECT_FALSE(Evaluate("CREATE ALERT hot ON SELECT max(temp_c) FROM gpu WHERE time > now() - "
                        "10m GROUP BY node, time(1m) WHEN value > 85 SEVERITY page OWNER infra",
                        now - 5 * kMinute)
                   .at(1)
                   .active);
}

TEST_F(AlertRuleDbTest, TheBaselineIsTheSameInstantOnEarlierDaysOfTheSameKindOutsideMaintenance) {
  // Thursday 2026-11-12 10:00Z; history: Mon-Wed 11-09..11 and Mon-Fri 11-02..06.
  const int64_t now = kMonday + 10 * kDay + 10 * kHour;
  const std::map<int, double> history = {
      {1, 10},   {2, 12},   {3, 11},  // Wed, Tue, Mon
      {4, 1000}, {5, 1000},           // Sun, Sat: weekend days are not this day's kind
      {6, 14},   {7, 13}};            // Fri 11-06 (7d keeps day 7: Thu 11-05 is day 7)
  for (const auto& [days_back, v] : history) Temp("n1", now - days_back * kDay - kMinute, v);
  Temp("n1", now - kMinute, 30);
  // Node n1 was in maintenance on Tuesday: that day's value does not count.
  ASSERT_TRUE(db_->Write({Point{"maintenance",
                                {{"node", "n1"}, {"reason", "kernel-patch"}},
                                {{"end", now - 2 * kDay + 2 * kHour}},
                                now - 2 * kDay - 2 * kHour}})
                  .ok());
  const auto samples = Evaluate(
      "CREATE ALERT a ON SELECT last(temp_c) FROM gpu WHERE time > now() - 5m GROUP BY node WHEN "
      "deviation > 3 SEVERITY page OWNER infra",
      now);
  ASSERT_EQ(samples.size(), 1u);
  const auto& c = samples[0].columns;
  // History kept: 10, 11, 14, 13 -> median 12, MAD median(2, 1, 2, 1) = 1.5.
  EXPECT_EQ(c.at("baseline"), QueryValue(12.0));
  EXPECT_EQ(c.at("mad"), QueryValue(1.5));
  EXPECT_NEAR(std::get<double>(c.at("sigma")), 1.5 * 1.4826, 1e-12);
  EXPECT_NEAR(std::get<double>(c.at("deviation")), 18 / (1.5 * 1.4826), 1e-9);
  EXPECT_TRUE(samples[0].active);
  EXPECT_FALSE(samples[0].in_maintenance);
  // With no history (a day before any), deviation is unknown: neither
  // `deviation > 3` nor `NOT (deviation < 3)` holds.
  for (const char* when : {"deviation > 3", "NOT (deviation < 3)"}) {
    const auto none = Evaluate(
        std::string("CREATE ALERT a ON SELECT last(temp_c) FROM gpu WHERE time > now() - 5m "
                    "GROUP BY node WHEN ") +
            when + " SEVERITY page OWNER infra",
        now - 7 * kDay - 1);
    ASSERT_EQ(none.size(), 1u) << when;
    EXPECT_FALSE(none[0].active) << when;
    EXPECT_EQ(none[0].columns.at("deviation"), QueryValue()) << when;
  }

  // A known season over Monday's instant leaves Monday out too: 10, 14, 13
  // -> median 13, MAD median(3, 1, 0) = 1.
  StatementResult season =
      Run("CREATE SEASON launch FROM '2026-11-09T00:00:00Z' TO '2026-11-10T00:00:00Z'", now);
  ASSERT_TRUE(season.status.ok()) << season.status.ToString();
  auto again = Evaluate(
      "CREATE ALERT a ON SELECT last(temp_c) FROM gpu WHERE time > now() - 5m GROUP BY node WHEN "
      "deviation > 3 SEVERITY page OWNER infra",
      now);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].columns.at("baseline"), QueryValue(13.0));
  EXPECT_EQ(again[0].columns.at("mad"), QueryValue(1.0));
  EXPECT_TRUE(again[0].season.empty());
  // Evaluated inside the season, a baseline rule says so (the server holds it
  // back); a rule with no baseline does not care.
  again = Evaluate(
      "CREATE ALERT a ON SELECT last(temp_c) FROM gpu WHERE time > now() - 5m GROUP BY node WHEN "
      "deviation > 3 SEVERITY page OWNER infra",
      now - 3 * kDay);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].season, "launch");
  EXPECT_TRUE(Evaluate("CREATE ALERT a ON SELECT last(temp_c) FROM gpu WHERE time > now() - 5m "
                       "GROUP BY node WHEN value > 3 SEVERITY page OWNER infra",
                       now - 3 * kDay)
                  .at(0)
                  .season.empty());

  // Inside a maintenance window now, the sample says so (the server holds it back).
  ASSERT_TRUE(db_->Write({Point{"maintenance",
                                {{"node", "n1"}, {"reason", "firmware-rollout"}},
                                {{"end", now + kHour}},
                                now - kHour}})
                  .ok());
  EXPECT_TRUE(Evaluate("CREATE ALERT a ON SELECT last(temp_c) FROM gpu WHERE time > now() - 5m "
                       "GROUP BY node WHEN deviation > 3 SEVERITY page OWNER infra",
                       now)
                  .at(0)
                  .in_maintenance);
}

// A server evaluates a rule each minute; with the rule's history kept, a
// baseline's past days are its own earlier answers instead of new
// evaluations of the source, and the answers are the same.
TEST_F(AlertRuleDbTest, KeptHistoryGivesTheSameAnswersWithoutEvaluatingPastDaysAgain) {
  const int64_t thursday = kMonday + 10 * kDay + 10 * kHour;  // 2026-11-12T10:00Z
  for (int d = 10; d >= -1; --d) Temp("n1", thursday - d * kDay - kMinute, 10 + (d * 7) % 5);
  Result<query::AlertRule> rule = query::CompileAlertRule(
      "CREATE ALERT a ON SELECT last(temp_c) FROM gpu WHERE time > now() - 5m GROUP BY node WHEN "
      "deviation > 3 SEVERITY page OWNER infra");
  ASSERT_TRUE(rule.ok()) << rule.status().ToString();
  query::RuleHistory history;
  for (const int64_t now : {thursday, thursday + kDay}) {  // Thursday, then Friday
    std::vector<query::AlertSample> fresh, kept;
    ASSERT_TRUE(query::EvaluateAlertRule(db_.get(), &query::Execute, *rule, {}, now, &fresh).ok());
    const uint64_t misses = history.misses;
    ASSERT_TRUE(
        query::EvaluateAlertRule(db_.get(), &query::Execute, *rule, {}, now, &kept, &history).ok());
    ASSERT_EQ(fresh.size(), 1u);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].columns, fresh[0].columns);
    EXPECT_EQ(kept[0].active, fresh[0].active);
    // Thursday's five weekday history days are evaluated once; Friday's
    // (Thursday itself and the four before it) were all kept.
    EXPECT_EQ(history.misses - misses, now == thursday ? 5u : 0u);
  }
  // Instants older than the history (and a day) are forgotten.
  EXPECT_LE(history.size(), 9u);
}

TEST_F(AlertRuleDbTest, SeasonsAreStoredWithAbsoluteBoundsAndChecked) {
  const int64_t now = kMonday + 10 * kHour;
  StatementResult r = Run("CREATE SEASON holidays FROM now() - 1d TO now() + 2d", now);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  Reopen();
  r = Run("SHOW SEASONS");
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.series.at(0).values.size(), 1u);
  EXPECT_EQ(r.series[0].values[0][0], QueryValue(std::string("holidays")));
  EXPECT_EQ(r.series[0].values[0][1], QueryValue(now - kDay));
  EXPECT_EQ(r.series[0].values[0][2], QueryValue(now + 2 * kDay));
  EXPECT_EQ(Run("CREATE SEASON x FROM '2026-11-10' TO '2026-11-09'").status.message(),
            "line 1, column 38: a season ends after it starts");
  EXPECT_EQ(
      Run("CREATE SEASON x FROM -9000000000000000000 TO 9000000000000000000").status.message(),
      "line 1, column 22: a season lies outside the years gpulse handles");
  EXPECT_EQ(Run("CREATE SEASON x FROM '2026-01-01' TO '2027-06-01'").status.message(),
            "line 1, column 38: a season lasts at most a year");
  EXPECT_TRUE(Run("DROP SEASON holidays").status.ok());
  EXPECT_EQ(Run("DROP SEASON holidays").status.message(), "no season 'holidays'");
  EXPECT_TRUE(Run("SHOW SEASONS").series.at(0).values.empty());
}

TEST_F(AlertRuleDbTest, NorthstarAndKpiRulesAnswerWhatTheirStatementsAnswer) {
  test::SimulateInto(db_.get(), test::SmallFleet(4, 1, 3, kMonday));
  const int64_t now = kMonday + 14 * kHour;
  auto samples =
      Evaluate("CREATE ALERT g ON NORTHSTAR WHEN value < 0.99 SEVERITY page OWNER infra", now);
  ASSERT_EQ(samples.size(), 1u);
  StatementResult direct = Run("NORTHSTAR OVER 30m", now);
  ASSERT_TRUE(direct.status.ok());
  EXPECT_EQ(samples[0].columns.at("value"), direct.series.at(0).values.at(0).at(1));
  EXPECT_EQ(samples[0].columns.at("value"), samples[0].columns.at("goodput"));
  EXPECT_TRUE(samples[0].columns.contains("scheduling"));

  samples = Evaluate(
      "CREATE ALERT s ON KPI allocation_ratio OVER 2h WHEN value > 0 SEVERITY info OWNER infra",
      now);
  ASSERT_EQ(samples.size(), 1u);
  Result<QueryValue> kpi =
      query::EvaluateKpi(db_.get(), "allocation_ratio", now - 2 * kHour, now, {}, now);
  ASSERT_TRUE(kpi.ok());
  EXPECT_EQ(samples[0].columns.at("value"), *kpi);
  EXPECT_TRUE(samples[0].active);
}

}  // namespace
}  // namespace gpulse
