// alert_replay: time to detect and false pages of alert rules, measured the
// way the replay test does (tests/support/alert_replay.h) but over days: a
// simulated fleet's history is stored, then the live days arrive minute by
// minute over HTTP at an in-process server, whose rules are evaluated each
// minute. Prints every firing, each incident's time to detect, and the
// firings no incident explains (false pages).
//
//   build/bench/alert_replay [--nodes 16] [--seed 1] [--history-days 7] [--live-days 7]
//                            [--incident SPEC]... [--rule 'CREATE ALERT ...']...
//                            [--watch MINUTES]
//
// SPEC as for gpulse simulate, its offset counted from the first live day.
// Without --rule, the recommended page rules. A firing is explained when it
// begins inside an incident or in the 30 minutes after its end. --watch N
// evaluates the rules only from an hour before each incident's start to N
// minutes after it (the rest is delivered unevaluated): time to detect
// without the cost of a whole day's evaluations; its false pages are those
// of the hours watched. A control (healthy-upgrade: a new driver with no
// bug) explains no firing: each one during it is a false page, counted
// apart.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/alert_replay.h"
#include "tests/support/time_units.h"

namespace {

using namespace gpulse;

using gpulse::test::kDay;
using gpulse::test::kMinute;
constexpr int64_t kMonday = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

int Fail(const std::string& what) {
  std::fprintf(stderr, "alert_replay: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 16, history_days = 7, live_days = 7, watch = 0;
  uint64_t seed = 1;
  std::vector<std::string> incidents, rules;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Fail("missing value after " + a);
    const std::string v = argv[++i];
    if (a == "--nodes") {
      nodes = std::atoi(v.c_str());
    } else if (a == "--seed") {
      seed = std::strtoull(v.c_str(), nullptr, 10);
    } else if (a == "--history-days") {
      history_days = std::atoi(v.c_str());
    } else if (a == "--live-days") {
      live_days = std::atoi(v.c_str());
    } else if (a == "--incident") {
      incidents.push_back(v);
    } else if (a == "--rule") {
      rules.push_back(v);
    } else if (a == "--watch") {
      watch = std::atoi(v.c_str());
    } else {
      return Fail("unknown option " + a);
    }
  }
  if (rules.empty())
    rules.assign(std::begin(test::kRecommendedPageRules), std::end(test::kRecommendedPageRules));
  fleet::SimOptions options;
  options.nodes = nodes;
  options.seed = seed;
  options.days = history_days + live_days;
  options.start_ns = kMonday;
  const int64_t live = kMonday + history_days * kDay;
  for (const std::string& text : incidents) {
    fleet::IncidentRequest r;
    std::string error;
    if (!fleet::ParseIncidentRequest(text, &r, &error)) return Fail(text + ": " + error);
    r.offset_ns += history_days * kDay;
    options.incidents.push_back(r);
  }

  char dir_template[] = "/tmp/gpulse-alert-replay-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return Fail("mkdtemp failed");
  const std::string dir = dir_template;
  struct Remove {
    std::string path;
    ~Remove() { std::filesystem::remove_all(path); }
  } remove{dir};
  server::ServerConfig config;
  test::UseQuietTestDb(&config.db);
  config.db.wait_when_full = true;
  config.alerts.freshness_rule = false;
  server::ServerMetrics metrics;
  server::SourceRegistry sources;
  test::TestServer server;
  Status s = server.Start(dir, config, &metrics, &sources);
  if (!s.ok()) return Fail(s.ToString());
  test::AlertReplay replay(&server, live);
  const auto t0 = std::chrono::steady_clock::now();
  s = replay.Simulate(options);
  if (!s.ok()) return Fail(s.ToString());
  for (const std::string& rule : rules) {
    const std::string error = replay.Create(rule);
    if (!error.empty()) return Fail(error);
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<test::Firing> fired;
  // The spans evaluated: the whole live part, or with --watch the hours
  // around each incident's start.
  std::vector<std::pair<int64_t, int64_t>> watched;
  for (const fleet::Incident& inc : replay.incidents()) {
    if (watch > 0) watched.push_back({inc.start_ns - 60 * kMinute, inc.start_ns + watch * kMinute});
  }
  std::sort(watched.begin(), watched.end());
  if (watch <= 0) watched.push_back({live, live + live_days * kDay});
  int64_t evaluated = 0, at = live;
  for (int d = 0; d < live_days; ++d) {
    const int64_t day_end = live + (d + 1) * kDay;
    for (const auto& [from, to] : watched) {
      const int64_t a = std::max(from, at), b = std::min(to, day_end);
      if (a >= b) continue;
      if (at < a) s = replay.Play(at, a, false, &fired);
      if (s.ok()) s = replay.Play(a, b, true, &fired);
      if (!s.ok()) return Fail(s.ToString());
      evaluated += (b - a) / kMinute;
      at = b;
    }
    if (at < day_end) s = replay.Play(at, day_end, false, &fired);
    if (!s.ok()) return Fail(s.ToString());
    at = day_end;
    std::fprintf(stderr, "day %d of %d played, %zu firings so far\n", d + 1, live_days,
                 fired.size());
    for (const test::Firing& f : fired) {
      if (f.fired_ns < live + d * kDay) continue;
      std::fprintf(stderr, "  %s %s {%s}\n", fleet::FormatUtcTime(f.fired_ns).c_str(),
                   f.rule.c_str(), f.group.c_str());
    }
  }
  const auto t2 = std::chrono::steady_clock::now();
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::printf("%d nodes, seed %llu, %d history days, %d live days (%s to %s)\n", nodes,
              static_cast<unsigned long long>(seed), history_days, live_days,
              fleet::FormatUtcTime(live).c_str(),
              fleet::FormatUtcTime(live + live_days * kDay).c_str());
  std::printf(
      "simulated and stored in %.1f s; %d minutes played, %lld of them evaluated, in %.1f s\n",
      seconds(t0, t1), live_days * 1440, static_cast<long long>(evaluated), seconds(t1, t2));
  size_t unexplained = 0;
  for (const test::Firing& f : fired) {
    std::string because;
    for (const fleet::Incident& inc : replay.incidents()) {
      if (fleet::IsControl(inc.kind)) continue;
      if (f.fired_ns >= inc.start_ns && f.fired_ns < inc.end_ns + 30 * kMinute) {
        because = inc.name + ", " + std::to_string((f.fired_ns - inc.start_ns) / kMinute) +
                  " min after its start";
        break;
      }
    }
    if (because.empty()) {
      ++unexplained;
      because = "no incident: a false page";
    }
    std::printf("  %s %s {%s}: %s\n", fleet::FormatUtcTime(f.fired_ns).c_str(), f.rule.c_str(),
                f.group.c_str(), because.c_str());
  }
  for (const fleet::Incident& inc : replay.incidents()) {
    if (fleet::IsControl(inc.kind)) {
      size_t during = 0;
      for (const test::Firing& f : fired) {
        during += f.fired_ns >= inc.start_ns && f.fired_ns < inc.end_ns + 30 * kMinute;
      }
      std::printf("control %s (%s): %zu firings during it (false pages)\n", inc.name.c_str(),
                  fleet::FormatUtcTime(inc.start_ns).c_str(), during);
      continue;
    }
    int64_t first = -1;
    std::string by;
    for (const test::Firing& f : fired) {
      if (f.fired_ns >= inc.start_ns && f.fired_ns < inc.end_ns + 30 * kMinute) {
        first = f.fired_ns;
        by = f.rule;
        break;
      }
    }
    if (first < 0) {
      std::printf("incident %s (%s): not detected\n", inc.name.c_str(),
                  fleet::FormatUtcTime(inc.start_ns).c_str());
    } else {
      std::printf("incident %s (%s): detected after %lld min by %s\n", inc.name.c_str(),
                  fleet::FormatUtcTime(inc.start_ns).c_str(),
                  static_cast<long long>((first - inc.start_ns) / kMinute), by.c_str());
    }
  }
  std::printf("firings no incident explains: %zu\n", unexplained);
  return 0;
}
