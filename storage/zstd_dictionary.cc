#include "storage/zstd_dictionary.h"

#include <zdict.h>
#include <zstd.h>

#include <vector>

namespace gpulse::storage {

Status ZstdDictionary::Load(std::string bytes, int level, std::unique_ptr<ZstdDictionary>* out) {
  // zstd's own format (magic, id, entropy tables, content): a raw-content
  // dictionary would load too, but nothing here writes one.
  if (ZSTD_getDictID_fromDict(bytes.data(), bytes.size()) == 0) {
    return Status::Corruption("not a zstd dictionary");
  }
  std::unique_ptr<ZstdDictionary> dict(new ZstdDictionary(std::move(bytes), level));
  if (dict->compress_ == nullptr || dict->decompress_ == nullptr) {
    return Status::Corruption("zstd refuses the dictionary");
  }
  *out = std::move(dict);
  return Status::Ok();
}

Status ZstdDictionary::Train(std::span<const std::string> samples, size_t capacity,
                             std::string* bytes) {
  std::string joined;
  std::vector<size_t> sizes;
  sizes.reserve(samples.size());
  for (const std::string& s : samples) {
    joined.append(s);
    sizes.push_back(s.size());
  }
  bytes->resize(capacity);
  const size_t n = ZDICT_trainFromBuffer(bytes->data(), capacity, joined.data(), sizes.data(),
                                         static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(n)) {
    bytes->clear();
    return Status::InvalidArgument(std::string("zstd trains no dictionary: ") +
                                   ZDICT_getErrorName(n));
  }
  bytes->resize(n);
  return Status::Ok();
}

ZstdDictionary::ZstdDictionary(std::string bytes, int level)
    : bytes_(std::move(bytes)),
      level_(level),
      compress_(ZSTD_createCDict(bytes_.data(), bytes_.size(), level)),
      decompress_(ZSTD_createDDict(bytes_.data(), bytes_.size())) {}

ZstdDictionary::~ZstdDictionary() {
  ZSTD_freeCDict(compress_);
  ZSTD_freeDDict(decompress_);
}

}  // namespace gpulse::storage
