// ZstdDictionary: a zstd dictionary trained on tier block bodies of one
// (tier, field), so that blocks of a few hundred bytes compress like one
// long stream: the structure they share (headers, section lengths, the
// bucket grid, a field's usual values and sketch bins) is in the dictionary,
// not repeated in every block (docs/format/rollups.md, "Dictionaries").
//
// storage/zstd_frame.h compresses and opens blocks with one.
//
// Thread safety: immutable after construction; any number of threads may
// use one at once.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "storage/status.h"

struct ZSTD_CDict_s;
struct ZSTD_DDict_s;

namespace gpulse::storage {

class ZstdDictionary {
 public:
  // A dictionary of `bytes` (zstd's dictionary format, as Train writes),
  // compressing at `level`. Corruption when `bytes` is not one.
  static Status Load(std::string bytes, int level, std::unique_ptr<ZstdDictionary>* out);

  // Trains a dictionary of at most `capacity` bytes on `samples`. Invalid
  // argument when zstd finds too little in them to build one.
  static Status Train(std::span<const std::string> samples, size_t capacity, std::string* bytes);

  ~ZstdDictionary();
  ZstdDictionary(const ZstdDictionary&) = delete;
  ZstdDictionary& operator=(const ZstdDictionary&) = delete;

  const std::string& bytes() const { return bytes_; }
  int level() const { return level_; }

  // zstd's digested forms, for storage/zstd_frame.cc.
  const ZSTD_CDict_s* compress_dict() const { return compress_; }
  const ZSTD_DDict_s* decompress_dict() const { return decompress_; }

 private:
  ZstdDictionary(std::string bytes, int level);

  std::string bytes_;
  int level_;
  ZSTD_CDict_s* compress_ = nullptr;
  ZSTD_DDict_s* decompress_ = nullptr;
};

}  // namespace gpulse::storage
