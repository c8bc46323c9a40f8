// NORTHSTAR (query/fleet/northstar.cc over query/fleet/fleet_ledger.cc): goodput and
// the losses from the fleet schema. Small fleets written point by point pin
// each rule (a multi-day job that fails loses only what came after its last
// checkpoint; idle with a queue is scheduling, without one slack; planned
// maintenance is not capacity; a missing GPU is hardware, a silent node
// unobserved); the simulator checks the guardrail (dummy kernels raise util,
// not goodput) and that goodput and the losses add up to capacity.

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "engine/gpulse.h"
#include "ingest/fleet_sim.h"
#include "query/fleet/fleet_ledger.h"
#include "query/fleet/ledger_days.h"
#include "query/fleet/nodes.h"
#include "query/query.h"
#include "tests/support/cohort_work.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kMinute;
constexpr int64_t kT0 = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z
using gpulse::test::kDay;

class NorthstarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = test::OpenQuietDb(dir_.path());
    ASSERT_NE(db_, nullptr);
  }

  void Put(Point p) { pending_.push_back(std::move(p)); }
  // The ledger of [start, now) asked at `now`, keeping spans and afresh:
  // (spans reused, spans built) by the first, whose one row must equal the
  // other's.
  std::pair<int, int> KeptAndAfresh(int64_t start, int64_t now) {
    query::Ledger out[2];
    for (int keep = 0; keep < 2; ++keep) {
      query::LedgerOptions o;
      o.start_ns = start;
      o.end_ns = now;
      o.known_until_ns = now;
      o.keep_days = keep == 1;
      const Status s = query::BuildLedger(db_.get(), o, &out[keep]);
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_EQ(out[0].rows.size(), 1u);
    EXPECT_EQ(out[1].rows.size(), 1u);
    for (size_t l = 0; l < query::kLossCount && !out[1].rows.empty(); ++l)
      EXPECT_NEAR(out[1].rows[0].minutes[l], out[0].rows.at(0).minutes[l], 1e-9) << l;
    return {out[1].spans_reused, out[1].spans_built};
  }
  void Flush() {
    WriteResult r;
    const Status s = db_->Write(pending_, &r);
    ASSERT_TRUE(s.ok()) << s.ToString();
    pending_.clear();
  }

  // One GPU-minute; `job` empty for an idle GPU.
  void Gpu(int gpu, int64_t t, const std::string& job, int64_t xid = 0,
           const std::string& node = "n1") {
    Point p{
        "gpu",
        {{"region", "r1"},
         {"cluster", "c1"},
         {"node", node},
         {"gpu", std::to_string(gpu)},
         {"sku", "H100"}},
        {{"util", int64_t{job.empty() ? 0 : 95}}, {"xid", xid}, {"throttle_reasons", int64_t{0}}},
        t};
    if (!job.empty()) {
      p.fields.push_back({"job", job});
      p.fields.push_back({"team", std::string("vision")});
    }
    Put(std::move(p));
  }
  void Node(int64_t t, bool maintenance = false, int64_t gpus = 8, const std::string& node = "n1",
            const std::string& driver = "535.183.01") {
    Put({"node",
         {{"region", "r1"}, {"cluster", "c1"}, {"node", node}, {"sku", "H100"}},
         {{"maintenance", int64_t{maintenance}},
          {"gpu_inventory", int64_t{8}},
          {"gpu_count", gpus},
          {"driver_version", driver}},
         t});
  }
  void Step(int64_t t, const std::string& job, int64_t step, const std::string& node = "n1",
            double sync_ms = 100.0, double data_ms = 100.0) {
    Put({"job_step",
         {{"region", "r1"}, {"cluster", "c1"}, {"node", node}, {"gpu", "0"}},
         {{"job", job},
          {"step", step},
          {"step_time_ms", 1000.0},
          {"data_loader_ms", data_ms},
          {"grad_sync_ms", sync_ms},
          {"workload_class", std::string("pretrain")}},
         t});
  }
  void Sched(const std::string& event, int64_t t, const std::string& job,
             std::vector<Field> extra = {}) {
    Point p{"sched", {{"region", "r1"}, {"queue", "train"}, {"event", event}}, {{"job", job}}, t};
    for (Field& f : extra) p.fields.push_back(std::move(f));
    Put(std::move(p));
  }

  // The first row of NORTHSTAR over [from, to) as column -> value, with
  // now() at `now` (0: the clock).
  std::map<std::string, double> Northstar(int64_t from, int64_t to, const std::string& extra = "",
                                          int64_t now = 0) {
    QueryResult r;
    const std::string q = "NORTHSTAR WHERE time >= " + std::to_string(from) + "ns AND time < " +
                          std::to_string(to) + "ns" + extra;
    QueryOptions options;
    options.now_ns = now;
    EXPECT_TRUE(gpulse::Query(db_.get(), q, options, &r).ok()) << q;
    std::map<std::string, double> row;
    if (r.statements.empty() || !r.statements[0].status.ok() || r.statements[0].series.empty()) {
      ADD_FAILURE() << q << ": " << (r.statements.empty() ? "" : r.statements[0].status.ToString());
      return row;
    }
    const ResultSeries& s = r.statements[0].series[0];
    for (size_t c = 1; c < s.columns.size(); ++c) {
      const QueryValue& v = s.values.at(0)[c];
      if (std::holds_alternative<std::monostate>(v)) continue;  // no cost data
      row[s.columns[c]] =
          v.index() == 2 ? static_cast<double>(std::get<int64_t>(v)) : std::get<double>(v);
    }
    return row;
  }

  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
  std::vector<Point> pending_;
};

