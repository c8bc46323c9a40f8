#include "engine/wal_batch.h"

#include <bit>
#include <cstring>

namespace gpulse::engine {

namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutBytes(std::string* out, std::string_view bytes) {
  PutVarint(out, bytes.size());
  out->append(bytes);
}

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// A bounds-checked cursor over a record.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  size_t offset() const { return pos_; }
  bool done() const { return pos_ == data_.size(); }

  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift <= 63 && pos_ < data_.size(); shift += 7) {
      const uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) {
        *v = result;
        return true;
      }
    }
    return false;
  }
  bool Bytes(std::string_view* out) {
    uint64_t n = 0;
    if (!Varint(&n) || n > data_.size() - pos_) return false;
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Byte(uint8_t* out) {
    if (pos_ >= data_.size()) return false;
    *out = static_cast<uint8_t>(data_[pos_++]);
    return true;
  }
  bool Fixed64(uint64_t* out) {
    if (data_.size() - pos_ < 8) return false;
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(data_[pos_ + i]);
    pos_ += 8;
    *out = v;
    return true;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

void PutValue(std::string* out, const FieldValueRef& value) {
  out->push_back(static_cast<char>(TypeOf(value)));
  switch (TypeOf(value)) {
    case FieldType::kFloat: {
      const uint64_t bits = std::bit_cast<uint64_t>(std::get<double>(value));
      for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
      break;
    }
    case FieldType::kInt:
      PutVarint(out, ZigZag(std::get<int64_t>(value)));
      break;
    case FieldType::kUint:
      PutVarint(out, std::get<uint64_t>(value));
      break;
    case FieldType::kBool:
      out->push_back(std::get<bool>(value) ? 1 : 0);
      break;
    case FieldType::kString:
      PutBytes(out, std::get<std::string_view>(value));
      break;
  }
}

bool ReadValue(Reader* in, FieldValueRef* value) {
  uint8_t type = 0;
  if (!in->Byte(&type)) return false;
  uint64_t raw = 0;
  switch (static_cast<FieldType>(type)) {
    case FieldType::kFloat:
      if (!in->Fixed64(&raw)) return false;
      *value = std::bit_cast<double>(raw);
      return true;
    case FieldType::kInt:
      if (!in->Varint(&raw)) return false;
      *value = UnZigZag(raw);
      return true;
    case FieldType::kUint:
      if (!in->Varint(&raw)) return false;
      *value = raw;
      return true;
    case FieldType::kBool: {
      uint8_t b = 0;
      if (!in->Byte(&b) || b > 1) return false;
      *value = b == 1;
      return true;
    }
    case FieldType::kString: {
      std::string_view s;
      if (!in->Bytes(&s)) return false;
      *value = s;
      return true;
    }
  }
  return false;
}

}  // namespace

void EncodeWalBatch(const std::vector<PointView>& points, std::string* out) {
  out->push_back(static_cast<char>(kWalBatchV1));
  PutVarint(out, points.size());
  for (const PointView& p : points) {
    PutBytes(out, p.series_key);
    PutVarint(out, ZigZag(p.timestamp_ns));
    PutVarint(out, p.fields.size());
    for (const FieldRef& f : p.fields) {
      PutBytes(out, f.key);
      PutValue(out, f.value);
    }
  }
}

Status DecodeWalBatch(std::string_view record, DecodedBatch* batch) {
  batch->points.clear();
  batch->fields.clear();
  Reader in(record);
  uint8_t version = 0;
  if (!in.Byte(&version) || version != kWalBatchV1) {
    return Status::Corruption("WAL record: unknown batch version " + std::to_string(version));
  }
  uint64_t count = 0;
  // Each point takes at least 4 bytes, which bounds the count before we reserve.
  if (!in.Varint(&count) || count > record.size() / 4) {
    return Status::Corruption("WAL record: bad point count");
  }
  batch->points.resize(count);
  std::vector<size_t> field_counts(count);
  for (uint64_t i = 0; i < count; ++i) {
    PointView& p = batch->points[i];
    uint64_t ts = 0, nfields = 0;
    bool ok = in.Bytes(&p.series_key) && in.Varint(&ts) && in.Varint(&nfields) &&
              nfields <= record.size() - in.offset();
    p.timestamp_ns = UnZigZag(ts);
    for (uint64_t f = 0; ok && f < nfields; ++f) {
      std::string_view name;
      FieldValueRef value;
      ok = in.Bytes(&name) && ReadValue(&in, &value);
      if (ok) batch->fields.push_back(FieldRef{name, value});
    }
    if (!ok) {
      return Status::Corruption("WAL record: point " + std::to_string(i) +
                                " is malformed at byte " + std::to_string(in.offset()));
    }
    field_counts[i] = nfields;
  }
  if (!in.done()) return Status::Corruption("WAL record: trailing bytes after the last point");
  // The field vector is complete: now the spans can point into it.
  size_t next = 0;
  for (uint64_t i = 0; i < count; ++i) {
    batch->points[i].fields =
        std::span<const FieldRef>(batch->fields).subspan(next, field_counts[i]);
    next += field_counts[i];
  }
  return Status::Ok();
}

void EncodeWalDelete(std::span<const std::string> series_keys, int64_t first_ns, int64_t last_ns,
                     bool drop_series, std::string* out) {
  out->push_back(static_cast<char>(kWalDeleteV1));
  PutVarint(out, ZigZag(first_ns));
  PutVarint(out, ZigZag(last_ns));
  out->push_back(drop_series ? 1 : 0);
  PutVarint(out, series_keys.size());
  for (const std::string& key : series_keys) PutBytes(out, key);
}

Status DecodeWalDelete(std::string_view record, WalDelete* out) {
  Reader in(record);
  uint8_t kind = 0, flags = 0;
  uint64_t first = 0, last = 0, count = 0;
  if (!in.Byte(&kind) || kind != kWalDeleteV1) {
    return Status::Corruption("WAL record: not a delete record");
  }
  // Each key takes at least one byte, which bounds the count.
  if (!in.Varint(&first) || !in.Varint(&last) || !in.Byte(&flags) || flags > 1 ||
      !in.Varint(&count) || count > record.size()) {
    return Status::Corruption("WAL delete record: malformed header at byte " +
                              std::to_string(in.offset()));
  }
  out->first_ns = UnZigZag(first);
  out->last_ns = UnZigZag(last);
  out->drop_series = flags == 1;
  out->series_keys.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (!in.Bytes(&out->series_keys[i]) || out->series_keys[i].empty()) {
      return Status::Corruption("WAL delete record: series " + std::to_string(i) +
                                " is malformed at byte " + std::to_string(in.offset()));
    }
  }
  if (!in.done()) return Status::Corruption("WAL delete record: trailing bytes");
  return Status::Ok();
}

}  // namespace gpulse::engine
