// Kept plans: a SELECT's tree run again reuses the plan and series list of
// its last run while the catalog is unchanged. Whatever changed in between
// (series added, dropped, written again; fields added; another database; a
// measurement a regex now names; now() moved), the kept tree answers exactly
// what a fresh parse of the same text answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "query/executor.h"
#include "query/plan/plan_cache.h"
#include "query/query.h"
#include "query/runtime/format.h"
#include "query/syntax/parser.h"
#include "tests/support/quiet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::query {
namespace {

constexpr int64_t kMinute = 60'000'000'000;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z

class KeptPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = test::OpenQuietDb(dir_.path());
    ASSERT_NE(db_, nullptr);
  }

  void Write(const std::string& measurement, const std::string& db, const std::string& node,
             std::vector<Field> fields, int64_t minute) {
    Point p;
    p.measurement = measurement;
    p.tags = {{"db", db}, {"node", node}};
    p.fields = std::move(fields);
    p.timestamp_ns = kT0 + minute * kMinute;
    const Status s = db_->Write({p});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // The answer of `tree` (run again and again) as JSON.
  static std::string Run(Db* db, const StatementList& tree, const std::string& database,
                         int64_t now_ns = 0) {
    QueryOptions options;
    options.database = database;
    options.now_ns = now_ns;
    QueryResult result;
    Execute(db, tree, options, &result);
    return FormatJson(result, TimeFormat::kRfc3339, false);
  }

  // The answer of a fresh parse of `text`.
  std::string Fresh(const std::string& text, const std::string& database, int64_t now_ns = 0) {
    Result<StatementList> tree = ParseQuery(text);
    EXPECT_TRUE(tree.ok()) << tree.status().ToString();
    return tree.ok() ? Run(db_.get(), *tree, database, now_ns) : std::string();
  }

  // Runs the kept tree of `text` and a fresh parse; both must agree.
  // Returns the answer.
  std::string Both(const std::string& text, const std::string& database = "a", int64_t now_ns = 0) {
    auto it = trees_.find(text);
    if (it == trees_.end()) {
      Result<StatementList> tree = ParseQuery(text);
      EXPECT_TRUE(tree.ok()) << tree.status().ToString();
      it = trees_.emplace(text, std::move(*tree)).first;
    }
    const std::string kept = Run(db_.get(), it->second, database, now_ns);
    EXPECT_EQ(kept, Fresh(text, database, now_ns)) << text;
    return kept;
  }

  static size_t Count(const std::string& answer, const std::string& what) {
    size_t n = 0;
    for (size_t at = answer.find(what); at != std::string::npos; at = answer.find(what, at + 1)) {
      ++n;
    }
    return n;
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
  std::map<std::string, StatementList> trees_;
};

const char kByNode[] =
    "SELECT mean(util) FROM gpu WHERE time >= '2024-01-01T00:00:00Z' AND "
    "time < '2024-01-01T01:00:00Z' GROUP BY time(30m), node";

TEST_F(KeptPlanTest, ANewSeriesIsSeenByAKeptTree) {
  Write("gpu", "a", "n1", {{"util", 10.0}}, 1);
  Write("gpu", "a", "n2", {{"util", 20.0}}, 2);
  EXPECT_EQ(Count(Both(kByNode), "\"node\":"), 2u);
  EXPECT_EQ(Count(Both(kByNode), "\"node\":"), 2u);  // from the kept plan
  Write("gpu", "a", "n3", {{"util", 30.0}}, 3);
  const std::string after = Both(kByNode);
  EXPECT_EQ(Count(after, "\"node\":"), 3u);
  EXPECT_NE(after.find("\"n3\""), std::string::npos) << after;
  // A new point of a known series changes no plan, and is read.
  Write("gpu", "a", "n3", {{"util", 50.0}}, 4);
  EXPECT_NE(Both(kByNode).find(",40]"), std::string::npos);
}

TEST_F(KeptPlanTest, ANewFieldIsSeenByAWildcard) {
  Write("gpu", "a", "n1", {{"util", 10.0}}, 1);
  const std::string text =
      "SELECT max(*) FROM gpu WHERE time >= '2024-01-01T00:00:00Z' AND "
      "time < '2024-01-01T01:00:00Z'";
  EXPECT_EQ(Both(text).find("max_power"), std::string::npos);
  Both(text);
  Write("gpu", "a", "n1", {{"util", 11.0}, {"power", int64_t{300}}}, 2);
  EXPECT_NE(Both(text).find("max_power"), std::string::npos);
  // And a field the statement names, unknown before, is read once written.
  const std::string named =
      "SELECT last(temp) FROM gpu WHERE time >= '2024-01-01T00:00:00Z' AND "
      "time < '2024-01-01T01:00:00Z'";
  EXPECT_EQ(Count(Both(named), "\"values\""), 0u);
  Write("gpu", "a", "n1", {{"temp", 61.5}}, 3);
  EXPECT_NE(Both(named).find("61.5"), std::string::npos);
}

TEST_F(KeptPlanTest, ADroppedSeriesLeavesAndComesBackWhenWrittenAgain) {
  Write("gpu", "a", "n1", {{"util", 10.0}}, 1);
  Write("gpu", "a", "n2", {{"util", 20.0}}, 2);
  EXPECT_EQ(Count(Both(kByNode), "\"node\":"), 2u);
  QueryResult dropped;
  ASSERT_TRUE(
      gpulse::Query(db_.get(), "DROP SERIES FROM gpu WHERE node = 'n1'", {}, &dropped).ok());
  ASSERT_TRUE(dropped.statements[0].status.ok()) << dropped.statements[0].status.ToString();
  const std::string after_drop = Both(kByNode);
  EXPECT_EQ(Count(after_drop, "\"node\":"), 1u);
  EXPECT_EQ(after_drop.find("\"n1\""), std::string::npos) << after_drop;
  Write("gpu", "a", "n1", {{"util", 12.0}}, 5);
  EXPECT_EQ(Count(Both(kByNode), "\"node\":"), 2u);
}

TEST_F(KeptPlanTest, EachDatabaseGetsItsOwnSeries) {
  Write("gpu", "a", "n1", {{"util", 10.0}}, 1);
  Write("gpu", "b", "n7", {{"util", 70.0}}, 1);
  for (int round = 0; round < 2; ++round) {
    const std::string a = Both(kByNode, "a");
    const std::string b = Both(kByNode, "b");
    EXPECT_NE(a.find("\"n1\""), std::string::npos) << a;
    EXPECT_EQ(a.find("\"n7\""), std::string::npos) << a;
    EXPECT_NE(b.find("\"n7\""), std::string::npos) << b;
    EXPECT_EQ(b.find("\"n1\""), std::string::npos) << b;
  }
}

TEST_F(KeptPlanTest, ARegexSourceSeesANewMeasurement) {
  Write("gpu", "a", "n1", {{"util", 10.0}}, 1);
  const std::string text =
      "SELECT count(util) FROM /^g/ WHERE time >= '2024-01-01T00:00:00Z' AND "
      "time < '2024-01-01T01:00:00Z'";
  EXPECT_EQ(Count(Both(text), "\"name\""), 1u);
  Write("gpu_host", "a", "n1", {{"util", 5.0}}, 1);
  Write("other", "a", "n1", {{"util", 5.0}}, 1);
  const std::string after = Both(text);
  EXPECT_EQ(Count(after, "\"name\""), 2u) << after;
  EXPECT_NE(after.find("gpu_host"), std::string::npos) << after;
}

// Tag terms the index cannot answer (a regex, !=, OR) filter the kept list;
// a series added later is tested against them too.
TEST_F(KeptPlanTest, TagTermsBeyondTheIndexFilterTheKeptList) {
  for (const char* node : {"n1", "n2", "n3", "x1"}) Write("gpu", "a", node, {{"util", 1.0}}, 1);
  const std::string text =
      "SELECT count(util) FROM gpu WHERE (node =~ /^n/ AND node != 'n2') OR node = 'x1' "
      "GROUP BY node";
  const auto nodes = [&](const std::string& answer) {
    std::vector<std::string> out;
    for (const char* node : {"n1", "n2", "n3", "n4", "x1", "x2"}) {
      if (answer.find(std::string("\"") + node + "\"") != std::string::npos) out.push_back(node);
    }
    return out;
  };
  const std::vector<std::string> first = {"n1", "n3", "x1"};
  EXPECT_EQ(nodes(Both(text)), first);
  EXPECT_EQ(nodes(Both(text)), first);
  Write("gpu", "a", "n4", {{"util", 1.0}}, 2);
  Write("gpu", "a", "x2", {{"util", 1.0}}, 2);
  const std::vector<std::string> second = {"n1", "n3", "n4", "x1"};
  EXPECT_EQ(nodes(Both(text)), second);
  EXPECT_EQ(nodes(Both(text)), second);
}

TEST_F(KeptPlanTest, RawRowsAndFieldConditionsFromAKeptPlan) {
  Write("gpu", "a", "n1", {{"util", 10.0}, {"temp", 50.0}}, 1);
  Write("gpu", "a", "n1", {{"util", 90.0}, {"temp", 70.0}}, 2);
  const std::string text = "SELECT util, temp FROM gpu WHERE util > 50 AND node = 'n1'";
  EXPECT_EQ(Count(Both(text), "\"2024-"), 1u);
  Write("gpu", "a", "n1", {{"util", 95.0}, {"temp", 71.0}}, 3);
  EXPECT_EQ(Count(Both(text), "\"2024-"), 2u);
}

TEST_F(KeptPlanTest, NowIsReadEachRun) {
  for (int m = 0; m < 6; ++m) Write("gpu", "a", "n1", {{"util", double(m)}}, m * 10);
  const std::string text = "SELECT count(util) FROM gpu WHERE time > now() - 15m AND time <= now()";
  for (int m = 0; m < 6; ++m) {
    // (now - 15m, now] holds the points of minutes m*10 - 10 (when > now - 15m) and m*10.
    const std::string answer = Both(text, "a", kT0 + m * 10 * kMinute);
    EXPECT_NE(answer.find(m == 0 ? ",1]" : ",2]"), std::string::npos) << m << ": " << answer;
  }
}

// A fleet's longer lists are listed each run, not kept; answers the same.
TEST_F(KeptPlanTest, LongSeriesListsAreListedEachRun) {
  std::vector<Point> points;
  for (int n = 0; n < 1100; ++n) {
    Point p;
    p.measurement = "gpu";
    p.tags = {{"db", "a"}, {"node", "n" + std::to_string(n)}};
    p.fields = {{"util", double(n % 100)}};
    p.timestamp_ns = kT0 + kMinute;
    points.push_back(std::move(p));
  }
  ASSERT_TRUE(db_->Write(points).ok());
  const std::string text =
      "SELECT count(util) FROM gpu WHERE time >= '2024-01-01T00:00:00Z' AND "
      "time < '2024-01-01T01:00:00Z'";
  EXPECT_NE(Both(text).find(",1100]"), std::string::npos);
  Write("gpu", "a", "late", {{"util", 1.0}}, 2);
  EXPECT_NE(Both(text).find(",1101]"), std::string::npos);
}

// A tree run on one Db and then on another never takes the first's plan for
// the second's, however alike their catalogs' histories.
TEST_F(KeptPlanTest, AnotherDbIsPlannedAfresh) {
  Write("gpu", "a", "first", {{"util", 10.0}}, 1);
  Result<StatementList> tree = ParseQuery(kByNode);
  ASSERT_TRUE(tree.ok());
  EXPECT_NE(Run(db_.get(), *tree, "a").find("\"first\""), std::string::npos);
  storage::ScratchDir other_dir;
  const std::unique_ptr<Db> other = test::OpenQuietDb(other_dir.path());
  ASSERT_NE(other, nullptr);
  Point p;  // the same history: one series, one field
  p.measurement = "gpu";
  p.tags = {{"db", "a"}, {"node", "second"}};
  p.fields = {{"util", 20.0}};
  p.timestamp_ns = kT0 + kMinute;
  ASSERT_TRUE(other->Write({p}).ok());
  const std::string answer = Run(other.get(), *tree, "a");
  EXPECT_NE(answer.find("\"second\""), std::string::npos) << answer;
  EXPECT_EQ(answer.find("\"first\""), std::string::npos) << answer;
}

// The series kept lists hold are counted, and given back with the tree.
TEST_F(KeptPlanTest, KeptSeriesAreCountedAndGivenBackWithTheTree) {
  for (int n = 0; n < 5; ++n) Write("gpu", "a", "n" + std::to_string(n), {{"util", 1.0}}, 1);
  const size_t before = KeptPlanSeries();
  QueryResult once;  // gpulse::Query runs a tree once: it keeps nothing
  ASSERT_TRUE(gpulse::Query(db_.get(), kByNode, {}, &once).ok());
  EXPECT_EQ(KeptPlanSeries(), before);
  {
    Result<StatementList> tree = ParseQuery(kByNode);
    ASSERT_TRUE(tree.ok());
    Run(db_.get(), *tree, "a");
    EXPECT_EQ(KeptPlanSeries(), before + 5);
    Run(db_.get(), *tree, "a");  // the same list, counted once
    EXPECT_EQ(KeptPlanSeries(), before + 5);
    Run(db_.get(), *tree, "b");  // another database's list (none of its series)
    EXPECT_EQ(KeptPlanSeries(), before + 5);
    Write("gpu", "a", "n5", {{"util", 1.0}}, 1);
    Run(db_.get(), *tree, "a");  // the new catalog's list replaces the old
    EXPECT_EQ(KeptPlanSeries(), before + 6);
  }
  EXPECT_EQ(KeptPlanSeries(), before);
}

// Threads run one tree while series are added: each sees a catalog no
// older than the one it saw before, never a torn one.
TEST_F(KeptPlanTest, RunsOfOneTreeOnSeveralThreadsWhileSeriesAreAdded) {
  Write("gpu", "a", "n0", {{"util", 1.0}}, 1);
  Result<StatementList> tree = ParseQuery(
      "SELECT count(util) FROM gpu WHERE time >= '2024-01-01T00:00:00Z' AND "
      "time < '2024-01-01T01:00:00Z' GROUP BY node");
  ASSERT_TRUE(tree.ok());
  constexpr int kAdded = 40;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      size_t seen = 0;
      while (!done.load()) {
        const std::string answer = Run(db_.get(), *tree, "a");
        const size_t groups = Count(answer, "\"node\":");
        if (groups < seen || groups < 1 || groups > kAdded + 1) ++failures;
        seen = groups;
      }
    });
  }
  for (int n = 1; n <= kAdded; ++n) Write("gpu", "a", "n" + std::to_string(n), {{"util", 1.0}}, 2);
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Count(Run(db_.get(), *tree, "a"), "\"node\":"), size_t{kAdded + 1});
}

}  // namespace
}  // namespace gpulse::query