// A whole day's ledger is kept and reused while it is still true, and built
// again when it is not: a point written on the day, or a question that
// knows less. A failure of one of its jobs that has come to be known (now
// passed it; after the day, at a checkpoint inside it) has the hours from
// its checkpoint on built again; one written late, before the end that
// decided the job's minutes, the whole day; a success changes nothing. Each
// answer equals the one built afresh.
TEST_F(NorthstarTest, KeptDaysAreReusedUntilTheirDataOrTheirJobsOutcomesChange) {
  Sched("submitted", kT0, "long");
  Sched("started", kT0, "long", {{"nodes", std::string("n1")}});
  Sched("submitted", kT0 + 1, "later");
  Sched("started", kT0 + 1, "later", {{"nodes", std::string("n1")}});
  for (int m = 0; m < 36 * 60; ++m) {
    const int64_t t = kT0 + m * kMinute;
    Node(t);
    for (int g = 0; g < 8; ++g) Gpu(g, t, g < 4 ? "long" : "later");
    Step(t, "long", m + 1);
    Step(t, "later", m + 1, "n2");  // its own series (the tags of its first GPU)
  }
  // Written now, known once now passes it: "later" fails on day three, its
  // last checkpoint at noon of the first.
  Sched("ended", kT0 + 3 * kDay, "later",
        {{"status", std::string("failed")},
         {"reason", std::string("hardware")},
         {"last_checkpoint", kT0 + 12 * 60 * kMinute}});
  Flush();
  const auto ledger = [&](int64_t now, bool keep) {
    query::LedgerOptions o;
    o.start_ns = kT0;
    o.end_ns = kT0 + kDay;
    o.known_until_ns = now;
    o.keep_days = keep;
    query::Ledger out;
    const Status s = query::BuildLedger(db_.get(), o, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(out.rows.size(), 1u);
    return out;
  };
  const auto minutes = [](const query::Ledger& l, query::Loss loss) {
    return l.rows.empty() ? -1.0 : l.rows[0].minutes[static_cast<size_t>(loss)];
  };
  // Asked at `now`: (spans reused, spans built) and the ledger, whose
  // answer is the one built afresh.
  const auto ask = [&](int64_t now) {
    const query::Ledger kept = ledger(now, true);
    const query::Ledger afresh = ledger(now, false);
    EXPECT_EQ(afresh.spans_reused + afresh.spans_built, 0);
    for (size_t l = 0; l < query::kLossCount; ++l)
      EXPECT_NEAR(kept.rows.at(0).minutes[l], afresh.rows.at(0).minutes[l], 1e-9) << l;
    EXPECT_EQ(kept.rows[0].failed_attempts.size(), afresh.rows[0].failed_attempts.size());
    return std::make_tuple(kept.spans_reused, kept.spans_built, kept);
  };
  const auto built = std::make_pair(0, 1), reused = std::make_pair(1, 0);
  // The hours before a failure's last checkpoint still hold; the rest is built again.
  const auto cut = std::make_pair(1, 1);
  const auto counts = [](const auto& asked) {
    return std::make_pair(std::get<0>(asked), std::get<1>(asked));
  };
  const int64_t now = kT0 + 2 * kDay;
  EXPECT_EQ(counts(ask(now)), built);
  const uint64_t counted = query::LedgerDays::Process().reused();  // /metrics' counter
  auto asked = ask(now + kMinute);
  EXPECT_EQ(counts(asked), reused);
  EXPECT_EQ(query::LedgerDays::Process().reused(), counted + 1);
  EXPECT_EQ(minutes(std::get<2>(asked), query::Loss::kHardware), 0);
  // An end that is a success changes no minute: the day is kept whole.
  Sched("ended", now + 2 * kMinute, "long", {{"status", std::string("succeeded")}});
  Flush();
  EXPECT_EQ(counts(ask(now + 3 * kMinute)), reused);
  // Day three comes: the failure is known, and the 12 hours after the
  // checkpoint on 4 GPUs are hardware's. The hours before it are kept.
  asked = ask(kT0 + 3 * kDay + kMinute);
  EXPECT_EQ(counts(asked), cut);
  EXPECT_NEAR(minutes(std::get<2>(asked), query::Loss::kHardware), 4 * 12 * 60, 1e-9);
  EXPECT_EQ(counts(ask(kT0 + 3 * kDay + 2 * kMinute)), reused);
  // The scheduler writes on the failure's day (every minute, in a live
  // fleet): the failure, known when the day was kept, changes it no more.
  Sched("submitted", kT0 + 3 * kDay + 30 * kMinute, "next");
  Flush();
  EXPECT_EQ(counts(ask(kT0 + 3 * kDay + 31 * kMinute)), reused);
  // "long" failed on day two, its checkpoint at 20:00 of day one, written
  // late: before the success that decided its minutes, so any of them may
  // change (an earlier failure's checkpoint is not kept): the day again.
  Sched("ended", kT0 + 25 * 60 * kMinute, "long",
        {{"status", std::string("failed")},
         {"reason", std::string("software")},
         {"last_checkpoint", kT0 + 20 * 60 * kMinute}});
  Flush();
  asked = ask(kT0 + 3 * kDay + 33 * kMinute);
  EXPECT_EQ(counts(asked), built);
  EXPECT_NEAR(minutes(std::get<2>(asked), query::Loss::kSoftware), 4 * 4 * 60, 1e-9);
  EXPECT_EQ(counts(ask(kT0 + 3 * kDay + 34 * kMinute)), reused);
  // A GPU of "long" fell off the bus at 10:00 of day one (written late).
  Gpu(0, kT0 + 10 * 60 * kMinute, "long", 79);
  Flush();
  asked = ask(kT0 + 3 * kDay + 36 * kMinute);
  EXPECT_EQ(counts(asked), built);
  EXPECT_NEAR(minutes(std::get<2>(asked), query::Loss::kHardware), 4 * 12 * 60 + 1, 1e-9);
  // Asked as of day two, before either failure was known.
  asked = ask(kT0 + kDay + 30 * kMinute);
  EXPECT_EQ(counts(asked), built);
  EXPECT_NEAR(minutes(std::get<2>(asked), query::Loss::kHardware), 1, 1e-9);
  EXPECT_NEAR(minutes(std::get<2>(asked), query::Loss::kSoftware), 0, 1e-9);
}

// The day still going is kept an hour at a time as its hours pass: each
// question builds only the hours no earlier one kept, and the minutes of
// the hour under way from the data. A late point rebuilds the hours it
// falls in; one in the hour under way changes nothing kept.
TEST_F(NorthstarTest, TheHoursOfTheDayUnderWayAreKeptAsTheyPass) {
  // The day before ran the same class and width: its medians are the
  // yardstick, so the day's hours do not wait for the day's own.
  Sched("started", kT0 - kDay, "before", {{"nodes", std::string("n2")}});
  for (int m = 0; m < 60; ++m) Step(kT0 - kDay + m * kMinute, "before", m + 1, "n2");
  Sched("submitted", kT0, "run");
  Sched("started", kT0, "run", {{"nodes", std::string("n1")}});
  const auto minutes = [&](int from, int to) {
    for (int m = from; m < to; ++m) {
      const int64_t t = kT0 + m * kMinute;
      Node(t);
      for (int g = 0; g < 8; ++g) Gpu(g, t, g < 6 ? "run" : "");
      Step(t, "run", m + 1);
    }
    Flush();
  };
  minutes(0, 10 * 60 + 30);
  // Asked at `now` over the day so far.
  const auto ask = [&](int64_t now) { return KeptAndAfresh(kT0, now); };
  EXPECT_EQ(ask(kT0 + 10 * 60 * kMinute + 30 * kMinute), std::make_pair(0, 1));  // [00, 10)
  minutes(10 * 60 + 30, 11 * 60 + 15);
  EXPECT_EQ(ask(kT0 + 11 * 60 * kMinute + 15 * kMinute), std::make_pair(1, 1));  // + [10, 11)
  EXPECT_EQ(ask(kT0 + 11 * 60 * kMinute + 20 * kMinute), std::make_pair(1, 0));  // [00, 11)
  minutes(11 * 60 + 15, 11 * 60 + 25);  // the hour under way
  EXPECT_EQ(ask(kT0 + 11 * 60 * kMinute + 25 * kMinute), std::make_pair(1, 0));
  Gpu(6, kT0 + 5 * 60 * kMinute, "", 79);  // a late point: an idle GPU fell off the bus at 05:00
  Flush();
  EXPECT_EQ(ask(kT0 + 11 * 60 * kMinute + 26 * kMinute), std::make_pair(0, 1));
  EXPECT_EQ(ask(kT0 + 11 * 60 * kMinute + 27 * kMinute), std::make_pair(1, 0));
}

// A job that failed just before a kept span's first hour and came back on
// the same GPUs inside it: its failure in a later hour changes minutes from
// its checkpoint, which lies in the span's first hour. The span knows the
// job from before its start (the GPUs idle at the start held it last), so
// the failure builds the span again rather than keeping that hour.
TEST_F(NorthstarTest, AJobBackFromBeforeASpanIsCutFromItsStart) {
  constexpr int64_t kH = 60 * kMinute;
  Sched("submitted", kT0, "j");
  Sched("started", kT0, "j", {{"nodes", std::string("n1")}});
  Sched("ended", kT0 + 9 * kH + 50 * kMinute, "j",
        {{"status", std::string("failed")},
         {"reason", std::string("software")},
         {"last_checkpoint", kT0 + 9 * kH}});
  Sched("retried", kT0 + 10 * kH + 20 * kMinute, "j");
  Sched("started", kT0 + 10 * kH + 30 * kMinute, "j", {{"nodes", std::string("n1")}});
  Sched("ended", kT0 + 13 * kH, "j",
        {{"status", std::string("failed")},
         {"reason", std::string("software")},
         {"last_checkpoint", kT0 + 10 * kH + 45 * kMinute}});
  int64_t step = 0;
  for (int m = 0; m < 14 * 60; ++m) {
    const int64_t t = kT0 + m * kMinute;
    const bool runs =
        t < kT0 + 9 * kH + 50 * kMinute || (t >= kT0 + 10 * kH + 30 * kMinute && t < kT0 + 13 * kH);
    Node(t);
    for (int g = 0; g < 4; ++g) Gpu(g, t, runs ? "j" : "");
    if (runs) Step(t, "j", ++step);
  }
  Flush();
  const auto ask = [&](int64_t now) { return KeptAndAfresh(kT0 + 10 * kH, now); };
  EXPECT_EQ(ask(kT0 + 12 * kH + 10 * kMinute), std::make_pair(0, 1));  // [10, 12) kept
  EXPECT_EQ(ask(kT0 + 13 * kH + 10 * kMinute), std::make_pair(0, 1));  // the failure: [10, 13)
}

// A three-day job on 8 GPUs that checkpoints at 58h and fails at 62h keeps
// 58 hours of work: the 4 hours after the checkpoint are lost to its cause.
TEST_F(NorthstarTest, AMultiDayJobThatFailsLosesOnlyTheMinutesAfterItsLastCheckpoint) {
  const int64_t end = kT0 + 62 * 60 * kMinute, checkpoint = kT0 + 58 * 60 * kMinute;
  Sched("submitted", kT0 - kMinute, "big");
  Sched("started", kT0, "big");
  for (int64_t t = kT0; t < end; t += kMinute) {
    Node(t);
    for (int g = 0; g < 8; ++g) Gpu(g, t, "big");
    Step(t, "big", (t - kT0) / kMinute * 30 + 30);
    if (pending_.size() > 50000) Flush();
  }
  Sched("ended", end, "big",
        {{"status", std::string("failed")},
         {"reason", std::string("software")},
         {"last_checkpoint", checkpoint}});
  Flush();
  const auto row = Northstar(kT0, end);
  EXPECT_DOUBLE_EQ(row.at("capacity_gpu_minutes"), 8.0 * 62 * 60);
  EXPECT_NEAR(row.at("productive_gpu_minutes"), 8.0 * 58 * 60, 1e-6);
  EXPECT_NEAR(row.at("software"), 4.0 / 62, 1e-9);
  EXPECT_NEAR(row.at("goodput"), 58.0 / 62, 1e-9);
  EXPECT_EQ(row.at("failed_jobs"), 1.0);
  // Seen from the minute before the failure, nothing was lost yet: NORTHSTAR
  // knows what had happened by now() (what an alert rule saw then).
  const auto before = Northstar(kT0, end - kMinute, "", end - kMinute);
  EXPECT_NEAR(before.at("goodput"), 1.0, 1e-9);
  EXPECT_EQ(before.at("failed_jobs"), 0.0);
  // The same job succeeding instead keeps every minute.
  Sched("ended", end, "big", {{"status", std::string("succeeded")}, {"reason", std::string("")}});
  Flush();
  EXPECT_NEAR(Northstar(kT0, end).at("goodput"), 1.0, 1e-9);
}

TEST_F(NorthstarTest, IdleIsSchedulingWhileJobsWaitAndSlackOtherwise) {
  // Minutes 0-59: a job waits in the queue; 60-119: nothing waits.
  Sched("submitted", kT0, "waiting");
  Sched("ended", kT0 + 60 * kMinute, "waiting", {{"status", std::string("cancelled")}});
  for (int m = 0; m < 120; ++m) {
    Node(kT0 + m * kMinute);
    for (int g = 0; g < 8; ++g) Gpu(g, kT0 + m * kMinute, "");
  }
  Flush();
  const auto row = Northstar(kT0, kT0 + 120 * kMinute);
  EXPECT_DOUBLE_EQ(row.at("goodput"), 0);
  EXPECT_DOUBLE_EQ(row.at("scheduling"), 0.5);
  EXPECT_DOUBLE_EQ(row.at("slack"), 0.5);
}

TEST_F(NorthstarTest, MaintenanceIsNotCapacityAndMissingOrSilentGpusAreLosses) {
  for (int m = 0; m < 100; ++m) {
    const int64_t t = kT0 + m * kMinute;
    const bool maintenance = m < 20;
    const bool silent = m >= 90;  // the node's agent stops: no point at all
    if (silent) continue;
    Node(t, maintenance, m >= 60 ? 7 : 8);
    for (int g = 0; g < 8; ++g) {
      if (m >= 60 && g == 7) continue;  // GPU 7 falls off the bus at minute 60
      Gpu(g, t, "", m == 30 && g == 0 ? 79 : 0);
    }
  }
  Flush();
  const auto row = Northstar(kT0, kT0 + 100 * kMinute);
  EXPECT_DOUBLE_EQ(row.at("capacity_gpu_minutes"), 8.0 * 80);
  // Hardware: XID 79 on one GPU-minute, and GPU 7 missing for 30 minutes.
  EXPECT_NEAR(row.at("hardware") * 640, 1 + 30, 1e-9);
  EXPECT_NEAR(row.at("unobserved") * 640, 8 * 10, 1e-9);
  EXPECT_NEAR(row.at("slack") * 640, 640 - 31 - 80, 1e-9);
}

// A GPU is capacity from its first report on: node n2, added at minute 90,
// is nobody's loss before (nor is anything the day before, when no agent
// reported); once it has reported, its agent's silence is unobserved.
TEST_F(NorthstarTest, AGpuIsCapacityFromItsFirstReportOn) {
  for (int m = 0; m < 120; ++m) {
    const int64_t t = kT0 + m * kMinute;
    for (const std::string node : {"n1", "n2"}) {
      if (node == "n2" && (m < 90 || m >= 110)) continue;  // added at 90, silent from 110
      Node(t, false, 8, node);
      for (int g = 0; g < 8; ++g) Gpu(g, t, "", 0, node);
    }
  }
  Flush();
  const auto row = Northstar(kT0 - kDay, kT0 + 120 * kMinute);
  EXPECT_DOUBLE_EQ(row.at("capacity_gpu_minutes"), 8.0 * 120 + 8.0 * 30);
  EXPECT_NEAR(row.at("unobserved") * (8.0 * 150), 8.0 * 10, 1e-9);
  EXPECT_NEAR(row.at("slack") * (8.0 * 150), 8.0 * 140, 1e-9);
}

// Maintenance a person sets (PUT /api/v1/nodes/{id}/status: a window in
// the `maintenance` measurement) is not capacity either, though the agent
// reports maintenance = 0; a kept ledger span learns of the window when it
// is opened and again when it is closed.
TEST_F(NorthstarTest, MaintenanceSetByStatusIsNotCapacity) {
  for (int m = 0; m < 60; ++m) {
    Node(kT0 + m * kMinute);
    for (int g = 0; g < 8; ++g) Gpu(g, kT0 + m * kMinute, "");
  }
  Flush();
  EXPECT_DOUBLE_EQ(Northstar(kT0, kT0 + 60 * kMinute).at("capacity_gpu_minutes"), 480);
  const auto set = [&](query::NodeStatus status, int64_t at) {
    query::NodeAction action{.action = "status", .actor = "test", .reason = "firmware"};
    bool changed = false;
    const Status s = query::SetNodeStatus(db_.get(), {}, "n1", status, at, &action, &changed);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(changed);
  };
  set(query::NodeStatus::kMaintenance, kT0 + 20 * kMinute);
  EXPECT_DOUBLE_EQ(Northstar(kT0, kT0 + 60 * kMinute).at("capacity_gpu_minutes"), 8.0 * 20);
  set(query::NodeStatus::kHealthy, kT0 + 40 * kMinute);
  EXPECT_DOUBLE_EQ(Northstar(kT0, kT0 + 60 * kMinute).at("capacity_gpu_minutes"), 8.0 * 40);
}

TEST_F(NorthstarTest, StatementErrorsNameTheFault) {
  QueryResult r;
  ASSERT_TRUE(gpulse::Query(db_.get(), "NORTHSTAR BY colour", {}, &r).ok());
  EXPECT_TRUE(r.statements[0].status.IsInvalidArgument());
  EXPECT_NE(r.statements[0].status.message().find("not colour"), std::string::npos);
  EXPECT_NE(r.statements[0].status.message().find("column 14"), std::string::npos)
      << r.statements[0].status.message();
  r = {};
  ASSERT_TRUE(gpulse::Query(db_.get(), "NORTHSTAR WHERE time > now() - 1h OVER 2h", {}, &r).ok());
  EXPECT_NE(r.statements[0].status.message().find("either"), std::string::npos);
  r = {};
  ASSERT_TRUE(gpulse::Query(db_.get(), "NORTHSTAR WHERE util > 3", {}, &r).ok());
  EXPECT_TRUE(r.statements[0].status.IsInvalidArgument()) << r.statements[0].status.ToString();
  r = {};
  ASSERT_TRUE(gpulse::Query(db_.get(), "NORTHSTAR EVERY 0s", {}, &r).ok());
  EXPECT_TRUE(r.statements[0].status.IsInvalidArgument());
  // An attribution in WHERE would match no gpu series' tag: an error, not
  // an empty answer.
  r = {};
  ASSERT_TRUE(
      gpulse::Query(db_.get(), "NORTHSTAR WHERE region = 'r1' AND team = 'vision'", {}, &r).ok());
  EXPECT_TRUE(r.statements[0].status.IsInvalidArgument());
  EXPECT_NE(r.statements[0].status.message().find("group BY team"), std::string::npos)
      << r.statements[0].status.message();
  EXPECT_NE(r.statements[0].status.message().find("column 35"), std::string::npos)
      << r.statements[0].status.message();
}

// Four nodes; in the second hour the two on a new driver crash their jobs,
// which had no checkpoint: software is the loss that grew, by 50 points,
// and the new driver is where it went.
TEST_F(NorthstarTest, DecomposeRanksTheLossThatGrewAndNamesWhereItWent) {
  const std::vector<std::string> nodes = {"n1", "n2", "n3", "n4"};
  for (int hour = 0; hour < 2; ++hour) {
    for (const std::string& node : nodes) {
      const bool upgraded = hour == 1 && (node == "n1" || node == "n2");
      const std::string job = (hour == 0 ? "a-" : "b-") + node;
      const int64_t from = kT0 + hour * 60 * kMinute;
      // Events of one minute share a series: a nanosecond apiece keeps them apart.
      const int64_t apart = &node - nodes.data();
      Sched("submitted", from + apart, job);
      Sched("started", from + apart, job);
      for (int m = 0; m < 60; ++m) {
        const int64_t t = from + m * kMinute;
        Node(t, false, 8, node, upgraded ? "550.90.07" : "535.183.01");
        for (int g = 0; g < 8; ++g) Gpu(g, t, job, 0, node);
        Step(t, job, m + 1, node);
      }
      if (upgraded) {
        Sched("ended", from + 60 * kMinute + apart, job,
              {{"status", std::string("failed")}, {"reason", std::string("software")}});
      } else {
        Sched("ended", from + 60 * kMinute + apart, job, {{"status", std::string("succeeded")}});
      }
    }
  }
  Flush();
  QueryResult r;
  const std::string q = "DECOMPOSE NORTHSTAR BETWEEN " + std::to_string(kT0) + "ns AND " +
                        std::to_string(kT0 + 60 * kMinute) + "ns VERSUS " +
                        std::to_string(kT0 + 60 * kMinute) + "ns AND " +
                        std::to_string(kT0 + 120 * kMinute) + "ns";
  ASSERT_TRUE(gpulse::Query(db_.get(), q, {}, &r).ok());
  const StatementResult& st = r.statements.at(0);
  ASSERT_TRUE(st.status.ok()) << st.status.ToString();
  const ResultSeries& summary = st.series.at(0);
  EXPECT_EQ(summary.name, "decompose");
  EXPECT_EQ(std::get<std::string>(summary.values[0][1]), "goodput");
  EXPECT_DOUBLE_EQ(std::get<double>(summary.values[0][2]), 1.0);
  EXPECT_DOUBLE_EQ(std::get<double>(summary.values[0][3]), 0.5);
  EXPECT_EQ(std::get<std::string>(summary.values[1][1]), "software");  // rank 1
  EXPECT_NEAR(std::get<double>(summary.values[1][4]), 50.0, 1e-9);
  // Where software's change went: the new driver and its two nodes, each
  // concentrating it twice over their share of capacity; no single GPU
  // (1/16 of the change) is named.
  const ResultSeries* software = nullptr;
  for (const ResultSeries& s : st.series) {
    if (s.name == "contributors" && s.tags.at(0).value == "software") software = &s;
  }
  ASSERT_NE(software, nullptr);
  std::set<std::string> top3;
  for (size_t i = 0; i < 3 && i < software->values.size(); ++i) {
    top3.insert(std::get<std::string>(software->values[i][1]) + "=" +
                std::get<std::string>(software->values[i][2]));
  }
  EXPECT_EQ(top3, (std::set<std::string>{"driver_version=550.90.07", "node=n1", "node=n2"}));
  for (const auto& row : software->values) EXPECT_NE(std::get<std::string>(row[1]), "gpu");
}

// A GPU left idle by a failed job is idle because of the failure until the
// job is resubmitted; a job that is not resubmitted leaves its GPU to the
// failure for at most as long as the job had run, then to slack.
TEST_F(NorthstarTest, IdleTimeAfterAFailureIsTheFailuresUntilTheJobComesBack) {
  // GPU 0: job "back" runs minutes 0-29, fails (software, no checkpoint) at
  // 30, is resubmitted at 35 and starts on GPU 1 at 40. GPU 2: job "gone"
  // runs minutes 0-9, fails at 10 and never comes back.
  Sched("submitted", kT0, "back");
  Sched("started", kT0, "back", {{"nodes", std::string("n1")}});
  Sched("submitted", kT0 + 1, "gone");
  Sched("started", kT0 + 1, "gone", {{"nodes", std::string("n1")}});
  Sched("ended", kT0 + 10 * kMinute + 1, "gone",
        {{"status", std::string("failed")}, {"reason", std::string("software")}});
  Sched("ended", kT0 + 30 * kMinute, "back",
        {{"status", std::string("failed")}, {"reason", std::string("software")}});
  Sched("retried", kT0 + 35 * kMinute, "back");
  Sched("started", kT0 + 40 * kMinute, "back", {{"nodes", std::string("n1")}});
  for (int m = 0; m < 60; ++m) {
    const int64_t t = kT0 + m * kMinute;
    Node(t);
    Gpu(0, t, m < 30 ? "back" : "");
    Gpu(1, t, m >= 40 ? "back" : "");
    Gpu(2, t, m < 10 ? "gone" : "");
    if (m < 30 || m >= 40) Step(t, "back", m + 1);
    if (m < 10) Step(t, "gone", m + 1);
  }
  Flush();
  const auto row = Northstar(kT0, kT0 + 60 * kMinute);
  ASSERT_FALSE(row.empty());
  // GPU 0: 30 minutes lost and 5 waiting for the resubmission are software,
  // 5 idle while the retry waited are scheduling, 20 slack. GPU 1: 35
  // slack, 5 scheduling, 20 productive. GPU 2: 10 lost and 10 more (as
  // long as the job had run) are software, 5 scheduling, 35 slack.
  EXPECT_DOUBLE_EQ(row.at("capacity_gpu_minutes"), 180);
  EXPECT_NEAR(row.at("software") * 180, 55, 1e-9);
  EXPECT_NEAR(row.at("scheduling") * 180, 15, 1e-9);
  EXPECT_DOUBLE_EQ(row.at("productive_gpu_minutes"), 20);
  EXPECT_NEAR(row.at("slack") * 180, 90, 1e-9);
  EXPECT_DOUBLE_EQ(row.at("failed_jobs"), 2);
}

// Cost by team: each GPU-minute at its region's and SKU's price then (all
// pricings' USD per hour over the GPUs they pay for), the idle minutes under
// no team, a price holding until the next cost point (one before the range
// prices its first minutes).
TEST_F(NorthstarTest, CostIsEachGpuMinuteAtItsPriceByTeamAndAddsUpToTheBill) {
  const auto price = [&](int64_t t, double reserved_usd, double on_demand_usd) {
    Put({"cost",
         {{"region", "r1"}, {"sku", "H100"}, {"pricing", "reserved"}},
         {{"usd_per_gpu_hour", reserved_usd},
          {"gpus", int64_t{6}},
          {"usd_per_hour", 6 * reserved_usd}},
         t});
    Put({"cost",
         {{"region", "r1"}, {"sku", "H100"}, {"pricing", "on_demand"}},
         {{"usd_per_gpu_hour", on_demand_usd},
          {"gpus", int64_t{2}},
          {"usd_per_hour", 2 * on_demand_usd}},
         t});
  };
  price(kT0 - 60 * kMinute, 2.0, 4.0);  // 20 USD an hour for 8 GPUs: 2.50 a GPU-hour
  price(kT0 + 30 * kMinute, 4.0, 8.0);  // from the half hour on: 5.00
  Sched("submitted", kT0, "a");
  Sched("started", kT0, "a");
  for (int m = 0; m < 60; ++m) {
    const int64_t t = kT0 + m * kMinute;
    Node(t);
    for (int g = 0; g < 8; ++g) Gpu(g, t, g < 4 ? "a" : "");
    Step(t, "a", m + 1);
  }
  Flush();
  const StatementResult r =
      test::RunFirst(db_.get(), "NORTHSTAR BY team WHERE time >= " + std::to_string(kT0) +
                                    "ns AND time < " + std::to_string(kT0 + 60 * kMinute) + "ns");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.series.size(), 2u);  // team "" (idle) and vision
  const auto column = [](const ResultSeries& s, const std::string& name) {
    for (size_t c = 0; c < s.columns.size(); ++c) {
      if (s.columns[c] == name) return s.values.at(0)[c];
    }
    return QueryValue();
  };
  double total = 0;
  for (const ResultSeries& s : r.series) {
    // Four GPUs for 30 minutes at 2.50 an hour and 30 at 5.00: 15 USD.
    EXPECT_NEAR(std::get<double>(column(s, "cost_usd")), 15.0, 1e-9) << s.tags.at(0).value;
    total += std::get<double>(column(s, "cost_usd"));
  }
  EXPECT_NEAR(total, 0.5 * 20 + 0.5 * 40, 1e-9);  // the hour's bill
  const ResultSeries& vision = r.series[1];
  EXPECT_EQ(vision.tags.at(0).value, "vision");
  EXPECT_NEAR(std::get<double>(column(vision, "usd_per_productive_gpu_hour")), 15.0 / 4, 1e-9);
  // Idle minutes are not productive: no price per productive hour.
  EXPECT_TRUE(
      std::holds_alternative<std::monostate>(column(r.series[0], "usd_per_productive_gpu_hour")));
}

