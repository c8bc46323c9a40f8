// libFuzzer target for Prometheus remote write bodies (ingest/remote_write.h):
// any bytes, snappy-compressed here so that the fuzzer explores the protobuf
// inside, must decode or fail without a crash or a sanitizer report. Built and
// run by .ci/fuzz (clang only: -fsanitize=fuzzer,address,undefined).
//
// Invariants checked:
// - a failed decode leaves no points;
// - every point's tags are sorted by key and non-empty, every field has a
//   name, and the stats count no more fields than samples.
#include <snappy.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "ingest/remote_write.h"
#include "tests/fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpulse::fuzz::Check;
  std::string body;
  snappy::Compress(reinterpret_cast<const char*>(data), size, &body);
  gpulse::ingest::RemoteWriteBatch batch;
  const gpulse::Status s = batch.Parse(body, 1 << 20, gpulse::ingest::PromMappingOptions());
  if (!s.ok()) {
    Check(batch.points().empty());
    return 0;
  }
  for (const gpulse::PointRef& p : batch.points()) {
    for (size_t i = 0; i < p.tags.size(); ++i) {
      Check(!p.tags[i].value.empty());
      if (i > 0) Check(p.tags[i - 1].key <= p.tags[i].key);
    }
    for (const gpulse::FieldRef& f : p.fields) Check(!f.key.empty());
  }
  Check(batch.stats().mapping.fields <= batch.stats().samples);
  return 0;
}
