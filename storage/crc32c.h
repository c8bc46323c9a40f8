// crc32c: the CRC-32C (Castagnoli) checksum that guards every on-disk frame
// (WAL records, and any later format that needs one). Computed by Boost.CRC so
// that no hand-written table lives in the tree; the parameters are those of
// iSCSI / RFC 3720, whose check value is CRC32C("123456789") == 0xE3069283.
// Where the CPU has SSE4.2, its crc32 instruction does the work instead; the
// tests check both paths against each other.
//
// Thread safety: pure functions over their arguments.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpulse::storage::crc32c {

namespace internal {
// Boost.CRC, reflected in and out, initial value and final xor 0xFFFFFFFF.
uint32_t ExtendPortable(uint32_t crc, std::string_view data);
// The SSE4.2 crc32 instruction computes CRC-32C itself, 8 bytes a step:
// about 20x Boost's table on the WAL's write path. Callable only when
// HardwareAvailable().
uint32_t ExtendHardware(uint32_t crc, std::string_view data);
bool HardwareAvailable();
}  // namespace internal

// Returns the CRC-32C of `data` extended onto `crc`, the CRC-32C of some
// earlier bytes A: Extend(Value(A), B) == Value(A + B).
inline uint32_t Extend(uint32_t crc, std::string_view data) {
  static const bool hardware = internal::HardwareAvailable();
  return hardware ? internal::ExtendHardware(crc, data) : internal::ExtendPortable(crc, data);
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
