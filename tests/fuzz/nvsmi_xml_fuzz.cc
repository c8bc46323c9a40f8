// libFuzzer target for ingest/nvsmi_xml (pugixml, with ingest/civil_time):
// any bytes must parse as an nvidia-smi -q -x snapshot, or be refused,
// without a crash, a sanitizer report, a hang, or a broken invariant. Built
// and run by .ci/fuzz (clang only: -fsanitize=fuzzer,address,undefined).
//
// The whole input is the body; the zone (America/New_York, whose skipped
// and repeated hours ToUnix handles), the tags and the default time are
// fixed. Invariants checked:
// - a refusal (not OK) has a message and appends no point and no error;
// - every error has a reason, and line and column both >= 1 or both 0 (a
//   position pugixml does not know);
// - every point is nvidia_smi, nvidia_smi_mig or nvidia_smi_process and has
//   at least one field; tag keys and values are non-empty and tag keys
//   distinct; field keys are non-empty and distinct; floats are finite;
//   within a parse a field keeps one type per measurement;
// - all points of a snapshot share its time, and the nvidia_smi points'
//   index tags strictly increase.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/nvsmi_xml.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using gpulse::fuzz::Check;

using gpulse::fuzz::Touch;

using gpulse::Point;
using gpulse::ingest::NvsmiXmlOptions;
using gpulse::ingest::RowError;
using gpulse::ingest::TimeZone;

NvsmiXmlOptions MakeOptions() {
  NvsmiXmlOptions options;
  auto zone = TimeZone::Find("America/New_York");
  Check(zone.ok());
  options.zone = zone.value();
  options.tags = {{"host", "fuzz-node"}, {"name", "overridden"}};
  options.default_time_ns = 1700000000123456789;
  return options;
}

// The number in the point's index tag; -1 without one.
long IndexTag(const Point& p) {
  for (const gpulse::Tag& t : p.tags) {
    if (t.key == "index") return std::strtol(t.value.c_str(), nullptr, 10);
  }
  return -1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const NvsmiXmlOptions kOptions = MakeOptions();
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  std::vector<Point> points;
  std::vector<RowError> errors;
  const gpulse::Status s = gpulse::ingest::ParseNvsmiXml(body, kOptions, &points, &errors);
  if (!s.ok()) {
    Check(!s.message().empty() && !s.ToString().empty());
    Check(points.empty() && errors.empty());
    return 0;
  }
  for (const RowError& e : errors) {
    Check((e.line >= 1 && e.column >= 1) || (e.line == 0 && e.column == 0));
    Check(!e.reason.empty() && Touch(e.reason) <= 255 * e.reason.size());
  }

  std::map<std::string, size_t> field_types;  // measurement '\n' key -> FieldValue index
  long last_index = -1;
  for (const Point& p : points) {
    Check(p.measurement == "nvidia_smi" || p.measurement == "nvidia_smi_mig" ||
          p.measurement == "nvidia_smi_process");
    Check(p.timestamp_ns == points.front().timestamp_ns);
    Check(!p.fields.empty());
    for (size_t i = 0; i < p.tags.size(); ++i) {
      Check(!p.tags[i].key.empty() && !p.tags[i].value.empty());
      Check(Touch(p.tags[i].value) <= 255 * p.tags[i].value.size());
      for (size_t j = 0; j < i; ++j) Check(p.tags[j].key != p.tags[i].key);
    }
    if (p.measurement == "nvidia_smi") {
      const long index = IndexTag(p);
      Check(index > last_index);
      last_index = index;
    }
    for (size_t i = 0; i < p.fields.size(); ++i) {
      const gpulse::Field& f = p.fields[i];
      Check(!f.key.empty() && Touch(f.key) <= 255 * f.key.size());
      for (size_t j = 0; j < i; ++j) Check(p.fields[j].key != f.key);
      if (const double* d = std::get_if<double>(&f.value)) Check(std::isfinite(*d));
      if (const std::string* str = std::get_if<std::string>(&f.value)) {
        Check(Touch(*str) <= 255 * str->size());
      }
      const auto [it, added] =
          field_types.try_emplace(p.measurement + '\n' + f.key, f.value.index());
      Check(added || it->second == f.value.index());
    }
  }
  return 0;
}
