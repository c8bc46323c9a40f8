// Regular expressions in queries (query/syntax/regex.h): RE2, linear in the text and
// never recursive. The regression test is named after the defect: one query
// over a long tag value crashed `gpulse serve` (std::regex recursed once a
// character and backtracked exponentially). Then Go's syntax, every place a
// query takes a regex with a bad one, and a bounded random run of patterns
// over long values through the whole query path.

#include "query/syntax/regex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/query.h"
#include "tests/support/quiet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::query {
namespace {

class RegexQueryTest : public ::testing::Test {
 protected:
  void SetUp() override { db_ = test::OpenQuietDb(dir_.path()); }

  void Write(const std::string& m, const std::string& tag, const std::string& s, int64_t t) {
    Point p;
    p.measurement = m;
    p.tags = {{"k", tag}};
    p.fields = {{"v", int64_t{1}}, {"s", s}};
    p.timestamp_ns = t;
    const Status st = db_->Write({p});
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // The one statement's result; the test fails on a query-level error.
  StatementResult Run(const std::string& q) {
    QueryResult result;
    const Status s = gpulse::Query(db_.get(), q, QueryOptions(), &result);
    EXPECT_TRUE(s.ok()) << q << ": " << s.ToString();
    if (result.statements.empty()) return {};
    return result.statements[0];
  }

  // count(v) of the answer's first row, or 0 without rows.
  int64_t Count(const std::string& q) {
    const StatementResult r = Run(q);
    EXPECT_TRUE(r.status.ok()) << q << ": " << r.status.ToString();
    if (r.series.empty() || r.series[0].values.empty()) return 0;
    return std::get<int64_t>(r.series[0].values[0][1]);
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

// The probe's query: a tag value of 30,000 a's and /(a+)+b/.
TEST_F(RegexQueryTest, RegexOverLongTagValueCrashesServer) {
  const std::string long_value(30'000, 'a');
  Write("m", long_value, long_value, 1'000'000'000);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(Count("SELECT count(v) FROM m WHERE k =~ /(a+)+b/"), 0);
  EXPECT_EQ(Count("SELECT count(v) FROM m WHERE k =~ /^(a+)+$/"), 1);
  EXPECT_EQ(Count("SELECT count(v) FROM m WHERE s =~ /(a|aa)+b/"), 0);
  EXPECT_EQ(Count("SELECT count(v) FROM m WHERE k !~ /(a*)*b/"), 1);
  EXPECT_EQ(Run("SHOW TAG VALUES FROM m WITH KEY =~ /(k+)+x/").series.size(), 0u);
  EXPECT_EQ(Run("SHOW SERIES FROM m WHERE k =~ /(a+)+b/").series.size(), 0u);
  // Linear time: each of these is microseconds to milliseconds; a
  // backtracking engine takes longer than the universe has.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
}

// The syntax is Go's (InfluxQL and PromQL define it): flags, Perl classes,
// POSIX classes, unanchored search; in WHERE and in FROM.
TEST_F(RegexQueryTest, PatternsMeanWhatTheyMeanInInfluxQL) {
  Write("gpu", "H100-SXM", "x", 1'000'000'000);
  Write("gpu", "a100-pcie", "y", 2'000'000'000);
  Write("cpu", "h100", "z", 3'000'000'000);
  EXPECT_EQ(Count("SELECT count(v) FROM gpu WHERE k =~ /(?i)^[ah]100/"), 2);
  EXPECT_EQ(Count("SELECT count(v) FROM gpu WHERE k =~ /\\d{3}-[[:lower:]]+$/"), 1);
  EXPECT_EQ(Count("SELECT count(v) FROM gpu WHERE k =~ /SXM/"), 1);
  EXPECT_EQ(Count("SELECT count(v) FROM /^g/"), 2);
}

// Every place a query takes a regex answers a bad one with an error that
// names the pattern, never an exception.
TEST_F(RegexQueryTest, BadPatternIsAnErrorEverywhere) {
  Write("m", "a", "x", 1'000'000'000);
  const std::vector<std::string> queries = {
      "SELECT count(v) FROM m WHERE k =~ /(a/",
      "SELECT count(v) FROM m WHERE s !~ /[z-a]/",
      "SELECT count(v) FROM /(a/",
      "SHOW TAG VALUES FROM m WITH KEY =~ /(a/",
      "SHOW MEASUREMENTS WITH MEASUREMENT =~ /(a/",
      "SHOW SERIES WHERE k =~ /(a/",
      "DELETE FROM /(a/",
      "DROP SERIES FROM m WHERE k =~ /(a/",
  };
  for (const std::string& q : queries) {
    const StatementResult r = Run(q);
    EXPECT_TRUE(r.status.IsInvalidArgument()) << q << ": " << r.status.ToString();
    EXPECT_NE(r.status.message().find("bad regular expression /"), std::string::npos)
        << q << ": " << r.status.ToString();
  }
  const StatementResult at = Run("SELECT count(v) FROM m WHERE k =~ /(a/");
  EXPECT_NE(at.status.message().find("line 1, column 35"), std::string::npos)
      << at.status.ToString();
  EXPECT_EQ(Count("SELECT count(v) FROM m"), 1);  // nothing was deleted
}

// Random patterns from nested groups, alternations and repetitions over
// values of thousands of characters, through the whole query path: every
// answer comes, quickly, and equals RE2's own match of the value.
TEST_F(RegexQueryTest, RandomPatternsOverLongValuesAnswer) {
  std::mt19937 rng(20261126);
  const std::vector<std::string> atoms = {"a", "b", "ab", ".", "[ab]", "\\w", "a?", "(?:ab)"};
  const std::vector<std::string> repeats = {"", "*", "+", "?", "{2,5}", "*?"};
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  std::vector<std::string> values;
  for (int i = 0; i < 4; ++i) {
    std::string v(4'000 + 1'000 * i, 'a');
    for (size_t j = 0; j < v.size(); j += 97 + i) v[j] = 'b';
    values.push_back(v);
    Write("long", v, v, 1'000'000'000 + i);
  }
  for (int round = 0; round < 60; ++round) {
    std::string pattern;
    const int depth = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int d = 0; d < depth; ++d)
      pattern = "(" + pattern + pick(atoms) + "|" + pick(atoms) + ")" + pick(repeats);
    if (round % 3 == 0) pattern = "^" + pattern + "c?$";
    const Result<Regex> re = CompileRegex(pattern);
    ASSERT_TRUE(re.ok()) << pattern << ": " << re.status().ToString();
    int64_t want = 0;
    for (const std::string& v : values) want += RegexSearch(**re, v) ? 1 : 0;
    EXPECT_EQ(Count("SELECT count(v) FROM long WHERE k =~ /" + pattern + "/"), want) << pattern;
    EXPECT_EQ(Count("SELECT count(v) FROM long WHERE s =~ /" + pattern + "/"), want) << pattern;
  }
}

}  // namespace
}  // namespace gpulse::query
