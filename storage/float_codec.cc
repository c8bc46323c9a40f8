#include "storage/float_codec.h"

#include <bit>
#include <cmath>

#include "storage/gorilla_codec.h"
#include "storage/integer_codec.h"

namespace gpulse::storage {

namespace {

constexpr double kPow10[kMaxDecimalDigits + 1] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

// Round half to even, as std::nearbyint in the default rounding mode, but
// without its library call: adding and removing 2^52 rounds away the
// fraction of any |x| < 2^52, and larger doubles are integers already.
double RoundToInteger(double x) {
  constexpr double kTwo52 = 4503599627370496.0;
  if (!(std::fabs(x) < kTwo52)) return x;
  return x >= 0 ? (x + kTwo52) - kTwo52 : (x - kTwo52) + kTwo52;
}

// -0.0 would come back as +0.0, NaN and infinities have no decimal form.
bool Representable(double v) { return std::isfinite(v) && !(v == 0 && std::signbit(v)); }

// FindDecimalDigits that also returns the integers m[i] (as two's
// complement bits), so the encoder does not convert every value a third time.
int FindDecimal(std::span<const double> values, std::vector<uint64_t>* mantissas) {
  int digits = 0;
  for (double v : values) {
    if (!Representable(v)) return -1;
    int64_t m;
    while (!ToDecimal(v, digits, &m)) {
      if (++digits > kMaxDecimalDigits) return -1;
    }
  }
  // A value exact at k digits is exact at any larger k while |m| < 2^53, but
  // check: the encoder must never emit a form the decoder cannot invert.
  mantissas->resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t m;
    if (!ToDecimal(values[i], digits, &m)) return -1;
    (*mantissas)[i] = static_cast<uint64_t>(m);
  }
  return digits;
}

}  // namespace

// The decoder's computation; division by an exact power of ten is correctly
// rounded, so m / 10^k is the double nearest to the decimal m * 10^-k.
double FromDecimal(int64_t m, int k) { return static_cast<double>(m) / kPow10[k]; }

bool ToDecimal(double v, int k, int64_t* m) {
  double scaled = v * kPow10[k];
  if (!(std::fabs(scaled) < kMaxExactInteger)) return false;  // also NaN
  *m = static_cast<int64_t>(RoundToInteger(scaled));
  return std::bit_cast<uint64_t>(FromDecimal(*m, k)) == std::bit_cast<uint64_t>(v);
}

int FindDecimalDigits(std::span<const double> values) {
  std::vector<uint64_t> mantissas;
  return FindDecimal(values, &mantissas);
}

FloatMethod EncodeFloats(std::span<const double> values, std::string* out) {
  // Gorilla's size is cheap to compute exactly; it is only written when it
  // beats the decimal form.
  size_t gorilla_size = GorillaEncodedSize(values);
  std::vector<uint64_t> mantissas;
  int digits = FindDecimal(values, &mantissas);
  if (digits >= 0) {
    std::string decimal;
    decimal.reserve(values.size() + 16);
    decimal.push_back(static_cast<char>(digits));
    decimal.push_back(0);  // integer method, filled in below
    decimal[1] = static_cast<char>(EncodeIntegers(mantissas, &decimal));
    if (decimal.size() < gorilla_size) {
      out->append(decimal);
      return FloatMethod::kDecimal;
    }
  }
  EncodeGorilla(values, out);
  return FloatMethod::kGorilla;
}

Status DecodeFloats(uint8_t method, uint32_t count, ByteReader* in, std::vector<double>* values) {
  values->clear();
  switch (static_cast<FloatMethod>(method)) {
    case FloatMethod::kGorilla:
      return DecodeGorilla(count, in, values);
    case FloatMethod::kDecimal: {
      uint8_t digits, int_method;
      if (!in->ReadByte(&digits) || !in->ReadByte(&int_method)) {
        return Status::Corruption("decimal floats: truncated header");
      }
      if (digits > kMaxDecimalDigits) return Status::Corruption("decimal floats: too many digits");
      std::vector<uint64_t> mantissas;
      GPULSE_RETURN_IF_ERROR(
          DecodeIntegers(int_method, count, in, &mantissas).WithContext("decimal floats"));
      values->reserve(mantissas.size());
      for (uint64_t m : mantissas) values->push_back(FromDecimal(static_cast<int64_t>(m), digits));
      return Status::Ok();
    }
  }
  return Status::Corruption("floats: unknown method " + std::to_string(method));
}

}  // namespace gpulse::storage
