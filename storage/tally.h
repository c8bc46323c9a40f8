// Tallies: the tier rows of string fields (attribution: job, team, user,
// workload_class). For every bucket of a tier a row keeps how many samples
// the field had, how many each of its most frequent values had (at most
// kTallyTop values, the others summed into `other`), and the times of the
// bucket's first and last samples. At GPU-minute grain a sample is a
// GPU-minute, so "GPU-hours per team per day" is a sum of tally counts.
//
// Counts of the kept values are exact while a bucket has at most kTallyTop
// distinct values (the common case: a GPU runs a few jobs a day). Merging
// rows (a coarser tier, new points added to a stored row) adds the counts
// of equal values and keeps the top kTallyTop again, so a value folded into
// `other` in a finer row stays there.
//
// Stored like rollup blocks (storage/rollup.h): one block of up to
// kRollupBlockRows rows per (tier, series, field, block) under the chunk key
// with the tier's id; the first byte (format 2) tells a tally block from a
// rollup block. Byte format: docs/format/rollups.md ("Tally blocks").
//
// Thread safety: plain value types and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/column.h"
#include "storage/status.h"

namespace gpulse::storage {

class ZstdDictionary;

inline constexpr size_t kTallyTop = 8;

// Rows by bucket ascending. Row i's values are values[begin[i] ..
// begin[i + 1]), most frequent first (ties: the smaller string first), with
// their counts in value_count.
struct TallyColumn {
  std::vector<int64_t> bucket;
  std::vector<int64_t> first_ts;   // the bucket's first sample's time
  std::vector<int64_t> last_ts;    // ... and its last
  std::vector<uint64_t> count;     // samples in the bucket
  std::vector<uint64_t> other;     // samples of values not kept
  std::vector<uint32_t> begin{0};  // size() + 1 entries
  std::vector<std::string> values;
  std::vector<uint64_t> value_count;

  size_t size() const { return bucket.size(); }
  void Reset();
};

// The first byte of a tier block: a tally block or a rollup block.
bool IsTallyBlock(std::string_view data);

// Appends rows for points [begin, end) of `raw` (a string column, time
// ascending, no duplicate times) in buckets of `width`.
void BuildTallies(const Column& raw, size_t begin, size_t end, int64_t width, TallyColumn* out);
// Appends the rows of `fine` merged into buckets of `width` (a multiple of
// fine's width).
void CoarsenTallies(const TallyColumn& fine, int64_t width, TallyColumn* out);
// Appends row j of `from` to `into`.
void AppendTallyRow(const TallyColumn& from, size_t j, TallyColumn* into);
// Folds row j of `from` into the last row of `into` (the same bucket).
void MergeIntoLastTallyRow(const TallyColumn& from, size_t j, TallyColumn* into);

// Appends the block of `rows`, compressed with `dict` (the dictionary of the
// block's tier and field) when one is given.
void EncodeTallies(const TallyColumn& rows, const ZstdDictionary* dict, std::string* out);
inline void EncodeTallies(const TallyColumn& rows, std::string* out) {
  EncodeTallies(rows, nullptr, out);
}
// Corruption when `data` is not a valid tally block. `dict`: the dictionary
// of the block's tier and field, or null when the store has none.
Status DecodeTallies(std::string_view data, const ZstdDictionary* dict, TallyColumn* out);
inline Status DecodeTallies(std::string_view data, TallyColumn* out) {
  return DecodeTallies(data, nullptr, out);
}

}  // namespace gpulse::storage
