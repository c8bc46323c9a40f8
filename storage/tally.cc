#include "storage/tally.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "storage/byte_reader.h"
#include "storage/coding.h"
#include "storage/key_layout.h"
#include "storage/zstd_frame.h"

namespace gpulse::storage {

namespace {

// Rollup blocks are formats 1, 3 and 4 (storage/rollup.cc).
constexpr uint8_t kTallyFormat = 2;
// Fast: a flush compresses every block it touches.
constexpr int kZstdLevel = 1;
// A row is at least six one-byte varints: bucket step, first and last
// offsets, count, other and the number of values.
constexpr uint64_t kMinRowBytes = 6;
// Dictionary indexes are below 2^32 (as TallyColumn::begin is).
constexpr uint64_t kMaxDictionary = uint64_t{1} << 32;

Status Corrupt(const std::string& what) { return Status::Corruption("tally block: " + what); }

Status CorruptRow(uint64_t row, const std::string& what) {
  return Corrupt("row " + std::to_string(row) + ": " + what);
}

// Sorts (value, count) pairs most frequent first (ties: the smaller value
// first), appends the first kTallyTop to out's values and adds the counts of
// the others to *other. The caller fixes out->begin.
template <typename S>
void PushTop(std::vector<std::pair<S, uint64_t>>* tallies, uint64_t* other, TallyColumn* out) {
  std::sort(tallies->begin(), tallies->end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  for (size_t k = 0; k < tallies->size(); ++k) {
    if (k < kTallyTop) {
      out->values.emplace_back(std::move((*tallies)[k].first));
      out->value_count.push_back((*tallies)[k].second);
    } else {
      *other += (*tallies)[k].second;
    }
  }
}

uint32_t ValuesEnd(const TallyColumn& c) { return static_cast<uint32_t>(c.values.size()); }

}  // namespace

void TallyColumn::Reset() { *this = TallyColumn(); }

bool IsTallyBlock(std::string_view data) {
  return !data.empty() && static_cast<uint8_t>(data[0]) == kTallyFormat;
}

void BuildTallies(const Column& raw, size_t begin, size_t end, int64_t width, TallyColumn* out) {
  const int64_t* t = raw.ts.data();
  std::vector<std::string_view> sorted;
  std::vector<std::pair<std::string_view, uint64_t>> tallies;
  size_t i = begin;
  while (i < end) {
    const int64_t b = WindowStart(t[i], width);
    const size_t j = EndOfWindowRun(t, i, end, width);
    sorted.clear();
    for (size_t k = i; k < j; ++k) sorted.push_back(raw.strings[k]);
    std::sort(sorted.begin(), sorted.end());
    tallies.clear();
    for (size_t k = 0; k < sorted.size(); ++k) {
      if (k > 0 && sorted[k] == sorted[k - 1]) {
        ++tallies.back().second;
      } else {
        tallies.emplace_back(sorted[k], 1);
      }
    }
    uint64_t other = 0;
    PushTop(&tallies, &other, out);
    out->bucket.push_back(b);
    out->first_ts.push_back(t[i]);
    out->last_ts.push_back(t[j - 1]);
    out->count.push_back(j - i);
    out->other.push_back(other);
    out->begin.push_back(ValuesEnd(*out));
    i = j;
  }
}

void CoarsenTallies(const TallyColumn& fine, int64_t width, TallyColumn* out) {
  for (size_t j = 0; j < fine.size(); ++j) {
    const int64_t b = WindowStart(fine.bucket[j], width);
    if (out->size() > 0 && out->bucket.back() == b) {
      MergeIntoLastTallyRow(fine, j, out);
    } else {
      AppendTallyRow(fine, j, out);
      out->bucket.back() = b;
    }
  }
}

void AppendTallyRow(const TallyColumn& from, size_t j, TallyColumn* into) {
  into->bucket.push_back(from.bucket[j]);
  into->first_ts.push_back(from.first_ts[j]);
  into->last_ts.push_back(from.last_ts[j]);
  into->count.push_back(from.count[j]);
  into->other.push_back(from.other[j]);
  for (size_t k = from.begin[j]; k < from.begin[j + 1]; ++k) {
    into->values.push_back(from.values[k]);
    into->value_count.push_back(from.value_count[k]);
  }
  into->begin.push_back(ValuesEnd(*into));
}

void MergeIntoLastTallyRow(const TallyColumn& from, size_t j, TallyColumn* into) {
  const size_t i = into->size() - 1;
  into->count[i] += from.count[j];
  into->other[i] += from.other[j];
  into->first_ts[i] = std::min(into->first_ts[i], from.first_ts[j]);
  into->last_ts[i] = std::max(into->last_ts[i], from.last_ts[j]);
  // The last row's values are the tail of the value vectors.
  const size_t at = into->begin[i];
  std::vector<std::pair<std::string, uint64_t>> tallies;
  for (size_t k = at; k < into->values.size(); ++k) {
    tallies.emplace_back(std::move(into->values[k]), into->value_count[k]);
  }
  for (size_t k = from.begin[j]; k < from.begin[j + 1]; ++k) {
    const auto same = std::find_if(tallies.begin(), tallies.end(),
                                   [&](const auto& t) { return t.first == from.values[k]; });
    if (same != tallies.end()) {
      same->second += from.value_count[k];
    } else {
      tallies.emplace_back(from.values[k], from.value_count[k]);
    }
  }
  into->values.resize(at);
  into->value_count.resize(at);
  PushTop(&tallies, &into->other[i], into);
  into->begin.back() = ValuesEnd(*into);
}

// format(u8 2) compression(u8: 0 none, 1 zstd) then the body, zstd-framed or
// not. Body: rows(varint), the dictionary (entries(varint), then each value
// as varint length + bytes), then per row: zigzag bucket delta, first and
// last offsets from the bucket, count, other, k, then k (index, count)
// pairs. docs/format/rollups.md ("Tally blocks").
void EncodeTallies(const TallyColumn& rows, const ZstdDictionary* dict, std::string* out) {
  const size_t n = rows.size();
  // Each distinct value once, in order of first use.
  std::unordered_map<std::string_view, uint64_t> index;
  std::vector<std::string_view> dictionary;
  std::vector<uint64_t> ids(rows.values.size());
  for (size_t k = 0; k < rows.values.size(); ++k) {
    const std::string_view v = rows.values[k];
    const auto [it, added] = index.try_emplace(v, dictionary.size());
    if (added) dictionary.push_back(v);
    ids[k] = it->second;
  }
  std::string body;
  PutVarint64(&body, n);
  PutVarint64(&body, dictionary.size());
  for (std::string_view v : dictionary) {
    PutVarint64(&body, v.size());
    body.append(v);
  }
  uint64_t prev = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto b = static_cast<uint64_t>(rows.bucket[i]);
    PutVarint64(&body, ZigZagEncode(b - prev));
    prev = b;
    PutVarint64(&body, static_cast<uint64_t>(rows.first_ts[i]) - b);
    PutVarint64(&body, static_cast<uint64_t>(rows.last_ts[i]) - b);
    PutVarint64(&body, rows.count[i]);
    PutVarint64(&body, rows.other[i]);
    PutVarint64(&body, rows.begin[i + 1] - rows.begin[i]);
    for (size_t k = rows.begin[i]; k < rows.begin[i + 1]; ++k) {
      PutVarint64(&body, ids[k]);
      PutVarint64(&body, rows.value_count[k]);
    }
  }

