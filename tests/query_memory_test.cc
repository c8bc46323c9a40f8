// Item 5 of the hostile probe: `SELECT * FROM gpu` over a week took RSS
// from 363 MB to 7.3 GB before max_rows stopped it. Now a query charges what
// it builds as it builds it, against its own budget and the server's, and
// stops at the bound with an error naming it; a raw SELECT whose answer goes
// to a sink is read a window at a time, so that its memory does not grow
// with its range.

#include "query/runtime/query_memory.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/executor.h"
#include "query/query.h"
#include "query/syntax/parser.h"
#include "storage/env.h"
#include "tests/support/quiet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using test::kHour;
using test::kMinute;

constexpr uint64_t kMiB = 1ull << 20;

TEST(QueryMemoryTest, AChargePastTheBudgetIsRefusedAndTakesNothing) {
  QueryMemory memory(1000, nullptr);
  EXPECT_TRUE(memory.Charge(600, "rows").ok());
  const Status refused = memory.Charge(500, "the answer's rows");
  EXPECT_EQ(refused.code(), Status::Code::kResourceExhausted);
  EXPECT_NE(refused.message().find("memory budget of 1000 bytes"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("query.max_memory_mb"), std::string::npos);
  EXPECT_NE(refused.message().find("the answer's rows"), std::string::npos);
  EXPECT_EQ(memory.held(), 600u);
  EXPECT_EQ(memory.peak(), 600u);
  memory.Release(600);
  EXPECT_EQ(memory.held(), 0u);
  EXPECT_TRUE(memory.Charge(1000, "rows").ok());
}

TEST(QueryMemoryTest, QueriesShareThePoolAndGiveItBack) {
  QueryMemoryPool pool(8 * kMiB);
  auto first = std::make_unique<QueryMemory>(1024 * kMiB, &pool);
  ASSERT_TRUE(first->Charge(6 * kMiB, "rows").ok());
  EXPECT_EQ(pool.held(), 8 * kMiB);  // two grains of 4 MiB
  QueryMemory second(1024 * kMiB, &pool);
  const Status refused = second.Charge(1 * kMiB, "the raw points read");
  EXPECT_EQ(refused.code(), Status::Code::kResourceExhausted);
  EXPECT_NE(refused.message().find("query.server_memory_mb"), std::string::npos)
      << refused.message();
  EXPECT_EQ(pool.refused(), 1u);
  EXPECT_EQ(second.held(), 0u);
  // Released memory goes back but for a grain kept for the next charge.
  first->Release(6 * kMiB);
  EXPECT_EQ(pool.held(), 4 * kMiB);
  EXPECT_TRUE(second.Charge(1 * kMiB, "rows").ok());
  first.reset();
  EXPECT_EQ(pool.held(), 4 * kMiB);  // second's grain
}

TEST(QueryMemoryTest, DefaultsAreFractionsOfPhysicalMemory) {
  EXPECT_EQ(DefaultQueryMemory(), storage::PhysicalMemoryBytes() / 16);
  EXPECT_EQ(DefaultServerQueryMemory(), storage::PhysicalMemoryBytes() / 4);
  EXPECT_EQ(QueryMemory(0, nullptr).limit(), DefaultQueryMemory());
  EXPECT_EQ(FormatBytes(1536 * kMiB), "1.5 GiB");
  EXPECT_EQ(FormatBytes(512), "512 bytes");
}

// Four nodes' util (int) and temp (float) a minute for 30 hours.
class QueryBudgetTest : public ::testing::Test {
 protected:
  static constexpr int kNodes = 4;
  static constexpr int kMinutes = 30 * 60;

  void SetUp() override {
    db_ = test::OpenQuietDb(dir_.path());
    ASSERT_TRUE(db_);
    std::vector<Point> points;
    for (int n = 0; n < kNodes; ++n) {
      for (int m = 0; m < kMinutes; ++m) {
        points.push_back({"gpu",
                          {{"node", "n" + std::to_string(n)}},
                          {{"util", int64_t{(m * 7 + n) % 100}}, {"temp", 40.0 + (m % 13)}},
                          kStart + m * kMinute});
      }
    }
    ASSERT_TRUE(db_->Write(points).ok());
  }

  // Runs `text` with `options` and returns its one statement.
  StatementResult Run(const std::string& text, const QueryOptions& options) {
    auto parsed = query::ParseQuery(text);
    EXPECT_TRUE(parsed.ok()) << text;
    QueryResult result;
    query::Execute(db_.get(), *parsed, options, &result, /*keep_plans=*/false);
    EXPECT_EQ(result.statements.size(), 1u);
    return result.statements.at(0);
  }

  static QueryOptions WithBudget(uint64_t bytes, QueryMemory* memory = nullptr) {
    QueryOptions options;
    options.limits.max_memory_bytes = bytes;
    options.memory = memory;
    return options;
  }

  static constexpr int64_t kStart = 1'700'000'000'000'000'000;  // 22:13:20 UTC
  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

TEST_F(QueryBudgetTest, ARawSelectPastItsBudgetStopsBeforeBuildingTheRows) {
  QueryMemory memory(256 << 10, nullptr);
  const StatementResult st = Run("SELECT * FROM gpu", WithBudget(0, &memory));
  ASSERT_EQ(st.status.code(), Status::Code::kResourceExhausted) << st.status.ToString();
  EXPECT_NE(st.status.message().find("query.max_memory_mb"), std::string::npos)
      << st.status.message();
  EXPECT_TRUE(st.series.empty());
  EXPECT_LE(memory.peak(), memory.limit());
  EXPECT_EQ(memory.held(), 0u);  // what was read is given back with the error
  // The same query under the default budget answers every row.
  const StatementResult whole = Run("SELECT * FROM gpu", QueryOptions());
  ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
  ASSERT_EQ(whole.series.size(), 1u);
  EXPECT_EQ(whole.series[0].RowCount(), size_t{kNodes} * kMinutes);
}

TEST_F(QueryBudgetTest, AggregateStatesAreCharged) {
  // Every value kept for the median: 7,200 values of 8 bytes, more than 32 KiB.
  StatementResult st = Run("SELECT median(util) FROM gpu GROUP BY node", WithBudget(32 << 10));
  EXPECT_EQ(st.status.code(), Status::Code::kResourceExhausted) << st.status.ToString();
  EXPECT_NE(st.status.message().find("aggregate states"), std::string::npos) << st.status.message();
  // A group a minute for each node: 7,200 groups' states.
  st = Run(
      "SELECT mean(util) FROM gpu WHERE time >= 1700000000000000000 AND time < 1700108000000000000 "
      "GROUP BY time(1m), node",
      WithBudget(64 << 10));
  EXPECT_EQ(st.status.code(), Status::Code::kResourceExhausted) << st.status.ToString();
  // Within a budget that holds them, the same answers.
  EXPECT_TRUE(Run("SELECT median(util) FROM gpu GROUP BY node", WithBudget(8 * kMiB)).status.ok());
}

// Collects a sink's pieces and ends.
class Collect : public AnswerSink {
 public:
  bool Series(size_t statement, const ResultSeries& series) override {
    pieces.push_back({statement, series});
    return pieces.size() < stop_after;
  }
  bool End(size_t statement, const StatementResult& result) override {
    ends.push_back({statement, result.status});
    return true;
  }
  std::vector<std::pair<size_t, ResultSeries>> pieces;
  std::vector<std::pair<size_t, Status>> ends;
  size_t stop_after = SIZE_MAX;
};

// Each group's rows (by name and tags) in the order given.
std::map<std::string, std::vector<std::vector<QueryValue>>> RowsByGroup(
    const std::vector<const ResultSeries*>& series) {
  std::map<std::string, std::vector<std::vector<QueryValue>>> out;
  for (const ResultSeries* s : series) {
    std::string key = s->name;
    for (const Tag& t : s->tags) key += "," + t.key + "=" + t.value;
    for (size_t r = 0; r < s->RowCount(); ++r) {
      std::vector<QueryValue> row;
      for (size_t c = 0; c < s->columns.size(); ++c) row.push_back(s->At(r, c));
      out[key].push_back(std::move(row));
    }
  }
  return out;
}

TEST_F(QueryBudgetTest, ASinkGetsARawAnswerInWindowsWithTheSameRows) {
  for (const std::string text : {
           "SELECT * FROM gpu",
           "SELECT util, temp FROM gpu GROUP BY node",
           "SELECT util FROM gpu WHERE time >= 1700003600000000000 AND time < 1700090000000000000",
           "SELECT temp FROM gpu WHERE time > 1700010000000000000 GROUP BY * ORDER BY time DESC",
           "SELECT util FROM gpu WHERE util > 90 GROUP BY node",
       }) {
    SCOPED_TRACE(text);
    const StatementResult whole = Run(text, QueryOptions());
    ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
    Collect sink;
    QueryOptions options;
    options.sink = &sink;
    const StatementResult streamed = Run(text, options);
    ASSERT_TRUE(streamed.status.ok()) << streamed.status.ToString();
    EXPECT_TRUE(streamed.series.empty());  // it went to the sink
    ASSERT_EQ(sink.ends.size(), 1u);
    EXPECT_GT(sink.pieces.size(), whole.series.size()) << "more than one window";
    std::vector<const ResultSeries*> a, b;
    for (const ResultSeries& s : whole.series) a.push_back(&s);
    for (const auto& [statement, s] : sink.pieces) b.push_back(&s);
    EXPECT_EQ(RowsByGroup(a), RowsByGroup(b));
  }
}

TEST_F(QueryBudgetTest, AStreamedAnswerFitsABudgetTheWholeOneDoesNot) {
  const std::string text = "SELECT * FROM gpu GROUP BY node";
  EXPECT_EQ(Run(text, WithBudget(256 << 10)).status.code(), Status::Code::kResourceExhausted);
  Collect sink;
  QueryMemory memory(256 << 10, nullptr);
  QueryOptions options = WithBudget(0, &memory);
  options.sink = &sink;
  const StatementResult st = Run(text, options);
  ASSERT_TRUE(st.status.ok()) << st.status.ToString();
  size_t rows = 0;
  for (const auto& [statement, s] : sink.pieces) rows += s.RowCount();
  EXPECT_EQ(rows, size_t{kNodes} * kMinutes);
  EXPECT_LE(memory.peak(), memory.limit());
}

TEST_F(QueryBudgetTest, ASinkThatStopsStopsTheQuery) {
  Collect sink;
  sink.stop_after = 1;
  QueryOptions options;
  options.sink = &sink;
  const StatementResult st = Run("SELECT * FROM gpu GROUP BY node", options);
  EXPECT_EQ(st.status.code(), Status::Code::kCancelled) << st.status.ToString();
  EXPECT_EQ(sink.pieces.size(), 1u);
}

TEST_F(QueryBudgetTest, LimitsAndAggregatesGoToTheSinkWhole) {
  Collect sink;
  QueryOptions options;
  options.sink = &sink;
  ASSERT_TRUE(Run("SELECT util FROM gpu GROUP BY node LIMIT 5", options).status.ok());
  ASSERT_EQ(sink.pieces.size(), size_t{kNodes});
  for (const auto& [statement, s] : sink.pieces) EXPECT_EQ(s.RowCount(), 5u);
  sink.pieces.clear();
  ASSERT_TRUE(Run("SELECT max(util) FROM gpu WHERE time >= 1700000000000000000 AND time < "
                  "1700108000000000000 GROUP BY time(1h)",
                  options)
                  .status.ok());
  ASSERT_EQ(sink.pieces.size(), 1u);
  EXPECT_EQ(sink.pieces[0].second.RowCount(), 31u);  // 30 hours from 13:20 past meet 31
}

// Spans widen once a span holds little: the next starts where the last
// ended, not at the wider span's boundary, so no row comes twice (nor is
// one skipped), ascending or descending.
TEST_F(QueryBudgetTest, SpansThatWidenSendEveryRowOnce) {
  // A point every ten minutes for three more days: the first span, sized for
  // a point a minute, holds a tenth of its guess.
  std::vector<Point> sparse;
  for (int n = 0; n < kNodes; ++n) {
    for (int m = kMinutes; m < kMinutes + 3 * 1440; m += 10) {
      sparse.push_back({"gpu",
                        {{"node", "n" + std::to_string(n)}},
                        {{"util", int64_t{m % 100}}, {"temp", 40.5}},
                        kStart + m * kMinute});
    }
  }
  ASSERT_TRUE(db_->Write(sparse).ok());
  for (const std::string text : {"SELECT * FROM gpu WHERE time >= 1700108000000000000",
                                 "SELECT * FROM gpu WHERE time >= 1700108000000000000 GROUP BY "
                                 "node ORDER BY time DESC"}) {
    SCOPED_TRACE(text);
    const StatementResult whole = Run(text, QueryOptions());
    ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
    Collect sink;
    QueryMemory memory(512 << 10, nullptr);  // a quarter-day span first
    QueryOptions options = WithBudget(0, &memory);
    options.sink = &sink;
    ASSERT_TRUE(Run(text, options).status.ok());
    EXPECT_GT(sink.pieces.size(), 3u);
    std::vector<const ResultSeries*> a, b;
    for (const ResultSeries& rs : whole.series) a.push_back(&rs);
    for (const auto& [statement, rs] : sink.pieces) b.push_back(&rs);
    EXPECT_EQ(RowsByGroup(a), RowsByGroup(b));
  }
}

TEST_F(QueryBudgetTest, ASinkTakesExplainsPlanNotTheRowsAndEveryChargeIsGivenBack) {
  Collect sink;
  QueryMemory memory(0, nullptr);
  QueryOptions options = WithBudget(0, &memory);
  options.sink = &sink;
  ASSERT_TRUE(Run("EXPLAIN SELECT * FROM gpu", options).status.ok());
  ASSERT_EQ(sink.pieces.size(), 1u);
  EXPECT_EQ(sink.pieces[0].second.columns, std::vector<std::string>{"QUERY PLAN"});
  // Answers a sink took are given back, statement by statement.
  ASSERT_TRUE(Run("SELECT max(util) FROM gpu WHERE time >= 1700000000000000000 AND time < "
                  "1700108000000000000 GROUP BY time(1m), node",
                  options)
                  .status.ok());
  EXPECT_GT(memory.peak(), 0u);
  EXPECT_EQ(memory.held(), 0u);
}

}  // namespace
}  // namespace gpulse
