// Column: the decoded form of one chunk, the timestamps and values of one
// field of one series. The head builds columns; the chunk codec turns a column
// into bytes and back. A column holds exactly one value type; the vector that
// matches `type` has ts.size() entries and the others are empty.
//
// Thread safety: a plain value type; no internal synchronisation.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace gpulse::storage {

// The line-protocol value types. The numbers are stored on disk (chunk
// headers, the field catalog, WAL records): never renumber them.
enum class FieldType : uint8_t {
  kFloat = 1,
  kInt = 2,
  kUint = 3,
  kBool = 4,
  kString = 5,
};

const char* FieldTypeName(FieldType type);
bool IsValidFieldType(uint8_t raw);

struct Column {
  FieldType type = FieldType::kFloat;
  std::vector<int64_t> ts;  // nanoseconds since the Unix epoch
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<uint64_t> uints;
  std::vector<uint8_t> bools;  // 0 or 1
  std::vector<std::string> strings;

  size_t size() const { return ts.size(); }
  void Clear();
};

// Appends points [from, to) of `src` to `dst`, which must have src's type.
void AppendPoints(const Column& src, size_t from, size_t to, Column* dst);

// Integers at a steady interval as the read cache keeps them packed
// (engine::PackedWindow): point i is at time first + i * step and has the
// value base + offset i, the offsets `width` bytes each (1, 2 or 4, in host
// order), times and values computed as uint64 (wrapping as the integers
// do). Folds read these without unpacking them into a Column.
struct PackedRun {
  FieldType type = FieldType::kInt;  // kInt or kUint
  uint64_t first = 0, step = 0;
  uint64_t base = 0;
  uint8_t width = 1;
  const uint8_t* offsets = nullptr;
  size_t size = 0;

  int64_t TimeAt(size_t i) const { return static_cast<int64_t>(first + i * step); }
  // The first point at or after t (size when none).
  size_t IndexOf(int64_t t) const;
};

// The value vector of a numeric column by C++ type: double -> floats,
// int64_t -> ints, uint64_t -> uints.
template <typename T>
std::vector<T>& NumericValues(Column& c) {
  if constexpr (std::is_same_v<T, double>) {
    return c.floats;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return c.ints;
  } else {
    static_assert(std::is_same_v<T, uint64_t>);
    return c.uints;
  }
}
template <typename T>
const std::vector<T>& NumericValues(const Column& c) {
  return NumericValues<T>(const_cast<Column&>(c));
}

// Value i of a numeric or boolean column as a double; 0 for a string column.
inline double NumberAt(const Column& c, size_t i) {
  switch (c.type) {
    case FieldType::kFloat:
      return c.floats[i];
    case FieldType::kInt:
      return static_cast<double>(c.ints[i]);
    case FieldType::kUint:
      return static_cast<double>(c.uints[i]);
    case FieldType::kBool:
      return c.bools[i];
    default:
      return 0;
  }
}

}  // namespace gpulse::storage
