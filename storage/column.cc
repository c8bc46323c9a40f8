#include "storage/column.h"

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

void Column::Clear() {
  ts.clear();
  floats.clear();
  ints.clear();
  uints.clear();
  bools.clear();
  strings.clear();
}

}  // namespace gpulse::storage
