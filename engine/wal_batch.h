// WalBatch: the engine's WAL record, one per Write call: the validated points
// of the batch, each with its canonical series key (so replay needs no
// catalog), timestamp and fields. Byte format: docs/format/wal.md
// ("Record payload").
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::engine {

// A point as the head applies it: the series by canonical key, and the
// fields of the caller's point (or of a DecodedBatch), not copied.
struct PointView {
  std::string_view series_key;
  int64_t timestamp_ns = 0;
  std::span<const FieldRef> fields;
};

// A decoded record: the points, whose field spans point into `fields`, whose
// names and string values point into the record.
struct DecodedBatch {
  std::vector<PointView> points;
  std::vector<FieldRef> fields;
};

inline constexpr uint8_t kWalBatchV1 = 1;

// Appends the record for `points` to *out.
void EncodeWalBatch(const std::vector<PointView>& points, std::string* out);

// Decodes a record. The series keys in *batch point into `record`, which
// must outlive them. Returns Corruption naming the point and byte offset at
// fault.
Status DecodeWalBatch(std::string_view record, DecodedBatch* batch);

}  // namespace gpulse::engine
