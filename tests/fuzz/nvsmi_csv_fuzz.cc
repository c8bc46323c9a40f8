// libFuzzer target for ingest/nvsmi_csv (with ingest/csv_row and
// ingest/civil_time): any bytes must parse as an nvidia-smi --query-gpu CSV
// log without a crash, a sanitizer report, a hang, or a broken invariant.
// Built and run by .ci/fuzz (clang only: -fsanitize=fuzzer,address,undefined).
//
// The first input byte picks the zone (bit 0: UTC or America/New_York, whose
// skipped and repeated hours ToUnix handles) and the line after which the
// body is cut for the sliced parse (the other bits); the rest is the body.
// The --query-gpu list (for rows before any header) and the tags are
// fixed. Invariants checked:
// - a refusal (not OK) has a message;
// - every error has line >= 1 within the body, column >= 1 and at most one
//   past its line's end, and a reason; errors come in line order;
// - points and their lines pair up, lines strictly increase, and no line
//   gives both a point and an error;
// - every point is nvidia_smi with at least one field; tag keys and values
//   are non-empty and tag keys distinct; field keys are non-empty and
//   distinct; floats are finite; a field keeps one type within a parse;
// - parsing the body in two slices (the second starting at its line
//   number) with one parser gives the same points, lines and errors as one
//   call, when the one call succeeds.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/nvsmi_csv.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using gpulse::fuzz::Check;

using gpulse::fuzz::Touch;

using gpulse::Point;
using gpulse::ingest::NvsmiCsvOptions;
using gpulse::ingest::NvsmiCsvParser;
using gpulse::ingest::RowError;
using gpulse::ingest::TimeZone;

struct Outcome {
  bool ok = true;
  std::vector<Point> points;
  std::vector<size_t> lines;
  std::vector<RowError> errors;
};

NvsmiCsvOptions MakeOptions(bool new_york) {
  static const TimeZone kNewYork = [] {
    auto zone = TimeZone::Find("America/New_York");
    Check(zone.ok());
    return zone.value();
  }();
  NvsmiCsvOptions options;
  // The columns of the header-less omniopt logs in /work/shared/data/real
  // (SOURCES.md section 5), so their rows seed the corpus as they are.
  options.query_gpu =
      "timestamp, name, pci.bus_id, driver_version, pstate, pcie.link.gen.max, "
      "pcie.link.gen.current, temperature.gpu, utilization.gpu, utilization.memory, "
      "memory.total, memory.free, memory.used";
  options.tags = {{"host", "fuzz-node"}, {"index", "9"}};
  if (new_york) options.zone = kNewYork;
  return options;
}

// Byte lengths of the body's lines (without '\n' and a trailing '\r').
std::vector<size_t> LineLengths(std::string_view body) {
  std::vector<size_t> lengths;
  while (true) {
    const size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lengths.push_back(line.size());
    if (nl == std::string_view::npos) break;
    body.remove_prefix(nl + 1);
  }
  return lengths;
}

void CheckOutcome(const Outcome& out, std::string_view body) {
  const std::vector<size_t> lengths = LineLengths(body);
  size_t last_line = 0;
  for (const RowError& e : out.errors) {
    Check(e.line >= 1 && e.line <= lengths.size() && e.line > last_line);
    last_line = e.line;
    Check(e.column >= 1 && e.column <= lengths[e.line - 1] + 1);
    Check(!e.reason.empty() && Touch(e.reason) <= 255 * e.reason.size());
  }
  Check(out.points.size() == out.lines.size());
  last_line = 0;
  size_t next_error = 0;
  for (size_t line : out.lines) {
    Check(line >= 1 && line <= lengths.size() && line > last_line);
    last_line = line;
    while (next_error < out.errors.size() && out.errors[next_error].line < line) ++next_error;
    Check(next_error == out.errors.size() || out.errors[next_error].line != line);
  }
  std::map<std::string, size_t> field_types;  // field key -> FieldValue index
  for (const Point& p : out.points) {
    Check(p.measurement == "nvidia_smi");
    Check(!p.fields.empty());
    for (size_t i = 0; i < p.tags.size(); ++i) {
      Check(!p.tags[i].key.empty() && !p.tags[i].value.empty());
      Check(Touch(p.tags[i].value) <= 255 * p.tags[i].value.size());
      for (size_t j = 0; j < i; ++j) Check(p.tags[j].key != p.tags[i].key);
    }
    for (size_t i = 0; i < p.fields.size(); ++i) {
      const gpulse::Field& f = p.fields[i];
      Check(!f.key.empty());
      for (size_t j = 0; j < i; ++j) Check(p.fields[j].key != f.key);
      if (const double* d = std::get_if<double>(&f.value)) Check(std::isfinite(*d));
      if (const std::string* s = std::get_if<std::string>(&f.value)) {
        Check(Touch(*s) <= 255 * s->size());
      }
      const auto [it, added] = field_types.try_emplace(f.key, f.value.index());
      Check(added || it->second == f.value.index());
    }
  }
}

bool SamePoints(const std::vector<Point>& a, const std::vector<Point>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].measurement != b[i].measurement || a[i].tags != b[i].tags ||
        a[i].timestamp_ns != b[i].timestamp_ns || a[i].fields.size() != b[i].fields.size()) {
      return false;
    }
    for (size_t j = 0; j < a[i].fields.size(); ++j) {
      if (a[i].fields[j].key != b[i].fields[j].key ||
          a[i].fields[j].value != b[i].fields[j].value) {
        return false;
      }
    }
  }
  return true;
}

bool SameErrors(const std::vector<RowError>& a, const std::vector<RowError>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].line != b[i].line || a[i].column != b[i].column || a[i].reason != b[i].reason) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool new_york = (data[0] & 1) != 0;
  const size_t cut_after = data[0] >> 1;  // lines in the first slice
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  Outcome whole;
  {
    NvsmiCsvParser parser(MakeOptions(new_york));
    const gpulse::Status s = parser.Parse(body, 1, &whole.points, &whole.lines, &whole.errors);
    whole.ok = s.ok();
    if (!s.ok()) Check(!s.message().empty() && !s.ToString().empty());
  }
  CheckOutcome(whole, body);
  if (!whole.ok) return 0;

  size_t cut = 0;
  size_t second_line = 1;
  while (second_line <= cut_after && cut < body.size()) {
    const size_t nl = body.find('\n', cut);
    if (nl == std::string_view::npos) break;
    cut = nl + 1;
    ++second_line;
  }
  Outcome sliced;
  NvsmiCsvParser parser(MakeOptions(new_york));
  Check(parser.Parse(body.substr(0, cut), 1, &sliced.points, &sliced.lines, &sliced.errors).ok());
  Check(parser.Parse(body.substr(cut), second_line, &sliced.points, &sliced.lines, &sliced.errors)
            .ok());
  Check(SamePoints(whole.points, sliced.points));
  Check(whole.lines == sliced.lines);
  Check(SameErrors(whole.errors, sliced.errors));
  return 0;
}
