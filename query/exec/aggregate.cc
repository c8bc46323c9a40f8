#include "query/exec/aggregate.h"
#include "query/runtime/result.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

namespace gpulse::query {

namespace {

// Nearest rank, as InfluxQL defines it: sorted[floor(n * p / 100 + 0.5) - 1],
// clamped to the values there are.
size_t PercentileRank(size_t n, double p) {
  double r = std::floor(static_cast<double>(n) * p / 100.0 + 0.5) - 1;
  if (r < 0) r = 0;
  if (r > static_cast<double>(n - 1)) r = static_cast<double>(n - 1);
  return static_cast<size_t>(r);
}

// Numeric fields: float, integer, unsigned. One class for every numeric
// aggregate; the kind is switched on once per run, not per point.
template <typename T>
class NumericState final : public AggState {
 public:
  explicit NumericState(const AggSpec& spec) : spec_(spec) {}

  void AddRange(const Column& c, size_t begin, size_t end) override {
    if (begin >= end) return;
    const T* v = storage::NumericValues<T>(c).data();
    const int64_t* t = c.ts.data();
    switch (spec_.kind) {
      case AggKind::kCount:
        break;
      case AggKind::kSum:
      case AggKind::kMean: {
        Sum acc = 0;
        double dsum = 0;
        for (size_t i = begin; i < end; ++i) {
          acc = Add(acc, v[i]);
          dsum += static_cast<double>(v[i]);
        }
        sum_ = Add(sum_, acc);
        dsum_ += dsum;
        break;
      }
      case AggKind::kMin:
      case AggKind::kMax:
      case AggKind::kSpread: {
        for (size_t i = begin; i < end; ++i) TakeMinMax(v[i], t[i]);
        break;
      }
      case AggKind::kFirst:
        if (n_ == 0 || t[begin] < first_t_) {
          first_ = v[begin];
          first_t_ = t[begin];
        }
        break;
      case AggKind::kLast:
        if (n_ == 0 || t[end - 1] > last_t_) {
          last_ = v[end - 1];
          last_t_ = t[end - 1];
        }
        break;
      case AggKind::kStddev: {
        // This run's mean and M2, then Chan's merge with what came before.
        double mean = 0, m2 = 0;
        uint64_t k = 0;
        for (size_t i = begin; i < end; ++i) {
          ++k;
          const double x = static_cast<double>(v[i]);
          const double d = x - mean;
          mean += d / static_cast<double>(k);
          m2 += d * (x - mean);
        }
        MergeMoments(k, mean, m2);
        break;
      }
      case AggKind::kIntegral: {
        double area = 0;
        for (size_t i = begin + 1; i < end; ++i) {
          area += (static_cast<double>(v[i]) + static_cast<double>(v[i - 1])) * 0.5 *
                  static_cast<double>(t[i] - t[i - 1]);
        }
        integral_ += area / static_cast<double>(spec_.unit_ns);
        break;
      }
      case AggKind::kMedian:
      case AggKind::kPercentile:
      case AggKind::kMode:
      case AggKind::kDistinct:
      case AggKind::kCountDistinct:
      case AggKind::kTop:
      case AggKind::kBottom:
        vals_.insert(vals_.end(), v + begin, v + end);
        if (KeepTimes()) times_.insert(times_.end(), t + begin, t + end);
        break;
    }
    n_ += end - begin;
  }

