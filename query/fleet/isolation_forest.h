// An isolation forest (Liu, Ting and Zhou, 2008): anomalies are the points
// that random axis-parallel cuts isolate quickly. Each tree is grown on a
// random subsample by cutting a random feature at a uniform point between
// its minimum and maximum, to a depth of log2(subsample); a point's score is
// 2^(-E[h(x)] / c(n)), where h is its path length (plus the expected length
// c(size) of the unbuilt subtree at its leaf) and c(n) the average path of
// an unsuccessful search in a binary search tree of n points. About 0.5 is
// ordinary; near 1 is isolated at once. The cuts are scale-free, so the
// features need no normalising. Deterministic for a seed.
//
// Thread safety: a fitted forest is immutable.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace gpulse::query {

class IsolationForest {
 public:
  struct Options {
    int trees = 100;
    int subsample = 256;
    uint64_t seed = 1;
  };

  // `rows`: n points of the same dimension (n >= 2).
  IsolationForest(const std::vector<std::vector<double>>& rows, Options options);

  double Score(const std::vector<double>& x) const;

 private:
  struct Node {
    int feature = -1;  // -1: a leaf
    double split = 0;
    int left = -1, right = -1;
    int size = 0;  // points that reached the leaf
  };
  using Tree = std::vector<Node>;

  // Grows the subtree over rows[idx[begin, end)] into *tree; returns its index.
  static int Grow(const std::vector<std::vector<double>>& rows, std::vector<size_t>* idx,
                  size_t begin, size_t end, int depth, int max_depth, std::mt19937_64* rng,
                  Tree* tree);
  double PathLength(const Tree& tree, const std::vector<double>& x) const;

  std::vector<Tree> trees_;
  double norm_ = 1;  // c(subsample)
};

}  // namespace gpulse::query
