#include "storage/crc32c.h"

#include <boost/crc.hpp>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace gpulse::storage::crc32c::internal {

uint32_t ExtendPortable(uint32_t crc, std::string_view data) {
  using Computer = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;
  // Boost's checksum() is Reflect(register) ^ 0xFFFFFFFF; undo both to resume
  // from the register that produced `crc`.
  const uint32_t reg = crc ^ 0xFFFFFFFFu;
  uint32_t reflected = 0;
  for (int bit = 0; bit < 32; ++bit) reflected |= ((reg >> bit) & 1u) << (31 - bit);
  Computer computer(reflected);
  computer.process_bytes(data.data(), data.size());
  return computer.checksum();
}

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t state = ~crc & 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    state = _mm_crc32_u64(state, word);
  }
  uint32_t tail = static_cast<uint32_t>(state);
  for (; n > 0; ++p, --n) tail = _mm_crc32_u8(tail, static_cast<uint8_t>(*p));
  return ~tail;
}

bool HardwareAvailable() { return __builtin_cpu_supports("sse4.2"); }

#else

uint32_t ExtendHardware(uint32_t crc, std::string_view data) { return ExtendPortable(crc, data); }
bool HardwareAvailable() { return false; }

#endif

}  // namespace gpulse::storage::crc32c::internal
