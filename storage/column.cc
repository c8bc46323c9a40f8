#include "storage/column.h"

#include <algorithm>

namespace gpulse::storage {

const char* FieldTypeName(FieldType type) {
  switch (type) {
    case FieldType::kFloat:
      return "float";
    case FieldType::kInt:
      return "integer";
    case FieldType::kUint:
      return "unsigned";
    case FieldType::kBool:
      return "boolean";
    case FieldType::kString:
      return "string";
  }
  return "unknown";
}

bool IsValidFieldType(uint8_t raw) {
  return raw >= static_cast<uint8_t>(FieldType::kFloat) &&
         raw <= static_cast<uint8_t>(FieldType::kString);
}

size_t PackedRun::IndexOf(int64_t t) const {
  if (size == 0 || t <= static_cast<int64_t>(first)) return 0;
  // Unsigned: t - first may exceed INT64_MAX.
  const uint64_t d = static_cast<uint64_t>(t) - first;
  if (step == 0) return size;  // one point, before t
  return static_cast<size_t>(std::min<uint64_t>(size, d / step + (d % step != 0 ? 1 : 0)));
}

void Column::Clear() {
  ts.clear();
  floats.clear();
  ints.clear();
  uints.clear();
  bools.clear();
  strings.clear();
}

void AppendPoints(const Column& src, size_t from, size_t to, Column* dst) {
  if (from == to) return;
  dst->ts.insert(dst->ts.end(), src.ts.begin() + from, src.ts.begin() + to);
  const auto append = [&](const auto& in, auto& out) {
    out.insert(out.end(), in.begin() + from, in.begin() + to);
  };
  switch (src.type) {
    case FieldType::kFloat:
      return append(src.floats, dst->floats);
    case FieldType::kInt:
      return append(src.ints, dst->ints);
    case FieldType::kUint:
      return append(src.uints, dst->uints);
    case FieldType::kBool:
      return append(src.bools, dst->bools);
    case FieldType::kString:
      return append(src.strings, dst->strings);
  }
}

}  // namespace gpulse::storage
