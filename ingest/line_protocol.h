// LineProtocolParser: turns InfluxDB line protocol (a byte span) into points.
// It owns only reusable scratch space (the tag and field vectors of the line
// being parsed, and a buffer for text that had escapes); the body belongs to
// the caller. docs/line-protocol.md is the spec it implements: escaping per
// element, value types, precision, and how errors are reported.
//
// Parsing is a pure function of (body, options): no I/O, no allocation per
// line once the scratch space has grown, never throws, never reads outside
// the body, and does work linear in the body's size. A bad line yields one
// LineError and parsing resumes at the next line.
//
// Thread safety: none; one parser per thread. Parsers share nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::ingest {

enum class Precision { kNanoseconds, kMicroseconds, kMilliseconds, kSeconds, kMinutes, kHours };

// Accepts "ns", "us", "u", "µs", "ms", "s", "m", "h", and the same with a
// leading "1" ("1ns", "1µs", ... as InfluxDB's API and the conformance corpus
// spell them). Returns false and leaves *precision alone otherwise.
bool ParsePrecision(std::string_view text, Precision* precision);

// Nanoseconds in one unit of `precision` (1 for ns, 3600e9 for h).
int64_t PrecisionNanos(Precision precision);

// Where and why a line was rejected. `line` is 1-based and counts every '\n'
// of the body (including those inside quoted strings); `column` is the
// 1-based byte offset of the offending byte within its line, or one past the
// last byte when the line ended too early. The message says what was
// expected and what was found: "expected '=' after tag key \"region\", found ' '".
struct LineError {
  size_t line = 0;
  size_t column = 0;
  std::string message;
};

// The views below point into the body, or into the parser's scratch buffer
// when the text had escapes. Either way they stay valid only until on_point
// returns (the next line reuses the scratch buffer).
struct TagView {
  std::string_view key;
  std::string_view value;
};

struct FieldView {
  std::string_view key;
  FieldType type = FieldType::kFloat;
  // Exactly one of these is meaningful, the one `type` names.
  double float_value = 0;
  int64_t int_value = 0;
  uint64_t uint_value = 0;
  bool bool_value = false;
  std::string_view string_value;

  // The value as the engine's FieldValue (copies a string).
  FieldValue ToFieldValue() const;
};

struct PointView {
  std::string_view measurement;
  std::span<const TagView> tags;      // in input order; keys are distinct
  std::span<const FieldView> fields;  // in input order; keys distinct, never empty
  int64_t timestamp_ns = 0;
  size_t line = 0;  // 1-based line where the point starts
};

class LineProtocolParser {
 public:
  struct Options {
    // The unit of the timestamps in the body.
    Precision precision = Precision::kNanoseconds;
    // The time of a line that has no timestamp, in nanoseconds. It is rounded
    // down to a whole unit of `precision`, as InfluxDB does.
    int64_t default_time_ns = 0;
    // At most this many LineErrors are appended; later bad lines are only
    // counted in *error_count.
    size_t max_errors = 100;
  };

  LineProtocolParser() = default;
  LineProtocolParser(const LineProtocolParser&) = delete;
  LineProtocolParser& operator=(const LineProtocolParser&) = delete;

  // Parses every line of `body`, calling on_point for each good line in order
  // and appending one LineError per bad line to *errors (up to
  // options.max_errors of them). A bad line never stops the good lines after
  // it. *error_count (when not null) receives the number of bad lines, also
  // those past max_errors. `errors` may be null when only the count matters.
  void Parse(std::string_view body, const Options& options,
             const std::function<void(const PointView&)>& on_point, std::vector<LineError>* errors,
             size_t* error_count);

 private:
  class LineScanner;

  std::vector<TagView> tags_;
  std::vector<FieldView> fields_;
  std::string scratch_;  // unescaped text of the current line
  // Texts of the current line that live in scratch_: which view they belong
  // to and where they are in scratch_. Resolved to pointers once the line is
  // done, because scratch_ may move while it grows.
  struct Fixup {
    int slot;  // -1: measurement; 4 * index + 0..3: tag key, tag value, field key, string value
    size_t offset;
    size_t size;
  };
  std::vector<Fixup> fixups_;
  // Keys of a wide line to their first position, for finding repeats in
  // linear time (a line of 100,000 fields took 30 s pairwise).
  std::unordered_map<std::string_view, size_t> positions_;
};

// Parses `body` into gpulse::Points appended to *points (strings copied).
// Bad lines go to *errors (up to options.max_errors); *errors may be null.
void ParseToPoints(std::string_view body, const LineProtocolParser::Options& options,
                   std::vector<Point>* points, std::vector<LineError>* errors);

}  // namespace gpulse::ingest
