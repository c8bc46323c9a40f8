// The fleet simulator (ingest/fleet_sim.h): the same seed gives the same
// points whatever the thread count; each incident leaves the marks in the
// telemetry that the metric operators will look for, inside its window and
// scope only; the ground truth says what happened; the line protocol it
// writes reads back; and `gpulse simulate` loads a directory with its tiers.

#include "ingest/fleet_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "ingest/line_protocol.h"
#include "ingest/lp_format.h"
#include "query/query.h"
#include "tests/support/run_gpulse.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/store_fault_env.h"
#include "tests/support/test_server.h"
#include "tests/support/time_units.h"

namespace gpulse::fleet {
namespace {

constexpr int64_t kStart = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z, a Monday
using gpulse::test::kDay;
using gpulse::test::kMinute;
class VisitSink final : public PointSink {
 public:
  explicit VisitSink(std::function<void(const PointRef&)> fn) : fn_(std::move(fn)) {}
  Status Write(std::span<const PointRef> points) override {
    std::lock_guard lock(mutex_);
    for (const PointRef& p : points) fn_(p);
    return Status::Ok();
  }

 private:
  std::function<void(const PointRef&)> fn_;
  std::mutex mutex_;
};

std::string_view TagOf(const PointRef& p, std::string_view key) {
  for (const TagRef& t : p.tags) {
    if (t.key == key) return t.value;
  }
  return {};
}

template <typename T>
std::optional<T> FieldOf(const PointRef& p, std::string_view key) {
  for (const FieldRef& f : p.fields) {
    if (f.key == key && std::holds_alternative<T>(f.value)) return std::get<T>(f.value);
  }
  return std::nullopt;
}

SimOptions Small(std::vector<std::string> incidents = {}) {
  SimOptions o;
  o.regions = 2;
  o.nodes = 16;
  o.days = 2;
  o.seed = 7;
  o.start_ns = kStart;
  for (const std::string& text : incidents) {
    IncidentRequest r;
    std::string error;
    EXPECT_TRUE(ParseIncidentRequest(text, &r, &error)) << text << ": " << error;
    o.incidents.push_back(r);
  }
  return o;
}

std::unique_ptr<Simulator> Make(const SimOptions& o) {
  std::unique_ptr<Simulator> sim;
  const Status s = Simulator::Create(o, &sim);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return sim;
}

void EmitAll(const Simulator& sim, const std::function<void(const PointRef&)>& fn,
             int threads = 2) {
  VisitSink sink(fn);
  ASSERT_TRUE(sim.Emit(&sink, threads, {}, nullptr).ok());
}

bool In(int64_t ts, int64_t from, int64_t to) { return ts >= from && ts < to; }

// Every point as line protocol, sorted: what a run wrote, in a comparable form.
std::vector<std::string> AllLines(const Simulator& sim, int threads) {
  std::vector<std::string> lines;
  EmitAll(
      sim,
      [&](const PointRef& p) {
        std::string line;
        ingest::AppendLineProtocol(p, &line);
        lines.push_back(std::move(line));
      },
      threads);
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(FleetSimTest, TheSameSeedGivesTheSamePointsWhateverTheThreadCount) {
  SimOptions o = Small({"thermal@12h/6h", "driver-upgrade@6h"});
  o.days = 1;
  o.nodes = 6;
  const auto one = AllLines(*Make(o), 1);
  const auto three = AllLines(*Make(o), 3);
  ASSERT_GT(one.size(), 6u * 8 * 1440);
  EXPECT_TRUE(one == three);
  o.seed = 8;
  EXPECT_FALSE(one == AllLines(*Make(o), 1));
}

TEST(FleetSimTest, EveryGpuReportsEveryMinuteInTheFleetSchema) {
  const auto sim = Make(Small());
  std::map<std::string, uint64_t> per_measurement;
  std::set<std::string> gpu_fields;
  uint64_t attributed = 0;
  EmitAll(*sim, [&](const PointRef& p) {
    ++per_measurement[std::string(p.measurement)];
    if (p.measurement != "gpu") return;
    for (const FieldRef& f : p.fields) gpu_fields.insert(std::string(f.key));
    attributed += FieldOf<std::string_view>(p, "job").has_value();
    EXPECT_EQ(p.timestamp_ns % kMinute, 0);
    EXPECT_EQ(p.tags.size(), 5u);  // cluster, gpu, node, region, sku
  });
  const uint64_t minutes = 2 * 1440;
  EXPECT_EQ(per_measurement["gpu"], 16u * 8 * minutes);
  EXPECT_EQ(per_measurement["node"], 16u * minutes);
  EXPECT_EQ(per_measurement["link"], 16u * minutes);
  EXPECT_GT(per_measurement["job_step"], minutes);
  EXPECT_GT(per_measurement["sched"],
            3u * 2 * 3000);  // submitted, started, ended for ~3,700 jobs a day
  EXPECT_GT(per_measurement["job"], 2u * 3000);
  EXPECT_GT(per_measurement["cost"], 0u);
  for (const char* f : {"util",
                        "sm_active",
                        "tensor_active",
                        "fb_used",
                        "power",
                        "temp",
                        "sm_clock",
                        "xid",
                        "ecc_sbe_total",
                        "ecc_dbe_total",
                        "throttle_reasons",
                        "nvlink_bps",
                        "pcie_rx_bps",
                        "pcie_tx_bps",
                        "nvlink_crc_errors_total",
                        "pcie_replay_total",
                        "job",
                        "user",
                        "team",
                        "workload_class"}) {
    EXPECT_TRUE(gpu_fields.count(f)) << f;
  }
  // Allocation is substantial but not total: the fleet is busy, not saturated.
  const double share = static_cast<double>(attributed) / per_measurement["gpu"];
  EXPECT_GT(share, 0.4);
  EXPECT_LT(share, 0.98);
  EXPECT_NEAR(static_cast<double>(sim->summary().allocated_gpu_minutes) /
                  sim->summary().capacity_gpu_minutes,
              share, 0.02);
}

TEST(FleetSimTest, WeekdayRetrainsPeakAtTwoLocalAndWeekendsAreQuieter) {
  SimOptions o = Small();
  o.days = 7;
  o.regions = 1;  // us-east: UTC-5, so 02:00 local is 07:00Z
  o.nodes = 8;
  std::map<int, int> retrains_by_hour;
  std::map<int, int> submissions_by_day;
  EmitAll(*Make(o), [&](const PointRef& p) {
    if (p.measurement != "sched" || TagOf(p, "event") != "submitted") return;
    const int64_t into = p.timestamp_ns - kStart;
    ++submissions_by_day[static_cast<int>(into / kDay)];
    if (FieldOf<std::string_view>(p, "workload_class") == "retrain")
      ++retrains_by_hour[static_cast<int>(into % kDay / (60 * kMinute))];
  });
  ASSERT_EQ(retrains_by_hour.size(), 1u);
  EXPECT_EQ(retrains_by_hour.begin()->first, 7);
  // Monday to Friday against Saturday and Sunday (days 5 and 6).
  const double weekday =
      (submissions_by_day[1] + submissions_by_day[2] + submissions_by_day[3]) / 3.0;
  const double weekend = (submissions_by_day[5] + submissions_by_day[6]) / 2.0;
  EXPECT_GT(weekday, 1.8 * weekend);
}

TEST(FleetSimTest, ThermalThrottlingStaysOnItsNodeAndWindow) {
  const auto sim = Make(Small({"thermal@1d/6h:eu-west-c0-n002"}));
  const int64_t from = kStart + kDay, to = from + 6 * 60 * kMinute;
  int hot_in = 0, hot_out = 0, minutes_in = 0;
  EmitAll(*sim, [&](const PointRef& p) {
    if (p.measurement != "gpu") return;
    const bool hot = (*FieldOf<int64_t>(p, "throttle_reasons") & 0x40) != 0 &&
                     *FieldOf<int64_t>(p, "temp") >= 85;
    if (TagOf(p, "node") == "eu-west-c0-n002" && In(p.timestamp_ns, from, to)) {
      ++minutes_in;
      hot_in += hot;
    } else {
      hot_out += hot;
    }
  });
  EXPECT_EQ(minutes_in, 8 * 360);
  EXPECT_EQ(hot_in, minutes_in);
  EXPECT_EQ(hot_out, 0);
}

TEST(FleetSimTest, HardwareFaultsRaiseXidsAndKillJobsOnTheirGpus) {
  const auto sim = Make(Small({"hw-fault@1d/12h:us-east-c0-n001/3+us-east-c0-n004/0"}));
  const int64_t from = kStart + kDay, to = from + 12 * 60 * kMinute;
  std::set<std::string> xid_gpus;
  int64_t max_dbe = 0;
  int hardware_failures = 0;
  EmitAll(*sim, [&](const PointRef& p) {
    if (p.measurement == "gpu") {
      const int64_t xid = *FieldOf<int64_t>(p, "xid");
      if (xid == 48 || xid == 79) {
        EXPECT_TRUE(In(p.timestamp_ns, from, to));
        xid_gpus.insert(std::string(TagOf(p, "node")) + "/" + std::string(TagOf(p, "gpu")));
      }
      max_dbe = std::max(max_dbe, *FieldOf<int64_t>(p, "ecc_dbe_total"));
    }
    if (p.measurement == "sched" && FieldOf<std::string_view>(p, "reason") == "hardware" &&
        In(p.timestamp_ns, from, to + kMinute)) {
      ++hardware_failures;
    }
  });
  EXPECT_EQ(xid_gpus, (std::set<std::string>{"us-east-c0-n001/3", "us-east-c0-n004/0"}));
  EXPECT_GT(max_dbe, 0);
  EXPECT_GE(hardware_failures, 5);
  ASSERT_EQ(sim->incidents().size(), 1u);
  EXPECT_EQ(sim->incidents()[0].cause_class, "hardware");
  EXPECT_EQ(sim->incidents()[0].gpus,
            (std::vector<std::string>{"us-east-c0-n001/3", "us-east-c0-n004/0"}));
}

TEST(FleetSimTest, ADriverUpgradeRaisesSoftwareFailuresOnItsCohortOnly) {
  const auto sim = Make(
      Small({"driver-upgrade@1d:us-east-c0-n000+us-east-c0-n001+us-east-c0-n002+us-east-c0-n003"}));
  const auto& cohort = sim->incidents()[0].nodes;
  ASSERT_EQ(cohort.size(), 4u);
  std::map<std::string, std::string> nodes_of;  // job -> nodes of its latest start
  int before = 0, after = 0, elsewhere_after = 0;
  std::set<std::string> drivers_after, drivers_before;
  EmitAll(
      *sim,
      [&](const PointRef& p) {
        if (p.measurement == "node" && TagOf(p, "node") == cohort[0]) {
          (p.timestamp_ns < kStart + kDay ? drivers_before : drivers_after)
              .insert(std::string(*FieldOf<std::string_view>(p, "driver_version")));
        }
        if (p.measurement != "sched") return;
        const std::string job(*FieldOf<std::string_view>(p, "job"));
        if (TagOf(p, "event") == "started") nodes_of[job] = *FieldOf<std::string_view>(p, "nodes");
        if (FieldOf<std::string_view>(p, "reason") != "software") return;
        const std::string& nodes = nodes_of[job];
        const bool on_cohort = std::any_of(cohort.begin(), cohort.end(), [&](const std::string& n) {
          return nodes.find(n) != std::string::npos;
        });
        if (p.timestamp_ns < kStart + kDay) {
          before += on_cohort;
        } else {
          (on_cohort ? after : elsewhere_after)++;
        }
      },
      1);  // one thread: the started event of a job comes before its end
  EXPECT_EQ(drivers_before, (std::set<std::string>{"535.183.01"}));
  EXPECT_EQ(drivers_after, (std::set<std::string>{"550.90.07"}));
  EXPECT_GE(after, 10);
  EXPECT_GT(after, 4 * std::max(1, before));
  EXPECT_GT(after, 2 * std::max(1, elsewhere_after));  // the cohort is a quarter of the fleet
}

// The control: its cohort's nodes report the new driver from its start, and
// nothing else differs from the same seed without it (every job, step and
// failure the same), so whatever a rule says of it is about the rollout, not
// a harm.
TEST(FleetSimTest, AHealthyUpgradeChangesTheDriverAndNothingElse) {
  SimOptions o = Small({"healthy-upgrade@1d:us-east-c0-n000+us-east-c0-n001"});
  o.nodes = 8;
  auto upgraded = AllLines(*Make(o), 2);
  // The simulator's ground truth names the control, as it does any incident.
  const auto truth = std::find_if(upgraded.begin(), upgraded.end(), [](const std::string& line) {
    return line.rfind("incident,cause_class=none,incident=healthy-upgrade-1,", 0) == 0;
  });
  ASSERT_NE(truth, upgraded.end());
  upgraded.erase(truth);
  const auto sim = Make(o);
  ASSERT_EQ(sim->incidents().size(), 1u);
  EXPECT_EQ(sim->incidents()[0].cause_class, "none");
  EXPECT_TRUE(IsControl(sim->incidents()[0].kind));
  o.incidents.clear();
  const auto plain = AllLines(*Make(o), 2);
  ASSERT_EQ(upgraded.size(), plain.size());
  size_t differ = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    if (upgraded[i] == plain[i]) continue;
    ++differ;
    // Lines sort by measurement and tags first: the same line but its driver.
    ASSERT_EQ(upgraded[i].rfind("node,", 0), 0u) << upgraded[i];
    std::string line = upgraded[i];
    const size_t at = line.find("driver_version=\"550.90.07\"");
    ASSERT_NE(at, std::string::npos) << line;
    line.replace(at, 26, "driver_version=\"535.183.01\"");
    EXPECT_EQ(line, plain[i]);
  }
  EXPECT_EQ(differ, 2u * 1440);  // two nodes, every minute of the second day
}

// Mean of a job_step field over points matching `where`, in and out of a window.
struct StepMeans {
  double in = 0, out = 0;
};
StepMeans MeanStepField(const Simulator& sim, const char* field, int64_t from, int64_t to,
                        const std::function<bool(const PointRef&)>& where) {
  double sum_in = 0, sum_out = 0;
  int n_in = 0, n_out = 0;
  EmitAll(sim, [&](const PointRef& p) {
    if (p.measurement != "job_step" || !where(p)) return;
    const auto v = FieldOf<double>(p, field);
    if (!v) return;
    if (In(p.timestamp_ns, from, to)) {
      sum_in += *v;
      ++n_in;
    } else {
      sum_out += *v;
      ++n_out;
    }
  });
  EXPECT_GT(n_in, 50);
  EXPECT_GT(n_out, 50);
  return {sum_in / std::max(1, n_in), sum_out / std::max(1, n_out)};
}

TEST(FleetSimTest, AFrameworkRegressionSlowsTheStepsOfItsImageOnly) {
  const auto sim = Make(Small({"framework-regression@1d/12h:pytorch:2.5.0-cuda12.4"}));
  const int64_t from = kStart + kDay, to = from + 12 * 60 * kMinute;
  const auto bad = MeanStepField(*sim, "step_time_ms", from, to, [](const PointRef& p) {
    return FieldOf<std::string_view>(p, "image") == "pytorch:2.5.0-cuda12.4";
  });
  const auto good = MeanStepField(*sim, "step_time_ms", from, to, [](const PointRef& p) {
    return FieldOf<std::string_view>(p, "image") == "pytorch:2.4.0-cuda12.4";
  });
  EXPECT_GT(bad.in, 1.2 * bad.out);
  EXPECT_LT(good.in, 1.1 * good.out);
  EXPECT_EQ(sim->incidents()[0].image, "pytorch:2.5.0-cuda12.4");
}

TEST(FleetSimTest, AnIoBottleneckGrowsDataLoaderTimeInItsCluster) {
  const auto sim = Make(Small({"io-bottleneck@1d/12h:eu-west-c0"}));
  const int64_t from = kStart + kDay, to = from + 12 * 60 * kMinute;
  const auto hit = MeanStepField(*sim, "data_loader_ms", from, to, [](const PointRef& p) {
    return TagOf(p, "cluster") == "eu-west-c0";
  });
  const auto spared = MeanStepField(*sim, "data_loader_ms", from, to, [](const PointRef& p) {
    return TagOf(p, "cluster") == "us-east-c0";
  });
  EXPECT_GT(hit.in, 2.5 * hit.out);
  EXPECT_LT(spared.in, 1.5 * spared.out);
}

TEST(FleetSimTest, ANetworkDegradationShowsOnItsLinks) {
  const auto sim = Make(Small({"network-degradation@1d/6h:us-east-c0-n005+us-east-c0-n006"}));
  const int64_t from = kStart + kDay, to = from + 6 * 60 * kMinute;
  int64_t bad_in = 0, bad_out = 0;
  EmitAll(*sim, [&](const PointRef& p) {
    if (p.measurement != "link") return;
    const bool lossy =
        *FieldOf<double>(p, "packet_loss_pct") >= 0.5 && *FieldOf<int64_t>(p, "retransmits") > 100;
    const bool scoped =
        TagOf(p, "node") == "us-east-c0-n005" || TagOf(p, "node") == "us-east-c0-n006";
    (scoped && In(p.timestamp_ns, from, to) ? bad_in : bad_out) += lossy;
  });
  EXPECT_EQ(bad_in, 2 * 360);
  EXPECT_EQ(bad_out, 0);
}

TEST(FleetSimTest, DummyKernelsKeepUtilHighWithoutStepProgress) {
  const auto sim = Make(Small({"dummy-kernels@1d/12h:vision"}));
  const int64_t from = kStart + kDay, to = from + 12 * 60 * kMinute;
  struct Sums {
    double util = 0, sm = 0;
    int minutes = 0;
  };
  std::map<std::string, Sums> by_job;                    // GPU minutes of vision's jobs
  std::map<std::string, std::set<int64_t>> dummy_steps;  // jobs reporting no step time
  EmitAll(*sim, [&](const PointRef& p) {
    const auto job = FieldOf<std::string_view>(p, "job");
    if (p.measurement == "gpu" && FieldOf<std::string_view>(p, "team") == "vision") {
      Sums& s = by_job[std::string(*job)];
      s.util += static_cast<double>(*FieldOf<int64_t>(p, "util"));
      s.sm += *FieldOf<double>(p, "sm_active");
      ++s.minutes;
    }
    if (p.measurement == "job_step" && !FieldOf<double>(p, "step_time_ms")) {
      EXPECT_TRUE(In(p.timestamp_ns, from, to + 2 * kDay));
      dummy_steps[std::string(*job)].insert(*FieldOf<int64_t>(p, "step"));
    }
  });
  ASSERT_GE(dummy_steps.size(), 5u);
  for (const auto& [job, steps] : dummy_steps) {
    EXPECT_EQ(steps.size(), 1u) << job << " advanced";
    const Sums& s = by_job[job];
    ASSERT_GT(s.minutes, 0) << job;
    EXPECT_GT(s.util / s.minutes, 98) << job;
    EXPECT_LT(s.sm / s.minutes, 0.05) << job;
  }
  // vision's jobs that are not dummies still make progress at normal SM activity.
  double sm = 0;
  int minutes = 0;
  for (const auto& [job, s] : by_job) {
    if (dummy_steps.count(job)) continue;
    sm += s.sm;
    minutes += s.minutes;
  }
  EXPECT_GT(sm / minutes, 0.15);
}

TEST(FleetSimTest, ASilentAgentAndAMissingGpuLeaveGapsTheFreshnessChecksCanSee) {
  const auto sim =
      Make(Small({"silent-agent@1d/2h:us-east-c0-n003", "missing-gpu@1d/3h:eu-west-c0-n001/7"}));
  const int64_t from = kStart + kDay;
  int silent_in = 0, silent_before = 0, gone_in = 0;
  std::set<int64_t> counts_in, counts_out;
  EmitAll(*sim, [&](const PointRef& p) {
    const std::string_view node = TagOf(p, "node");
    if (node == "us-east-c0-n003" && (p.measurement == "gpu" || p.measurement == "node")) {
      (In(p.timestamp_ns, from, from + 120 * kMinute) ? silent_in : silent_before)++;
    }
    if (node != "eu-west-c0-n001") return;
    const bool in = In(p.timestamp_ns, from, from + 180 * kMinute);
    if (p.measurement == "gpu" && TagOf(p, "gpu") == "7" && in) ++gone_in;
    if (p.measurement == "node")
      (in ? counts_in : counts_out).insert(*FieldOf<int64_t>(p, "gpu_count"));
  });
  EXPECT_EQ(silent_in, 0);
  EXPECT_EQ(silent_before, 9 * (2 * 1440 - 120));
  EXPECT_EQ(gone_in, 0);
  EXPECT_EQ(counts_in, std::set<int64_t>{7});
  EXPECT_EQ(counts_out, std::set<int64_t>{8});
}

TEST(FleetSimTest, SchedulerFragmentationLeavesGpusIdleWhileTrainingJobsWait) {
  SimOptions o = Small({"sched-fragmentation@1d6h/12h:us-east"});
  o.days = 3;
  const auto sim = Make(o);
  const int64_t from = kStart + kDay + 6 * 60 * kMinute, to = from + 12 * 60 * kMinute;
  // us-east idle GPU-minutes in the window, against the same hours a day later.
  int64_t idle_in = 0, idle_after = 0;
  EmitAll(*sim, [&](const PointRef& p) {
    if (p.measurement != "gpu" || TagOf(p, "region") != "us-east" ||
        FieldOf<std::string_view>(p, "job"))
      return;
    if (In(p.timestamp_ns, from, to)) ++idle_in;
    if (In(p.timestamp_ns, from + kDay, to + kDay)) ++idle_after;
  });
  EXPECT_GT(idle_in, idle_after * 3 / 2 + 100);
  EXPECT_EQ(sim->incidents()[0].queue, "train");
  EXPECT_EQ(sim->incidents()[0].cause_class, "scheduling");
}

TEST(FleetSimTest, TheGroundTruthListsEveryIncidentWithItsScope) {
  const auto sim = Make(Small({"hw-fault@6h/1h", "io-bottleneck@1d", "dummy-kernels@1d/2h:ads"}));
  const auto truth = nlohmann::json::parse(sim->GroundTruthJson());
  EXPECT_EQ(truth["seed"], 7);
  EXPECT_EQ(truth["gpus"], 128);
  EXPECT_EQ(truth["start"], "2026-11-02T00:00:00Z");
  ASSERT_EQ(truth["incidents"].size(), 3u);
  const auto& hw = truth["incidents"][0];
  EXPECT_EQ(hw["incident"], "hw-fault-1");
  EXPECT_EQ(hw["cause_class"], "hardware");
  EXPECT_EQ(hw["start"], "2026-11-02T06:00:00Z");
  EXPECT_EQ(hw["end"], "2026-11-02T07:00:00Z");
  EXPECT_EQ(hw["scope"]["gpus"].size(), 3u);
  const auto& io = truth["incidents"][1];
  EXPECT_EQ(io["end"], "2026-11-04T00:00:00Z");  // no duration: to the end
  EXPECT_TRUE(io["scope"]["cluster"] == "us-east-c0" || io["scope"]["cluster"] == "eu-west-c0");
  EXPECT_EQ(truth["incidents"][2]["scope"]["team"], "ads");
  // The incident measurement carries the same.
  int incident_points = 0;
  EmitAll(*sim, [&](const PointRef& p) {
    if (p.measurement != "incident") return;
    ++incident_points;
    if (TagOf(p, "incident") == "dummy-kernels-1") {
      EXPECT_EQ(p.timestamp_ns, kStart + kDay);
      EXPECT_EQ(*FieldOf<int64_t>(p, "end"), kStart + kDay + 120 * kMinute);
      EXPECT_EQ(*FieldOf<std::string_view>(p, "scope"), "team=ads");
    }
  });
  EXPECT_EQ(incident_points, 3);
}

TEST(FleetSimTest, BadIncidentsAndOptionsAreRefusedWithTheReason) {
  IncidentRequest r;
  std::string error;
  EXPECT_FALSE(ParseIncidentRequest("meltdown@1d", &r, &error));
  EXPECT_NE(error.find("unknown incident 'meltdown'"), std::string::npos) << error;
  EXPECT_FALSE(ParseIncidentRequest("thermal@1x", &r, &error));
  EXPECT_NE(error.find("'1x'"), std::string::npos) << error;
  EXPECT_FALSE(ParseIncidentRequest("thermal/0h", &r, &error));
  EXPECT_TRUE(ParseIncidentRequest("thermal@2d12h/90m:a+b", &r, &error));
  EXPECT_EQ(r.offset_ns, (2 * 24 + 12) * 60 * kMinute);
  EXPECT_EQ(r.duration_ns, 90 * kMinute);
  EXPECT_EQ(r.scope, "a+b");

  std::unique_ptr<Simulator> sim;
  Status s = Simulator::Create(Small({"thermal:no-such-node"}), &sim);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("no node 'no-such-node'"), std::string::npos) << s.ToString();
  s = Simulator::Create(Small({"thermal@3d"}), &sim);  // the span is 2 days
  EXPECT_NE(s.message().find("starts after the simulation ends"), std::string::npos)
      << s.ToString();
  SimOptions o = Small();
  o.regions = 9;
  EXPECT_TRUE(Simulator::Create(o, &sim).IsInvalidArgument());
}

TEST(FleetSimTest, ItsLineProtocolReadsBackPointForPoint) {
  SimOptions o = Small({"driver-upgrade@6h"});
  o.days = 1;
  o.nodes = 4;
  std::string body;
  uint64_t emitted = 0;
  EmitAll(*Make(o), [&](const PointRef& p) {
    ingest::AppendLineProtocol(p, &body);
    ++emitted;
  });
  ingest::LineProtocolParser parser;
  std::vector<ingest::LineError> errors;
  uint64_t parsed = 0, strings = 0;
  parser.Parse(
      body, {},
      [&](const ingest::PointView& p) {
        ++parsed;
        for (const auto& f : p.fields) strings += f.type == FieldType::kString;
      },
      &errors, nullptr);
  EXPECT_TRUE(errors.empty()) << errors.front().line << ": " << errors.front().message;
  EXPECT_EQ(parsed, emitted);
  EXPECT_GT(strings, 0u);
}

// The command: a directory with every measurement, the tiers built, the
// ground truth beside it; usage errors exit 2.
TEST(FleetSimTest, SimulateLoadsADirectoryWithItsTiersAndGroundTruth) {
  storage::ScratchDir dir;
  const std::string data = dir.path() + "/data";
  const auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "simulate");
    return test::RunGpulse(args, dir.path()).status;
  };
  // Three days: Wednesday's rolling maintenance is in them.
  ASSERT_EQ(run({"--data", data, "--nodes", "4", "--days", "3", "--start", "2026-11-02T00:00:00Z",
                 "--incident", "thermal@6h/2h"}),
            0);
  std::ifstream truth(data + "/simulation-truth.json");
  ASSERT_TRUE(truth.good());
  EXPECT_EQ(nlohmann::json::parse(truth)["incidents"][0]["kind"], "thermal");

  Options options;
  options.info_log = [](std::string_view) {};
  options.keep_stored_tiers = true;
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, data, &db).ok());
  EXPECT_EQ(db->KeptTiers(), 0b110u);  // 1h and 1d, built after the load
  QueryResult r;
  ASSERT_TRUE(
      gpulse::Query(db.get(), "SELECT count(util) FROM gpu; SHOW MEASUREMENTS", {}, &r).ok());
  ASSERT_EQ(r.statements.size(), 2u);
  ASSERT_TRUE(r.statements[0].status.ok());
  EXPECT_EQ(std::get<int64_t>(r.statements[0].series.at(0).values.at(0).at(1)), 4 * 8 * 1440 * 3);
  std::set<std::string> measurements;
  for (const auto& row : r.statements[1].series.at(0).values)
    measurements.insert(std::get<std::string>(row[0]));
  EXPECT_EQ(measurements, (std::set<std::string>{"cost", "gpu", "incident", "job", "job_step",
                                                 "link", "maintenance", "node", "sched"}));
  ASSERT_TRUE(db->Close().ok());

  EXPECT_EQ(run({"--nodes", "x"}), 2);
  EXPECT_EQ(run({"--data", data, "--out", "f.lp"}), 2);
  EXPECT_EQ(run({"--incident", "thermal:nowhere", "--out", dir.path() + "/f.lp"}), 2);
}

