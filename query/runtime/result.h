// What a query answers and how it is asked: the result types (a statement's
// series and notes, a query's statements) and the options a caller gives (the
// database, the caller's reach, the clock, limits, memory, a sink for a
// streamed answer, the server's hooks). The language's public face,
// query/query.h, includes this; every stage of query/ speaks it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse {

// One cell of a query result: null, or a value of one of the field types.
// The `time` column holds int64 nanoseconds since the Unix epoch.
using QueryValue = std::variant<std::monostate, double, int64_t, uint64_t, bool, std::string>;

// One series of a statement's answer: for SELECT, one per group (GROUP BY
// tags) and measurement; for SHOW, one table.
struct ResultSeries {
  std::string name;                             // measurement, or "measurements", "tags"...
  std::vector<Tag> tags;                        // the group's tag values, sorted by key
  std::vector<std::string> columns;             // "time" first for SELECT
  std::vector<std::vector<QueryValue>> values;  // rows, each columns.size() long
  // Only with QueryOptions::answers_by_column, and then instead of `values`
  // (which is empty): the first column, `time`, as the rows' times, strictly
  // increasing; and for each column after it, its non-null values, typed, in
  // row order, each at its row's time (Column::ts). A row whose cell is null
  // has no point in that column.
  std::vector<int64_t> row_times;
  std::vector<Column> by_column;

  // The rows either way.
  size_t RowCount() const { return by_column.empty() ? values.size() : row_times.size(); }
  // A cell either way: a copy, and for a series by column a binary search;
  // the formatters walk the columns instead.
  QueryValue At(size_t row, size_t column) const;
};

// The answer to one statement: its series, or the error that stopped it.
struct StatementResult {
  Status status;
  std::vector<ResultSeries> series;
  // Remarks a user should see with the rows (an approximation, a limit).
  std::vector<std::string> notes;
  // What a SELECT read (0 for the other statements): series, and stored
  // values.
  uint64_t series_read = 0, points_read = 0;
};

struct QueryResult {
  std::vector<StatementResult> statements;  // one per statement, in order
};

// Bounds on one statement. Reaching one stops the statement with
// ResourceExhausted naming the bound and its setting; other statements of the
// same query still run.
struct QueryLimits {
  uint64_t max_series = 1'000'000;      // series a statement may read
  uint64_t max_points = 2'000'000'000;  // stored values a statement may read
  uint64_t max_rows = 10'000'000;       // rows (buckets x groups) a statement may return
  // Memory the whole query may hold (the values it reads, its groups' states,
  // its answer): 0 is a sixteenth of physical memory (query/runtime/query_memory.h).
  uint64_t max_memory_bytes = 0;
  std::chrono::milliseconds timeout{60'000};
};

class QueryMemory;  // query/runtime/query_memory.h

// Where a query's answer goes as it is made (QueryOptions::sink), instead of
// into a QueryResult whole, so that a large answer is sent while it is read.
class AnswerSink {
 public:
  virtual ~AnswerSink() = default;
  // Rows of statement `statement` (statements in order). A SELECT of raw
  // points sends its answer in pieces, a window of its time range at a time:
  // a group's rows may then come in several pieces, between other groups'.
  // Other statements send their series whole. False stops the query.
  virtual bool Series(size_t statement, const ResultSeries& series) = 0;
  // The statement is over: its status and notes (its series were sent).
  virtual bool End(size_t statement, const StatementResult& result) = 0;
};

struct QueryOptions {
  // When set, the statements see only series tagged db=<database> (what the
  // HTTP write endpoints tag a point with), and the `db` tag itself is hidden.
  // A statement whose FROM names a database (`"db".."m"`) runs on that one.
  std::string database;
  // When set, the only databases the statements may reach, to read or to
  // change: a statement reaching any other (or every database at once) fails
  // with PermissionDenied, SHOW DATABASES lists only these, and SHOW STALE
  // leaves out the server's sources (show_sources). Whether the caller may
  // change data at all is its own check (the server asks the token's write
  // scope for DELETE, DROP and CREATE). The server sets it from a request's
  // token; unset, every database may be reached.
  std::optional<std::vector<std::string>> readable_databases;
  // now() in the query; 0 reads the system clock once per query.
  int64_t now_ns = 0;
  QueryLimits limits;
  // When set, what the query holds is counted here (the server's: one per
  // request, drawing on the server-wide pool, held until the answer is
  // sent); else the query counts against limits.max_memory_bytes alone.
  QueryMemory* memory = nullptr;
  // When set, the answer goes here statement by statement (a raw SELECT's in
  // pieces) and the QueryResult keeps only each statement's status and notes.
  AnswerSink* sink = nullptr;
  // Polled while a statement runs; returning true stops it with Cancelled.
  std::function<bool()> cancelled;
  // Answers SHOW SOURCES (the server sets it: scrape targets and pushing
  // hosts with their last-seen times). Unset, SHOW SOURCES is an error.
  std::function<void(ResultSeries* out)> show_sources;
  // Answers SHOW ALERTS with the rules' states (the server sets it). Unset,
  // SHOW ALERTS lists the stored rules, none evaluated.
  std::function<void(ResultSeries* out)> show_alerts;
  // Lets a SELECT's answer come in ResultSeries::row_times and by_column
  // instead of rows (a row of QueryValues is an allocation of its own, and in
  // a wide answer the rows cost more than computing them). For callers that
  // read both shapes, as the formatters in query/runtime/format.h do; a series may
  // still come in rows.
  bool answers_by_column = false;
};

namespace query {
// Value i of a column as a QueryValue.
QueryValue CellOf(const Column& c, size_t i);
}  // namespace query

}  // namespace gpulse
