// Sketch: a mergeable quantile sketch with a relative-error guarantee (the
// DDSketch idea: logarithmically spaced bins). A value x > 0 falls in bin
// i = ceil(log(x) / log(gamma)), gamma = (1 + a) / (1 - a), and is answered
// as 2 gamma^i / (gamma + 1), within a relative error a = 1% of x. Negative
// values have bins of their own; values with |x| below kMinIndexable count
// as zero. NaN is not counted. Two sketches merge by adding bin counts, so a
// rollup row's sketch of a day is the sum of its hours', exactly as if the
// day's values had been sketched at once.
//
// Sketch is the stored form (sparse bins, a few per row); SketchAccumulator
// is the query-time form (dense bins) that many rows merge into.
//
// Thread safety: plain value types; no internal synchronisation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpulse::storage {

inline constexpr double kSketchRelativeAccuracy = 0.01;
inline constexpr double kSketchMinIndexable = 1e-9;

// The bin of |x| for |x| >= kSketchMinIndexable.
int32_t SketchIndex(double magnitude);
// The value a bin answers with.
double SketchValue(int32_t index);

class Sketch {
 public:
  using Bins = std::vector<std::pair<int32_t, uint64_t>>;  // (index, count), index ascending

  // Adds values [begin, end) of any arithmetic type.
  template <typename T>
  void AddValues(const T* v, size_t n);
  void Merge(const Sketch& other);

  uint64_t count() const;
  bool empty() const { return count() == 0; }
  const Bins& positive() const { return pos_; }
  const Bins& negative() const { return neg_; }
  uint64_t zero() const { return zero_; }

  // How bins are written (docs/format/rollups.md): rollup blocks of formats
  // 1 and 3 pack a bin's step and count in a byte when both are 1 to 15
  // (kNibbles); format 4 writes each bin's count with its step in the low
  // two bits when the step is 1 to 3 (kCountAndStep).
  enum class BinForm : uint8_t { kNibbles, kCountAndStep };
  // Bin indexes are written relative to `*base` (the first positive bin of
  // the sketch before, in a block), which is then set for the next.
  void Encode(std::string* out, int32_t* base, BinForm form) const;
  // Reads one sketch from the front of *in; false when malformed.
  bool Decode(std::string_view* in, int32_t* base, BinForm form);

  bool operator==(const Sketch&) const = default;

 private:
  static void MergeBins(const Bins& add, Bins* into);

  Bins pos_;
  Bins neg_;  // indexed by |x|
  uint64_t zero_ = 0;
};

// Dense bins that many sketches merge into; answers ranks.
class SketchAccumulator {
 public:
  void Add(const Sketch& s);
  void Merge(const SketchAccumulator& other);
  uint64_t count() const { return count_; }
  // The value of the 0-based rank'th smallest counted value (rank < count()),
  // within the relative accuracy.
  double ValueAtRank(uint64_t rank) const;

 private:
  struct Dense {
    int32_t base = 0;
    std::vector<uint64_t> counts;
    void Add(int32_t index, uint64_t n);
  };
  Dense pos_, neg_;
  uint64_t zero_ = 0;
  uint64_t count_ = 0;
};

extern template void Sketch::AddValues<double>(const double*, size_t);
extern template void Sketch::AddValues<int64_t>(const int64_t*, size_t);
extern template void Sketch::AddValues<uint64_t>(const uint64_t*, size_t);

}  // namespace gpulse::storage
