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
using PointView = LoggedPoint;

// A decoded record: the points, whose field spans point into `fields`, whose
// names and string values point into the record.
struct DecodedBatch {
  std::vector<PointView> points;
  std::vector<FieldRef> fields;
};

inline constexpr uint8_t kWalBatchV1 = 1;
// A delete: the points of some series in a time range, and for DROP SERIES
// the series themselves. Logged like a write, so replay repeats it in order
// with the writes around it.
inline constexpr uint8_t kWalDeleteV1 = 2;

struct WalDelete {
  std::vector<std::string_view> series_keys;  // canonical keys, into the record
  int64_t first_ns = 0;                       // [first_ns, last_ns], both included
  int64_t last_ns = 0;
  bool drop_series = false;
};

// The record kind (kWalBatchV1 or kWalDeleteV1), 0 for an empty record.
inline uint8_t WalRecordKind(std::string_view record) {
  return record.empty() ? 0 : static_cast<uint8_t>(record[0]);
}

// Appends the record for `points` to *out.
void EncodeWalBatch(const std::vector<PointView>& points, std::string* out);

// Decodes a record. The series keys in *batch point into `record`, which
// must outlive them. Returns Corruption naming the point and byte offset at
// fault.
Status DecodeWalBatch(std::string_view record, DecodedBatch* batch);

// Appends the record of a delete to *out.
void EncodeWalDelete(std::span<const std::string> series_keys, int64_t first_ns, int64_t last_ns,
                     bool drop_series, std::string* out);
// Decodes a delete record; the keys point into `record`. Corruption when it
// is malformed.
Status DecodeWalDelete(std::string_view record, WalDelete* out);

}  // namespace gpulse::engine
