// TierDictionaries: the store's zstd dictionaries for tier blocks, at most
// one per (tier, field), under 'Z' keys (docs/format/rollups.md,
// "Dictionaries"). A block compressed with one (compression 3) names it only
// by its own key's tier and field, so a (tier, field)'s dictionary never
// changes once written: a store copy (compaction) keeps the ones it finds
// and trains one only where there is none (TrainTierDictionaries).
//
// Thread safety: Load and Add are called with the store closed to other
// callers (DbImpl's open_mu_ held exclusively, or before the Db is shared);
// Find may then be called from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "leveldb/db.h"
#include "storage/status.h"
#include "storage/zstd_dictionary.h"

namespace gpulse::engine {

class TierDictionaries {
 public:
  // The value of a dictionary key: format(u8 1) crc32c(u32 BE, masked) of
  // the dictionary's bytes, then the bytes.
  static std::string EncodeValue(std::string_view bytes);

  // Replaces the set with the dictionaries of `store`, compressing at
  // `level`. A key whose value is not a dictionary (a bad checksum, not
  // zstd's format) is left out, its (tier, field) marked so that nothing
  // trains another in its place, and named in *damaged. IOError when the
  // store cannot be read.
  Status Load(leveldb::DB* store, int level, std::vector<std::string>* damaged);

  // The dictionary of the tier with key id `tier` for `field_id`, or null.
  const storage::ZstdDictionary* Find(uint8_t tier, uint32_t field_id) const {
    const auto it = dicts_.find(Key(tier, field_id));
    return it == dicts_.end() ? nullptr : it->second.get();
  }
  // Whether the store has a dictionary key for the (tier, field), readable
  // or not.
  bool Has(uint8_t tier, uint32_t field_id) const { return dicts_.contains(Key(tier, field_id)); }
  void Add(uint8_t tier, uint32_t field_id, std::unique_ptr<storage::ZstdDictionary> dict) {
    dicts_[Key(tier, field_id)] = std::move(dict);
  }
  // Forgets the (tier, field)'s dictionary (its key deleted).
  void Erase(uint8_t tier, uint32_t field_id) { dicts_.erase(Key(tier, field_id)); }
  // The (tier, field)s whose dictionary key Load could not read.
  std::vector<std::pair<uint8_t, uint32_t>> Unreadable() const {
    std::vector<std::pair<uint8_t, uint32_t>> out;
    for (const auto& [key, dict] : dicts_) {
      if (!dict) out.emplace_back(static_cast<uint8_t>(key >> 32), static_cast<uint32_t>(key));
    }
    return out;
  }
  size_t size() const { return dicts_.size(); }

  // Calls fn(tier, field_id, dict) for each readable dictionary.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [key, dict] : dicts_) {
      if (dict) fn(static_cast<uint8_t>(key >> 32), static_cast<uint32_t>(key), *dict);
    }
  }

 private:
  static uint64_t Key(uint8_t tier, uint32_t field_id) {
    return static_cast<uint64_t>(tier) << 32 | field_id;
  }

  // Null for a damaged key.
  std::unordered_map<uint64_t, std::unique_ptr<storage::ZstdDictionary>> dicts_;
};

// A dictionary a store copy trained for one (tier, field).
struct TrainedDictionary {
  uint8_t tier = 0;  // key id
  uint32_t field_id = 0;
  std::unique_ptr<storage::ZstdDictionary> dict;
};

// Trains a dictionary, compressing at `level`, for each (tier, field) of
// `store` that has no dictionary key (`have`) and enough tier blocks to train
// one that pays for itself on them, its own bytes included: at least 8 KiB
// of block bodies, sampled from the first 256 KiB in key order (64 MiB in
// all), and at most 256 dictionaries in a store (those of `have` that no
// block needs, which a store copy drops, not counted), the fields with the
// most block bytes first. IOError when the store cannot be read.
Status TrainTierDictionaries(leveldb::DB* store, const TierDictionaries& have, int level,
                             std::vector<TrainedDictionary>* out);

}  // namespace gpulse::engine
