// libFuzzer target for ingest/line_protocol: any bytes must parse without a
// crash, a sanitizer report, or a broken invariant. Built and run by
// .ci/fuzz (clang only: -fsanitize=fuzzer,address,undefined).
//
// The first input byte picks the precision and whether the default time is
// extreme; the rest is the body. Invariants checked:
// - every error has line >= 1 and column >= 1, errors.size() <= max_errors,
//   and the error count covers the listed errors;
// - every point has a non-empty measurement, non-empty tag keys and values,
//   at least one field, non-empty and distinct field keys, and a line number
//   that never decreases;
// - ParseToPoints agrees with Parse on the number of points.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ingest/line_protocol.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using gpulse::fuzz::Check;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpulse::ingest::FieldView;
  using gpulse::ingest::LineError;
  using gpulse::ingest::LineProtocolParser;
  using gpulse::ingest::PointView;
  using gpulse::ingest::Precision;
  if (size == 0) return 0;
  LineProtocolParser::Options options;
  options.precision = static_cast<Precision>(data[0] % 6);
  options.default_time_ns = (data[0] & 0x80) ? INT64_MIN : 1700000000123456789;
  options.max_errors = 4;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  LineProtocolParser parser;
  std::vector<LineError> errors;
  size_t error_count = 0;
  size_t points = 0;
  size_t last_line = 0;
  parser.Parse(
      body, options,
      [&](const PointView& p) {
        ++points;
        Check(!p.measurement.empty());
        Check(p.line >= 1 && p.line >= last_line);
        last_line = p.line;
        for (const auto& tag : p.tags) Check(!tag.key.empty() && !tag.value.empty());
        Check(!p.fields.empty());
        for (size_t i = 0; i < p.fields.size(); ++i) {
          const FieldView& f = p.fields[i];
          Check(!f.key.empty());
          for (size_t j = 0; j < i; ++j) Check(p.fields[j].key != f.key);
          if (f.type == gpulse::FieldType::kString) {
            size_t sum = 0;  // reads every byte: ASan checks the view
            for (char c : f.string_value) sum += static_cast<unsigned char>(c);
            Check(sum <= 255 * f.string_value.size());
          }
        }
      },
      &errors, &error_count);
  Check(errors.size() <= options.max_errors);
  Check(error_count >= errors.size());
  for (const LineError& e : errors) Check(e.line >= 1 && e.column >= 1 && !e.message.empty());

  std::vector<gpulse::Point> copies;
  gpulse::ingest::ParseToPoints(body, options, &copies, nullptr);
  Check(copies.size() == points);
  return 0;
}