// --url: line protocol POSTed to a server, the server's 503s (a small
// head that cannot wait) retried until every point is in. The first flush
// stalls on its sync, so the next head fills while it runs: a refusal on
// every run, not only when the machine happens to be slow.
TEST(FleetSimTest, SimulateWritesToAServerAndRetriesItsBackPressure) {
  storage::ScratchDir dir;
  server::ServerConfig config;
  test::UseQuietTestDb(&config.db);
  // Small enough that the head fills again within the stalled flush: the
  // 32 GPUs' columns pack to a few bytes a value, so 4 MiB held most of the
  // day and, under a sanitizer, sometimes never filled a second time.
  config.db.head_memory_bytes = 1 << 20;
  test::StoreFaultEnv slow_disk;
  config.db.store_env = &slow_disk;
  server::ServerMetrics metrics;
  server::SourceRegistry sources;
  test::TestServer srv;
  ASSERT_TRUE(srv.Start(dir.path() + "/srv", config, &metrics, &sources).ok());
  slow_disk.StallNextSync(std::chrono::milliseconds(2000));  // the first flush's
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  const test::RunOutcome run =
      test::RunGpulse({"simulate", "--url", url, "--nodes", "4", "--days", "1", "--start",
                       "2026-11-02T00:00:00Z", "--truth", dir.path() + "/truth.json"},
                      dir.path());
  ASSERT_EQ(run.status, 0) << run.err;
  QueryOptions q;
  q.database = "gpulse";
  QueryResult r;
  ASSERT_TRUE(gpulse::Query(srv.db(),
                            "SELECT count(util) FROM gpu; SELECT count(temp) FROM gpu WHERE node = "
                            "'us-east-c0-n000'",
                            q, &r)
                  .ok());
  ASSERT_TRUE(r.statements[0].status.ok()) << r.statements[0].status.ToString();
  EXPECT_EQ(std::get<int64_t>(r.statements[0].series.at(0).values.at(0).at(1)), 4 * 8 * 1440);
  EXPECT_EQ(std::get<int64_t>(r.statements[1].series.at(0).values.at(0).at(1)), 8 * 1440);
  EXPECT_TRUE(std::ifstream(dir.path() + "/truth.json").good());
  EXPECT_GT(metrics.writes_refused_busy.load(), 0u);  // the retry path ran
}