  void AddRollups(const RollupColumn& rows, size_t begin, size_t end) override {
    for (size_t r = begin; r < end; ++r) {
      switch (spec_.kind) {
        case AggKind::kSum:
        case AggKind::kMean:
          sum_ = Add(sum_, storage::NumericValues<T>(rows.sum)[r]);
          dsum_ += rows.dsum[r];
          break;
        case AggKind::kMin:
        case AggKind::kMax:
        case AggKind::kSpread:
          TakeMinMax(storage::NumericValues<T>(rows.min)[r], rows.min.ts[r]);
          TakeMinMax(storage::NumericValues<T>(rows.max)[r], rows.max.ts[r]);
          break;
        case AggKind::kFirst:
          if (n_ == 0 || rows.first.ts[r] < first_t_) {
            first_ = storage::NumericValues<T>(rows.first)[r];
            first_t_ = rows.first.ts[r];
          }
          break;
        case AggKind::kLast:
          if (n_ == 0 || rows.last.ts[r] > last_t_) {
            last_ = storage::NumericValues<T>(rows.last)[r];
            last_t_ = rows.last.ts[r];
          }
          break;
        case AggKind::kMedian:
        case AggKind::kPercentile:
          if (!sketch_) sketch_ = std::make_unique<storage::SketchAccumulator>();
          sketch_->Add(rows.sketch[r]);
          TakeMinMax(storage::NumericValues<T>(rows.min)[r], rows.min.ts[r]);
          TakeMinMax(storage::NumericValues<T>(rows.max)[r], rows.max.ts[r]);
          break;
        default:
          break;
      }
      n_ += rows.count[r];
    }
  }

  void AddIndexes(const Column& c, const uint32_t* idx, size_t n) override {
    // Runs of consecutive positions go through AddRange; a filtered column
    // is mostly long runs.
    size_t i = 0;
    while (i < n) {
      size_t j = i + 1;
      while (j < n && idx[j] == idx[j - 1] + 1) ++j;
      AddRange(c, idx[i], static_cast<size_t>(idx[j - 1]) + 1);
      i = j;
    }
  }

  void Merge(AggState* base_other) override {
    auto* o = static_cast<NumericState*>(base_other);
    if (o->n_ == 0) return;
    if (n_ == 0) {
      std::swap(*this, *o);
      return;
    }
    switch (spec_.kind) {
      case AggKind::kCount:
        break;
      case AggKind::kSum:
      case AggKind::kMean:
        sum_ = Add(sum_, o->sum_);
        dsum_ += o->dsum_;
        break;
      case AggKind::kMin:
      case AggKind::kMax:
      case AggKind::kSpread:
        TakeMinMax(o->min_, o->min_t_);
        TakeMinMax(o->max_, o->max_t_);
        break;
      case AggKind::kFirst:
        if (o->first_t_ < first_t_) {
          first_ = o->first_;
          first_t_ = o->first_t_;
        }
        break;
      case AggKind::kLast:
        if (o->last_t_ > last_t_) {
          last_ = o->last_;
          last_t_ = o->last_t_;
        }
        break;
      case AggKind::kStddev:
        MergeMoments(o->mom_n_, o->mean_, o->m2_);
        break;
      case AggKind::kIntegral:
        integral_ += o->integral_;
        break;
      default:
        vals_.insert(vals_.end(), o->vals_.begin(), o->vals_.end());
        times_.insert(times_.end(), o->times_.begin(), o->times_.end());
        if (o->sketch_) {
          if (!sketch_) sketch_ = std::make_unique<storage::SketchAccumulator>();
          sketch_->Merge(*o->sketch_);
          TakeMinMax(o->min_, o->min_t_);
          TakeMinMax(o->max_, o->max_t_);
        }
        break;
    }
    n_ += o->n_;
  }

  bool empty() const override { return n_ == 0; }

  QueryValue Result() override {
    if (!result_) result_ = Compute();
    return *result_;
  }

