// DECOMPOSE's accuracy on the simulator's ground truth (issue 29;
// tests/support/decompose_accuracy.h): each incident class alone in a
// 48-node fleet, its Wednesday afternoon against the Tuesday's, and a clean
// control. The true cause's loss must rank first and the top three of its
// contributors or evidence must name the incident's scope; the control must
// have no loss beyond its usual range and none backed by evidence.
//
// Each run draws a fresh seed a case (what bench/decompose_accuracy
// measures over many: docs/metric-framework.md), printed so that a failure
// can be replayed: GPULSE_ACCURACY_SEED=N runs every case with seed N. A
// failure that does not come back on another seed is still a finding about
// DECOMPOSE, not a reason to pin seeds. Slow: about 13 s a case; not run
// under the sanitizers.

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

uint64_t SeedOfThisRun() {
  if (const char* given = std::getenv("GPULSE_ACCURACY_SEED"))
    return std::strtoull(given, nullptr, 10);
  std::random_device device;
  return 1000 + device() % 1'000'000;
}

class DecomposeAccuracyTest : public ::testing::TestWithParam<const char*> {
 protected:
  // Runs the case's incident (none for "control") on a fresh seed.
  void Run(test::AccuracyResult* r) {
    const std::string kind = GetParam();
    seed_ = SeedOfThisRun();
    std::cout << "seed " << seed_ << " (replay: GPULSE_ACCURACY_SEED=" << seed_ << ")\n";
    RecordProperty("seed", std::to_string(seed_));
    const std::vector<std::string> kinds =
        kind == "control" ? std::vector<std::string>{} : std::vector<std::string>{kind};
    const Status s =
        test::RunDecomposeAccuracy(dir_.path() + "/db", kinds, kNodes, seed_, /*warmup=*/0, r);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (const auto& [loss, change] : r->losses)
      seen_ += loss + " " + std::to_string(change) + "; ";
  }
  storage::ScratchDir dir_;
  uint64_t seed_ = 0;
  std::string seen_;
};

TEST_P(DecomposeAccuracyTest, RanksTheTrueCauseFirstAndNamesItsScope) {
  test::AccuracyResult r;
  ASSERT_NO_FATAL_FAILURE(Run(&r));
  if (std::string(GetParam()) == "control") {
    std::string claims;
    for (const auto& [loss, verdict] : r.claims) claims += loss + ": " + verdict + "; ";
    EXPECT_TRUE(r.claims.empty()) << "seed " << seed_ << ", a clean fleet: " << claims << seen_;
    return;
  }
  EXPECT_EQ(r.cause_rank, 1) << "seed " << seed_ << ", " << r.incident.description << ": " << seen_;
  std::string top;
  for (const test::Contribution& c : r.top) top += c.dimension + "=" + c.value + " ";
  EXPECT_GE(r.scope_rank, 1) << "seed " << seed_ << ": " << top;
  EXPECT_LE(r.scope_rank, 3) << "seed " << seed_ << ": " << top;
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
