#include "engine/tier_dictionaries.h"

#include <algorithm>
#include <map>
#include <set>

#include "storage/crc32c.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"
#include "storage/zstd_frame.h"

namespace gpulse::engine {

namespace {

constexpr uint8_t kValueFormat = 1;

// What a dictionary is trained on and how large it is (docs/format/rollups.md,
// "Dictionaries": 1 KiB did best on the harness's sets, per field).
constexpr size_t kDictionaryBytes = 1024;
constexpr size_t kSampleBytesPerField = 256 << 10;
constexpr size_t kSampleBytesInAll = 64 << 20;
constexpr size_t kMinSampleBytes = 8 << 10;
constexpr size_t kMinSamples = 16;
constexpr size_t kMaxDictionaries = 256;
constexpr size_t kMaxBodyBytes = 64 << 20;  // as the block codecs' bound

// The blocks of one (tier, field) seen by a training pass.
struct Sampled {
  uint64_t stored = 0;          // bytes of every block, sampled or not
  uint64_t sampled_stored = 0;  // bytes of the sampled blocks as stored
  size_t sampled = 0;           // bytes of their bodies
  bool orphaned = false;        // a block needs a dictionary the store lacks
  std::vector<uint8_t> formats;
  std::vector<std::string> bodies;
};

// The bytes of the sampled blocks written again with `dict`.
uint64_t BytesWith(const Sampled& s, const storage::ZstdDictionary& dict) {
  uint64_t bytes = 0;
  std::string block;
  for (size_t i = 0; i < s.bodies.size(); ++i) {
    block.clear();
    storage::AppendBlock(s.formats[i], s.bodies[i], dict.level(), &dict, &block);
    bytes += block.size();
  }
  return bytes;
}

}  // namespace

std::string TierDictionaries::EncodeValue(std::string_view bytes) {
  std::string value(1, static_cast<char>(kValueFormat));
  storage::PutU32BE(&value, storage::crc32c::Mask(storage::crc32c::Value(bytes)));
  value.append(bytes);
  return value;
}

Status TierDictionaries::Load(leveldb::DB* store, int level, std::vector<std::string>* damaged) {
  dicts_.clear();
  std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(std::string(1, storage::kDictionaryPrefix)); it->Valid(); it->Next()) {
    const std::string_view key(it->key().data(), it->key().size());
    uint8_t tier = 0;
    uint32_t field_id = 0;
    if (!storage::ParseDictionaryKey(key, &tier, &field_id)) break;
    const std::string_view value(it->value().data(), it->value().size());
    std::unique_ptr<storage::ZstdDictionary> dict;
    Status s;
    if (value.size() < 5 || static_cast<uint8_t>(value[0]) != kValueFormat) {
      s = Status::Corruption("unknown dictionary format");
    } else if (storage::crc32c::Unmask(storage::GetU32BE(value.data() + 1)) !=
               storage::crc32c::Value(value.substr(5))) {
      s = Status::Corruption("dictionary checksum mismatch");
    } else {
      s = storage::ZstdDictionary::Load(std::string(value.substr(5)), level, &dict);
    }
    if (!s.ok()) damaged->push_back("dictionary " + storage::KeyHex(key) + ": " + s.message());
    dicts_[Key(tier, field_id)] = std::move(dict);
  }
  if (!it->status().ok()) return Status::IOError("read dictionaries: " + it->status().ToString());
  return Status::Ok();
}

Status TrainTierDictionaries(leveldb::DB* store, const TierDictionaries& have, int level,
                             std::vector<TrainedDictionary>* out) {
  std::map<std::pair<uint8_t, uint32_t>, Sampled> seen;
  // The dictionaries of `have` that some block still needs: only those
  // count toward the cap (the copy drops the others).
  std::set<std::pair<uint8_t, uint32_t>> in_use;
  size_t in_all = 0;
  std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
  std::string scratch;
  for (it->Seek(storage::ChunkKey(storage::kRawTier + 1, 0, 0, INT64_MIN)); it->Valid();
       it->Next()) {
    storage::ChunkKeyParts k;
    if (!storage::ParseChunkKey(std::string_view(it->key().data(), it->key().size()), &k)) break;
    if (have.Has(k.tier, k.field_id)) {
      // A lookup among at most 256 for each block; a node only for the first.
      if (!in_use.contains({k.tier, k.field_id})) in_use.emplace(k.tier, k.field_id);
      continue;
    }
    const std::string_view value(it->value().data(), it->value().size());
    Sampled& s = seen[{k.tier, k.field_id}];
    s.stored += value.size();
    // Written with a dictionary whose key is gone: a new one under the same
    // key would read such a block as something else.
    if (storage::IsDictionaryCompressedBlock(value)) s.orphaned = true;
    if (s.sampled >= kSampleBytesPerField || in_all >= kSampleBytesInAll) continue;
    std::string_view body;
    if (value.empty() || !storage::OpenBlock(value, static_cast<uint8_t>(value[0]), kMaxBodyBytes,
                                             nullptr, &scratch, &body)
                              .ok()) {
      continue;  // a damaged block (verify names it) teaches nothing
    }
    s.sampled_stored += value.size();
    s.sampled += body.size();
    in_all += body.size();
    s.formats.push_back(static_cast<uint8_t>(value[0]));
    s.bodies.emplace_back(body);
  }
  if (!it->status().ok()) return Status::IOError("read tier blocks: " + it->status().ToString());

  std::vector<std::pair<const std::pair<uint8_t, uint32_t>, Sampled>*> candidates;
  for (auto& entry : seen) {
    if (!entry.second.orphaned && entry.second.sampled >= kMinSampleBytes &&
        entry.second.bodies.size() >= kMinSamples) {
      candidates.push_back(&entry);
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const auto* a, const auto* b) { return a->second.stored > b->second.stored; });
  size_t room = in_use.size() < kMaxDictionaries ? kMaxDictionaries - in_use.size() : 0;
  for (auto* entry : candidates) {
    if (room == 0) break;
    Sampled& s = entry->second;
    std::string bytes;
    std::unique_ptr<storage::ZstdDictionary> dict;
    if (!storage::ZstdDictionary::Train(s.bodies, kDictionaryBytes, &bytes).ok() ||
        !storage::ZstdDictionary::Load(std::move(bytes), level, &dict).ok()) {
      continue;  // zstd found nothing to learn
    }
    // Kept only when it saves more than its own key and value.
    const uint64_t cost = dict->bytes().size() + 16;
    if (BytesWith(s, *dict) + cost >= s.sampled_stored) continue;
    out->push_back({entry->first.first, entry->first.second, std::move(dict)});
    --room;
    s.bodies = {};
  }
  return Status::Ok();
}

}  // namespace gpulse::engine
