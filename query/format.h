// Writing query results as text: the InfluxDB 1.x JSON shape (what /query
// answers and Grafana's InfluxDB data source reads), CSV (`Accept: text/csv`,
// `--format csv`), and aligned tables for people (the shell), plus reading
// the JSON shape back (the shell and `gpulse query` as clients of a server).
//
// Thread safety: the functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/gpulse.h"

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