// EVERY 1mo: calendar months (UTC), for cost and goodput by month.
TEST_F(NorthstarTest, EveryMonthBucketsByCalendarMonth) {
  const int64_t from = kT0 - kDay - 60 * kMinute;  // 2026-10-31T23:00:00Z
  for (int m = 0; m < 120; ++m) {
    const int64_t t = from + m * kMinute;
    Node(t);
    Gpu(0, t, "");
  }
  Flush();
  const StatementResult r = test::RunFirst(
      db_.get(), "NORTHSTAR WHERE gpu = '0' AND time >= " + std::to_string(from) +
                     "ns AND time < " + std::to_string(from + 120 * kMinute) + "ns EVERY 1mo");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.series.size(), 1u);
  const auto& rows = r.series[0].values;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(rows[0][0]), 1790812800LL * 1'000'000'000);  // 2026-10-01
  EXPECT_EQ(std::get<int64_t>(rows[1][0]), kT0 - kDay);                    // 2026-11-01
  EXPECT_DOUBLE_EQ(std::get<double>(rows[0][3]), 60);
  EXPECT_DOUBLE_EQ(std::get<double>(rows[1][3]), 60);
}

// EVERY 1h (any duration) buckets on the epoch's grid, as GROUP BY time's:
// a range from 23:30 to 01:15 gives the hours 23:00 (its last 30 minutes),
// 00:00 and 01:00 (its first 15), not hours from 23:30.
TEST_F(NorthstarTest, EveryBucketsOnTheEpochsGridWhateverTheRangesStart) {
  const int64_t from = kT0 - 60 * kMinute;  // 2026-11-01T23:00:00Z
  for (int m = 0; m < 180; ++m) {
    const int64_t t = from + m * kMinute;
    Node(t);
    Gpu(0, t, "");
  }
  Flush();
  const StatementResult r = test::RunFirst(
      db_.get(), "NORTHSTAR WHERE gpu = '0' AND time >= " + std::to_string(from + 30 * kMinute) +
                     "ns AND time < " + std::to_string(kT0 + 75 * kMinute) + "ns EVERY 1h");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.series.size(), 1u);
  const auto& rows = r.series[0].values;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(rows[0][0]), from);
  EXPECT_EQ(std::get<int64_t>(rows[1][0]), kT0);
  EXPECT_EQ(std::get<int64_t>(rows[2][0]), kT0 + 60 * kMinute);
  EXPECT_DOUBLE_EQ(std::get<double>(rows[0][3]), 30);  // capacity: the range's minutes only
  EXPECT_DOUBLE_EQ(std::get<double>(rows[1][3]), 60);
  EXPECT_DOUBLE_EQ(std::get<double>(rows[2][3]), 15);
}

