// crc32c: the CRC-32C (Castagnoli) checksum that guards every on-disk frame
// (WAL records, and any later format that needs one). Computed by Boost.CRC so
// that no hand-written table lives in the tree; the parameters are those of
// iSCSI / RFC 3720, whose check value is CRC32C("123456789") == 0xE3069283.
//
// Thread safety: pure functions over their arguments.
#pragma once

#include <boost/crc.hpp>
#include <cstdint>
#include <string_view>

namespace gpulse::storage::crc32c {

// Reflected in and out, initial value and final xor 0xFFFFFFFF.
using Computer = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

// Returns the CRC-32C of `data` extended onto `crc`, the CRC-32C of some
// earlier bytes A: Extend(Value(A), B) == Value(A + B).
inline uint32_t Extend(uint32_t crc, std::string_view data) {
  // Boost's checksum() is Reflect(register) ^ 0xFFFFFFFF; undo both to resume
  // from the register that produced `crc`.
  uint32_t reg = crc ^ 0xFFFFFFFFu;
  uint32_t reflected = 0;
  for (int bit = 0; bit < 32; ++bit) reflected |= ((reg >> bit) & 1u) << (31 - bit);
  Computer computer(reflected);
  computer.process_bytes(data.data(), data.size());
  return computer.checksum();
}

// Returns the CRC-32C of `data`.
inline uint32_t Value(std::string_view data) { return Extend(0, data); }

// A CRC stored next to, or inside, data that is itself checksummed makes a
// weak code: the CRC of a string holding its own CRC is a fixed pattern.
// Stored CRCs are therefore masked (rotated and offset, as LevelDB does).
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

// Returns the masked form of `crc`, the form that goes on disk.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

// Returns the CRC whose masked form is `masked`: Unmask(Mask(c)) == c.
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace gpulse::storage::crc32c
