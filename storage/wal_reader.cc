#include "storage/wal_reader.h"

#include <algorithm>

#include "storage/crc32c.h"
#include "storage/wal_writer.h"

namespace gpulse::storage {

namespace {
uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
}  // namespace

bool WalReader::Stop(std::string reason) {
  // A filesystem may extend a file with zeros after a crash; name that case
  // apart from real damage so the report says which one happened.
  std::string_view rest = data_.substr(offset_);
  if (std::all_of(rest.begin(), rest.end(), [](char c) { return c == 0; })) {
    reason = "zero-filled tail";
  }
  reason_ = std::move(reason);
  return false;
}

bool WalReader::Next(std::string_view* record) {
  using namespace wal_format;
  if (!reason_.empty()) return false;
  std::string_view rest = data_.substr(offset_);
  if (rest.empty()) return false;
  if (rest.size() < kHeaderSize) {
    return Stop("truncated header (" + std::to_string(rest.size()) + " bytes)");
  }
  uint8_t type = static_cast<uint8_t>(rest[kTypeOffset]);
  if (type != kFullType) return Stop("bad record type " + std::to_string(type));
  uint32_t length = GetFixed32(rest.data() + kLengthOffset);
  if (length > kMaxRecordBytes) return Stop("absurd record length " + std::to_string(length));
  if (length > rest.size() - kHeaderSize) {
    return Stop("record length " + std::to_string(length) + " runs past end of file");
  }
  uint32_t expected = crc32c::Unmask(GetFixed32(rest.data() + kCrcOffset));
  uint32_t actual = crc32c::Value(rest.substr(kLengthOffset, kHeaderSize - kLengthOffset + length));
  if (actual != expected) return Stop("bad checksum");
  *record = rest.substr(kHeaderSize, length);
  offset_ += kHeaderSize + length;
  return true;
}

bool WalReader::Resync(uint64_t budget, uint64_t* skipped) {
  using namespace wal_format;
  if (reason_.empty()) return false;
  uint64_t spent = 0;
  for (uint64_t at = offset_ + 1; at + kHeaderSize <= data_.size(); ++at) {
    const std::string_view rest = data_.substr(at);
    if (static_cast<uint8_t>(rest[kTypeOffset]) != kFullType) continue;
    const uint32_t length = GetFixed32(rest.data() + kLengthOffset);
    if (length > kMaxRecordBytes || length > rest.size() - kHeaderSize) continue;
    spent += kHeaderSize + length;
    if (spent > budget) return false;
    const uint32_t expected = crc32c::Unmask(GetFixed32(rest.data() + kCrcOffset));
    if (crc32c::Value(rest.substr(kLengthOffset, kHeaderSize - kLengthOffset + length)) !=
        expected) {
      continue;
    }
    *skipped = at - offset_;
    offset_ = at;
    reason_.clear();
    return true;
  }
  return false;
}

}  // namespace gpulse::storage