// EVERY's grid shifts by OFFSET and lies in tz()'s zone, as GROUP BY
// time's: six hours from 22:00Z in 2h buckets are 21:00, 23:00, 01:00 and
// 03:00 with OFFSET 1h; 4h buckets in Asia/Kolkata (UTC+5:30) start at
// 22:30Z and 02:30Z.
TEST_F(NorthstarTest, EveryShiftsByItsOffsetAndLiesInItsTimeZone) {
  const int64_t from = kT0 - 120 * kMinute;  // 2026-11-01T22:00:00Z
  for (int m = 0; m < 360; ++m) {
    const int64_t t = from + m * kMinute;
    Node(t);
    Gpu(0, t, "");
  }
  Flush();
  const std::string range = "NORTHSTAR WHERE gpu = '0' AND time >= " + std::to_string(from) +
                            "ns AND time < " + std::to_string(from + 360 * kMinute) + "ns ";
  const auto starts_and_minutes = [&](const std::string& every) {
    const StatementResult r = test::RunFirst(db_.get(), range + every);
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    std::vector<std::pair<int64_t, double>> out;
    for (const ResultSeries& s : r.series) {
      for (const auto& row : s.values) {
        out.push_back({std::get<int64_t>(row[0]), std::get<double>(row[3])});
      }
    }
    return out;
  };
  using Rows = std::vector<std::pair<int64_t, double>>;
  EXPECT_EQ(starts_and_minutes("EVERY 2h OFFSET 1h"), (Rows{{from - 60 * kMinute, 60},
                                                            {from + 60 * kMinute, 120},
                                                            {from + 180 * kMinute, 120},
                                                            {from + 300 * kMinute, 60}}));
  EXPECT_EQ(
      starts_and_minutes("EVERY 4h tz('Asia/Kolkata')"),
      (Rows{{from - 210 * kMinute, 30}, {from + 30 * kMinute, 240}, {from + 270 * kMinute, 90}}));
  const StatementResult bare = test::RunFirst(db_.get(), range + "tz('Asia/Kolkata')");
  EXPECT_TRUE(bare.status.IsInvalidArgument()) << bare.status.ToString();
}

