#include "storage/string_codec.h"

#include <string_view>
#include <unordered_map>

#include "storage/coding.h"

namespace gpulse::storage {

void EncodeStrings(std::span<const std::string> values, std::string* out) {
  std::unordered_map<std::string_view, uint64_t> index;
  std::vector<std::string_view> dictionary;
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // (id, length)
  for (const std::string& s : values) {
    auto [it, added] = index.emplace(s, dictionary.size());
    if (added) dictionary.push_back(s);
    if (!runs.empty() && runs.back().first == it->second) {
      ++runs.back().second;
    } else {
      runs.emplace_back(it->second, 1);
    }
  }
  PutVarint64(out, dictionary.size());
  for (std::string_view s : dictionary) {
    PutVarint64(out, s.size());
    out->append(s);
  }
  PutVarint64(out, runs.size());
  for (auto [id, length] : runs) {
    PutVarint64(out, id);
    PutVarint64(out, length);
  }
}

Status DecodeStrings(uint32_t count, ByteReader* in, std::vector<std::string>* values) {
  auto corrupt = [](const char* what) {
    return Status::Corruption(std::string("strings: ") + what);
  };
  uint64_t dict_size;
  if (!in->ReadVarint64(&dict_size)) return corrupt("truncated dictionary size");
  // Every entry takes at least one byte, which bounds the dictionary by the
  // input before anything is allocated.
  if (dict_size > in->remaining() || dict_size > count) return corrupt("dictionary too large");
  std::vector<std::string_view> dictionary(dict_size);
  for (auto& entry : dictionary) {
    uint64_t len;
    if (!in->ReadVarint64(&len) || !in->ReadBytes(len, &entry)) return corrupt("truncated entry");
  }
  uint64_t run_count;
  if (!in->ReadVarint64(&run_count)) return corrupt("truncated run count");
  if (run_count > count || run_count > in->remaining() / 2) return corrupt("too many runs");
  values->clear();
  uint64_t total_bytes = 0;
  for (uint64_t r = 0; r < run_count; ++r) {
    uint64_t id, length;
    if (!in->ReadVarint64(&id) || !in->ReadVarint64(&length)) return corrupt("truncated run");
    if (id >= dictionary.size()) return corrupt("id out of range");
    if (length == 0 || length > count - values->size()) return corrupt("bad run length");
    total_bytes += length * dictionary[id].size();
    if (total_bytes > kMaxChunkStringBytes) return corrupt("strings exceed the chunk limit");
    values->insert(values->end(), length, std::string(dictionary[id]));
  }
  if (values->size() != count) return corrupt("runs do not cover the points");
  return Status::Ok();
}

}  // namespace gpulse::storage
