// libFuzzer target for ingest/prom_text and ingest/prom_mapping: any bytes
// must parse as Prometheus text exposition, and the samples must map to
// points, without a crash, a sanitizer report, or a broken invariant. Built
// and run by .ci/fuzz (clang only: -fsanitize=fuzzer,address,undefined).
//
// The whole input is the body. Invariants checked:
// - every error has line >= 1, column >= 1 and a message, and errors come in
//   line order;
// - every sample has a non-empty name, unique non-empty label names, a type,
//   and a line >= 1; label values are read byte by byte (ASan checks the
//   views into the body and the scratch);
// - MapSamples (fixed scrape time) gives points that each have a non-empty
//   measurement and at least one field, with non-empty tag keys and values;
//   its stats count the points it appended, and no more fields than samples.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ingest/prom_mapping.h"
#include "ingest/prom_text.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using gpulse::fuzz::Check;

using gpulse::fuzz::Touch;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpulse::ingest::PromError;
  using gpulse::ingest::PromSample;
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  gpulse::ingest::PromTextScratch scratch;
  std::vector<PromSample> samples;
  std::vector<PromError> errors;
  gpulse::ingest::ParsePromText(body, &scratch, &samples, &errors);

  size_t last_line = 0;
  for (const PromError& e : errors) {
    Check(e.line >= 1 && e.column >= 1 && !e.message.empty());
    Check(e.line >= last_line);
    last_line = e.line;
    Check(!e.ToString().empty());
  }
  last_line = 0;
  for (const PromSample& s : samples) {
    Check(!s.name.empty());
    Check(s.line >= 1 && s.line >= last_line);
    last_line = s.line;
    Check(!s.type.empty());
    Check(Touch(s.name) <= 255 * s.name.size());
    for (size_t i = 0; i < s.labels.size(); ++i) {
      const auto& [name, value] = s.labels[i];
      Check(!name.empty());
      Check(Touch(value) <= 255 * value.size());
      for (size_t j = 0; j < i; ++j) Check(s.labels[j].first != name);
    }
  }

  gpulse::ingest::PromMappingOptions options;
  options.measurement = "dcgm";
  options.extra_tags.push_back({"cluster", "use1-a"});
  std::vector<gpulse::Point> points;
  gpulse::ingest::PromMappingStats stats;
  gpulse::ingest::MapSamples(samples, 1700000000123456789, options, &points, &stats);
  Check(stats.points == points.size());
  Check(stats.fields <= samples.size());
  for (const gpulse::Point& p : points) {
    Check(!p.measurement.empty());
    Check(!p.fields.empty());
    for (const auto& tag : p.tags) Check(!tag.key.empty() && !tag.value.empty());
    for (const auto& field : p.fields) Check(!field.key.empty());
  }
  return 0;
}
