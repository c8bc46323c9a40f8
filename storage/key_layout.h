// Key layout: how gpulse names things in LevelDB. Every key starts with a
// one-byte kind; integers are big-endian (signed ones with the sign bit
// flipped) so that LevelDB's bytewise order is numeric order and a time range
// of one series and field is one contiguous scan. docs/format/key-layout.md
// draws each key.
//
//   'V'                                          -> format version (u32 BE)
//   'S' series_id(u32)                           -> canonical series key
//   'F' field_id(u32)                            -> type(u8) measurement \0 field name
//   'I' measurement \0 tag key \0 tag value \0 series_id(u32)   -> (empty)
//   'C' tier(u8) series_id(u32) field_id(u32) window_start(i64) part(u16) -> chunk
//       (tier 0: raw points; tiers 1-3: rollup blocks, storage/rollup.h, part 0)
//   'D' kind \0 name                            -> definition text (an alert rule...)
//   'Z' tier(u8) field_id(u32)                   -> the tier's zstd dictionary for the
//       field's blocks (storage/zstd_dictionary.h)
//
// A canonical series key is the measurement followed by each tag key and
// value, in tag-key order, each preceded by a NUL byte (names may not hold
// NUL, so the encoding is unambiguous and sorts like the tag set).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpulse::storage {

inline constexpr char kVersionKey = 'V';
inline constexpr char kSeriesPrefix = 'S';
inline constexpr char kFieldPrefix = 'F';
inline constexpr char kIndexPrefix = 'I';
inline constexpr char kChunkPrefix = 'C';
inline constexpr char kTierSetKey = 'T';  // -> u8: bit t set when kTiers[t] is kept
inline constexpr char kDefinitionPrefix = 'D';
inline constexpr char kDroppedPrefix = 'X';  // | series id: the series was dropped
inline constexpr char kDictionaryPrefix = 'Z';
// 2: chunk keys carry a part number; 3: tiers (rollup blocks under tier ids
// 1..3), built from raw when a version 2 store is opened; 4: dropped-series
// keys (a version 3 store has none); 5: tallies, the tier rows of string
// fields (built from raw when a version 3 or 4 store is opened); 6: rollup
// blocks of format 3; 7: rollup blocks of format 4 and tier frames without
// the zstd magic (docs/format/rollups.md; both older forms still read); 8:
// tier blocks compressed with a dictionary of their tier and field ('Z'
// keys, compression 3) and chunks of version 2 (docs/format/chunks.md).
inline constexpr uint32_t kFormatVersion = 8;
inline constexpr uint8_t kRawTier = 0;

void PutU32BE(std::string* out, uint32_t v);
void PutI64BE(std::string* out, int64_t v);  // sign bit flipped: orders like int64
uint32_t GetU32BE(const char* p);
int64_t GetI64BE(const char* p);

std::string VersionKey();
std::string SeriesKey(uint32_t series_id);
std::string FieldKey(uint32_t field_id);
std::string DroppedSeriesKey(uint32_t series_id);
// 'Z' tier field_id: the dictionary of a tier's blocks of one field.
std::string DictionaryKey(uint8_t tier, uint32_t field_id);
// The tier and field of a dictionary key; false when `key` is not one.
bool ParseDictionaryKey(std::string_view key, uint8_t* tier, uint32_t* field_id);
// 'D' kind \0 name; DefinitionKey(kind, "") is the prefix of every one of the kind.
std::string DefinitionKey(std::string_view kind, std::string_view name);
std::string IndexKey(std::string_view measurement, std::string_view tag_key,
                     std::string_view tag_value, uint32_t series_id);
// A window's chunk may be stored in several parts, one per flush that added
// points to it; a higher part is newer. Parts are merged by compaction.
inline constexpr uint16_t kMaxChunkPart = UINT16_MAX;
// A store key as lowercase hex, for logs and reports (`ldb` takes it so).
std::string KeyHex(std::string_view key);

std::string ChunkKey(uint8_t tier, uint32_t series_id, uint32_t field_id, int64_t window_start,
                     uint16_t part = 0);

// The parts of a chunk key; false when `key` is not one.
struct ChunkKeyParts {
  uint8_t tier = 0;
  uint32_t series_id = 0;
  uint32_t field_id = 0;
  int64_t window_start = 0;
  uint16_t part = 0;

  // Whether `other` names the same tier, series, field and window.
  bool SameWindow(const ChunkKeyParts& other) const {
    return tier == other.tier && series_id == other.series_id && field_id == other.field_id &&
           window_start == other.window_start;
  }
};
bool ParseChunkKey(std::string_view key, ChunkKeyParts* parts);

// The parts of an index key; false when `key` is not one.
struct IndexKeyParts {
  std::string_view measurement;
  std::string_view tag_key;
  std::string_view tag_value;
  uint32_t series_id = 0;
};
bool ParseIndexKey(std::string_view key, IndexKeyParts* parts);

// Appends one tag to a canonical series key that holds its measurement and
// the tags before it (tags go in key order). The one place that knows the
// layout; writers building keys from their own tag types call it.
inline void AppendSeriesKeyTag(std::string* key, std::string_view tag_key,
                               std::string_view tag_value) {
  key->push_back('\0');
  key->append(tag_key);
  key->push_back('\0');
  key->append(tag_value);
}

// Canonical series key. `tags` must be sorted by key.
std::string CanonicalSeriesKey(std::string_view measurement,
                               const std::vector<std::pair<std::string, std::string>>& tags);
// Splits a canonical series key; false when it is malformed.
bool ParseCanonicalSeriesKey(std::string_view key, std::string* measurement,
                             std::vector<std::pair<std::string, std::string>>* tags);

// Field catalog value: type byte, then measurement \0 field name.
std::string FieldValueBytes(uint8_t type, std::string_view measurement, std::string_view field);
bool ParseFieldValueBytes(std::string_view value, uint8_t* type, std::string* measurement,
                          std::string* field);

// The start of the window of `window_ns` that holds `ts` (floor division, so
// negative timestamps land in the window below zero).
int64_t WindowStart(int64_t ts, int64_t window_ns);
// The start of the window after the one starting at `window_start` (which
// may be the clamped INT64_MIN one); INT64_MAX when past the int64 range.
int64_t NextWindowStart(int64_t window_start, int64_t window_ns);
// The end of the run of ascending ts[begin..end) that lies in the window of
// ts[begin] (the last window, whose end is past INT64_MAX, holds the rest).
size_t EndOfWindowRun(const int64_t* ts, size_t begin, size_t end, int64_t window_ns);

}  // namespace gpulse::storage
