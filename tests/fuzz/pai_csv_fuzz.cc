// libFuzzer target for ingest/pai_csv (with ingest/csv_row): any bytes must
// parse as a table of the Alibaba PAI trace without a crash, a sanitizer
// report, a hang, or a broken invariant. Built and run by .ci/fuzz (clang
// only: -fsanitize=fuzzer,address,undefined).
//
// The first input byte picks the table (byte % 7, in PaiTables() order);
// the rest is the body. The start time and the tags are fixed. Invariants
// checked:
// - every error has line >= 1 within the body, column >= 1 and at most one
//   past its line's end, and a reason; errors come in line order;
// - points and their lines pair up, lines strictly increase, and every
//   non-blank line gives exactly one point or one error, unless it is the
//   table's header;
// - every point has the table's measurement and at least one field; tag
//   keys are the table's tag columns or the fixed tags, distinct, with
//   non-empty values; field keys are the table's other columns (never
//   start_time), distinct, each of its column's type (string, integer,
//   finite float);
// - a point of a table without times is at the start, plus its line number
//   in nanoseconds when the table has ids.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/pai_csv.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using gpulse::fuzz::Check;

using gpulse::fuzz::Touch;

using gpulse::Point;
using gpulse::ingest::PaiColumn;
using gpulse::ingest::PaiTable;
using gpulse::ingest::RowError;
using Kind = PaiColumn::Kind;

constexpr int64_t kStartNs = 1593561600'000000000;  // 2020-07-01, the trace's own start

// What the parser must make of each line of the body.
enum class LineKind { kBlank, kHeader, kRow };

std::vector<LineKind> LineKinds(std::string_view body, const PaiTable& table,
                                std::vector<size_t>* lengths) {
  std::string header;
  for (const PaiColumn& c : table.columns)
    header += std::string(header.empty() ? "" : ",") + c.name;
  std::vector<LineKind> kinds;
  while (true) {
    const size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lengths->push_back(line.size());
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
      kinds.push_back(LineKind::kBlank);
    } else {
      const std::string_view trimmed = line.substr(first, line.find_last_not_of(" \t") - first + 1);
      kinds.push_back(trimmed == header ? LineKind::kHeader : LineKind::kRow);
    }
    if (nl == std::string_view::npos) break;
    body.remove_prefix(nl + 1);
  }
  return kinds;
}

const PaiColumn* ColumnNamed(const PaiTable& table, std::string_view name) {
  for (const PaiColumn& c : table.columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Whether `value` holds the type a column of `kind` gives its field.
bool TypeFits(Kind kind, const gpulse::FieldValue& value) {
  switch (kind) {
    case Kind::kString:
      return std::holds_alternative<std::string>(value);
    case Kind::kInteger:
      return std::holds_alternative<int64_t>(value);
    case Kind::kFloat:
    case Kind::kEndTime:
      return std::holds_alternative<double>(value) && std::isfinite(std::get<double>(value));
    default:
      return false;  // tags and start_time are never fields
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const PaiTable& table = gpulse::ingest::PaiTables()[data[0] % 7];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  gpulse::ingest::PaiCsvOptions options;
  options.table = &table;
  options.tags = {{"cluster", "pai-v2020"}, {"status", "unknown"}};
  options.start_ns = kStartNs;
  bool has_time = false, has_ids = false;
  for (const PaiColumn& c : table.columns) {
    has_time = has_time || c.kind == Kind::kTime;
    has_ids = has_ids || c.kind == Kind::kString;
  }

  gpulse::ingest::PaiCsvParser parser(options);
  std::vector<Point> points;
  std::vector<size_t> lines;
  std::vector<RowError> errors;
  parser.Parse(body, 1, &points, &lines, &errors);

  std::vector<size_t> lengths;
  const std::vector<LineKind> kinds = LineKinds(body, table, &lengths);
  std::vector<int> outputs(kinds.size(), 0);  // points and errors per line
  size_t last_line = 0;
  for (const RowError& e : errors) {
    Check(e.line >= 1 && e.line <= kinds.size() && e.line > last_line);
    last_line = e.line;
    ++outputs[e.line - 1];
    Check(e.column >= 1 && e.column <= lengths[e.line - 1] + 1);
    Check(!e.reason.empty() && Touch(e.reason) <= 255 * e.reason.size());
  }
  Check(points.size() == lines.size());
  last_line = 0;
  for (size_t line : lines) {
    Check(line >= 1 && line <= kinds.size() && line > last_line);
    last_line = line;
    ++outputs[line - 1];
  }
  for (size_t i = 0; i < kinds.size(); ++i) {
    Check(outputs[i] == (kinds[i] == LineKind::kRow ? 1 : 0));
  }

  for (size_t n = 0; n < points.size(); ++n) {
    const Point& p = points[n];
    Check(p.measurement == table.measurement);
    Check(!p.fields.empty());
    for (size_t i = 0; i < p.tags.size(); ++i) {
      const gpulse::Tag& t = p.tags[i];
      const PaiColumn* c = ColumnNamed(table, t.key);
      Check((c != nullptr && c->kind == Kind::kTag) || t.key == "cluster" || t.key == "status");
      Check(!t.value.empty() && Touch(t.value) <= 255 * t.value.size());
      for (size_t j = 0; j < i; ++j) Check(p.tags[j].key != t.key);
    }
    for (size_t i = 0; i < p.fields.size(); ++i) {
      const gpulse::Field& f = p.fields[i];
      const PaiColumn* c = ColumnNamed(table, f.key);
      Check(c != nullptr && TypeFits(c->kind, f.value));
      for (size_t j = 0; j < i; ++j) Check(p.fields[j].key != f.key);
      if (const std::string* s = std::get_if<std::string>(&f.value)) {
        Check(Touch(*s) <= 255 * s->size());
      }
    }
    if (!has_time) {
      Check(p.timestamp_ns == kStartNs + (has_ids ? static_cast<int64_t>(lines[n]) : 0));
    }
  }
  return 0;
}