  QueryValue Compute() {
    if (spec_.kind == AggKind::kCount) return static_cast<int64_t>(n_);
    if (n_ == 0) return std::monostate{};
    switch (spec_.kind) {
      case AggKind::kCount:
        break;
      case AggKind::kSum:
        return Out(sum_);
      case AggKind::kMean:
        return dsum_ / static_cast<double>(n_);
      case AggKind::kMin:
        selected_t_ = min_t_;
        return Out(min_);
      case AggKind::kMax:
        selected_t_ = max_t_;
        return Out(max_);
      case AggKind::kSpread:
        return Out(static_cast<T>(max_ - min_));
      case AggKind::kFirst:
        selected_t_ = first_t_;
        return Out(first_);
      case AggKind::kLast:
        selected_t_ = last_t_;
        return Out(last_);
      case AggKind::kStddev:
        if (mom_n_ < 2) return std::monostate{};
        return std::sqrt(m2_ / static_cast<double>(mom_n_ - 1));
      case AggKind::kIntegral:
        return integral_;
      case AggKind::kMedian:
      case AggKind::kPercentile:
        if (sketch_ && sketch_->count() > 0) {
          // Raw points beside tier rows (a range's ends off the tier's
          // grid) join the sketch.
          if (!vals_.empty()) {
            storage::Sketch raw;
            raw.AddValues(vals_.data(), vals_.size());
            sketch_->Add(raw);
            for (T x : vals_) TakeMinMax(x, INT64_MIN);
            vals_.clear();
          }
          return FromSketch();
        }
        break;
      case AggKind::kCountDistinct: {
        std::vector<T> v = vals_;
        std::sort(v.begin(), v.end());
        return static_cast<int64_t>(std::unique(v.begin(), v.end()) - v.begin());
      }
      default:
        break;
    }
    // Points counted but no value to rank: tier rows of NaN only (a sketch
    // does not count NaN), or rows whose block kept no sketch.
    if ((spec_.kind == AggKind::kMedian || spec_.kind == AggKind::kPercentile) && vals_.empty()) {
      return std::monostate{};
    }
    switch (spec_.kind) {
      case AggKind::kMedian: {
        const size_t n = vals_.size();
        const size_t mid = n / 2;
        std::nth_element(vals_.begin(), vals_.begin() + static_cast<ptrdiff_t>(mid), vals_.end());
        const double hi = static_cast<double>(vals_[mid]);
        if (n % 2 == 1) return hi;
        const double lo =
            static_cast<double>(*std::max_element(vals_.begin(), vals_.begin() + mid));
        return lo + (hi - lo) / 2;
      }
      case AggKind::kPercentile: {
        const size_t rank = PercentileRank(vals_.size(), spec_.percentile);
        if (!KeepTimes()) {
          std::nth_element(vals_.begin(), vals_.begin() + static_cast<ptrdiff_t>(rank),
                           vals_.end());
          return Out(vals_[rank]);
        }
        std::vector<uint32_t> order = Order();
        std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(rank), order.end(),
                         [&](uint32_t a, uint32_t b) { return Less(a, b); });
        selected_t_ = times_[order[rank]];
        return Out(vals_[order[rank]]);
      }
      case AggKind::kMode: {
        std::sort(vals_.begin(), vals_.end());
        T best = vals_[0];
        size_t best_n = 0;
        for (size_t i = 0; i < vals_.size();) {
          size_t j = i;
          while (j < vals_.size() && vals_[j] == vals_[i]) ++j;
          if (j - i > best_n) {
            best_n = j - i;
            best = vals_[i];
          }
          i = j;
        }
        return Out(best);
      }
      default:
        break;
    }
    return std::monostate{};
  }

  int64_t SelectedTime() override { return selected_t_; }

  // A quantile from tier sketches: the rank's bin value, kept within the
  // exact minimum and maximum (so p0 and p100 are exact).
  QueryValue FromSketch() const {
    const uint64_t n = sketch_->count();
    auto at = [&](uint64_t rank) {
      return std::clamp(sketch_->ValueAtRank(rank), static_cast<double>(min_),
                        static_cast<double>(max_));
    };
    if (spec_.kind == AggKind::kMedian) {
      if (n % 2 == 1) return at(n / 2);
      const double lo = at(n / 2 - 1), hi = at(n / 2);
      return lo + (hi - lo) / 2;
    }
    const double v = at(PercentileRank(n, spec_.percentile));
    if constexpr (std::is_same_v<T, double>) {
      return v;
    } else {
      return Out(static_cast<T>(std::llround(v)));
    }
  }

