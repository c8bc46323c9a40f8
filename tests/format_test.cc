// Tests for query/runtime/format.h: numbers print as the shortest round-trip text
// whichever way they are written, and an answer by column (what the server
// asks the executor for) formats exactly as the same answer in rows.

#include "query/runtime/format.h"
#include "query/query.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gpulse {
namespace {

std::string ToChars(double v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// Row times print as std::to_chars prints them, whatever came before: the
// digits above the last four are kept from the previous time.
TEST(FormatValueTest, EpochDigitsPrintEveryTimeAsToCharsDoes) {
  std::vector<int64_t> times;
  for (int64_t t = 1'704'067'200 - 30'000; t < 1'704'067'200 + 30'000; t += 7) times.push_back(t);
  for (int64_t t = -20'000; t <= 20'000; ++t) times.push_back(t);  // and back down, and negative
  for (int64_t t :
       {int64_t{0}, int64_t{9'999}, int64_t{10'000}, int64_t{99'999'999}, int64_t{100'000'000},
        int64_t{1'704'067'200'000'000'000}, std::numeric_limits<int64_t>::max(),
        std::numeric_limits<int64_t>::min(), int64_t{10'000}, int64_t{19'999}, int64_t{20'000}}) {
    times.push_back(t);
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20'000; ++i) times.push_back(static_cast<int64_t>(rng()));
  query::EpochDigits digits;
  for (int64_t t : times) {
    char want[24], got[24];
    const std::string w(want, std::to_chars(want, want + sizeof want, t).ptr);
    EXPECT_EQ(std::string(got, digits.Put(t, got)), w);
  }
}

// Whole numbers below 10^5 take a short path; every one of them, and the
// numbers around it, must print as std::to_chars's shortest form does.
TEST(FormatValueTest, DoublesPrintAsTheShortestRoundTripText) {
  std::vector<double> values;
  for (int i = -100100; i <= 100100; ++i) values.push_back(i);
  for (double v : {0.5, -0.5, 1e-7, 99999.5, 1e5, 1e15, 1e21, 123.456, 0.1 + 0.2, 1e300,
                   std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
                   -std::numeric_limits<double>::max(), 2147483648.0, -2147483649.0}) {
    values.push_back(v);
  }
  for (double v : values) {
    EXPECT_EQ(query::FormatValue(v, false, query::TimeFormat::kRfc3339), ToChars(v)) << v;
  }
  EXPECT_EQ(query::FormatValue(-0.0, false, query::TimeFormat::kRfc3339), "-0");
  EXPECT_EQ(query::FormatValue(100000.0, false, query::TimeFormat::kRfc3339), "1e+05");
  EXPECT_EQ(query::FormatValue(std::nan(""), false, query::TimeFormat::kRfc3339), "NaN");
  EXPECT_EQ(query::FormatValue(-INFINITY, false, query::TimeFormat::kRfc3339), "-Inf");
}

constexpr int64_t kT0 = 1704067200'000000000;  // 2024-01-01T00:00:00Z
constexpr int64_t kMinute = 60'000'000'000;

// The same answer twice: in rows, and by column with every column type,
// nulls, a NaN and a string that JSON and CSV must quote.
void TwoShapes(ResultSeries* rows, ResultSeries* by_column) {
  rows->name = by_column->name = "gpu";
  rows->tags = by_column->tags = {{"node", "n1"}};
  rows->columns = by_column->columns = {"time", "mean", "count", "bytes", "ok", "job"};
  const QueryValue null;
  rows->values = {
      {kT0, 57.0, int64_t{3}, uint64_t{1} << 63, true, std::string("a \"quoted\", job")},
      {kT0 + kMinute, null, int64_t{0}, null, null, null},
      {kT0 + 2 * kMinute, null, null, null, null, null},
      {kT0 + 3 * kMinute, std::nan(""), int64_t{-7}, uint64_t{5}, false, std::string("b")},
      {kT0 + 4 * kMinute, 0.1, null, null, null, std::string("line\nbreak")},
  };
  by_column->row_times = {kT0, kT0 + kMinute, kT0 + 2 * kMinute, kT0 + 3 * kMinute,
                          kT0 + 4 * kMinute};
  by_column->by_column.resize(5);
  Column& mean = by_column->by_column[0];
  mean.type = FieldType::kFloat;
  mean.ts = {kT0, kT0 + 3 * kMinute, kT0 + 4 * kMinute};
  mean.floats = {57.0, std::nan(""), 0.1};
  Column& count = by_column->by_column[1];
  count.type = FieldType::kInt;
  count.ts = {kT0, kT0 + kMinute, kT0 + 3 * kMinute};
  count.ints = {3, 0, -7};
  Column& bytes = by_column->by_column[2];
  bytes.type = FieldType::kUint;
  bytes.ts = {kT0, kT0 + 3 * kMinute};
  bytes.uints = {uint64_t{1} << 63, 5};
  Column& ok = by_column->by_column[3];
  ok.type = FieldType::kBool;
  ok.ts = {kT0, kT0 + 3 * kMinute};
  ok.bools = {1, 0};
  Column& job = by_column->by_column[4];
  job.type = FieldType::kString;
  job.ts = {kT0, kT0 + 3 * kMinute, kT0 + 4 * kMinute};
  job.strings = {"a \"quoted\", job", "b", "line\nbreak"};
}

QueryResult Answer(ResultSeries series) {
  QueryResult r;
  r.statements.emplace_back();
  r.statements[0].series.push_back(std::move(series));
  return r;
}

TEST(FormatTest, AnAnswerByColumnFormatsAsTheSameAnswerInRows) {
  ResultSeries rows, by_column;
  TwoShapes(&rows, &by_column);
  ASSERT_EQ(by_column.RowCount(), rows.RowCount());
  for (size_t r = 0; r < rows.RowCount(); ++r) {
    for (size_t c = 0; c < rows.columns.size(); ++c) {
      const QueryValue a = rows.At(r, c), b = by_column.At(r, c);
      if (a.index() == 1 && std::isnan(std::get<double>(a))) {
        EXPECT_TRUE(b.index() == 1 && std::isnan(std::get<double>(b))) << r << "," << c;
      } else {
        EXPECT_EQ(a, b) << r << "," << c;
      }
    }
  }
  // With a string column and without it (then numbers and times are written
  // a row at a time through a buffer), in every time format.
  ResultSeries narrow_rows = rows, narrow_columns = by_column;
  narrow_rows.columns.pop_back();
  for (auto& row : narrow_rows.values) row.pop_back();
  narrow_columns.columns.pop_back();
  narrow_columns.by_column.pop_back();
  for (const auto& [in_rows, in_columns] :
       {std::pair{rows, by_column}, std::pair{narrow_rows, narrow_columns}}) {
    const QueryResult a = Answer(in_rows), b = Answer(in_columns);
    for (const query::TimeFormat f : {query::TimeFormat::kRfc3339, query::TimeFormat::kS,
                                      query::TimeFormat::kMs, query::TimeFormat::kNs}) {
      EXPECT_EQ(query::FormatJson(b, f, false), query::FormatJson(a, f, false));
      EXPECT_EQ(query::FormatCsv(b, f), query::FormatCsv(a, f));
    }
  }
  // What the rows say, once, by hand: NaN is null in JSON, the quotes escaped.
  EXPECT_NE(query::FormatJson(Answer(by_column), query::TimeFormat::kS, false)
                .find("[1704067200,57,3,9223372036854775808,true,\"a \\\"quoted\\\", job\"],"
                      "[1704067260,null,0,null,null,null],[1704067320,null,null,null,null,null],"
                      "[1704067380,null,-7,5,false,\"b\"]"),
            std::string::npos);
}

// chunked=true: each object holds at most chunk_size rows, a series cut
// between objects is "partial" in all but its last piece, every object of a
// statement but the last is "partial", and the rows are the whole answer's.
// A table with no rows is written as FormatJson writes it.
TEST(FormatTest, ChunkedAnswersCutSeriesIntoObjectsOfAtMostChunkSizeRows) {
  ResultSeries rows, by_column;
  TwoShapes(&rows, &by_column);
  QueryResult result = Answer(by_column);
  result.statements[0].notes.push_back("a note");
  ResultSeries empty;
  empty.name = "measurements";
  empty.columns = {"name"};
  StatementResult show;
  show.series.push_back(empty);
  result.statements.push_back(show);
  StatementResult failed;
  failed.status = Status::InvalidArgument("bad");
  result.statements.push_back(failed);
  std::vector<std::string> objects;
  ASSERT_TRUE(query::FormatJsonChunks(result, query::TimeFormat::kS, 3, [&](std::string_view t) {
    objects.emplace_back(t);
    return true;
  }));
  ASSERT_EQ(objects.size(), 4u);  // 5 rows in 3 + 2, the empty table, the error
  EXPECT_EQ(objects[0].rfind("{\"results\":[{\"statement_id\":0,\"series\":[{", 0), 0u);
  EXPECT_NE(objects[0].find("],\"partial\":true}],\"partial\":true}]}\n"), std::string::npos)
      << objects[0];
  EXPECT_EQ(objects[1].find("\"partial\""), std::string::npos) << objects[1];
  EXPECT_NE(objects[1].find("\"messages\":[{\"level\":\"warning\",\"text\":\"a note\"}]"),
            std::string::npos);
  EXPECT_EQ(objects[2],
            "{\"results\":[{\"statement_id\":1,\"series\":[{\"name\":\"measurements\","
            "\"columns\":[\"name\"],\"values\":[]}]}]}\n");
  EXPECT_EQ(objects[3], "{\"results\":[{\"statement_id\":2,\"error\":\"bad\"}]}\n");
  // The rows, put together, are the whole answer's.
  const std::string whole = query::FormatJson(Answer(by_column), query::TimeFormat::kS, false);
  const auto values = [](const std::string& text) {
    const size_t a = text.find("\"values\":[") + 10;
    return text.substr(a, text.find("]]", a) + 2 - a);
  };
  std::string joined = values(objects[0]);
  joined = joined.substr(0, joined.size() - 1) + "," + values(objects[1]);
  EXPECT_EQ(joined, values(whole));
  // A sink that says stop stops the writing.
  size_t calls = 0;
  EXPECT_FALSE(query::FormatJsonChunks(result, query::TimeFormat::kS, 3,
                                       [&](std::string_view) { return ++calls < 2; }));
  EXPECT_EQ(calls, 2u);
}

}  // namespace
}  // namespace gpulse