// --hours and --pace: an hour of a small fleet sent minute by minute on a
// clock 3,600 times as fast (a second for the hour), each minute once its
// time has come, none refused; the options that cannot go together are
// usage errors.
TEST(FleetSimTest, SimulatePacedSendsAnHourMinuteByMinuteAsItsTimeComes) {
  storage::ScratchDir dir;
  server::ServerConfig config;
  test::UseQuietTestDb(&config.db);
  server::ServerMetrics metrics;
  server::SourceRegistry sources;
  test::TestServer srv;
  ASSERT_TRUE(srv.Start(dir.path() + "/srv", config, &metrics, &sources).ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port());
  const auto started = std::chrono::steady_clock::now();
  const test::RunOutcome run =
      test::RunGpulse({"simulate", "--url", url, "--nodes", "2", "--hours", "1", "--pace", "3600",
                       "--start", "2026-11-02T10:00:00Z", "--truth", dir.path() + "/truth.json"},
                      dir.path());
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(run.status, 0) << run.err;
  // The last minute goes out a second after the start.
  EXPECT_GE(took, std::chrono::milliseconds(950));
  EXPECT_NE(run.out.find("for 1 hour from 2026-11-02T10:00:00Z"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("refused (503, each retried): 0"), std::string::npos) << run.out;
  QueryOptions q;
  q.database = "gpulse";
  QueryResult r;
  ASSERT_TRUE(gpulse::Query(srv.db(),
                            "SELECT count(util) FROM gpu WHERE time >= '2026-11-02T10:00:00Z' AND "
                            "time < '2026-11-02T11:00:00Z'; SELECT count(util) FROM gpu",
                            q, &r)
                  .ok());
  ASSERT_TRUE(r.statements[0].status.ok()) << r.statements[0].status.ToString();
  EXPECT_EQ(std::get<int64_t>(r.statements[0].series.at(0).values.at(0).at(1)), 2 * 8 * 60);
  EXPECT_EQ(std::get<int64_t>(r.statements[1].series.at(0).values.at(0).at(1)), 2 * 8 * 60);
  EXPECT_EQ(metrics.writes_refused_busy.load(), 0u);

  const auto usage = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "simulate");
    return test::RunGpulse(args, dir.path());
  };
  const test::RunOutcome both = usage({"--url", url, "--days", "1", "--hours", "2"});
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("--days or --hours"), std::string::npos) << both.err;
  const test::RunOutcome unpaced = usage({"--out", dir.path() + "/f.lp", "--pace", "2"});
  EXPECT_EQ(unpaced.status, 2);
  EXPECT_NE(unpaced.err.find("--pace sends to a server"), std::string::npos) << unpaced.err;
  EXPECT_EQ(usage({"--url", url, "--hours", "0"}).status, 2);
  EXPECT_EQ(usage({"--url", url, "--hours", "2", "--incidents", "all"}).status, 2);
}