  void Rows(std::vector<std::pair<int64_t, QueryValue>>* out) override {
    if (spec_.kind == AggKind::kDistinct) {
      std::vector<T> v = vals_;
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      for (T x : v) out->emplace_back(INT64_MIN, Out(x));
      return;
    }
    // top / bottom: the n largest (smallest) values, earlier points first
    // among equals, answered in time order.
    std::vector<uint32_t> order = Order();
    const bool top = spec_.kind == AggKind::kTop;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (vals_[a] != vals_[b]) return top ? vals_[a] > vals_[b] : vals_[a] < vals_[b];
      return times_[a] < times_[b];
    });
    if (order.size() > static_cast<size_t>(spec_.n)) order.resize(static_cast<size_t>(spec_.n));
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return times_[a] < times_[b]; });
    for (uint32_t i : order) out->emplace_back(times_[i], Out(vals_[i]));
  }

 private:
  // Integer sums wrap like the integers they add (two's complement), as
  // InfluxDB's do; float sums are doubles.
  using Sum = std::conditional_t<std::is_same_v<T, double>, double, T>;
  static Sum Add(Sum a, T b) {
    if constexpr (std::is_same_v<T, double>) {
      return a + b;
    } else {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    }
  }
  static QueryValue Out(T v) { return QueryValue(v); }

  // Quantiles from tier rows; made on the first row (most states never
  // see one, and the accumulator is large).
  std::unique_ptr<storage::SketchAccumulator> sketch_;

  bool KeepTimes() const {
    return spec_.kind == AggKind::kTop || spec_.kind == AggKind::kBottom ||
           (spec_.kind == AggKind::kPercentile && spec_.need_time);
  }

  std::vector<uint32_t> Order() const {
    std::vector<uint32_t> order(vals_.size());
    std::iota(order.begin(), order.end(), 0u);
    return order;
  }
  bool Less(uint32_t a, uint32_t b) const {
    if (vals_[a] != vals_[b]) return vals_[a] < vals_[b];
    return times_[a] < times_[b];
  }

  void TakeMinMax(T x, int64_t t) {
    if (mm_empty_) {
      min_ = max_ = x;
      min_t_ = max_t_ = t;
      mm_empty_ = false;
      return;
    }
    if (x < min_ || (x == min_ && t < min_t_)) {
      min_ = x;
      min_t_ = t;
    }
    if (x > max_ || (x == max_ && t < max_t_)) {
      max_ = x;
      max_t_ = t;
    }
  }

  void MergeMoments(uint64_t k, double mean, double m2) {
    if (k == 0) return;
    if (mom_n_ == 0) {
      mom_n_ = k;
      mean_ = mean;
      m2_ = m2;
      return;
    }
    const double n = static_cast<double>(mom_n_), m = static_cast<double>(k);
    const double d = mean - mean_;
    mean_ += d * m / (n + m);
    m2_ += m2 + d * d * n * m / (n + m);
    mom_n_ += k;
  }

  AggSpec spec_;
  uint64_t n_ = 0;
  Sum sum_ = 0;
  double dsum_ = 0;
  bool mm_empty_ = true;
  T min_{}, max_{};
  int64_t min_t_ = 0, max_t_ = 0;
  T first_{}, last_{};
  int64_t first_t_ = 0, last_t_ = 0;
  uint64_t mom_n_ = 0;
  double mean_ = 0, m2_ = 0;
  double integral_ = 0;
  std::vector<T> vals_;
  std::vector<int64_t> times_;
  int64_t selected_t_ = INT64_MIN;
  std::optional<QueryValue> result_;  // computed once: Result may be asked again
};

