// `gpulse demo`: the first thing a newcomer runs. A week of a small fleet
// (two regions, 16 nodes of 8 GPUs) with two incidents, simulated into the
// data directory (shell/simulate.cc), then the first questions to ask it,
// as the exact commands that ask them. Nothing else is started.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/syntax/time_literal.h"
#include "shell/commands.h"
#include "shell/simulate.h"

namespace gpulse::cli {

namespace {

constexpr const char* kUsage =
    "Usage: gpulse demo [--data DIR]\n"
    "\n"
    "Simulates a week of a small GPU fleet (2 regions, 16 nodes x 8 GPUs, about\n"
    "30,000 jobs) with three incidents, a driver upgrade that makes jobs fail, a\n"
    "node running hot and a node's agent gone quiet in the last hours, into DIR\n"
    "(default ./gpulse-data), and prints the questions\n"
    "to ask it. Run again, it prints the questions without simulating again.\n"
    "`gpulse simulate --help` makes bigger fleets and other incidents.\n";

// The incidents' times come from the ground truth, so the questions work on
// whatever day the demo was made.
struct DemoTimes {
  std::string start, end;                  // the week
  std::string upgrade_start, upgrade_end;  // driver-upgrade-1
  std::string hot_start, hot_end;          // thermal-1
  // DECOMPOSE's windows: the working day before the upgrade (a weekend's
  // quiet would swamp the driver's crashes), and its first day.
  std::string day_before, day_before_end, upgrade_day_end;
};

bool ReadTimes(const std::string& truth_path, DemoTimes* t) {
  std::ifstream in(truth_path);
  if (!in) return false;
  const auto truth = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (truth.is_discarded() || !truth.contains("incidents")) return false;
  t->start = truth.value("start", "");
  t->end = truth.value("end", "");
  for (const auto& inc : truth["incidents"]) {
    const std::string kind = inc.value("kind", "");
    if (kind == "driver-upgrade") {
      t->upgrade_start = inc.value("start", "");
      t->upgrade_end = inc.value("end", "");
    } else if (kind == "thermal") {
      t->hot_start = inc.value("start", "");
      t->hot_end = inc.value("end", "");
    }
  }
  int64_t upgrade = 0;
  if (t->start.empty() || t->hot_start.empty() ||
      !query::ParseTimeLiteral(t->upgrade_start, &upgrade)) {
    return false;
  }
  constexpr int64_t kDayNs = 86400LL * 1'000'000'000;
  int64_t before = upgrade - kDayNs;
  while ((before / kDayNs + 3) % 7 >= 5) before -= kDayNs;  // 1970-01-01: a Thursday
  t->day_before = fleet::FormatUtcTime(before);
  t->day_before_end = fleet::FormatUtcTime(before + kDayNs);
  t->upgrade_day_end = fleet::FormatUtcTime(upgrade + kDayNs);
  return true;
}

void PrintQuestions(const std::string& dir, const DemoTimes& t) {
  const std::string q = "gpulse query --data " + dir + " ";
  std::printf(
      "\nThe week runs from %s to %s. Ask it:\n"
      "\n"
      "  What is in there?\n"
      "    %s\"SHOW MEASUREMENTS\"\n"
      "    %s\"SHOW TAG VALUES FROM gpu WITH KEY = node\"\n"
      "\n"
      "  What share of the GPU-minutes was productive (goodput), and where did the rest go?\n"
      "  Per region and day (docs/metric-framework.md):\n"
      "    %s\"NORTHSTAR BY region WHERE time >= '%s' AND time < '%s' EVERY 1d\"\n"
      "\n"
      "  Why did goodput move on the upgrade's first day? (against the working day before it)\n"
      "    %s\"DECOMPOSE NORTHSTAR BETWEEN '%s' AND '%s' VERSUS '%s' AND '%s'\"\n"
      "\n"
      "  Was that day's utilisation unusual for its hours? (the same hours of the days before)\n"
      "    %s\"SELECT BASELINE(mean(util), 7d) FROM gpu WHERE time >= '%s' AND time < '%s' GROUP "
      "BY time(1h)\"\n"
      "\n"
      "  Which agents, GPUs or allocations had gone quiet as the week ended?\n"
      "    %s\"SHOW STALE 15m WHERE time <= '%s'\"\n"
      "\n"
      "  How busy were the GPUs, per region and day? (the weekend is quieter)\n"
      "    %s\"SELECT mean(util), p95(util) FROM gpu GROUP BY region, time(1d)\"\n"
      "\n"
      "  Did more jobs fail on some days? (a driver upgrade reached half a cluster on %s)\n"
      "    %s\"SELECT count(job) FROM sched WHERE event = 'ended' AND status = 'failed' GROUP BY "
      "time(1d)\"\n"
      "\n"
      "  Which nodes saw the crashes? (XID 13: a CUDA program died)\n"
      "    %s\"SELECT count(xid) FROM gpu WHERE xid = 13 AND time >= '%s' AND time < '%s' GROUP BY "
      "node\"\n"
      "\n"
      "  And which driver did those nodes run?\n"
      "    %s\"SELECT count(healthy) FROM node WHERE time >= '%s' AND time < '%s' GROUP BY "
      "driver_version\"\n"
      "\n"
      "  Which GPUs ran hot, and did their clocks drop? (a thermal event, %s to %s)\n"
      "    %s\"SELECT max(temp), min(sm_clock) FROM gpu WHERE temp > 85 AND time >= '%s' AND time "
      "< '%s' GROUP BY node, gpu\"\n"
      "\n"
      "  GPU-hours per team on each day (job is a string field, not a tag):\n"
      "    %s\"SELECT count(job) / 60 AS gpu_hours FROM gpu GROUP BY team, time(1d)\"\n"
      "\n"
      "  Or explore with completion and history:\n"
      "    gpulse shell --data %s\n"
      "\n"
      "  Or look at it: goodput, why it moved, alerts, nodes, in the console:\n"
      "    gpulse serve --data %s      then open http://127.0.0.1:8086/\n"
      "\n"
      "The ground truth of the incidents is in %s/simulation-truth.json; docs/fleet-schema.md\n"
      "describes every measurement.\n",
      t.start.c_str(), t.end.c_str(), q.c_str(), q.c_str(), q.c_str(), t.start.c_str(),
      t.end.c_str(), q.c_str(), t.day_before.c_str(), t.day_before_end.c_str(),
      t.upgrade_start.c_str(), t.upgrade_day_end.c_str(), q.c_str(), t.upgrade_start.c_str(),
      t.upgrade_day_end.c_str(), q.c_str(), t.end.c_str(), q.c_str(), t.upgrade_start.c_str(),
      q.c_str(), q.c_str(), t.upgrade_start.c_str(), t.upgrade_end.c_str(), q.c_str(),
      t.upgrade_start.c_str(), t.upgrade_end.c_str(), t.hot_start.c_str(), t.hot_end.c_str(),
      q.c_str(), t.hot_start.c_str(), t.hot_end.c_str(), q.c_str(), dir.c_str(), dir.c_str(),
      dir.c_str());
}

}  // namespace

int RunDemo(const std::vector<std::string>& args) {
  std::string dir = "./gpulse-data";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (args[i] == "--data" && i + 1 < args.size()) {
      dir = args[++i];
    } else {
      std::fprintf(stderr, "gpulse demo: unknown argument '%s'\n%s", args[i].c_str(), kUsage);
      return 2;
    }
  }
  SimulateArgs a;
  a.data = dir;
  a.truth = dir + "/simulation-truth.json";
  a.sim.regions = 2;
  a.sim.nodes = 16;
  a.sim.gpus_per_node = 8;
  a.sim.days = 7;
  a.sim.seed = 42;
  a.sim.start_ns = DefaultSimulationStart(a.sim.days);
  // The driver upgrade lands on the first working day from the fourth day
  // on (a weekend has too few jobs to show it), the thermal event a day later.
  const int64_t kDayNs = 86400LL * 1'000'000'000;
  int day = 3;
  while (day < 5 && ((a.sim.start_ns / kDayNs + day) % 7 + 3) % 7 >= 5)
    ++day;  // 1970-01-01: a Thursday
  a.sim.incidents.resize(3);
  a.sim.incidents[0].kind = fleet::IncidentKind::kDriverUpgrade;
  a.sim.incidents[0].offset_ns = day * kDayNs;
  a.sim.incidents[0].duration_ns = 36 * kDayNs / 24;
  a.sim.incidents[1].kind = fleet::IncidentKind::kThermal;
  a.sim.incidents[1].offset_ns = (day + 1) * kDayNs + 9 * kDayNs / 24;
  a.sim.incidents[1].duration_ns = 8 * kDayNs / 24;
  // An agent that stops reporting three hours before the week ends: what
  // SHOW STALE finds at its end.
  a.sim.incidents[2].kind = fleet::IncidentKind::kSilentAgent;
  a.sim.incidents[2].offset_ns = a.sim.days * kDayNs - 3 * kDayNs / 24;
  a.sim.incidents[2].duration_ns = 3 * kDayNs / 24;

  DemoTimes times;
  std::error_code ec;
  if (std::filesystem::exists(a.truth, ec)) {
    if (!ReadTimes(a.truth, &times)) {
      std::fprintf(stderr,
                   "gpulse demo: %s is not the demo's; pass --data with another directory\n",
                   a.truth.c_str());
      return 1;
    }
    std::printf("%s already holds the demo fleet (remove the directory to make it again).\n",
                dir.c_str());
    PrintQuestions(dir, times);
    return 0;
  }
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
    std::fprintf(stderr,
                 "gpulse demo: %s already holds data; the demo writes a fresh directory (pass "
                 "--data NEW_DIR)\n",
                 dir.c_str());
    return 1;
  }
  SimulationReport report;
  const Status s = RunSimulation(a, &report, isatty(STDERR_FILENO) != 0);
  if (!s.ok()) {
    std::fprintf(stderr, "gpulse demo: %s\n", s.ToString().c_str());
    return 1;
  }
  PrintSimulationReport(a, report);
  if (!ReadTimes(a.truth, &times)) {
    std::fprintf(stderr, "gpulse demo: cannot read back %s\n", a.truth.c_str());
    return 1;
  }
  PrintQuestions(dir, times);
  return 0;
}

}  // namespace gpulse::cli
