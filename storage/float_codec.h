// Float codec: encodes a chunk's float64 values, bit for bit (NaN payloads,
// -0.0 and infinities included), in the smaller of two forms:
//
//   Gorilla XOR (Pelkonen et al., VLDB 2015): each value XORed with the
//   previous one, the meaningful bits stored with a leading/trailing-zero
//   window. Works for any double.
//
//   Decimal: when every value is m / 10^k for one k in 0..kMaxDecimalDigits
//   and an integer |m| < 2^53 (checked by computing the division exactly as
//   the decoder will and comparing bits), the integers m go through the
//   integer codec. Sensor readings printed with a fixed number of decimals
//   (power 612.3 W) have noisy low mantissa bits that Gorilla must store; as
//   integers they cost little more than their entropy.
//
// Thread safety: free functions without shared state; safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "storage/byte_reader.h"
#include "storage/status.h"

namespace gpulse::storage {

inline constexpr int kMaxDecimalDigits = 6;

// Float method bytes, stored in the chunk header.
enum class FloatMethod : uint8_t {
  kGorilla = 0,
  kDecimal = 1,
};

FloatMethod EncodeFloats(std::span<const double> values, std::string* out);
Status DecodeFloats(uint8_t method, uint32_t count, ByteReader* in, std::vector<double>* values);

// One value's decimal form at k digits (0..kMaxDecimalDigits): the integer m,
// |m| < 2^53, with FromDecimal(m, k) equal to v bit for bit; false when
// there is none (NaN, infinities and -0.0 never have one).
bool ToDecimal(double v, int k, int64_t* m);
double FromDecimal(int64_t m, int k);

// The smallest k such that every value is exactly m / 10^k, or -1.
int FindDecimalDigits(std::span<const double> values);

}  // namespace gpulse::storage
