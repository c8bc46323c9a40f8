// Rollups: the downsampling tiers. For every numeric field of every series,
// a tier keeps one row per bucket of its width (5m, 1h, 1d, aligned to the
// Unix epoch, UTC): count, sum, min, max, first and last (with their times)
// and a quantile sketch (storage/sketch.h). Count, sum, min, max, first and
// last of any set of whole buckets follow exactly from the rows; quantiles
// follow from the merged sketches within their relative error.
//
// Rows are stored in blocks of kRollupBlockRows buckets, one LevelDB value
// per (tier, series, field, block) under the chunk key with the tier's id
// (storage/key_layout.h). A block is columnar: each part (counts, sums,
// extremes, first/last, sketches) is its own section, so a query asking for
// max decodes only the extremes. The byte format is docs/format/rollups.md.
//
// Thread safety: plain value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/column.h"
#include "storage/sketch.h"
#include "storage/status.h"

namespace gpulse::storage {

class ZstdDictionary;

struct Tier {
  uint8_t id;  // the tier byte of its chunk keys; raw is 0
  const char* name;
  int64_t width_ns;
};

// Finest first; each width is a multiple of the one before.
inline constexpr Tier kTiers[] = {
    {1, "5m", 300'000'000'000},
    {2, "1h", 3'600'000'000'000},
    {3, "1d", 86'400'000'000'000},
};
inline constexpr size_t kTierCount = sizeof(kTiers) / sizeof(kTiers[0]);
inline constexpr int64_t kRollupBlockRows = 288;
inline constexpr int64_t BlockSpan(const Tier& t) { return t.width_ns * kRollupBlockRows; }

// Quantile sketches are kept in the 1d tier only: they are most of a row's
// bytes, a 1d sketch answers day buckets and longer within 1%, and quantiles
// of finer buckets are read from the raw points, exactly. Rows of the other
// tiers are stored without them (docs/format/rollups.md).
inline constexpr size_t kSketchTier = 2;  // kTiers[2], 1d
static_assert(kTiers[kSketchTier].width_ns == 86'400'000'000'000);
inline constexpr bool KeepsSketches(size_t tier) { return tier == kSketchTier; }

// Whether a field type has rollups (the numeric ones).
bool HasRollups(FieldType type);

// The rows of one series-field in one tier, by bucket ascending.
struct RollupColumn {
  FieldType type = FieldType::kFloat;
  std::vector<int64_t> bucket;  // bucket start
  std::vector<uint64_t> count;
  std::vector<double> dsum;  // the sum as a double (means)
  Column sum;                // ts = bucket; typed: integer sums wrap like the integers
  Column min, max;           // ts = bucket
  Column first, last;        // ts = the point's own time
  std::vector<Sketch> sketch;

  size_t size() const { return bucket.size(); }
  // Empties it, keeping `type`.
  void Reset(FieldType t);
};

// What a reader wants decoded. Buckets and counts always are.
enum RollupParts : uint32_t {
  kRollupSum = 1,
  kRollupMinMax = 2,
  kRollupFirstLast = 4,
  kRollupSketch = 8,
  kRollupAll = 15,
};

// Appends rows for points [begin, end) of `raw` (one series-field, time
// ascending, no duplicate times) in buckets of `width`.
void BuildRollups(const Column& raw, size_t begin, size_t end, int64_t width, RollupColumn* out);
// Appends the rows of `fine` merged into buckets of `width` (a multiple of
// fine's width).
void CoarsenRollups(const RollupColumn& fine, int64_t width, RollupColumn* out);
// Appends row j of `from` to `into`.
void AppendRollupRow(const RollupColumn& from, size_t j, RollupColumn* into);
// Folds row j of `from` into the last row of `into` (the same bucket).
void MergeIntoLastRow(const RollupColumn& from, size_t j, RollupColumn* into);

// Whether `data` is a rollup block of an earlier format (1 or 3,
// docs/format/rollups.md), which compaction writes again in the current one.
bool IsOlderFormatRollupBlock(std::string_view data);
// Whether `data` is a rollup block of the format flushes write (4).
bool IsCurrentFormatRollupBlock(std::string_view data);

// Appends the block of `rows`, with their sketches when `sketches` (the
// sketch tier's rows) and without otherwise; compressed with `dict`, the
// dictionary of the block's tier and field, when one is given
// (storage/zstd_frame.h).
void EncodeRollups(const RollupColumn& rows, bool sketches, const ZstdDictionary* dict,
                   std::string* out);
inline void EncodeRollups(const RollupColumn& rows, bool sketches, std::string* out) {
  EncodeRollups(rows, sketches, nullptr, out);
}
// Decodes the parts named by `parts` (others are left empty); Corruption when
// `data` is not a valid block. Sketches asked of a block that keeps none
// decode as empty ones. `dict`: the dictionary of the block's tier and
// field, or null when the store has none.
Status DecodeRollups(std::string_view data, uint32_t parts, const ZstdDictionary* dict,
                     RollupColumn* out);
inline Status DecodeRollups(std::string_view data, uint32_t parts, RollupColumn* out) {
  return DecodeRollups(data, parts, nullptr, out);
}

}  // namespace gpulse::storage
