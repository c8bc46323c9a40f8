#include "storage/sketch.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "storage/byte_reader.h"
#include "storage/coding.h"

namespace gpulse::storage {

namespace {

constexpr double kGamma = (1 + kSketchRelativeAccuracy) / (1 - kSketchRelativeAccuracy);
const double kInvLogGamma = 1 / std::log(kGamma);
const double kLogGamma = std::log(kGamma);
// Far beyond any finite double's bin (|log(DBL_MAX)| / log(gamma) ~ 35,500),
// so infinities get a bin of their own and the dense form stays small.
constexpr int32_t kMaxIndex = 40'000;
// A sketch holds at most this many bins per sign when decoded.
constexpr uint64_t kMaxBins = 2 * kMaxIndex + 1;
// A bin's count, at most: kCountAndStep keeps count - 1 above two bits, and
// no store holds 2^62 points (4.6 * 10^18).
constexpr uint64_t kMaxBinCount = uint64_t{1} << 62;

// Sorted (index, count) runs of `indexes`, merged into *bins. A gauge's
// values of one bucket fall in a few neighbouring bins: those are counted in
// an array, without sorting; a wide spread is sorted.
void AddIndexes(std::vector<int32_t>* indexes, Sketch::Bins* bins,
                void (*merge)(const Sketch::Bins&, Sketch::Bins*)) {
  if (indexes->empty()) return;
  constexpr int64_t kCountedSpread = 256;
  thread_local Sketch::Bins runs;
  runs.clear();
  const auto [lo, hi] = std::minmax_element(indexes->begin(), indexes->end());
  const int32_t least = *lo;
  if (int64_t{*hi} - least < kCountedSpread) {
    uint32_t counts[kCountedSpread];
    const size_t spread = static_cast<size_t>(*hi - least) + 1;
    std::fill_n(counts, spread, 0);
    for (int32_t index : *indexes) ++counts[index - least];
    for (size_t k = 0; k < spread; ++k) {
      if (counts[k] != 0) runs.emplace_back(least + static_cast<int32_t>(k), counts[k]);
    }
  } else {
    std::sort(indexes->begin(), indexes->end());
    for (size_t i = 0; i < indexes->size();) {
      size_t j = i + 1;
      while (j < indexes->size() && (*indexes)[j] == (*indexes)[i]) ++j;
      runs.emplace_back((*indexes)[i], j - i);
      i = j;
    }
  }
  merge(runs, bins);
}

}  // namespace

int32_t SketchIndex(double magnitude) {
  const double i = std::ceil(std::log(magnitude) * kInvLogGamma);
  if (!(i < kMaxIndex)) return kMaxIndex;  // +inf (and NaN, never passed)
  if (i < -kMaxIndex) return -kMaxIndex;
  return static_cast<int32_t>(i);
}

double SketchValue(int32_t index) {
  // 2 gamma^i / (gamma + 1), in logs so the largest bins do not overflow.
  static const double kLogScale = std::log(2 / (kGamma + 1));
  return std::exp(static_cast<double>(index) * kLogGamma + kLogScale);
}

template <typename T>
void Sketch::AddValues(const T* v, size_t n) {
  // Scratch kept by the thread: a rollup build calls this once a bucket.
  thread_local std::vector<int32_t> pos, neg;
  pos.clear();
  neg.clear();
  // Gauges repeat values (util 0..100, a fixed clock): one log per change.
  double last = std::nan("");
  int32_t last_index = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(v[i]);
    if (std::isnan(x)) continue;
    const double m = std::fabs(x);
    if (m < kSketchMinIndexable) {
      ++zero_;
      continue;
    }
    if (m != last) {
      last = m;
      last_index = SketchIndex(m);
    }
    (x > 0 ? pos : neg).push_back(last_index);
  }
  AddIndexes(&pos, &pos_, &MergeBins);
  AddIndexes(&neg, &neg_, &MergeBins);
}

template void Sketch::AddValues<double>(const double*, size_t);
template void Sketch::AddValues<int64_t>(const int64_t*, size_t);
template void Sketch::AddValues<uint64_t>(const uint64_t*, size_t);

void Sketch::MergeBins(const Bins& add, Bins* into) {
  if (add.empty()) return;
  if (into->empty()) {
    *into = add;
    return;
  }
  Bins out;
  out.reserve(into->size() + add.size());
  size_t i = 0, j = 0;
  while (i < into->size() || j < add.size()) {
    if (j == add.size() || (i < into->size() && (*into)[i].first < add[j].first)) {
      out.push_back((*into)[i++]);
    } else if (i == into->size() || add[j].first < (*into)[i].first) {
      out.push_back(add[j++]);
    } else {
      out.emplace_back(add[j].first, (*into)[i].second + add[j].second);
      ++i;
      ++j;
    }
  }
  *into = std::move(out);
}

void Sketch::Merge(const Sketch& other) {
  MergeBins(other.pos_, &pos_);
  MergeBins(other.neg_, &neg_);
  zero_ += other.zero_;
}

uint64_t Sketch::count() const {
  uint64_t n = zero_;
  for (const auto& [_, c] : pos_) n += c;
  for (const auto& [_, c] : neg_) n += c;
  return n;
}

