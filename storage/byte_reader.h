// ByteReader: a bounds-checked cursor over a byte span, the reading side of
// storage/coding.h. Every read either succeeds completely and advances, or
// fails (returns false) and leaves the cursor where it was, so decoders can
// turn any short or malformed input into a Corruption status.
//
// Thread safety: none; one reader per thread. The span must outlive it.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpulse::storage {

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  bool ReadByte(uint8_t* value);
  bool ReadFixed64(uint64_t* value);
  // Rejects encodings longer than 10 bytes or overflowing 64 bits.
  bool ReadVarint64(uint64_t* value);
  // A view of the next `n` bytes (valid as long as the underlying data).
  bool ReadBytes(uint64_t n, std::string_view* bytes);

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace gpulse::storage