// Booleans and strings: count, first, last, distinct and mode (and min/max of
// booleans). Points go one at a time; these columns are small.
class ValueState final : public AggState {
 public:
  explicit ValueState(const AggSpec& spec) : spec_(spec) {}

  void AddRange(const Column& c, size_t begin, size_t end) override {
    for (size_t i = begin; i < end; ++i) AddOne(c, i);
  }
  void AddIndexes(const Column& c, const uint32_t* idx, size_t n) override {
    for (size_t i = 0; i < n; ++i) AddOne(c, idx[i]);
  }
  void Merge(AggState* base_other) override {
    auto* o = static_cast<ValueState*>(base_other);
    for (auto& [t, v] : o->points_) Take(t, std::move(v));
    n_ += o->n_;
    for (auto& [v, k] : o->counts_) counts_[v] += k;
  }
  void AddCount(uint64_t n) override { n_ += n; }
  bool empty() const override { return n_ == 0; }
  QueryValue Result() override {
    if (spec_.kind == AggKind::kCount) return static_cast<int64_t>(n_);
    if (n_ == 0) return std::monostate{};
    if (spec_.kind == AggKind::kMode) {
      const std::pair<const QueryValue, uint64_t>* best = nullptr;
      for (const auto& e : counts_) {
        if (!best || e.second > best->second) best = &e;
      }
      return best->first;
    }
    if (spec_.kind == AggKind::kCountDistinct) return static_cast<int64_t>(counts_.size());
    // distinct answers its rows (Rows), not one value.
    if (spec_.kind == AggKind::kDistinct || points_.empty()) return std::monostate{};
    // first, last, min, max keep the one point they chose.
    selected_t_ = points_.front().first;
    return points_.front().second;
  }
  int64_t SelectedTime() override { return selected_t_; }
  void Rows(std::vector<std::pair<int64_t, QueryValue>>* out) override {
    for (const auto& e : counts_) out->emplace_back(INT64_MIN, e.first);
  }

 private:
  void AddOne(const Column& c, size_t i) {
    ++n_;
    QueryValue v;
    if (c.type == FieldType::kBool) {
      v = c.bools[i] != 0;
    } else {
      v = c.strings[i];
    }
    if (spec_.kind == AggKind::kMode || spec_.kind == AggKind::kDistinct ||
        spec_.kind == AggKind::kCountDistinct) {
      ++counts_[v];
      return;
    }
    if (spec_.kind != AggKind::kCount) Take(c.ts[i], std::move(v));
  }
  // Keeps the single point first/last/min/max would choose.
  void Take(int64_t t, QueryValue v) {
    if (points_.empty()) {
      points_.emplace_back(t, std::move(v));
      return;
    }
    auto& [ct, cv] = points_.front();
    bool better = false;
    switch (spec_.kind) {
      case AggKind::kFirst:
        better = t < ct;
        break;
      case AggKind::kLast:
        better = t > ct;
        break;
      case AggKind::kMin:
        better = v < cv || (v == cv && t < ct);
        break;
      case AggKind::kMax:
        better = v > cv || (v == cv && t < ct);
        break;
      default:
        break;
    }
    if (better) {
      ct = t;
      cv = std::move(v);
    }
  }

  AggSpec spec_;
  uint64_t n_ = 0;
  std::vector<std::pair<int64_t, QueryValue>> points_;  // at most one
  std::map<QueryValue, uint64_t> counts_;
  int64_t selected_t_ = INT64_MIN;
};

}  // namespace

std::unique_ptr<AggState> NewAggState(const AggSpec& spec) {
  switch (spec.type) {
    case FieldType::kFloat:
      return std::make_unique<NumericState<double>>(spec);
    case FieldType::kInt:
      return std::make_unique<NumericState<int64_t>>(spec);
    case FieldType::kUint:
      return std::make_unique<NumericState<uint64_t>>(spec);
    default:
      return std::make_unique<ValueState>(spec);
  }
}

}  // namespace gpulse::query
