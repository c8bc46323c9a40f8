// decompose_accuracy: DECOMPOSE's accuracy on the simulator's ground truth,
// measured as tests/slow/decompose_accuracy_test.cc does but over many
// seeds: each incident class alone in a fleet, its window (Wednesday 12:00
// to 24:00) against the same hours of the Tuesday before. Prints, per
// incident and seed, the loss that grew most, the rank of the true cause,
// the rank of the first contributor in the incident's scope and the top
// three contributors; then the counts over all seeds.
//
//   build/bench/decompose_accuracy [--nodes 48] [--seeds 1-5] [--warmup DAYS] [--incident KIND]...

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/support/decompose_accuracy.h"

int main(int argc, char** argv) {
  int nodes = 48, warmup = 0;
  uint64_t first_seed = 1, last_seed = 5;
  std::vector<std::string> kinds;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--nodes" && value != nullptr) {
      nodes = std::atoi(value);
    } else if (arg == "--seeds" && value != nullptr) {
      const std::string v = value;
      const size_t dash = v.find('-');
      first_seed = std::strtoull(v.c_str(), nullptr, 10);
      last_seed =
          dash == std::string::npos ? first_seed : std::strtoull(v.c_str() + dash + 1, nullptr, 10);
    } else if (arg == "--warmup" && value != nullptr) {
      warmup = std::atoi(value);
    } else if (arg == "--incident" && value != nullptr) {
      kinds.push_back(value);
    } else {
      std::fprintf(stderr,
                   "usage: decompose_accuracy [--nodes 48] [--seeds 1-5] [--warmup DAYS] "
                   "[--incident KIND]...\n");
      return 2;
    }
    ++i;
  }
  if (kinds.empty())
    kinds.assign(std::begin(gpulse::test::kAccuracyIncidents),
                 std::end(gpulse::test::kAccuracyIncidents));
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("gpulse-decompose-accuracy-" + std::to_string(::getpid())))
                              .string();
  std::map<std::string, std::pair<int, int>> tally;  // kind: cause first, scope in the top three
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& kind : kinds) {
    for (uint64_t seed = first_seed; seed <= last_seed; ++seed) {
      std::filesystem::remove_all(dir);
      gpulse::test::AccuracyResult r;
      const gpulse::Status s =
          gpulse::test::RunDecomposeAccuracy(dir, kind, nodes, seed, warmup, &r);
      if (!s.ok()) {
        std::fprintf(stderr, "%s seed %llu: %s\n", kind.c_str(),
                     static_cast<unsigned long long>(seed), s.ToString().c_str());
        return 1;
      }
      std::string top;
      for (size_t k = 0; k < r.top.size() && k < 3; ++k)
        top += (k > 0 ? ", " : "") + r.top[k].dimension + "=" + r.top[k].value;
      std::printf(
          "%-20s seed %-3llu first %-10s %+6.2f  cause %-10s rank %d %+6.2f  scope %d  [%s]\n",
          kind.c_str(), static_cast<unsigned long long>(seed),
          r.losses.empty() ? "-" : r.losses[0].first.c_str(),
          r.losses.empty() ? 0.0 : r.losses[0].second, r.incident.cause_class.c_str(), r.cause_rank,
          r.cause_rank > 0 ? r.losses[static_cast<size_t>(r.cause_rank - 1)].second : 0.0,
          r.scope_rank, top.c_str());
      std::fflush(stdout);
      auto& [first, scoped] = tally[kind];
      first += r.cause_rank == 1;
      scoped += r.scope_rank >= 1 && r.scope_rank <= 3;
    }
  }
  std::filesystem::remove_all(dir);
  const uint64_t seeds = last_seed - first_seed + 1;
  std::printf("\n%-20s  cause first  scope in top 3  (of %llu seeds, %d nodes)\n", "incident",
              static_cast<unsigned long long>(seeds), nodes);
  for (const auto& [kind, counts] : tally)
    std::printf("%-20s  %11d  %14d\n", kind.c_str(), counts.first, counts.second);
  std::printf("%.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}