  AppendBlock(kTallyFormat, std::move(body), kZstdLevel, dict, out);
}

Status DecodeTallies(std::string_view data, const ZstdDictionary* dict, TallyColumn* out) {
  thread_local std::string inflated;
  if (const Status framed =
          OpenBlock(data, kTallyFormat, kMaxBlockBodyBytes, dict, &inflated, &data);
      !framed.ok()) {
    return Corrupt(framed.message());
  }
  ByteReader r(data);
  uint64_t rows = 0;
  uint64_t entries = 0;
  if (!r.ReadVarint64(&rows)) return Corrupt("truncated row count");
  if (!r.ReadVarint64(&entries)) return Corrupt("truncated dictionary size");
  // Every entry costs at least its length byte.
  if (entries > r.remaining() || entries > kMaxDictionary) {
    return Corrupt("dictionary size " + std::to_string(entries) + " past the end");
  }
  std::vector<std::string_view> dictionary(entries);
  for (std::string_view& v : dictionary) {
    uint64_t len = 0;
    if (!r.ReadVarint64(&len) || !r.ReadBytes(len, &v)) return Corrupt("truncated dictionary");
  }
  if (rows > r.remaining() / kMinRowBytes) {
    return Corrupt("row count " + std::to_string(rows) + " past the end");
  }
  out->Reset();
  out->bucket.reserve(rows);
  out->first_ts.reserve(rows);
  out->last_ts.reserve(rows);
  out->count.reserve(rows);
  out->other.reserve(rows);
  out->begin.reserve(rows + 1);
  uint64_t prev = 0;
  for (uint64_t i = 0; i < rows; ++i) {
    uint64_t step = 0, first = 0, last = 0, count = 0, other = 0, k = 0;
    if (!r.ReadVarint64(&step) || !r.ReadVarint64(&first) || !r.ReadVarint64(&last) ||
        !r.ReadVarint64(&count) || !r.ReadVarint64(&other) || !r.ReadVarint64(&k)) {
      return CorruptRow(i, "truncated");
    }
    prev += ZigZagDecode(step);
    const auto bucket = static_cast<int64_t>(prev);
    if (i > 0 && bucket <= out->bucket.back()) {
      return CorruptRow(i, "bucket not after the one before");
    }
    // Times stay in the int64 range: bucket + offset <= INT64_MAX.
    const uint64_t room = static_cast<uint64_t>(INT64_MAX) - prev;
    if (first > room || last > room) return CorruptRow(i, "time offset past the int64 range");
    if (first > last) return CorruptRow(i, "first time after the last");
    if (k > kTallyTop) {
      return CorruptRow(i, std::to_string(k) + " values, more than " + std::to_string(kTallyTop));
    }
    if (other > count) return CorruptRow(i, "other past the count");
    uint64_t sum = other;
    for (uint64_t v = 0; v < k; ++v) {
      uint64_t id = 0, c = 0;
      if (!r.ReadVarint64(&id) || !r.ReadVarint64(&c)) return CorruptRow(i, "truncated values");
      if (id >= dictionary.size()) {
        return CorruptRow(i, "dictionary index " + std::to_string(id) + " out of range");
      }
      if (c > count - sum) return CorruptRow(i, "value counts and other past the count");
      sum += c;
      out->values.emplace_back(dictionary[id]);
      out->value_count.push_back(c);
    }
    if (sum != count) return CorruptRow(i, "value counts and other short of the count");
    out->bucket.push_back(bucket);
    out->first_ts.push_back(static_cast<int64_t>(prev + first));
    out->last_ts.push_back(static_cast<int64_t>(prev + last));
    out->count.push_back(count);
    out->other.push_back(other);
    out->begin.push_back(ValuesEnd(*out));
  }
  if (r.remaining() != 0) return Corrupt("trailing bytes");
  return Status::Ok();
}

}  // namespace gpulse::storage