// The summary and contributor series of a DECOMPOSE of [kT0, +1h) against
// [+1h, +2h).
StatementResult DecomposeFirstTwoHours(Db* db) {
  return test::RunFirst(db, "DECOMPOSE NORTHSTAR BETWEEN " + std::to_string(kT0) + "ns AND " +
                                std::to_string(kT0 + 60 * kMinute) + "ns VERSUS " +
                                std::to_string(kT0 + 60 * kMinute) + "ns AND " +
                                std::to_string(kT0 + 120 * kMinute) + "ns");
}

const ResultSeries* ContributorsOf(const StatementResult& r, const std::string& loss) {
  for (const ResultSeries& s : r.series) {
    if (s.name == "contributors" && s.tags.at(0).value == loss) return &s;
  }
  return nullptr;
}

// A job across two nodes slows down in gradient sync when one node's link
// starts losing packets: the network loss is on all 16 of its GPUs, and
// DECOMPOSE traces it to the troubled link, not to the healthy one.
TEST_F(NorthstarTest, DecomposeTracesANetworkLossToTheTroubledLinkTheJobCrossed) {
  Sched("submitted", kT0, "wide");
  Sched("started", kT0, "wide", {{"nodes", std::string("n1,n2")}});
  Sched("submitted", kT0 + 1, "calm");
  Sched("started", kT0 + 1, "calm", {{"nodes", std::string("n3")}});
  // Two more jobs across nodes elsewhere, so that the baseline of
  // multi-node jobs of the class is the calm share, not the troubled one.
  for (int k = 1; k <= 2; ++k) {  // events a nanosecond apart: one series
    const std::string job = "calm-elsewhere-" + std::to_string(k);
    Sched("submitted", kT0 + 1 + k, job);
    Sched("started", kT0 + 1 + k, job, {{"nodes", std::string("n4,n5")}});
  }
  for (int m = 0; m < 120; ++m) {
    const int64_t t = kT0 + m * kMinute;
    const bool troubled = m >= 60;
    for (const std::string node : {"n1", "n2", "n3"}) {
      Node(t, false, 8, node);
      for (int g = 0; g < 8; ++g) Gpu(g, t, node == "n3" ? "calm" : "wide", 0, node);
      const bool lossy = troubled && node == "n2";
      Put({"link",
           {{"region", "r1"}, {"cluster", "c1"}, {"node", node}, {"link", "ib0"}},
           {{"packet_loss_pct", lossy ? 1.0 : 0.00001}, {"retransmits", int64_t{lossy ? 480 : 0}}},
           t});
    }
    Step(t, "wide", m + 1, "n1", troubled ? 600.0 : 100.0);
    Step(t, "calm", m + 1, "n3");
    Step(t, "calm-elsewhere-1", m + 1, "n4");
    Step(t, "calm-elsewhere-2", m + 1, "n5");
  }
  Flush();
  const StatementResult r = DecomposeFirstTwoHours(db_.get());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_FALSE(r.series.empty());
  // 16 of 24 GPUs lose half of each minute above the class's baseline.
  EXPECT_EQ(std::get<std::string>(r.series[0].values[1][1]), "network");
  EXPECT_NEAR(std::get<double>(r.series[0].values[1][4]), 100.0 * 16 * 0.5 / 24,
              1e-4);  // float shares
  const ResultSeries* network = ContributorsOf(r, "network");
  ASSERT_NE(network, nullptr);
  EXPECT_EQ(std::get<std::string>(network->values.at(0)[1]), "link");
  EXPECT_EQ(std::get<std::string>(network->values.at(0)[2]), "n2/ib0");
  EXPECT_NEAR(std::get<double>(network->values.at(0)[6]), 1.0, 1e-9);  // all of the change
  for (const auto& row : network->values) EXPECT_NE(std::get<std::string>(row[2]), "n1/ib0");
}

// An incident on most of a class (three of its four jobs wait four times as
// long on data) would raise the class's median and hide itself if each
// window were its own yardstick: DECOMPOSE judges both by the earlier one.
TEST_F(NorthstarTest, DecomposeJudgesBothWindowsByTheEarlierWindowsBaseline) {
  const std::vector<std::string> nodes = {"n1", "n2", "n3", "n4"};
  for (size_t k = 0; k < nodes.size(); ++k) {
    const std::string job = "job-" + nodes[k];
    Sched("submitted", kT0 + static_cast<int64_t>(k), job);
    Sched("started", kT0 + static_cast<int64_t>(k), job, {{"nodes", nodes[k]}});
  }
  for (int m = 0; m < 120; ++m) {
    const int64_t t = kT0 + m * kMinute;
    for (size_t k = 0; k < nodes.size(); ++k) {
      Node(t, false, 8, nodes[k]);
      for (int g = 0; g < 8; ++g) Gpu(g, t, "job-" + nodes[k], 0, nodes[k]);
      const bool slow = m >= 60 && k < 3;
      Step(t, "job-" + nodes[k], m + 1, nodes[k], 100.0, slow ? 400.0 : 100.0);
    }
  }
  Flush();
  const StatementResult r = DecomposeFirstTwoHours(db_.get());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_FALSE(r.series.empty());
  const auto& rows = r.series[0].values;
  EXPECT_EQ(std::get<std::string>(rows[1][1]), "data_io");
  // 24 of 32 GPUs spend 30% of each minute above the earlier median (10%).
  EXPECT_NEAR(std::get<double>(rows[1][4]), 100.0 * 24 * 0.3 / 32, 1e-4);  // float shares
  EXPECT_NEAR(std::get<double>(rows[0][4]), -100.0 * 24 * 0.3 / 32, 1e-4);
  // NORTHSTAR over the later hour alone judges it as a NORTHSTAR over the
  // whole day would (a minute's answer does not depend on the range): with
  // no day before, by the day's own median, the fast steps; were the hour
  // its own yardstick, the slow steps would be its median and nothing would
  // be lost.
  EXPECT_NEAR(Northstar(kT0 + 60 * kMinute, kT0 + 120 * kMinute)["data_io"], 24 * 0.3 / 32, 1e-6);
}

