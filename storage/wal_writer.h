// WalWriter: frames records onto one WAL segment file. It owns the record
// frame (the constants below are the on-disk format, documented in
// docs/format/wal.md); it does not own the file, and it never syncs: the Wal
// decides when bytes must be durable.
//
// Frame, little-endian:  masked crc32c (4) | length (4) | type (1) | payload
// The CRC covers length, type and payload. Type 0 is reserved so that a
// zero-filled header never decodes as a valid (empty) record.
//
// Thread safety: none; the Wal serialises calls under its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/env.h"
#include "storage/status.h"

namespace gpulse::storage {

namespace wal_format {
inline constexpr size_t kHeaderSize = 9;
inline constexpr size_t kCrcOffset = 0;
inline constexpr size_t kLengthOffset = 4;
inline constexpr size_t kTypeOffset = 8;
// Record types. Never renumber; 0 must stay invalid (zero-filled tails).
inline constexpr uint8_t kZeroType = 0;
inline constexpr uint8_t kFullType = 1;
// The largest payload a record may carry. A reader treats a larger length as
// corruption before looking at the bytes, so a flipped length cannot make it
// allocate or scan gigabytes.
inline constexpr uint32_t kMaxRecordBytes = 256u << 20;
}  // namespace wal_format

class WalWriter {
 public:
  // `file` must outlive the writer; `offset` is the file's current length.
  explicit WalWriter(WritableFile* file, uint64_t offset = 0) : file_(file), offset_(offset) {}

  WalWriter(const WalWriter&) = delete;
  WalWriter& operator=(const WalWriter&) = delete;

  // Appends one framed record. InvalidArgument (nothing written) when the
  // record is longer than kMaxRecordBytes; otherwise the file's Append status.
  // After an error the file may hold part of the frame; the caller must stop.
  Status AddRecord(std::string_view record);

  // Bytes of the file, counting every frame handed to it.
  uint64_t offset() const { return offset_; }

  // Cuts the file back to `offset` (at most offset()) after a failed
  // AddRecord, and writes from there next. Fails when the file cannot be cut.
  Status Rewind(uint64_t offset);

  // The number of bytes AddRecord writes for a payload of `payload_size`.
  static uint64_t FramedSize(size_t payload_size) { return wal_format::kHeaderSize + payload_size; }

  // Writes the header of `record` (which must fit kMaxRecordBytes) into
  // header[0, kHeaderSize).
  static void EncodeHeader(std::string_view record, char* header);

 private:
  WritableFile* const file_;
  uint64_t offset_;
  std::string scratch_;  // header + small payload, so small records are one write(2)
};

}  // namespace gpulse::storage
