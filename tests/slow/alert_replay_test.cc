// Time to detect, measured on a running server: a simulated week of history
// is stored, then the incident day arrives minute by minute over HTTP while
// the alert rules are evaluated each minute, as gpulse serve does. The
// page-level rules of docs/metric-framework.md must fire within 15 minutes
// of an incident's start (a thermal event on one node; a bad driver upgrade,
// by its goodput drop or its failures as a rollout), and not before it; a
// healthy driver rollout (the simulator's control) pages nothing.

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>

#include "tests/support/alert_replay.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
using gpulse::test::kMinute;
constexpr int64_t kMonday = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

class AlertReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::UseQuietTestDb(&config_.db);
    config_.db.wait_when_full = true;  // the history is stored directly, as fast as it comes
    config_.alerts.freshness_rule = false;
    ASSERT_TRUE(server_.Start(dir_.path(), config_, &metrics_, &sources_).ok());
  }

  storage::ScratchDir dir_;
  server::ServerConfig config_;
  server::ServerMetrics metrics_;
  server::SourceRegistry sources_;
  test::TestServer server_;
};

// 16 nodes from Monday 2026-11-02 for eight days, seed 7, with `incidents`.
fleet::SimOptions EightDays(std::initializer_list<const char*> incidents) {
  fleet::SimOptions options;
  options.nodes = 16;
  options.days = 8;
  options.seed = 7;
  options.start_ns = kMonday;
  for (const char* text : incidents) {
    fleet::IncidentRequest r;
    std::string error;
    EXPECT_TRUE(fleet::ParseIncidentRequest(text, &r, &error)) << error;
    options.incidents.push_back(r);
  }
  return options;
}

TEST_F(AlertReplayTest, PageRulesFireWithinFifteenMinutesOfTheIncident) {
  // Monday 2026-11-09: a node overheats at 02:00; a driver upgrade at 10:00.
  const fleet::SimOptions options = EightDays({"thermal@7d2h/4h", "driver-upgrade@7d10h/6h"});
  const int64_t day = kMonday + 7 * kDay;
  test::AlertReplay replay(&server_, day + 1 * kHour);
  ASSERT_TRUE(replay.Simulate(options).ok());
  ASSERT_EQ(replay.incidents().size(), 2u);
  for (const char* rule : test::kRecommendedPageRules) ASSERT_EQ(replay.Create(rule), "");

  const fleet::Incident& thermal = replay.incidents()[0];
  const fleet::Incident& upgrade = replay.incidents()[1];
  ASSERT_EQ(thermal.start_ns, day + 2 * kHour);
  ASSERT_EQ(upgrade.start_ns, day + 10 * kHour);

  auto report = [](const std::vector<test::Firing>& fired) {
    std::string out;
    for (const test::Firing& f : fired) {
      out += f.rule + " {" + f.group + "} at " + fleet::FormatUtcTime(f.fired_ns) + "\n";
    }
    return out;
  };
  auto play = [&](int64_t from, int64_t to, bool evaluate = true) {
    std::vector<test::Firing> fired;
    const Status s = replay.Play(from, to, evaluate, &fired);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return fired;
  };
  // An hour before the thermal event: nothing pages.
  std::vector<test::Firing> fired = play(day + 1 * kHour, thermal.start_ns);
  EXPECT_TRUE(fired.empty()) << report(fired);
  fired = play(thermal.start_ns, thermal.start_ns + 30 * kMinute);
  ASSERT_FALSE(fired.empty()) << "the thermal event was not detected";
  EXPECT_EQ(fired[0].rule, "thermal_node") << report(fired);
  EXPECT_EQ(fired[0].group, "node=" + thermal.nodes.at(0)) << report(fired);
  const int64_t thermal_ttd = fired[0].fired_ns - thermal.start_ns;
  EXPECT_LE(thermal_ttd, 15 * kMinute) << report(fired);
  std::printf("time to detect, thermal event: %lld min\n",
              static_cast<long long>(thermal_ttd / kMinute));

  // The hours between are delivered without evaluation, then an hour before
  // the upgrade is watched.
  play(thermal.start_ns + 30 * kMinute, upgrade.start_ns - kHour, false);
  fired = play(upgrade.start_ns - kHour, upgrade.start_ns);
  for (const test::Firing& f : fired) {
    EXPECT_NE(f.rule, "goodput_drop") << report(fired);
    EXPECT_NE(f.rule, "bad_rollout") << report(fired);
  }
  fired = play(upgrade.start_ns, upgrade.start_ns + 30 * kMinute);
  std::erase_if(fired, [](const test::Firing& f) {
    return f.rule != "goodput_drop" && f.rule != "bad_rollout";
  });
  ASSERT_FALSE(fired.empty()) << "the driver upgrade was not detected";
  const int64_t upgrade_ttd = fired[0].fired_ns - upgrade.start_ns;
  EXPECT_LE(upgrade_ttd, 15 * kMinute) << report(fired);
  // The rollout rule names the driver that fails.
  const auto rollout = std::find_if(fired.begin(), fired.end(),
                                    [](const test::Firing& f) { return f.rule == "bad_rollout"; });
  ASSERT_NE(rollout, fired.end()) << report(fired);
  EXPECT_EQ(rollout->group, "driver_version=" + upgrade.driver_version) << report(fired);
  std::printf("time to detect, driver upgrade: %lld min (%s)\n",
              static_cast<long long>(upgrade_ttd / kMinute), report(fired).c_str());
}

// The control: half a cluster moves to a new driver that works as well as
// the old one. The rollout rule watches the new cohort from its first
// minute and must not page on it, nor must the others.
TEST_F(AlertReplayTest, AHealthyDriverRolloutPagesNothing) {
  const fleet::SimOptions options = EightDays({"healthy-upgrade@7d10h"});
  const int64_t day = kMonday + 7 * kDay;
  test::AlertReplay replay(&server_, day + 9 * kHour);
  ASSERT_TRUE(replay.Simulate(options).ok());
  ASSERT_EQ(replay.incidents().size(), 1u);
  const fleet::Incident& upgrade = replay.incidents()[0];
  ASSERT_EQ(upgrade.start_ns, day + 10 * kHour);
  ASSERT_FALSE(upgrade.nodes.empty());
  for (const char* rule : test::kRecommendedPageRules) ASSERT_EQ(replay.Create(rule), "");

  std::vector<test::Firing> fired;
  Status s = replay.Play(day + 9 * kHour, upgrade.start_ns, false, &fired);
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = replay.Play(upgrade.start_ns, upgrade.start_ns + 3 * kHour, true, &fired);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::string report;
  for (const test::Firing& f : fired) {
    report += f.rule + " {" + f.group + "} at " + fleet::FormatUtcTime(f.fired_ns) + "\n";
  }
  EXPECT_TRUE(fired.empty()) << report;
}

}  // namespace
}  // namespace gpulse