// zero count, then per sign: the bin count k and k bins. A bin whose index
// is 1..15 past the one before (the first: past *base - 1) and whose count
// is 1..15 is one byte, step << 4 | count; any other is a zero byte, the
// zigzag step and the count as varints. Neighbouring values of a gauge
// give small steps and counts: about a byte a bin.
void Sketch::Encode(std::string* out, int32_t* base, BinForm form) const {
  PutVarint64(out, zero_);
  for (const Bins* bins : {&pos_, &neg_}) {
    PutVarint64(out, bins->size());
    int64_t prev = *base - 1;
    for (const auto& [index, n] : *bins) {
      const int64_t step = index - prev;
      if (form == BinForm::kCountAndStep) {
        // n >= 1: n - 1 above the step's two bits (0: the step follows).
        assert(n >= 1 && n <= kMaxBinCount);
        const bool short_step = step >= 1 && step <= 3;
        PutVarint64(out, (n - 1) << 2 | static_cast<uint64_t>(short_step ? step : 0));
        if (!short_step) PutVarint64(out, ZigZagEncode(static_cast<uint64_t>(step)));
      } else if (step >= 1 && step <= 15 && n >= 1 && n <= 15) {
        out->push_back(static_cast<char>(step << 4 | static_cast<int64_t>(n)));
      } else {
        out->push_back('\0');
        PutVarint64(out, ZigZagEncode(static_cast<uint64_t>(step)));
        PutVarint64(out, n);
      }
      prev = index;
    }
  }
  if (!pos_.empty()) *base = pos_.front().first;
}

bool Sketch::Decode(std::string_view* in, int32_t* base, BinForm form) {
  ByteReader r(*in);
  pos_.clear();
  neg_.clear();
  if (!r.ReadVarint64(&zero_)) return false;
  for (Bins* bins : {&pos_, &neg_}) {
    uint64_t size = 0;
    if (!r.ReadVarint64(&size) || size > kMaxBins || size > r.remaining()) return false;
    bins->reserve(size);
    int64_t prev = static_cast<int64_t>(*base) - 1;
    for (uint64_t k = 0; k < size; ++k) {
      int64_t step = 0;
      uint64_t n = 0;
      if (form == BinForm::kCountAndStep) {
        uint64_t v = 0;
        if (!r.ReadVarint64(&v)) return false;
        n = (v >> 2) + 1;
        step = static_cast<int64_t>(v & 3);
        if (step == 0) {
          uint64_t zz = 0;
          if (!r.ReadVarint64(&zz)) return false;
          step = static_cast<int64_t>(ZigZagDecode(zz));
        }
      } else {
        uint8_t packed = 0;
        if (!r.ReadByte(&packed)) return false;
        step = packed >> 4;
        n = packed & 15;
        if (packed == 0) {
          uint64_t zz = 0;
          if (!r.ReadVarint64(&zz) || !r.ReadVarint64(&n)) return false;
          step = static_cast<int64_t>(ZigZagDecode(zz));
        }
      }
      // Bounded before adding: a corrupt step must not overflow.
      if (step < -2 * kMaxIndex - 1 || step > 2 * kMaxIndex + 1) return false;
      const int64_t index = prev + step;
      if (index < -kMaxIndex || index > kMaxIndex || (k > 0 && step <= 0) || n == 0 ||
          n > kMaxBinCount) {
        return false;
      }
      bins->emplace_back(static_cast<int32_t>(index), n);
      prev = index;
    }
  }
  if (!pos_.empty()) *base = pos_.front().first;
  in->remove_prefix(r.position());
  return true;
}

void SketchAccumulator::Dense::Add(int32_t index, uint64_t n) {
  if (counts.empty()) {
    base = index;
    counts.push_back(n);
    return;
  }
  if (index < base) {
    counts.insert(counts.begin(), static_cast<size_t>(base - index), 0);
    base = index;
  } else if (static_cast<size_t>(index - base) >= counts.size()) {
    counts.resize(static_cast<size_t>(index - base) + 1, 0);
  }
  counts[static_cast<size_t>(index - base)] += n;
}

void SketchAccumulator::Add(const Sketch& s) {
  for (const auto& [i, n] : s.positive()) pos_.Add(i, n);
  for (const auto& [i, n] : s.negative()) neg_.Add(i, n);
  zero_ += s.zero();
  count_ += s.count();
}

void SketchAccumulator::Merge(const SketchAccumulator& other) {
  for (size_t k = 0; k < other.pos_.counts.size(); ++k) {
    if (other.pos_.counts[k])
      pos_.Add(other.pos_.base + static_cast<int32_t>(k), other.pos_.counts[k]);
  }
  for (size_t k = 0; k < other.neg_.counts.size(); ++k) {
    if (other.neg_.counts[k])
      neg_.Add(other.neg_.base + static_cast<int32_t>(k), other.neg_.counts[k]);
  }
  zero_ += other.zero_;
  count_ += other.count_;
}

double SketchAccumulator::ValueAtRank(uint64_t rank) const {
  // Most negative first: the negative bins from the largest magnitude down.
  for (size_t k = neg_.counts.size(); k-- > 0;) {
    if (rank < neg_.counts[k]) return -SketchValue(neg_.base + static_cast<int32_t>(k));
    rank -= neg_.counts[k];
  }
  if (rank < zero_) return 0;
  rank -= zero_;
  for (size_t k = 0; k < pos_.counts.size(); ++k) {
    if (rank < pos_.counts[k]) return SketchValue(pos_.base + static_cast<int32_t>(k));
    rank -= pos_.counts[k];
  }
  return pos_.counts.empty()
             ? 0
             : SketchValue(pos_.base + static_cast<int32_t>(pos_.counts.size() - 1));
}

}  // namespace gpulse::storage