// `gpulse demo`: every question it prints is a command that answers, and
// its goodput question covers the simulated week (14 rows: 2 regions x 7
// days), not the empty day after it.
TEST(FleetSimTest, DemoPrintsQuestionsThatEachAnswer) {
  storage::ScratchDir dir;
  const std::string data = dir.path() + "/demo";
  const test::RunOutcome demo = test::RunGpulse({"demo", "--data", data}, dir.path());
  ASSERT_EQ(demo.status, 0) << demo.err;
  const std::string prefix = "    gpulse query --data " + data + " \"";
  std::istringstream lines(demo.out);
  std::string line;
  std::vector<std::string> queries;
  while (std::getline(lines, line)) {
    if (line.rfind(prefix, 0) == 0 && line.back() == '"') {
      queries.push_back(line.substr(prefix.size(), line.size() - prefix.size() - 1));
    }
  }
  ASSERT_GE(queries.size(), 9u) << demo.out;
  bool asked_goodput = false, asked_why = false, asked_stale = false, asked_usual = false;
  for (const std::string& q : queries) {
    const test::RunOutcome answer = test::RunGpulse({"query", "--data", data, q}, dir.path());
    EXPECT_EQ(answer.status, 0) << q << "\n" << answer.err;
    EXPECT_TRUE(answer.out.find("rows)") != std::string::npos ||
                answer.out.find("(1 row)") != std::string::npos)
        << q << "\n"
        << answer.out;
    if (q.rfind("SHOW STALE", 0) == 0) {
      asked_stale = true;
      // The agent that went quiet three hours before the end.
      EXPECT_NE(answer.out.find("silent_node"), std::string::npos) << answer.out;
    }
    if (q.find("BASELINE(") != std::string::npos) {
      asked_usual = true;
      EXPECT_NE(answer.out.find("expected"), std::string::npos) << answer.out;
      EXPECT_NE(answer.out.find("(24 rows)"), std::string::npos) << answer.out;
    }
    if (q.rfind("NORTHSTAR", 0) == 0) {
      asked_goodput = true;
      size_t days = 0;
      for (size_t at = answer.out.find("T00:00:00Z"); at != std::string::npos;
           at = answer.out.find("T00:00:00Z", at + 1)) {
        ++days;
      }
      EXPECT_EQ(days, 14u) << answer.out;
    }
    if (q.rfind("DECOMPOSE", 0) == 0) {
      asked_why = true;
      // The driver the upgrade brought is named among the software loss's
      // contributors.
      EXPECT_NE(answer.out.find("driver_version"), std::string::npos) << answer.out;
    }
  }
  EXPECT_TRUE(asked_goodput && asked_why && asked_stale && asked_usual) << demo.out;
}

}  // namespace
}  // namespace gpulse::fleet