// A loss that never moves moving a little says more than one that swings
// hour by hour moving more: one GPU failing steadily for the whole later
// hour (3.1 points) ranks above a queue burst's idle GPUs (4.9 points, in
// two bursts of a few minutes).
TEST_F(NorthstarTest, DecomposeRanksASteadyChangeAboveALargerNoisyOne) {
  const std::vector<std::string> nodes = {"n1", "n2", "n3", "n4"};
  // Bursts: a job waits [0, 2) minutes in the earlier hour, [90, 98) in the
  // later; n3 and n4 idle throughout, their GPUs then scheduling losses.
  Sched("submitted", kT0, "wait-1");
  Sched("started", kT0 + 2 * kMinute, "wait-1", {{"nodes", std::string("n9")}});
  Sched("submitted", kT0 + 90 * kMinute, "wait-2");
  Sched("started", kT0 + 98 * kMinute, "wait-2", {{"nodes", std::string("n9")}});
  for (int m = 0; m < 120; ++m) {
    const int64_t t = kT0 + m * kMinute;
    for (const std::string& node : nodes) {
      Node(t, false, 8, node);
      for (int g = 0; g < 8; ++g) {
        if (node == "n1" && g == 0) {
          Gpu(g, t, "", m >= 60 ? 79 : 0, node);  // fallen off the bus in the later hour
        } else if (node == "n3" || node == "n4") {
          Gpu(g, t, "", 0, node);
        } else {
          Gpu(g, t, "run-" + node, 0, node);
        }
      }
      if (node == "n1" || node == "n2") Step(t, "run-" + node, m + 1, node);
    }
  }
  Flush();
  const StatementResult r = DecomposeFirstTwoHours(db_.get());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_FALSE(r.series.empty());
  const ResultSeries& summary = r.series[0];
  ASSERT_EQ(summary.columns,
            (std::vector<std::string>{"rank", "loss", "before", "after", "change_points",
                                      "single_job_points", "noise_points", "significance",
                                      "yardstick", "verdict", "evidence"}));
  std::map<std::string, std::pair<int64_t, double>> by_loss;  // rank, change
  std::map<std::string, std::vector<QueryValue>> rows;
  for (const auto& row : summary.values) {
    by_loss[std::get<std::string>(row[1])] = {std::get<int64_t>(row[0]), std::get<double>(row[4])};
    rows[std::get<std::string>(row[1])] = row;
  }
  // The fallen GPU is named as the hardware loss's evidence: it raised XID
  // 79 in the later hour and nothing before. No history: the two hours are
  // judged by their own minutes.
  EXPECT_EQ(std::get<std::string>(rows["hardware"][8]), "the windows' hours");
  EXPECT_EQ(std::get<std::string>(rows["hardware"][10]),
            "hardware XIDs (minutes) on 1 GPU(s) that raised none before: n1/0 (60)");
  EXPECT_NE(std::get<std::string>(rows["hardware"][9]), "within its usual range");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(rows["scheduling"][10]));
  // And as a table a program can read, the GPU by name.
  const auto evidence = std::find_if(r.series.begin(), r.series.end(),
                                     [](const ResultSeries& s) { return s.name == "evidence"; });
  ASSERT_NE(evidence, r.series.end());
  EXPECT_EQ(evidence->tags, (std::vector<Tag>{{"loss", "hardware"}}));
  ASSERT_EQ(evidence->values.size(), 1u);
  EXPECT_EQ(std::get<std::string>(evidence->values[0][1]), "gpu");
  EXPECT_EQ(std::get<std::string>(evidence->values[0][2]), "n1/0");
  EXPECT_EQ(std::get<double>(evidence->values[0][3]), 0.0);
  EXPECT_EQ(std::get<double>(evidence->values[0][4]), 60.0);
  EXPECT_NEAR(by_loss["hardware"].second, 100.0 / 32, 1e-9);
  // Idle while a job waits: n3 and n4 for 8 minutes later; n3, n4 and the
  // then idle n1/0 for 2 minutes earlier.
  EXPECT_NEAR(by_loss["scheduling"].second, 100.0 * (16 * 8 - 17 * 2) / (32 * 60), 1e-9);
  EXPECT_EQ(by_loss["hardware"].first, 1);
  EXPECT_EQ(by_loss["scheduling"].first, 2);
}

// A 16-GPU job killed by one faulty GPU loses an hour on all sixteen: the
// hardware loss is traced to that GPU and its node, not spread over the
// fifteen healthy ones (where no GPU would carry a tenth of the change).
TEST_F(NorthstarTest, DecomposeTracesAHardwareFailureToTheGpuThatFailed) {
  Sched("submitted", kT0, "wide-0");
  Sched("started", kT0, "wide-0", {{"nodes", std::string("n1,n2")}});
  Sched("ended", kT0 + 60 * kMinute, "wide-0", {{"status", std::string("succeeded")}});
  Sched("submitted", kT0 + 60 * kMinute, "wide-1");
  Sched("started", kT0 + 60 * kMinute, "wide-1", {{"nodes", std::string("n1,n2")}});
  Sched("ended", kT0 + 119 * kMinute, "wide-1",
        {{"status", std::string("failed")}, {"reason", std::string("hardware")}});
  for (int m = 0; m < 120; ++m) {
    const int64_t t = kT0 + m * kMinute;
    const std::string job = m < 60 ? "wide-0" : "wide-1";
    for (const std::string node : {"n1", "n2"}) {
      Node(t, false, 8, node);
      for (int g = 0; g < 8; ++g) {
        const bool faulty = node == "n2" && g == 5 && m == 118;
        Gpu(g, t, m < 119 ? job : "", faulty ? 79 : 0, node);
      }
    }
    if (m < 119) Step(t, job, m + 1, "n1");
  }
  Flush();
  const StatementResult r = DecomposeFirstTwoHours(db_.get());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_FALSE(r.series.empty());
  EXPECT_EQ(std::get<std::string>(r.series[0].values[1][1]), "hardware");
  const ResultSeries* hardware = ContributorsOf(r, "hardware");
  ASSERT_NE(hardware, nullptr);
  std::map<std::string, double> share;  // "dimension=value" -> share of change
  for (const auto& row : hardware->values) {
    share[std::get<std::string>(row[1]) + "=" + std::get<std::string>(row[2])] =
        std::get<double>(row[6]);
  }
  ASSERT_GE(hardware->values.size(), 2u);
  EXPECT_EQ(std::get<std::string>(hardware->values[0][2]), "n2/5");  // the GPU first
  EXPECT_NEAR(share["gpu=n2/5"], 1.0, 1e-9);
  EXPECT_NEAR(share["node=n2"], 1.0, 1e-9);
  EXPECT_EQ(share.count("node=n1"), 0u);
}

// Twelve jobs an hour, each run for two minutes on two GPUs of node n1, on
// a fleet of two nodes; in the first hour each waits `wait_before` minutes
// after it is submitted, in the second `wait_after`, asking for `asked`
// GPUs, while node n2 stays idle. Returns the DECOMPOSE of the first hour
// against the second.
class QueueWaitsTest : public NorthstarTest {
 protected:
  StatementResult Run(int wait_before, int wait_after, int64_t asked) {
    std::map<int, std::string> running;  // minute -> job on n1's GPUs 0-1
    for (int hour = 0; hour < 2; ++hour) {
      const int wait = hour == 0 ? wait_before : wait_after;
      for (int k = 0; k < 12; ++k) {
        const std::string job = "j" + std::to_string(hour) + "-" + std::to_string(k);
        const int submitted = 60 * hour + 5 * k, started = submitted + wait;
        Sched("submitted", kT0 + submitted * kMinute, job, {{"requested_gpus", asked}});
        Sched("started", kT0 + started * kMinute, job, {{"nodes", std::string("n1")}});
        Sched("ended", kT0 + (started + 2) * kMinute, job, {{"status", std::string("succeeded")}});
        running[started] = running[started + 1] = job;
      }
    }
    for (int m = 0; m < 120; ++m) {
      const int64_t t = kT0 + m * kMinute;
      const auto it = running.find(m);
      for (const std::string node : {"n1", "n2"}) {
        Node(t, false, 8, node);
        for (int g = 0; g < 8; ++g) {
          Gpu(g, t, node == "n1" && g < 2 && it != running.end() ? it->second : "", 0, node);
        }
      }
      if (it != running.end()) Step(t, it->second, m + 1, "n1");
    }
    Flush();
    return DecomposeFirstTwoHours(db_.get());
  }

  // The scheduling loss's verdict and its evidence table, if any.
  static std::pair<std::string, const ResultSeries*> Scheduling(const StatementResult& r) {
    std::string verdict;
    for (const auto& row : r.series.at(0).values) {
      if (std::get<std::string>(row[1]) == "scheduling") verdict = std::get<std::string>(row[9]);
    }
    for (const ResultSeries& s : r.series) {
      if (s.name == "evidence" && s.tags.at(0).value == "scheduling") return {verdict, &s};
    }
    return {verdict, nullptr};
  }
};

// A scheduler that stops placing what fits (no backfill, a wrong order)
// leaves jobs waiting beside idle GPUs: DECOMPOSE shows the region as the
// scheduling loss's evidence and ranks the loss first, whatever its size.
TEST_F(QueueWaitsTest, JobsWaitingBesideRoomForThemAreTheSchedulersEvidence) {
  const StatementResult r = Run(/*wait_before=*/0, /*wait_after=*/4, /*asked=*/2);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const auto [verdict, evidence] = Scheduling(r);
  EXPECT_EQ(std::get<std::string>(r.series.at(0).values.at(1)[1]), "scheduling");
  EXPECT_NE(verdict.find("evidence"), std::string::npos) << verdict;
  ASSERT_NE(evidence, nullptr);
  const auto& item = evidence->values.at(0);
  EXPECT_EQ(std::get<std::string>(item[1]), "region");
  EXPECT_EQ(std::get<std::string>(item[2]), "r1");
  // Minutes in which a job waited beside room: none of 60 before, three
  // whole minutes of each of the 12 jobs after.
  EXPECT_DOUBLE_EQ(std::get<double>(item[3]), 0.0);
  EXPECT_DOUBLE_EQ(std::get<double>(item[4]), 36.0 / 60);
}

