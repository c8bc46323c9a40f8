// Writing query results as text: the InfluxDB 1.x JSON shape (what /query
// answers and Grafana's InfluxDB data source reads), CSV (`Accept: text/csv`,
// `--format csv`), and aligned tables for people (the shell), plus reading
// the JSON shape back (the shell and `gpulse query` as clients of a server).
//
// Thread safety: the functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "engine/gpulse.h"
#include "query/runtime/result.h"

namespace gpulse::query {

// How the `time` column is written: RFC3339 with nanoseconds trimmed
// ("2024-01-01T00:00:00Z"), or an integer count of the unit since the epoch
// (the `epoch=` parameter: ns, u/µ, ms, s, m, h).
enum class TimeFormat : unsigned char { kRfc3339, kNs, kUs, kMs, kS, kM, kH };

// "2026-11-09T10:00:00Z", with as many fraction digits as the time needs.
std::string Rfc3339(int64_t ns);
// The same, appended to *out (no allocation of its own: answers write a time
// a row).
void AppendRfc3339(int64_t ns, std::string* out);

// Writes the integer times of an answer's rows as decimal text. A series'
// times ascend by a bucket or a sample interval, so the digits above the
// last four rarely change: they are formatted once per change and copied,
// and the last four written directly (a general integer format of a
// 10-digit epoch second cost 140 instructions a row).
class EpochDigits {
 public:
  // Writes v at p (room for 20 characters); returns the end.
  char* Put(int64_t v, char* p);

 private:
  int64_t high_ = -1;  // v / 10^4 whose digits prefix_ holds
  char prefix_[20] = {};
  size_t prefix_len_ = 0;
};

// Parses an `epoch=` value; false when it is none of the above.
bool ParseEpoch(std::string_view text, TimeFormat* format);

// {"results":[{"statement_id":0,"series":[{"name":..,"tags":{..},"columns":[..],
// "values":[[..]]}]},{"statement_id":1,"error":"..."}]}. `pretty` indents.
std::string FormatJson(const QueryResult& result, TimeFormat time_format, bool pretty);

// InfluxDB's chunked answer (chunked=true): objects of FormatJson's shape,
// one a line, each holding one statement and at most `chunk_rows` rows. A
// series cut between objects carries "partial":true in all but its last
// piece, and so does every object of a statement but its last (which holds
// the statement's messages). emit(text) takes each object with its newline;
// false from it stops (and this returns false).
bool FormatJsonChunks(const QueryResult& result, TimeFormat time_format, size_t chunk_rows,
                      const std::function<bool(std::string_view)>& emit);

// The same, fed a piece at a time as a streamed query makes its answer
// (QueryOptions::sink): only the object being filled is held. A piece's
// series is written whole, cut across objects where it passes chunk_rows;
// consecutive pieces of one series (later rows of a group) come as series
// objects of their own, as InfluxDB's do. A call after emit said false
// returns false.
class JsonChunkWriter : public AnswerSink {
 public:
  JsonChunkWriter(TimeFormat time_format, size_t chunk_rows,
                  std::function<bool(std::string_view)> emit);

  // Rows of statement `statement` (statements in order, each ended before
  // the next begins).
  bool Series(size_t statement, const ResultSeries& series) override;
  // The statement's end: its error (after any rows it sent) or its notes.
  bool End(size_t statement, const StatementResult& result) override;

 private:
  void Open(size_t statement);
  bool Flush(bool more, const std::vector<std::string>* notes);

  const TimeFormat time_format_;
  const size_t chunk_rows_;
  const std::function<bool(std::string_view)> emit_;
  std::string out_;  // the object being filled
  bool open_ = false;
  bool series_open_ = false;
  size_t rows_ = 0;  // in out_
  bool ok_ = true;
};

// One header line per table ("name,tags,time,util"), rows as InfluxDB 1.x
// writes them: the series name, its tags as k=v joined by commas (quoted),
// then the columns. A statement's error is a line "error,<message>".
std::string FormatCsv(const QueryResult& result, TimeFormat time_format);

// Reads FormatJson's shape (also InfluxDB's own answers). Times written as
// RFC3339 strings or integers of `time_format` become nanoseconds.
Status ParseJsonResult(std::string_view json, TimeFormat time_format, QueryResult* out);

// One cell as text: null is "", floats in the shortest form that reads back
// the same, times per `time_format`.
std::string FormatValue(const QueryValue& value, bool is_time, TimeFormat time_format);

}  // namespace gpulse::query
