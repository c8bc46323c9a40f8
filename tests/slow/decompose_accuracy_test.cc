// DECOMPOSE's accuracy on the simulator's ground truth (issue 29;
// tests/support/decompose_accuracy.h): each incident class alone in a
// 48-node fleet, its Wednesday afternoon against the Tuesday's, and a clean
// control. The true cause's loss must rank first and the top three of its
// contributors or evidence must name the incident's scope; the control must
// have no loss beyond its usual range and none backed by evidence.
//
// Each run draws a fresh seed a case (what bench/decompose_accuracy
// measures over many: docs/metric-framework.md), printed so that a failure
// can be replayed: GPULSE_ACCURACY_SEED=N runs every case with seed N. The
// target is a rate (95% per class and seed), and on a 48-node fleet the
// rarest class, sched-fragmentation, is found on about 9 seeds in 10: one
// seed cannot tell those apart, and a case failing one run in ten would fail
// CI's whole run as often. So a case that misses draws once more (N + 1 when
// replaying) and fails when both draws miss: about 1 run in 100 at today's
// rate, and every time when DECOMPOSE is broken for the class (at half the
// rate, one run in four). Slow: about 13 s a draw; not run under the
// sanitizers.

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "tests/support/decompose_accuracy.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

constexpr int kNodes = 48;

uint64_t FreshSeed() {
  std::random_device device;
  return 1000 + device() % 1'000'000;
}

// The first draw's seed: GPULSE_ACCURACY_SEED, or a fresh one.
uint64_t FirstSeed() {
  if (const char* given = std::getenv("GPULSE_ACCURACY_SEED"))
    return std::strtoull(given, nullptr, 10);
  return FreshSeed();
}

// The second draw's: the next when replaying, else another fresh one.
uint64_t SecondSeed(uint64_t first) {
  if (std::getenv("GPULSE_ACCURACY_SEED") != nullptr) return first + 1;
  uint64_t seed = first;
  while (seed == first) seed = FreshSeed();
  return seed;
}

class DecomposeAccuracyTest : public ::testing::TestWithParam<const char*> {
 protected:
  // Runs the case's incident (none for "control") on `seed`; an empty answer
  // when DECOMPOSE found it (or, for the control, claimed nothing), else what
  // it said instead.
  std::string Miss(uint64_t seed) {
    const std::string kind = GetParam();
    std::cout << "seed " << seed << " (replay: GPULSE_ACCURACY_SEED=" << seed << ")\n";
    const std::vector<std::string> kinds =
        kind == "control" ? std::vector<std::string>{} : std::vector<std::string>{kind};
    storage::ScratchDir dir;
    test::AccuracyResult r;
    const Status s = test::RunDecomposeAccuracy(dir.path() + "/db", kinds, kNodes, seed,
                                                /*warmup=*/0, &r);
    if (!s.ok()) return "seed " + std::to_string(seed) + ": " + s.ToString();
    std::string seen;
    for (const auto& [loss, change] : r.losses) seen += loss + " " + std::to_string(change) + "; ";
    const std::string at = "seed " + std::to_string(seed) + ", ";
    if (kind == "control") {
      if (r.claims.empty()) return "";
      std::string claims;
      for (const auto& [loss, verdict] : r.claims) claims += loss + ": " + verdict + "; ";
      return at + "a clean fleet: " + claims + seen;
    }
    if (r.cause_rank != 1) return at + r.incident.description + ", ranked " + seen;
    if (r.scope_rank < 1 || r.scope_rank > 3) {
      std::string top;
      for (const test::Contribution& c : r.top) top += c.dimension + "=" + c.value + " ";
      return at + "the scope is not in the top three: " + top;
    }
    return "";
  }
};

TEST_P(DecomposeAccuracyTest, RanksTheTrueCauseFirstAndNamesItsScope) {
  const uint64_t first = FirstSeed();
  const std::string missed = Miss(first);
  if (missed.empty()) return;
  std::cout << "missed: " << missed << "\ndrawing once more\n";
  const std::string again = Miss(SecondSeed(first));
  EXPECT_TRUE(again.empty()) << "two draws missed:\n  " << missed << "\n  " << again;
}

INSTANTIATE_TEST_SUITE_P(Incidents, DecomposeAccuracyTest,
                         ::testing::Values("hw-fault", "driver-upgrade", "framework-regression",
                                           "sched-fragmentation", "io-bottleneck",
                                           "network-degradation", "control"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace gpulse
