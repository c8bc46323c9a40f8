#include "storage/wal_writer.h"

#include "storage/crc32c.h"

namespace gpulse::storage {

namespace {
// Payloads up to this size are copied next to their header and written with
// one call; larger ones go in a second Append to avoid the copy.
constexpr size_t kCoalesceBytes = 64 << 10;

void PutFixed32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
}  // namespace

void WalWriter::EncodeHeader(std::string_view record, char* header) {
  using namespace wal_format;
  PutFixed32(header + kLengthOffset, static_cast<uint32_t>(record.size()));
  header[kTypeOffset] = static_cast<char>(kFullType);
  // The CRC covers length and type (contiguous after the CRC) and the payload.
  uint32_t crc = crc32c::Value(std::string_view(header + kLengthOffset, kHeaderSize - 4));
  crc = crc32c::Extend(crc, record);
  PutFixed32(header + kCrcOffset, crc32c::Mask(crc));
}

Status WalWriter::AddRecord(std::string_view record) {
  if (record.size() > wal_format::kMaxRecordBytes) {
    return Status::InvalidArgument("wal record of " + std::to_string(record.size()) +
                                   " bytes exceeds the limit of " +
                                   std::to_string(wal_format::kMaxRecordBytes));
  }
  char header[wal_format::kHeaderSize];
  EncodeHeader(record, header);
  Status s;
  if (record.size() <= kCoalesceBytes) {
    scratch_.assign(header, sizeof(header));
    scratch_.append(record);
    s = file_->Append(scratch_);
  } else {
    s = file_->Append(std::string_view(header, sizeof(header)));
    if (s.ok()) s = file_->Append(record);
  }
  // Counted even on failure: the file may hold part of the frame.
  offset_ += FramedSize(record.size());
  return s;
}

Status WalWriter::Rewind(uint64_t offset) {
  if (offset > offset_) return Status::InvalidArgument("wal rewind past the end");
  GPULSE_RETURN_IF_ERROR(file_->Truncate(offset));
  offset_ = offset;
  return Status::Ok();
}

}  // namespace gpulse::storage
