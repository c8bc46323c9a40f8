#include "storage/gorilla_codec.h"

#include <bit>

#include "storage/bit_stream.h"
#include "storage/coding.h"

namespace gpulse::storage {

namespace {
// Leading zeros are stored in 5 bits; a longer run is stored as 31 and the
// extra zeros become meaningful bits.
constexpr int kMaxLeading = 31;
}  // namespace

size_t GorillaEncodedSize(std::span<const double> values) {
  if (values.empty()) return 0;
  // Mirrors EncodeGorilla's choices bit for bit.
  uint64_t bits = 64;
  uint64_t prev = std::bit_cast<uint64_t>(values[0]);
  int window_lead = -1, window_trail = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    uint64_t cur = std::bit_cast<uint64_t>(values[i]);
    uint64_t x = cur ^ prev;
    prev = cur;
    if (x == 0) {
      bits += 1;
      continue;
    }
    int lead = std::countl_zero(x), trail = std::countr_zero(x);
    if (lead > kMaxLeading) lead = kMaxLeading;
    if (window_lead >= 0 && lead >= window_lead && trail >= window_trail) {
      bits += 2 + static_cast<uint64_t>(64 - window_lead - window_trail);
      continue;
    }
    bits += 2 + 5 + 6 + static_cast<uint64_t>(64 - lead - trail);
    window_lead = lead;
    window_trail = trail;
  }
  uint64_t bytes = (bits + 7) / 8;
  return static_cast<size_t>(bytes + (std::bit_width(bytes | 1) + 6) / 7);
}

void EncodeGorilla(std::span<const double> values, std::string* out) {
  if (values.empty()) return;
  std::string bits_out;
  BitWriter bits(&bits_out);
  uint64_t prev = std::bit_cast<uint64_t>(values[0]);
  bits.Write(prev, 64);
  int window_lead = -1, window_trail = 0;  // no window yet
  for (size_t i = 1; i < values.size(); ++i) {
    uint64_t cur = std::bit_cast<uint64_t>(values[i]);
    uint64_t x = cur ^ prev;
    prev = cur;
    if (x == 0) {
      bits.Write(0, 1);
      continue;
    }
    int lead = std::countl_zero(x), trail = std::countr_zero(x);
    if (lead > kMaxLeading) lead = kMaxLeading;
    bits.Write(1, 1);
    if (window_lead >= 0 && lead >= window_lead && trail >= window_trail) {
      bits.Write(0, 1);
      bits.Write(x >> window_trail, 64 - window_lead - window_trail);
      continue;
    }
    int significant = 64 - lead - trail;  // 1..64, stored as significant - 1
    bits.Write(1, 1);
    bits.Write(static_cast<uint64_t>(lead), 5);
    bits.Write(static_cast<uint64_t>(significant - 1), 6);
    bits.Write(x >> trail, significant);
    window_lead = lead;
    window_trail = trail;
  }
  bits.Finish();
  PutVarint64(out, bits_out.size());
  out->append(bits_out);
}

Status DecodeGorilla(uint32_t count, ByteReader* in, std::vector<double>* values) {
  if (count == 0) return Status::Ok();
  auto corrupt = [] { return Status::Corruption("gorilla: truncated bit stream"); };
  uint64_t len;
  std::string_view packed;
  if (!in->ReadVarint64(&len) || !in->ReadBytes(len, &packed)) return corrupt();
  BitReader bits(packed);
  uint64_t prev;
  if (!bits.Read(64, &prev)) return corrupt();
  values->push_back(std::bit_cast<double>(prev));
  int window_lead = -1, window_trail = 0;
  for (uint32_t i = 1; i < count; ++i) {
    uint64_t control, x;
    if (!bits.ReadBit(&control)) return corrupt();
    if (control != 0) {
      if (!bits.ReadBit(&control)) return corrupt();
      if (control == 0) {
        if (window_lead < 0) return Status::Corruption("gorilla: reuse of an absent window");
        if (!bits.Read(64 - window_lead - window_trail, &x)) return corrupt();
        prev ^= x << window_trail;
      } else {
        uint64_t lead, significant;
        if (!bits.Read(5, &lead) || !bits.Read(6, &significant)) return corrupt();
        ++significant;
        if (lead + significant > 64) return Status::Corruption("gorilla: window past 64 bits");
        window_lead = static_cast<int>(lead);
        window_trail = static_cast<int>(64 - lead - significant);
        if (!bits.Read(static_cast<int>(significant), &x)) return corrupt();
        prev ^= x << window_trail;
      }
    }
    values->push_back(std::bit_cast<double>(prev));
  }
  if (bits.bytes_consumed() != packed.size()) {
    return Status::Corruption("gorilla: trailing bytes in bit stream");
  }
  return Status::Ok();
}

}  // namespace gpulse::storage