// Waits are evidence only beyond the region's own habit: a scheduler as
// slow in both windows is not.
TEST_F(QueueWaitsTest, WaitsAsSlowAsBeforeAreNotEvidence) {
  const StatementResult same = Run(/*wait_before=*/4, /*wait_after=*/4, /*asked=*/2);
  ASSERT_TRUE(same.status.ok()) << same.status.ToString();
  EXPECT_EQ(Scheduling(same).first, "within its usual range");
  EXPECT_EQ(Scheduling(same).second, nullptr);
}

// A job wider than any node's room (it needs whole nodes) waiting beside
// idle GPUs is not waiting beside room for it.
TEST_F(QueueWaitsTest, AJobWiderThanEveryNodesRoomIsNotWaitingBesideRoom) {
  const StatementResult wide = Run(/*wait_before=*/0, /*wait_after=*/4, /*asked=*/16);
  ASSERT_TRUE(wide.status.ok()) << wide.status.ToString();
  EXPECT_EQ(Scheduling(wide).second, nullptr);
}

// A fleet of nodes n1-n3 over two hours, each node running one image's work
// of one workload class in each hour (test::CohortWork). Returns the
// DECOMPOSE of the first hour against the second.
class SoftwareCohortTest : public NorthstarTest {
 protected:
  using Work = test::CohortWork;

  StatementResult Run(const std::vector<Work>& first_hour, const std::vector<Work>& second_hour) {
    int64_t jobs = 0;
    for (int hour = 0; hour < 2; ++hour) {
      for (const Work& w : hour == 0 ? first_hour : second_hour) {
        for (Point& p : test::CohortWorkPoints(kT0 + hour * 60 * kMinute, w, &jobs))
          Put(std::move(p));
      }
    }
    for (const std::string node : {"n1", "n2", "n3"}) {
      for (Point& p : test::CohortNodePoints(node, kT0, kT0 + 120 * kMinute)) Put(std::move(p));
    }
    Flush();
    return DecomposeFirstTwoHours(db_.get());
  }

  // The software loss's evidence table, if any.
  static const ResultSeries* SoftwareEvidence(const StatementResult& r) {
    for (const ResultSeries& s : r.series) {
      if (s.name == "evidence" && s.tags.at(0).value == "software") return &s;
    }
    return nullptr;
  }
};

// An image whose work turned from one wide training job to notebooks fails
// far more often a GPU-hour, at just the rate the fleet's notebooks fail:
// judged against what its own work fails at, that is no evidence (judged by
// GPU-hours alone, 16 failures against none before on as many GPU-hours
// were).
TEST_F(SoftwareCohortTest, AnImageWhoseWorkTurnedToNotebooksIsJudgedByWhatNotebooksFailAt) {
  const Work notebooks{"n1", "img-b", "interactive", 16}, training{"n2", "img-b", "pretrain"};
  const StatementResult r = Run({notebooks, training, {"n3", "img-a", "pretrain"}},
                                {notebooks, training, {"n3", "img-a", "interactive", 16}});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const ResultSeries* evidence = SoftwareEvidence(r);
  EXPECT_EQ(evidence, nullptr) << (evidence == nullptr
                                       ? ""
                                       : std::get<std::string>(evidence->values.at(0)[2]));
}

// The same notebooks on one image failing twelve times as often as they did
// the hour before, while the rest of the fleet's fail as before: the image
// is the software loss's evidence, named first, at its failures a GPU-hour.
TEST_F(SoftwareCohortTest, NotebooksOfOneImageFailingMoreThanBeforeAreEvidence) {
  const Work notebooks{"n1", "img-b", "interactive", 2}, training{"n2", "img-b", "pretrain"};
  const StatementResult r = Run({notebooks, training, {"n3", "img-a", "interactive", 2}},
                                {notebooks, training, {"n3", "img-a", "interactive", 24}});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const ResultSeries* evidence = SoftwareEvidence(r);
  ASSERT_NE(evidence, nullptr);
  const auto& item = evidence->values.at(0);
  EXPECT_EQ(std::get<std::string>(item[1]), "image");
  EXPECT_EQ(std::get<std::string>(item[2]), "img-a");
  EXPECT_DOUBLE_EQ(std::get<double>(item[3]), 60.0 * 2 / 480);
  EXPECT_DOUBLE_EQ(std::get<double>(item[4]), 60.0 * 24 / 480);
}

// A job across nodes syncs gradients over the fabric and spends more of its
// step on it than one-node jobs of its class; steady, that is not a loss.
TEST_F(NorthstarTest, AMultiNodeJobIsComparedWithMultiNodeJobs) {
  const std::vector<std::tuple<std::string, std::string, double>> jobs = {
      {"wide", "n1,n2", 300.0}, {"narrow-1", "n3", 100.0}, {"narrow-2", "n4", 100.0}};
  for (size_t k = 0; k < jobs.size(); ++k) {
    const auto& [job, nodes, sync] = jobs[k];
    Sched("submitted", kT0 + static_cast<int64_t>(k), job);
    Sched("started", kT0 + static_cast<int64_t>(k), job, {{"nodes", nodes}});
  }
  for (int m = 0; m < 60; ++m) {
    const int64_t t = kT0 + m * kMinute;
    for (const auto& [job, nodes, sync] : jobs) {
      const std::string first = nodes.substr(0, 2);
      Node(t, false, 8, first);
      for (int g = 0; g < 8; ++g) Gpu(g, t, job, 0, first);
      Step(t, job, m + 1, first, sync);
    }
  }
  Flush();
  const auto row = Northstar(kT0, kT0 + 60 * kMinute);
  ASSERT_FALSE(row.empty());
  EXPECT_EQ(row.at("network"), 0.0);
  EXPECT_DOUBLE_EQ(row.at("goodput"), 1.0);
}

// Idle capacity with nothing waiting is slack, and slack is listed after
// the losses of ill health, with a note when it moved goodput most: less
// demand is not what went wrong.
TEST_F(NorthstarTest, DecomposeListsSlackLastAndSaysWhenDemandMovedGoodput) {
  Sched("submitted", kT0, "a");
  Sched("started", kT0, "a");
  Sched("ended", kT0 + 60 * kMinute, "a", {{"status", std::string("succeeded")}});
  Sched("submitted", kT0 + 60 * kMinute, "b");
  Sched("started", kT0 + 60 * kMinute, "b");
  for (int m = 0; m < 120; ++m) {
    const int64_t t = kT0 + m * kMinute;
    Node(t);
    const std::string job = m < 60 ? "a" : "b";
    // The second hour: half the GPUs idle, and one minute of "b" stalls.
    for (int g = 0; g < 8; ++g) Gpu(g, t, m < 60 || g < 4 ? job : "");
    Step(t, job, m == 90 ? 90 : m + 1);
  }
  Flush();
  const StatementResult r = DecomposeFirstTwoHours(db_.get());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_FALSE(r.series.empty());
  const auto& rows = r.series[0].values;
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(std::get<std::string>(rows[1][1]), "software");  // 4 GPU-minutes stalled
  EXPECT_EQ(std::get<std::string>(rows[8][1]), "slack");
  EXPECT_NEAR(std::get<double>(rows[8][4]), 50.0, 1e-9);
  // The stall is one minute: nothing beyond the usual range of the hours'
  // own minutes, which a second note says.
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("moved with demand"), std::string::npos) << r.notes[0];
  EXPECT_EQ(r.notes[1].rfind("no loss moved beyond its usual range", 0), 0u) << r.notes[1];
  EXPECT_EQ(std::get<std::string>(rows[1][9]), "within its usual range");
}

// Found in review: the same job id in two regions made the queue replay
// write past a vector (DECOMPOSE traces queues); ranges near the ends of
// int64 overflowed the minute count. Both are answers or errors now.
TEST_F(NorthstarTest, OddSchedulesAndExtremeRangesAreAnswersOrErrorsNotCrashes) {
  for (const auto& [event, region, queue] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"submitted", "us", "batch"},
                                                                      {"submitted", "eu", "train"},
                                                                      {"started", "us", "batch"}}) {
    Put({"sched",
         {{"event", event}, {"region", region}, {"queue", queue}},
         {{"job", std::string("j1")}},
         kT0 + (event == "started" ? kMinute : 0)});
  }
  for (int m = 0; m < 5; ++m) Gpu(0, kT0 + m * kMinute, "");
  Flush();
  QueryResult r;
  const std::string q = "DECOMPOSE NORTHSTAR BETWEEN " + std::to_string(kT0) + "ns AND " +
                        std::to_string(kT0 + 2 * kMinute) + "ns VERSUS " +
                        std::to_string(kT0 + 2 * kMinute) + "ns AND " +
                        std::to_string(kT0 + 5 * kMinute) + "ns";
  ASSERT_TRUE(gpulse::Query(db_.get(), q, {}, &r).ok());
  EXPECT_TRUE(r.statements[0].status.ok()) << r.statements[0].status.ToString();
  for (const char* extreme : {"NORTHSTAR WHERE time >= -9000000000000000000ns AND time < 0ns",
                              "NORTHSTAR WHERE time >= 0ns AND time <= 9223372036854775807ns"}) {
    r = {};
    ASSERT_TRUE(gpulse::Query(db_.get(), extreme, {}, &r).ok());
    EXPECT_TRUE(r.statements[0].status.IsInvalidArgument()) << extreme;
  }
}

