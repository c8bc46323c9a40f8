#include "storage/key_layout.h"

namespace gpulse::storage {

namespace {
constexpr uint64_t kSignBit = 1ull << 63;
}  // namespace

void PutU32BE(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
}

void PutI64BE(std::string* out, int64_t v) {
  const uint64_t u = static_cast<uint64_t>(v) ^ kSignBit;
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<char>(u >> shift));
}

uint32_t GetU32BE(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

int64_t GetI64BE(const char* p) {
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<uint8_t>(p[i]);
  return static_cast<int64_t>(u ^ kSignBit);
}

std::string VersionKey() { return std::string(1, kVersionKey); }

std::string SeriesKey(uint32_t series_id) {
  std::string key(1, kSeriesPrefix);
  PutU32BE(&key, series_id);
  return key;
}

std::string DroppedSeriesKey(uint32_t series_id) {
  std::string key(1, kDroppedPrefix);
  PutU32BE(&key, series_id);
  return key;
}

std::string DictionaryKey(uint8_t tier, uint32_t field_id) {
  std::string key(1, kDictionaryPrefix);
  key.push_back(static_cast<char>(tier));
  PutU32BE(&key, field_id);
  return key;
}

bool ParseDictionaryKey(std::string_view key, uint8_t* tier, uint32_t* field_id) {
  if (key.size() != 6 || key[0] != kDictionaryPrefix) return false;
  *tier = static_cast<uint8_t>(key[1]);
  *field_id = GetU32BE(key.data() + 2);
  return true;
}

std::string DefinitionKey(std::string_view kind, std::string_view name) {
  std::string key(1, kDefinitionPrefix);
  key.append(kind);
  key.push_back('\0');
  key.append(name);
  return key;
}

std::string FieldKey(uint32_t field_id) {
  std::string key(1, kFieldPrefix);
  PutU32BE(&key, field_id);
  return key;
}

std::string IndexKey(std::string_view measurement, std::string_view tag_key,
                     std::string_view tag_value, uint32_t series_id) {
  std::string key(1, kIndexPrefix);
  key.append(measurement).push_back('\0');
  key.append(tag_key).push_back('\0');
  key.append(tag_value).push_back('\0');
  PutU32BE(&key, series_id);
  return key;
}

std::string KeyHex(std::string_view key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(key.size() * 2);
  for (const unsigned char c : key) out += {kHex[c >> 4], kHex[c & 15]};
  return out;
}

std::string ChunkKey(uint8_t tier, uint32_t series_id, uint32_t field_id, int64_t window_start,
                     uint16_t part) {
  std::string key(1, kChunkPrefix);
  key.push_back(static_cast<char>(tier));
  PutU32BE(&key, series_id);
  PutU32BE(&key, field_id);
  PutI64BE(&key, window_start);
  key.push_back(static_cast<char>(part >> 8));
  key.push_back(static_cast<char>(part));
  return key;
}

bool ParseChunkKey(std::string_view key, ChunkKeyParts* parts) {
  if (key.size() != 20 || key[0] != kChunkPrefix) return false;
  parts->tier = static_cast<uint8_t>(key[1]);
  parts->series_id = GetU32BE(key.data() + 2);
  parts->field_id = GetU32BE(key.data() + 6);
  parts->window_start = GetI64BE(key.data() + 10);
  parts->part =
      static_cast<uint16_t>((static_cast<uint8_t>(key[18]) << 8) | static_cast<uint8_t>(key[19]));
  return true;
}

bool ParseIndexKey(std::string_view key, IndexKeyParts* parts) {
  if (key.size() < 1 + 3 + 4 || key[0] != kIndexPrefix) return false;
  std::string_view rest = key.substr(1, key.size() - 1 - 4);
  std::string_view* outs[3] = {&parts->measurement, &parts->tag_key, &parts->tag_value};
  for (std::string_view* out : outs) {
    const size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) return false;
    *out = rest.substr(0, nul);
    rest.remove_prefix(nul + 1);
  }
  if (!rest.empty()) return false;
  parts->series_id = GetU32BE(key.data() + key.size() - 4);
  return true;
}

std::string CanonicalSeriesKey(std::string_view measurement,
                               const std::vector<std::pair<std::string, std::string>>& tags) {
  size_t size = measurement.size();
  for (const auto& [k, v] : tags) size += k.size() + v.size() + 2;
  std::string key;
  key.reserve(size);
  key.append(measurement);
  for (const auto& [k, v] : tags) AppendSeriesKeyTag(&key, k, v);
  return key;
}

bool ParseCanonicalSeriesKey(std::string_view key, std::string* measurement,
                             std::vector<std::pair<std::string, std::string>>* tags) {
  tags->clear();
  size_t nul = key.find('\0');
  *measurement = std::string(key.substr(0, nul));
  if (measurement->empty()) return false;
  while (nul != std::string_view::npos) {
    key.remove_prefix(nul + 1);
    const size_t mid = key.find('\0');
    if (mid == std::string_view::npos) return false;
    std::string tag_key(key.substr(0, mid));
    key.remove_prefix(mid + 1);
    nul = key.find('\0');
    tags->emplace_back(std::move(tag_key), std::string(key.substr(0, nul)));
  }
  return true;
}

std::string FieldValueBytes(uint8_t type, std::string_view measurement, std::string_view field) {
  std::string value(1, static_cast<char>(type));
  value.append(measurement).push_back('\0');
  value.append(field);
  return value;
}

bool ParseFieldValueBytes(std::string_view value, uint8_t* type, std::string* measurement,
                          std::string* field) {
  if (value.size() < 3) return false;
  *type = static_cast<uint8_t>(value[0]);
  const size_t nul = value.find('\0', 1);
  if (nul == std::string_view::npos) return false;
  *measurement = std::string(value.substr(1, nul - 1));
  *field = std::string(value.substr(nul + 1));
  return !measurement->empty() && !field->empty();
}

int64_t WindowStart(int64_t ts, int64_t window_ns) {
  int64_t q = ts / window_ns;
  if (ts % window_ns != 0 && ts < 0) --q;
  // The window below INT64_MIN would start before the int64 range: clamp.
  const __int128 start = static_cast<__int128>(q) * window_ns;
  return start < INT64_MIN ? INT64_MIN : static_cast<int64_t>(start);
}

size_t EndOfWindowRun(const int64_t* ts, size_t begin, size_t end, int64_t window_ns) {
  const int64_t w = WindowStart(ts[begin], window_ns);
  if (w > INT64_MAX - window_ns) return end;
  const int64_t next = NextWindowStart(w, window_ns);
  size_t j = begin + 1;
  while (j < end && ts[j] < next) ++j;
  return j;
}

int64_t NextWindowStart(int64_t window_start, int64_t window_ns) {
  if (window_start > INT64_MAX - window_ns) return INT64_MAX;
  // The clamped first window ends where the next aligned one starts.
  return WindowStart(window_start + window_ns, window_ns);
}

}  // namespace gpulse::storage
