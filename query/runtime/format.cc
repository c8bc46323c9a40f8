#include "query/runtime/format.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "query/runtime/result.h"
#include "query/syntax/time_literal.h"

namespace gpulse::query {

namespace {

int64_t UnitNanos(TimeFormat format) {
  switch (format) {
    case TimeFormat::kRfc3339:
    case TimeFormat::kNs:
      return 1;
    case TimeFormat::kUs:
      return 1'000;
    case TimeFormat::kMs:
      return 1'000'000;
    case TimeFormat::kS:
      return 1'000'000'000;
    case TimeFormat::kM:
      return 60'000'000'000;
    case TimeFormat::kH:
      return 3'600'000'000'000;
  }
  return 1;
}

// Floor division, so that times before 1970 round toward the past.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

template <typename T>
void AppendInt(T v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

// A finite double's shortest text at p, which has room for kDoubleChars;
// returns its end.
constexpr size_t kDoubleChars = 32;
// "00" to "99": two digits at a time.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// v < 100 as one or two digits at p; returns the end.
inline char* PutBelow100(unsigned v, char* p) {
  if (v < 10) {
    *p = static_cast<char>('0' + v);
    return p + 1;
  }
  std::memcpy(p, kDigitPairs + 2 * v, 2);
  return p + 2;
}

char* PutFinite(double v, char* p) {
  // A whole number under 10^5 prints as to_chars would print it (its fixed
  // form is never longer than its exponent form), without the shortest-form
  // search: means of integer fields are mostly such numbers, percentages
  // mostly under 100. -0 keeps its sign.
  if (v > -1e5 && v < 1e5) {
    const auto i = static_cast<int32_t>(v);
    if (v == static_cast<double>(i) && !(i == 0 && std::signbit(v))) {
      if (static_cast<uint32_t>(i) < 100) return PutBelow100(static_cast<unsigned>(i), p);
      return std::to_chars(p, p + kDoubleChars, i).ptr;
    }
  }
  return std::to_chars(p, p + kDoubleChars, v).ptr;
}

void AppendDouble(double v, std::string* out) {
  if (std::isnan(v)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(v)) {
    out->append(v > 0 ? "+Inf" : "-Inf");
    return;
  }
  char buf[kDoubleChars];
  out->append(buf, PutFinite(v, buf));
}

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// Writes `v` as exactly `width` digits (v < 10^width) ending at `end`.
void PutDigits(uint64_t v, int width, char* end) {
  for (int i = 0; i < width; ++i) {
    *--end = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

void AppendTime(int64_t ns, TimeFormat format, bool quoted_rfc, std::string* out) {
  if (format == TimeFormat::kRfc3339) {
    // An RFC 3339 time has nothing JSON escapes.
    if (quoted_rfc) out->push_back('"');
    AppendRfc3339(ns, out);
    if (quoted_rfc) out->push_back('"');
    return;
  }
  AppendInt(FloorDiv(ns, UnitNanos(format)), out);
}

void AppendJsonValue(const QueryValue& v, bool is_time, TimeFormat format, std::string* out) {
  switch (v.index()) {
    case 0:
      out->append("null");
      break;
    case 1: {
      const double d = std::get<double>(v);
      // JSON has no NaN or infinity; InfluxDB writes null for them.
      if (std::isfinite(d)) {
        AppendDouble(d, out);
      } else {
        out->append("null");
      }
      break;
    }
    case 2:
      if (is_time) {
        AppendTime(std::get<int64_t>(v), format, true, out);
      } else {
        AppendInt(std::get<int64_t>(v), out);
      }
      break;
    case 3:
      AppendInt(std::get<uint64_t>(v), out);
      break;
    case 4:
      out->append(std::get<bool>(v) ? "true" : "false");
      break;
    case 5:
      AppendJsonString(std::get<std::string>(v), out);
      break;
  }
}

void AppendCsvField(std::string_view s, std::string* out) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
    out->append(s);
    return;
  }
  out->push_back('"');
  for (char c : s) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

bool IsTimeColumn(const ResultSeries& s, size_t i) { return i == 0 && s.columns[0] == "time"; }

// Reads a series by column (ResultSeries::by_column) row by row, in order:
// where each column's next point is.
class ColumnCursor {
 public:
  explicit ColumnCursor(const ResultSeries& s) : s_(s), next_(s.by_column.size(), 0) {}

  // The index in column k of the value of the row at `row_time`, or
  // SIZE_MAX when that cell is null. Rows are asked for in order.
  size_t Take(size_t k, int64_t row_time) {
    size_t& i = next_[k];
    const Column& c = s_.by_column[k];
    if (i < c.ts.size() && c.ts[i] == row_time) return i++;
    return SIZE_MAX;
  }

 private:
  const ResultSeries& s_;
  std::vector<size_t> next_;
};

// How a cell is written: as FormatJson does (null for NaN and infinities,
// strings quoted and escaped) or as FormatCsv does (strings quoted when they
// must be).
enum class Dialect { kJson, kCsv };

// The longest text of a number cell, a comma before it (an int64 is 20
// bytes; PutFinite's longest, "-2.2250738585072014e-308", 24).
constexpr size_t kCellChars = 1 + kDoubleChars;

// A non-string column's i-th value as JSON at p (room for kCellChars);
// returns its end. NaN and infinities are null.
char* PutJsonNumber(const Column& c, size_t i, char* p) {
  switch (c.type) {
    case FieldType::kFloat:
      return std::isfinite(c.floats[i]) ? PutFinite(c.floats[i], p) : std::copy_n("null", 4, p);
    case FieldType::kInt:
      if (static_cast<uint64_t>(c.ints[i]) < 100) {
        return PutBelow100(static_cast<unsigned>(c.ints[i]), p);
      }
      return std::to_chars(p, p + kCellChars, c.ints[i]).ptr;
    case FieldType::kUint:
      if (c.uints[i] < 100) return PutBelow100(static_cast<unsigned>(c.uints[i]), p);
      return std::to_chars(p, p + kCellChars, c.uints[i]).ptr;
    case FieldType::kBool:
      return c.bools[i] ? std::copy_n("true", 4, p) : std::copy_n("false", 5, p);
    case FieldType::kString:
      break;
  }
  return p;
}

// A column's i-th value (AppendJsonValue's or AppendCsvValue's text).
void AppendCell(const Column& c, size_t i, Dialect dialect, std::string* out) {
  if (c.type == FieldType::kString) {
    if (dialect == Dialect::kJson) {
      AppendJsonString(c.strings[i], out);
    } else {
      AppendCsvField(c.strings[i], out);
    }
  } else if (dialect == Dialect::kCsv && c.type == FieldType::kFloat) {
    AppendDouble(c.floats[i], out);  // NaN and infinities as text
  } else {
    char buf[kCellChars];
    out->append(buf, PutJsonNumber(c, i, buf));
  }
}

// A series by column whose rows FormatJson writes a row at a time through a
// buffer (no string column to escape, times as integers, a bounded width).
bool NarrowRows(const ResultSeries& s, TimeFormat time_format) {
  if (time_format == TimeFormat::kRfc3339 || s.by_column.size() > 16) return false;
  return std::none_of(s.by_column.begin(), s.by_column.end(),
                      [](const Column& c) { return c.type == FieldType::kString; });
}

}  // namespace

char* EpochDigits::Put(int64_t v, char* p) {
  if (v < 10'000) return std::to_chars(p, p + 20, v).ptr;  // negative or short: no prefix
  const int64_t high = v / 10'000;
  const auto low = static_cast<unsigned>(v - high * 10'000);
  if (high != high_) {
    high_ = high;
    prefix_len_ =
        static_cast<size_t>(std::to_chars(prefix_, prefix_ + sizeof prefix_, high).ptr - prefix_);
  }
  // A fixed 16 bytes (at most 15 are digits, those of INT64_MAX / 10^4): a
  // copy of constant size is two moves, one of the prefix's length a call.
  std::memcpy(p, prefix_, 16);
  p += prefix_len_;
  std::memcpy(p, kDigitPairs + 2 * (low / 100), 2);
  std::memcpy(p + 2, kDigitPairs + 2 * (low % 100), 2);
  return p + 4;
}

namespace {

// A NarrowRows series' rows as JSON arrays, each after a comma but the first,
// gathered in a buffer on the stack and appended to *out a block at a time
// (a row has a bounded length).
void AppendNarrowJsonRows(const ResultSeries& s, size_t begin, size_t end, TimeFormat time_format,
                          ColumnCursor* cursor, std::string* out) {
  const int64_t unit = UnitNanos(time_format);
  EpochDigits times;
  const size_t row_chars = 2 + 20 + s.by_column.size() * kCellChars + 1;
  char block[8192];  // room for a row of 16 number columns, and many of one
  char* p = block;
  for (size_t r = begin; r < end; ++r) {
    if (static_cast<size_t>(block + sizeof block - p) < row_chars) {
      out->append(block, p);
      p = block;
    }
    if (r > begin) *p++ = ',';
    *p++ = '[';
    p = times.Put(FloorDiv(s.row_times[r], unit), p);
    for (size_t k = 0; k < s.by_column.size(); ++k) {
      *p++ = ',';
      const size_t i = cursor->Take(k, s.row_times[r]);
      p = i == SIZE_MAX ? std::copy_n("null", 4, p) : PutJsonNumber(s.by_column[k], i, p);
    }
    *p++ = ']';
  }
  out->append(block, p);
}

// Rows [begin, end) of a series as JSON arrays joined by commas. `cursor`
// (for a series by column) has taken the rows before begin.
void AppendJsonRows(const ResultSeries& s, size_t begin, size_t end, TimeFormat time_format,
                    ColumnCursor* cursor, std::string* out) {
  const bool timed = !s.columns.empty() && IsTimeColumn(s, 0);
  if (s.by_column.empty()) {
    for (size_t r = begin; r < end; ++r) {
      if (r > begin) out->push_back(',');
      out->push_back('[');
      for (size_t c = 0; c < s.values[r].size(); ++c) {
        if (c) out->push_back(',');
        AppendJsonValue(s.values[r][c], c == 0 && timed, time_format, out);
      }
      out->push_back(']');
    }
  } else if (NarrowRows(s, time_format)) {
    AppendNarrowJsonRows(s, begin, end, time_format, cursor, out);
  } else {
    for (size_t r = begin; r < end; ++r) {
      if (r > begin) out->push_back(',');
      out->push_back('[');
      AppendTime(s.row_times[r], time_format, true, out);
      for (size_t k = 0; k < s.by_column.size(); ++k) {
        out->push_back(',');
        const size_t i = cursor->Take(k, s.row_times[r]);
        if (i == SIZE_MAX) {
          out->append("null");
        } else {
          AppendCell(s.by_column[k], i, Dialect::kJson, out);
        }
      }
      out->push_back(']');
    }
  }
}

// A series as a JSON object with its rows [begin, end); `partial` when
// later rows follow in another piece (a chunked answer).
void AppendJsonSeries(const ResultSeries& s, size_t begin, size_t end, bool partial,
                      TimeFormat time_format, ColumnCursor* cursor, std::string* out) {
  out->push_back('{');
  bool comma = false;
  if (!s.name.empty()) {
    out->append("\"name\":");
    AppendJsonString(s.name, out);
    comma = true;
  }
  if (!s.tags.empty()) {
    out->append(comma ? ",\"tags\":{" : "\"tags\":{");
    for (size_t t = 0; t < s.tags.size(); ++t) {
      if (t) out->push_back(',');
      AppendJsonString(s.tags[t].key, out);
      out->push_back(':');
      AppendJsonString(s.tags[t].value, out);
    }
    out->push_back('}');
    comma = true;
  }
  out->append(comma ? ",\"columns\":[" : "\"columns\":[");
  for (size_t c = 0; c < s.columns.size(); ++c) {
    if (c) out->push_back(',');
    AppendJsonString(s.columns[c], out);
  }
  out->append("],\"values\":[");
  AppendJsonRows(s, begin, end, time_format, cursor, out);
  out->append(partial ? "],\"partial\":true}" : "]}");
}

// A statement's notes as InfluxDB's "messages", after a comma.
void AppendJsonMessages(const std::vector<std::string>& notes, std::string* out) {
  if (notes.empty()) return;
  out->append(",\"messages\":[");
  for (size_t i = 0; i < notes.size(); ++i) {
    if (i) out->push_back(',');
    out->append("{\"level\":\"warning\",\"text\":");
    AppendJsonString(notes[i], out);
    out->push_back('}');
  }
  out->push_back(']');
}

}  // namespace

void AppendRfc3339(int64_t ns, std::string* out) {
  using namespace std::chrono;
  // Seconds and nanoseconds, floored (not ns - secs * 10^9: near INT64_MIN
  // that product overflows).
  int64_t secs = ns / 1'000'000'000;
  int64_t frac = ns % 1'000'000'000;
  if (frac < 0) {
    frac += 1'000'000'000;
    --secs;
  }
  const int64_t day = FloorDiv(secs, 86'400);
  const int64_t sod = secs - day * 86'400;
  const year_month_day ymd{sys_days{days{day}}};
  const int year = static_cast<int>(ymd.year());
  // "2024-01-01T12:00:00", then ".5" (fraction without trailing zeros), "Z".
  char buf[48];
  char* p = buf;
  if (year >= 0 && year <= 9999) {
    PutDigits(static_cast<uint64_t>(year), 4, p + 4);
    p += 4;
  } else {
    p = std::to_chars(p, buf + 16, year).ptr;
  }
  *p++ = '-';
  PutDigits(static_cast<unsigned>(ymd.month()), 2, p + 2);
  p += 2;
  *p++ = '-';
  PutDigits(static_cast<unsigned>(ymd.day()), 2, p + 2);
  p += 2;
  *p++ = 'T';
  PutDigits(static_cast<uint64_t>(sod / 3600), 2, p + 2);
  p += 2;
  *p++ = ':';
  PutDigits(static_cast<uint64_t>(sod / 60 % 60), 2, p + 2);
  p += 2;
  *p++ = ':';
  PutDigits(static_cast<uint64_t>(sod % 60), 2, p + 2);
  p += 2;
  if (frac != 0) {
    *p++ = '.';
    PutDigits(static_cast<uint64_t>(frac), 9, p + 9);
    p += 9;
    while (p[-1] == '0') --p;
  }
  *p++ = 'Z';
  out->append(buf, p);
}

std::string Rfc3339(int64_t ns) {
  std::string out;
  AppendRfc3339(ns, &out);
  return out;
}

bool ParseEpoch(std::string_view text, TimeFormat* format) {
  if (text.empty()) {
    *format = TimeFormat::kRfc3339;
  } else if (text == "ns" || text == "n") {
    *format = TimeFormat::kNs;
  } else if (text == "u" || text == "us" || text == "\xC2\xB5") {
    *format = TimeFormat::kUs;
  } else if (text == "ms") {
    *format = TimeFormat::kMs;
  } else if (text == "s") {
    *format = TimeFormat::kS;
  } else if (text == "m") {
    *format = TimeFormat::kM;
  } else if (text == "h") {
    *format = TimeFormat::kH;
  } else {
    return false;
  }
  return true;
}

namespace {

// The answer's cells, time included: what sizes the text.
size_t CellCount(const QueryResult& result) {
  size_t cells = 0;
  for (const StatementResult& st : result.statements) {
    for (const ResultSeries& s : st.series) cells += s.RowCount() * s.columns.size();
  }
  return cells;
}

// FormatValue's text, appended to *out.
void AppendValueText(const QueryValue& value, bool is_time, TimeFormat time_format,
                     std::string* out) {
  switch (value.index()) {
    case 0:
      break;
    case 1:
      AppendDouble(std::get<double>(value), out);
      break;
    case 2:
      if (is_time) {
        AppendTime(std::get<int64_t>(value), time_format, false, out);
      } else {
        AppendInt(std::get<int64_t>(value), out);
      }
      break;
    case 3:
      AppendInt(std::get<uint64_t>(value), out);
      break;
    case 4:
      out->append(std::get<bool>(value) ? "true" : "false");
      break;
    case 5:
      out->append(std::get<std::string>(value));
      break;
  }
}

// A value as a CSV field: only a string may need quotes.
void AppendCsvValue(const QueryValue& value, bool is_time, TimeFormat time_format,
                    std::string* out) {
  if (const auto* text = std::get_if<std::string>(&value)) {
    AppendCsvField(*text, out);
  } else {
    AppendValueText(value, is_time, time_format, out);
  }
}

}  // namespace

std::string FormatValue(const QueryValue& value, bool is_time, TimeFormat time_format) {
  std::string out;
  AppendValueText(value, is_time, time_format, &out);
  return out;
}

std::string FormatJson(const QueryResult& result, TimeFormat time_format, bool pretty) {
  std::string out;
  out.reserve(256 + 12 * CellCount(result));  // most cells take fewer bytes
  out.append("{\"results\":[");
  for (size_t si = 0; si < result.statements.size(); ++si) {
    const StatementResult& st = result.statements[si];
    if (si) out.push_back(',');
    out.append("{\"statement_id\":");
    AppendInt(si, &out);
    if (!st.status.ok()) {
      out.append(",\"error\":");
      AppendJsonString(st.status.message(), &out);
    } else if (!st.series.empty()) {
      out.append(",\"series\":[");
      for (size_t i = 0; i < st.series.size(); ++i) {
        if (i) out.push_back(',');
        ColumnCursor cursor(st.series[i]);
        AppendJsonSeries(st.series[i], 0, st.series[i].RowCount(), false, time_format, &cursor,
                         &out);
      }
      out.push_back(']');
    }
    AppendJsonMessages(st.notes, &out);
    out.push_back('}');
  }
  out.append("]}");
  if (pretty) {
    // Rare (people reading a reply by hand): let the JSON library indent.
    return nlohmann::json::parse(out).dump(4) + "\n";
  }
  out.push_back('\n');
  return out;
}

JsonChunkWriter::JsonChunkWriter(TimeFormat time_format, size_t chunk_rows,
                                 std::function<bool(std::string_view)> emit)
    : time_format_(time_format),
      chunk_rows_(std::max<size_t>(chunk_rows, 1)),
      emit_(std::move(emit)) {}

void JsonChunkWriter::Open(size_t statement) {
  out_.clear();
  out_.append("{\"results\":[{\"statement_id\":");
  AppendInt(statement, &out_);
  open_ = true;
  rows_ = 0;
  series_open_ = false;
}

bool JsonChunkWriter::Flush(bool more, const std::vector<std::string>* notes) {
  if (series_open_) out_.push_back(']');
  if (notes != nullptr) AppendJsonMessages(*notes, &out_);
  out_.append(more ? ",\"partial\":true}]}\n" : "}]}\n");
  open_ = false;
  ok_ = ok_ && emit_(out_);
  return ok_;
}

bool JsonChunkWriter::Series(size_t statement, const ResultSeries& s) {
  ColumnCursor cursor(s);
  const size_t rows = s.RowCount();
  size_t row = 0;
  if (rows == 0 && ok_) {
    // A table with columns and no rows (a SHOW that found nothing), as
    // FormatJson writes it.
    if (open_ && rows_ == chunk_rows_ && !Flush(/*more=*/true, nullptr)) return false;
    if (!open_) Open(statement);
    out_.append(series_open_ ? "," : ",\"series\":[");
    series_open_ = true;
    AppendJsonSeries(s, 0, 0, false, time_format_, &cursor, &out_);
    return ok_;
  }
  while (ok_ && row < rows) {
    if (open_ && rows_ == chunk_rows_ && !Flush(/*more=*/true, nullptr)) break;
    if (!open_) Open(statement);
    const size_t take = std::min(rows - row, chunk_rows_ - rows_);
    out_.append(series_open_ ? "," : ",\"series\":[");
    series_open_ = true;
    AppendJsonSeries(s, row, row + take, row + take < rows, time_format_, &cursor, &out_);
    row += take;
    rows_ += take;
  }
  return ok_;
}

bool JsonChunkWriter::End(size_t statement, const StatementResult& st) {
  if (!ok_) return false;
  if (!st.status.ok()) {
    // Rows already sent stay sent; the error closes the statement.
    if (open_ && !Flush(/*more=*/true, nullptr)) return false;
    Open(statement);
    out_.append(",\"error\":");
    AppendJsonString(st.status.message(), &out_);
    return Flush(/*more=*/false, nullptr);
  }
  if (!open_) Open(statement);
  return Flush(/*more=*/false, &st.notes);
}

bool FormatJsonChunks(const QueryResult& result, TimeFormat time_format, size_t chunk_rows,
                      const std::function<bool(std::string_view)>& emit) {
  JsonChunkWriter writer(time_format, chunk_rows, emit);
  for (size_t si = 0; si < result.statements.size(); ++si) {
    const StatementResult& st = result.statements[si];
    for (const ResultSeries& s : st.series) {
      if (st.status.ok() && !writer.Series(si, s)) return false;
    }
    if (!writer.End(si, st)) return false;
  }
  return true;
}

std::string FormatCsv(const QueryResult& result, TimeFormat time_format) {
  std::string out;
  out.reserve(256 + 12 * CellCount(result));
  for (const StatementResult& st : result.statements) {
    if (!st.status.ok()) {
      out.append("error,");
      AppendCsvField(st.status.ToString(), &out);
      out.push_back('\n');
      continue;
    }
    const std::vector<std::string>* header = nullptr;
    for (const ResultSeries& s : st.series) {
      if (!header || *header != s.columns) {
        out.append("name,tags");
        for (const std::string& c : s.columns) {
          out.push_back(',');
          AppendCsvField(c, &out);
        }
        out.push_back('\n');
        header = &s.columns;
      }
      std::string tags;
      for (size_t t = 0; t < s.tags.size(); ++t) {
        if (t) tags.push_back(',');
        tags += s.tags[t].key;
        tags.push_back('=');
        tags += s.tags[t].value;
      }
      const bool timed = !s.columns.empty() && IsTimeColumn(s, 0);
      ColumnCursor cursor(s);
      for (size_t r = 0; r < s.RowCount(); ++r) {
        AppendCsvField(s.name, &out);
        out.push_back(',');
        AppendCsvField(tags, &out);
        if (s.by_column.empty()) {
          for (size_t c = 0; c < s.values[r].size(); ++c) {
            out.push_back(',');
            AppendCsvValue(s.values[r][c], c == 0 && timed, time_format, &out);
          }
        } else {
          out.push_back(',');
          AppendTime(s.row_times[r], time_format, false, &out);
          for (size_t k = 0; k < s.by_column.size(); ++k) {
            out.push_back(',');
            const size_t i = cursor.Take(k, s.row_times[r]);
            if (i != SIZE_MAX) AppendCell(s.by_column[k], i, Dialect::kCsv, &out);
          }
        }
        out.push_back('\n');
      }
    }
  }
  return out;
}

Status ParseJsonResult(std::string_view json, TimeFormat time_format, QueryResult* out) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument("query reply is not a JSON object");
  }
  if (doc.contains("error") && doc["error"].is_string()) {
    return Status::InvalidArgument(doc["error"].get<std::string>());
  }
  if (!doc.contains("results") || !doc["results"].is_array()) {
    return Status::InvalidArgument("query reply has no \"results\" array");
  }
  const int64_t unit = UnitNanos(time_format);
  for (const auto& r : doc["results"]) {
    StatementResult st;
    if (r.contains("error") && r["error"].is_string()) {
      st.status = Status::InvalidArgument(r["error"].get<std::string>());
    }
    if (r.contains("messages") && r["messages"].is_array()) {
      for (const auto& m : r["messages"]) {
        if (m.contains("text") && m["text"].is_string()) st.notes.push_back(m["text"]);
      }
    }
    if (r.contains("series") && r["series"].is_array()) {
      for (const auto& s : r["series"]) {
        ResultSeries rs;
        if (s.contains("name") && s["name"].is_string()) rs.name = s["name"];
        if (s.contains("tags") && s["tags"].is_object()) {
          for (auto it = s["tags"].begin(); it != s["tags"].end(); ++it) {
            rs.tags.push_back({it.key(), it.value().is_string() ? it.value().get<std::string>()
                                                                : it.value().dump()});
          }
        }
        if (s.contains("columns") && s["columns"].is_array()) {
          for (const auto& c : s["columns"]) {
            rs.columns.push_back(c.is_string() ? c.get<std::string>() : c.dump());
          }
        }
        const bool has_time = !rs.columns.empty() && rs.columns[0] == "time";
        if (s.contains("values") && s["values"].is_array()) {
          for (const auto& row : s["values"]) {
            std::vector<QueryValue> cells;
            if (!row.is_array()) continue;
            for (size_t c = 0; c < row.size(); ++c) {
              const auto& v = row[c];
              if (c == 0 && has_time) {
                int64_t ns = 0;
                if (v.is_string() && ParseTimeLiteral(v.get<std::string>(), &ns)) {
                  cells.emplace_back(ns);
                  continue;
                }
                if (v.is_number_integer()) {
                  cells.emplace_back(v.get<int64_t>() * unit);
                  continue;
                }
              }
              if (v.is_null()) {
                cells.emplace_back(std::monostate{});
              } else if (v.is_boolean()) {
                cells.emplace_back(v.get<bool>());
              } else if (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX) {
                cells.emplace_back(v.get<uint64_t>());
              } else if (v.is_number_integer()) {
                cells.emplace_back(v.get<int64_t>());
              } else if (v.is_number()) {
                cells.emplace_back(v.get<double>());
              } else if (v.is_string()) {
                cells.emplace_back(v.get<std::string>());
              } else {
                cells.emplace_back(v.dump());
              }
            }
            rs.values.push_back(std::move(cells));
          }
        }
        st.series.push_back(std::move(rs));
      }
    }
    out->statements.push_back(std::move(st));
  }
  return Status::Ok();
}

}  // namespace gpulse::query