// The simulator: the same fleet with and without a team's dummy kernels.
class NorthstarSimTest : public ::testing::Test {
 protected:
  std::unique_ptr<Db> Simulate(const std::string& path, const std::vector<std::string>& incidents) {
    std::unique_ptr<Db> db = test::OpenQuietDb(path);
    if (db != nullptr) test::SimulateInto(db.get(), test::SmallFleet(8, 2, 11, kT0, incidents));
    return db;
  }

  static double First(Db* db, const std::string& q, size_t column = 1) {
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db, q, {}, &r).ok());
    EXPECT_TRUE(r.statements.at(0).status.ok()) << r.statements[0].status.ToString();
    const auto& v = r.statements.at(0).series.at(0).values.at(0).at(column);
    return std::holds_alternative<double>(v) ? std::get<double>(v)
                                             : static_cast<double>(std::get<int64_t>(v));
  }

  storage::ScratchDir dir_;
};

TEST_F(NorthstarSimTest, DummyKernelsRaiseUtilButNotGoodput) {
  auto clean = Simulate(dir_.path() + "/clean", {});
  auto gamed = Simulate(dir_.path() + "/gamed", {"dummy-kernels@1d/12h:vision"});
  const std::string window =
      " WHERE time >= '2026-11-03T01:00:00Z' AND time < '2026-11-03T12:00:00Z'";
  const double util_clean = First(clean.get(), "SELECT mean(util) FROM gpu" + window);
  const double util_gamed = First(gamed.get(), "SELECT mean(util) FROM gpu" + window);
  const double goodput_clean = First(clean.get(), "NORTHSTAR" + window);
  const double goodput_gamed = First(gamed.get(), "NORTHSTAR" + window);
  EXPECT_GT(util_gamed, util_clean + 1);
  EXPECT_LT(goodput_gamed, goodput_clean - 0.01);
  // Where it went: vision's minutes without step progress.
  QueryResult r;
  ASSERT_TRUE(gpulse::Query(gamed.get(), "NORTHSTAR BY team" + window, {}, &r).ok());
  ASSERT_TRUE(r.statements[0].status.ok()) << r.statements[0].status.ToString();
  std::map<std::string, double> software_by_team;
  for (const ResultSeries& s : r.statements[0].series) {
    const auto col = std::find(s.columns.begin(), s.columns.end(), "software") - s.columns.begin();
    software_by_team[s.tags.at(0).value] = std::get<double>(s.values.at(0).at(col));
  }
  for (const auto& [team, share] : software_by_team) {
    if (team != "vision") {
      EXPECT_LT(share, software_by_team["vision"]) << team;
    }
  }
  EXPECT_GT(software_by_team["vision"], 0.3);
}

TEST_F(NorthstarSimTest, GoodputAndTheLossesAddUpToCapacityInEveryBucketAndGroup) {
  auto db = Simulate(dir_.path() + "/fleet",
                     {"driver-upgrade@12h/12h", "hw-fault@1d/6h", "silent-agent@1d6h/2h"});
  QueryResult r;
  ASSERT_TRUE(gpulse::Query(db.get(),
                            "NORTHSTAR BY region WHERE time >= '2026-11-02T00:00:00Z' AND time < "
                            "'2026-11-04T00:00:00Z' "
                            "EVERY 6h",
                            {}, &r)
                  .ok());
  ASSERT_TRUE(r.statements[0].status.ok()) << r.statements[0].status.ToString();
  ASSERT_EQ(r.statements[0].series.size(), 2u);
  double capacity = 0, productive = 0;
  for (const ResultSeries& s : r.statements[0].series) {
    EXPECT_EQ(s.values.size(), 8u);
    for (const auto& row : s.values) {
      double shares = std::get<double>(row[1]);
      // Columns 4.. are the losses, then failed_jobs and the two costs.
      for (size_t c = 4; c + 3 < row.size(); ++c) shares += std::get<double>(row[c]);
      EXPECT_NEAR(shares, 1.0, 1e-9);
      EXPECT_GE(std::get<double>(row[1]), 0.0);
      capacity += std::get<double>(row[3]);
      productive += std::get<double>(row[2]);
    }
  }
  // 64 GPUs for two days: the silent node's minutes are capacity (counted
  // as unobserved), and no maintenance falls on a Monday or Tuesday.
  EXPECT_NEAR(capacity, 64.0 * 2 * 1440, 1e-6);
  EXPECT_GT(productive / capacity, 0.5);  // a busy fleet, nights and incidents included
}

// A minute is judged by its day (the medians of the day before, the GPU's
// state since the day's start), so it gets the same answer in any range:
// six hours asked alone are the six-hour bucket of the two days, and the
// two days are the sum of each day asked alone. The data-loader incident
// on the second day is judged by the first day's medians, and the hardware
// fault's idle minutes straddle the bucket's start.
TEST_F(NorthstarSimTest, AMinutesAnswerDoesNotDependOnTheRangeItIsAskedIn) {
  auto db = Simulate(dir_.path() + "/fleet", {"io-bottleneck@1d2h/8h", "hw-fault@1d5h/3h"});
  // (group, bucket) -> minutes by column (productive, capacity, then each loss).
  using Minutes = std::map<std::pair<std::string, int64_t>, std::vector<double>>;
  const auto ask = [&](const std::string& q) {
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db.get(), q, {}, &r).ok());
    EXPECT_TRUE(r.statements.at(0).status.ok()) << r.statements[0].status.ToString();
    Minutes out;
    for (const ResultSeries& s : r.statements.at(0).series) {
      for (const auto& row : s.values) {
        const double capacity = std::get<double>(row[3]);
        std::vector<double>& v =
            out[{s.tags.empty() ? "" : s.tags[0].value, std::get<int64_t>(row[0])}];
        v = {std::get<double>(row[2]), capacity};
        for (size_t c = 4; c + 3 < row.size(); ++c)
          v.push_back(std::get<double>(row[c]) * capacity);
      }
    }
    return out;
  };
  const auto expect_equal = [](const std::vector<double>& a, const std::vector<double>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t c = 0; c < a.size(); ++c) EXPECT_NEAR(a[c], b[c], 1e-6) << "column " << c;
  };
  const Minutes whole =
      ask("NORTHSTAR BY region WHERE time >= '2026-11-02T00:00:00Z' AND time < "
          "'2026-11-04T00:00:00Z' EVERY 6h");
  // Asked again, from the days kept (query/fleet/ledger_days.h).
  const Minutes again =
      ask("NORTHSTAR BY region WHERE time >= '2026-11-02T00:00:00Z' AND time < "
          "'2026-11-04T00:00:00Z' EVERY 6h");
  ASSERT_EQ(again.size(), whole.size());
  for (const auto& [key, minutes] : whole) expect_equal(again.at(key), minutes);
  const Minutes part =
      ask("NORTHSTAR BY region WHERE time >= '2026-11-03T06:00:00Z' AND time < "
          "'2026-11-03T12:00:00Z'");
  ASSERT_EQ(part.size(), 2u);  // two regions
  for (const auto& [key, minutes] : part) {
    SCOPED_TRACE(key.first);
    expect_equal(minutes, whole.at(key));
  }
  // The same six hours in half-hour buckets, which no kept day's hours
  // answer: built from the data, from the day's start.
  const Minutes halves =
      ask("NORTHSTAR BY region WHERE time >= '2026-11-03T06:00:00Z' AND time < "
          "'2026-11-03T12:00:00Z' EVERY 30m");
  ASSERT_EQ(halves.size(), 2u * 12);
  Minutes summed;
  for (const auto& [key, minutes] : halves) {
    std::vector<double>& into = summed[{key.first, part.begin()->first.second}];
    into.resize(minutes.size());
    for (size_t c = 0; c < minutes.size(); ++c) into[c] += minutes[c];
  }
  for (const auto& [key, minutes] : summed) {
    SCOPED_TRACE(key.first);
    expect_equal(minutes, part.at(key));
  }
  // The incident lost data-loader minutes against the day before's medians.
  double data_io = 0;
  for (const auto& [key, minutes] : part) data_io += minutes[2 + 3];
  EXPECT_GT(data_io, 60.0);
  const Minutes both =
      ask("NORTHSTAR WHERE time >= '2026-11-02T00:00:00Z' AND time < '2026-11-04T00:00:00Z'");
  const Minutes first =
      ask("NORTHSTAR WHERE time >= '2026-11-02T00:00:00Z' AND time < '2026-11-03T00:00:00Z'");
  const Minutes second =
      ask("NORTHSTAR WHERE time >= '2026-11-03T00:00:00Z' AND time < '2026-11-04T00:00:00Z'");
  ASSERT_EQ(both.size(), 1u);
  std::vector<double> sum = first.begin()->second;
  for (size_t c = 0; c < sum.size(); ++c) sum[c] += second.begin()->second[c];
  expect_equal(both.begin()->second, sum);
}

}  // namespace
}  // namespace gpulse
