// IsolationForest (isolation_forest.h).

#include "query/fleet/isolation_forest.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

namespace gpulse::query {

namespace {

// c(n): the average path length of an unsuccessful search in a binary
// search tree of n points, 2 H(n - 1) - 2 (n - 1) / n.
double AveragePath(double n) {
  if (n <= 1) return 0;
  if (n == 2) return 1;
  constexpr double kEulerGamma = 0.5772156649015329;
  return 2 * (std::log(n - 1) + kEulerGamma) - 2 * (n - 1) / n;
}

}  // namespace

IsolationForest::IsolationForest(const std::vector<std::vector<double>>& rows, Options options) {
  const size_t n = rows.size();
  if (n < 2) return;  // nothing to isolate from: every score is 0.5 (norm_ stays 1, no trees)
  const size_t sample = std::min(n, static_cast<size_t>(std::max(2, options.subsample)));
  const int max_depth = static_cast<int>(std::ceil(std::log2(static_cast<double>(sample))));
  norm_ = AveragePath(static_cast<double>(sample));
  std::mt19937_64 rng(options.seed);
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  trees_.resize(static_cast<size_t>(std::max(1, options.trees)));
  for (Tree& tree : trees_) {
    // A subsample without replacement: the first `sample` of a partial shuffle.
    for (size_t i = 0; i < sample; ++i) {
      std::uniform_int_distribution<size_t> pick(i, n - 1);
      std::swap(all[i], all[pick(rng)]);
    }
    std::vector<size_t> idx(all.begin(), all.begin() + static_cast<ptrdiff_t>(sample));
    Grow(rows, &idx, 0, sample, 0, max_depth, &rng, &tree);
  }
}

int IsolationForest::Grow(const std::vector<std::vector<double>>& rows, std::vector<size_t>* idx,
                          size_t begin, size_t end, int depth, int max_depth, std::mt19937_64* rng,
                          Tree* tree) {
  const int at = static_cast<int>(tree->size());
  tree->emplace_back();
  (*tree)[static_cast<size_t>(at)].size = static_cast<int>(end - begin);
  if (end - begin <= 1 || depth >= max_depth) return at;
  // A feature that still separates these points, chosen at random.
  const size_t dims = rows[(*idx)[begin]].size();
  std::vector<std::pair<size_t, std::pair<double, double>>> spread;
  for (size_t f = 0; f < dims; ++f) {
    double lo = rows[(*idx)[begin]][f], hi = lo;
    for (size_t i = begin + 1; i < end; ++i) {
      lo = std::min(lo, rows[(*idx)[i]][f]);
      hi = std::max(hi, rows[(*idx)[i]][f]);
    }
    if (hi > lo) spread.push_back({f, {lo, hi}});
  }
  if (spread.empty()) return at;  // identical points: a leaf of several
  std::uniform_int_distribution<size_t> which(0, spread.size() - 1);
  const auto& [feature, bounds] = spread[which(*rng)];
  // lo + u (hi - lo), which stays finite where hi - lo would not (near +-1e308).
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double u = unit(*rng);
  double split = bounds.first + u * (bounds.second - bounds.first);
  if (!std::isfinite(split)) split = bounds.first * (1 - u) + bounds.second * u;
  const auto middle = std::partition(idx->begin() + static_cast<ptrdiff_t>(begin),
                                     idx->begin() + static_cast<ptrdiff_t>(end),
                                     [&](size_t r) { return rows[r][feature] < split; });
  const size_t mid = static_cast<size_t>(middle - idx->begin());
  const int left = Grow(rows, idx, begin, mid, depth + 1, max_depth, rng, tree);
  const int right = Grow(rows, idx, mid, end, depth + 1, max_depth, rng, tree);
  Node& node = (*tree)[static_cast<size_t>(at)];
  node.feature = static_cast<int>(feature);
  node.split = split;
  node.left = left;
  node.right = right;
  return at;
}

double IsolationForest::PathLength(const Tree& tree, const std::vector<double>& x) const {
  int at = 0;
  double depth = 0;
  while (tree[static_cast<size_t>(at)].feature >= 0) {
    const Node& node = tree[static_cast<size_t>(at)];
    at = x[static_cast<size_t>(node.feature)] < node.split ? node.left : node.right;
    ++depth;
  }
  return depth + AveragePath(tree[static_cast<size_t>(at)].size);
}

double IsolationForest::Score(const std::vector<double>& x) const {
  if (norm_ <= 0 || trees_.empty()) return 0.5;
  double total = 0;
  for (const Tree& tree : trees_) total += PathLength(tree, x);
  return std::pow(2.0, -(total / static_cast<double>(trees_.size())) / norm_);
}

}  // namespace gpulse::query
