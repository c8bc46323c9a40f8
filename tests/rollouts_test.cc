// ROLLOUTS (query/fleet/rollouts.h): the evidence of a sequential test a
// rule may read every minute without its false pages growing with the
// looks; the drivers and images new to a window, a bad driver called from
// its first failures and a healthy fleet's rollouts left alone; errors.

#include "query/fleet/rollouts.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "query/fleet/fleet_ledger.h"
#include "query/query.h"
#include "tests/support/cohort_work.h"
#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
using gpulse::test::kMinute;
constexpr int64_t kT0 = 1793577600LL * 1'000'000'000;  // 2026-11-02T00:00:00Z

TEST(RolloutEvidenceTest, GrowsWithFailuresAndShrinksWithWhatWasExpected) {
  EXPECT_LT(query::RolloutEvidence(0, 0.1), 0);
  EXPECT_LT(query::RolloutEvidence(1, 0.1), query::RolloutEvidence(2, 0.1));
  EXPECT_LT(query::RolloutEvidence(3, 0.5), query::RolloutEvidence(3, 0.05));
  // One failure where 0.02 were expected is not enough to wake anyone; three
  // where 0.04 were are (the simulated bad driver's first ten minutes).
  EXPECT_LT(query::RolloutEvidence(1, 0.02), query::kRolloutEvidenceCalled);
  EXPECT_GE(query::RolloutEvidence(3, 0.04), query::kRolloutEvidenceCalled);
  // As many failures as expected is no evidence, however many.
  EXPECT_LT(query::RolloutEvidence(50, 50), 0);
}

// A cohort that fails at the rate expected, watched after every step: the
// share of watches in which the evidence ever reaches the called level must
// stay near the 1 in 1,000 it stands for (Ville's inequality), where a
// fixed-sample test checked at every step would cross far more often. A
// cohort failing 30 times as often is called in nearly every watch.
TEST(RolloutEvidenceTest, WatchedAfterEveryStepAHealthyCohortIsCalledOnceInAThousand) {
  std::mt19937_64 rng(20261128);
  constexpr int kWatches = 20000, kSteps = 200;
  constexpr double kExpectedPerStep = 0.02;  // 4 failures over the watch
  const auto called_share = [&](double multiplier) {
    std::poisson_distribution<int> failures(kExpectedPerStep * multiplier);
    int called = 0;
    for (int w = 0; w < kWatches; ++w) {
      int k = 0;
      for (int step = 1; step <= kSteps; ++step) {
        k += failures(rng);
        if (query::RolloutEvidence(k, kExpectedPerStep * step) >= query::kRolloutEvidenceCalled) {
          ++called;
          break;
        }
      }
    }
    return static_cast<double>(called) / kWatches;
  };
  EXPECT_LE(called_share(1), 0.001);
  EXPECT_GE(called_share(30), 0.99);
}

class RolloutsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Db> Simulate(const std::string& name, const std::vector<std::string>& incidents) {
    std::unique_ptr<Db> db = test::OpenQuietDb(dir_.path() + "/" + name);
    if (db != nullptr) test::SimulateInto(db.get(), test::SmallFleet(8, 2, 11, kT0, incidents));
    return db;
  }

  // ROLLOUTS as a live server would answer it at `now_ns`.
  static StatementResult At(Db* db, int64_t now_ns, const std::string& q = "ROLLOUTS") {
    QueryOptions options;
    options.now_ns = now_ns;
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db, q, options, &r).ok());
    return r.statements.at(0);
  }

  static std::string Column(const ResultSeries& s, const std::string& name) {
    const size_t c = std::find(s.columns.begin(), s.columns.end(), name) - s.columns.begin();
    EXPECT_LT(c, s.columns.size()) << name;
    const QueryValue& v = s.values.at(0).at(c);
    if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
    if (std::holds_alternative<double>(v)) return std::to_string(std::get<double>(v));
    return std::to_string(std::get<int64_t>(v));
  }

  storage::ScratchDir dir_;
};

TEST_F(RolloutsTest, ABadDriverIsCalledFromItsFirstFailuresAndAHealthyFleetIsLeftAlone) {
  auto bad = Simulate("bad", {"driver-upgrade@1d10h/6h"});
  auto clean = Simulate("clean", {});
  const int64_t upgrade = kT0 + kDay + 10 * kHour;
  // In the data's first hours nothing is new: there is nothing before to be new to.
  StatementResult r = At(bad.get(), kT0 + 3 * kHour);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.series.empty());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("ran in the range's first hour"), std::string::npos) << r.notes[0];
  // Before the upgrade, no driver is new.
  r = At(bad.get(), upgrade - 10 * kMinute);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (const ResultSeries& s : r.series) EXPECT_NE(s.tags.at(0).key, "driver_version");
  // Two hours after it, the new driver leads, called, with its first ten
  // minutes (on the clock's grid, whenever it is asked) as the time it came.
  r = At(bad.get(), upgrade + 2 * kHour + 7 * kMinute);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_FALSE(r.series.empty());
  const ResultSeries& first = r.series[0];
  EXPECT_EQ(first.tags.at(0).key, "driver_version");
  EXPECT_EQ(first.tags.at(0).value, "550.90.07");
  EXPECT_EQ(std::get<int64_t>(first.values.at(0).at(0)), upgrade);
  EXPECT_EQ(Column(first, "verdict"), "fails beyond chance");
  EXPECT_GT(std::stod(Column(first, "failures")), 5 * std::stod(Column(first, "expected")));
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("driver_version 550.90.07"), std::string::npos) << r.notes[0];
  // The same fleet without the bad driver: whatever is new in any six
  // hours of the second day, nothing is called.
  for (int64_t t = kT0 + kDay + kHour; t <= kT0 + 2 * kDay; t += 2 * kHour) {
    r = At(clean.get(), t);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    for (const ResultSeries& s : r.series) {
      EXPECT_EQ(Column(s, "verdict"), "within chance")
          << s.tags.at(0).key << "=" << s.tags.at(0).value << " at " << t;
      EXPECT_NE(s.tags.at(0).key, "driver_version");
    }
  }
}

// ROLLOUTS reads the ledger counting drivers and images alone, from the
// range's start; DECOMPOSE's full trace (from the day's start) must give the
// same minutes and failures per driver and image, and the same minutes of
// each by workload class.
TEST_F(RolloutsTest, CountingCohortsAloneGivesWhatTheFullTraceGives) {
  auto db = Simulate("bad", {"driver-upgrade@1d10h/6h", "framework-regression@1d8h/8h"});
  using Counts = std::map<std::pair<std::string, std::string>, std::pair<double, size_t>>;
  const auto counts = [&](bool contributors) {
    query::LedgerOptions lo;
    lo.start_ns = kT0 + kDay + 9 * kHour + 17 * kMinute;
    lo.end_ns = kT0 + kDay + 14 * kHour;
    lo.every_ns = 10 * kMinute;
    lo.known_until_ns = lo.end_ns;
    (contributors ? lo.contributors : lo.cohorts) = true;
    query::Ledger ledger;
    const Status s = query::BuildLedger(db.get(), lo, &ledger);
    EXPECT_TRUE(s.ok()) << s.ToString();
    Counts out;
    std::map<std::pair<std::string, std::string>, std::set<uint64_t>> failed;
    for (const query::LedgerRow& row : ledger.rows) {
      for (const auto& [id, minutes] : row.contributors[0]) {
        const auto& name = ledger.contributor_names[id];
        if (name.first == "driver_version" || name.first == "image") out[name].first += minutes;
      }
      for (const auto& [id, attempts] : row.software_failures)
        failed[ledger.contributor_names[id]].insert(attempts.begin(), attempts.end());
    }
    for (const auto& [name, attempts] : failed) out[name].second = attempts.size();
    for (const query::LedgerRow& row : ledger.rows) {
      for (const auto& [key, minutes] : row.cohort_class_minutes) {
        const auto cls = static_cast<uint32_t>(key);
        const auto& name = ledger.contributor_names[static_cast<uint32_t>(key >> 32)];
        out[{name.first + " " + name.second, cls < ledger.contributor_names.size()
                                                 ? ledger.contributor_names[cls].second
                                                 : "(no job)"}]
            .first += minutes;
      }
    }
    return out;
  };
  const Counts full = counts(true), alone = counts(false);
  EXPECT_EQ(alone, full);
  EXPECT_TRUE(full.contains({"driver_version 550.90.07", "interactive"}));
  ASSERT_TRUE(full.contains({"driver_version", "550.90.07"}));
  EXPECT_GT(full.at({"driver_version", "550.90.07"}).second, 3u);
  size_t images = 0;
  for (const auto& [name, c] : full) images += name.first == "image";
  EXPECT_GE(images, 3u);
}

// ROLLOUTS' page rule reads six hours every minute. Its ledger keeps
// ten-minute rows of each driver's and image's work and failures, and each
// question builds only what no earlier one kept: the minutes since the last
// settled ten and the rows a late point changed. Asked minute after minute
// across a bad rollout, the ledger read equals one built afresh, row by row.
TEST_F(RolloutsTest, KeptTenMinuteRowsGiveWhatABuildAfreshGives) {
  auto db = Simulate("bad", {"driver-upgrade@1d10h/6h", "framework-regression@1d8h/8h"});
  static constexpr int64_t kStep = 10 * kMinute;
  // By row: each loss's minutes, and each driver's and image's presence,
  // work by class and software failures, by name.
  using Row = std::map<std::string, double>;
  const auto ask = [&](int64_t now, bool keep, query::Ledger* out) {
    query::LedgerOptions lo;
    lo.start_ns = (now - 6 * kHour) / kStep * kStep;
    lo.end_ns = now / kMinute * kMinute;
    lo.bucket_of = [](int64_t t) { return t / kStep * kStep; };
    lo.cohorts = true;
    lo.known_until_ns = now;
    lo.keep_days = keep;
    const Status s = query::BuildLedger(db.get(), lo, out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    const query::ContributorNames& names = out->contributor_names;
    const auto name = [&](uint32_t id) { return names[id].first + "=" + names[id].second; };
    std::map<int64_t, Row> rows;
    for (const query::LedgerRow& row : out->rows) {
      Row& r = rows[row.bucket_ns];
      for (size_t l = 0; l < query::kLossCount; ++l)
        r[std::string(query::LossName(static_cast<query::Loss>(l)))] += row.minutes[l];
      for (const auto& [id, m] : row.contributors[0]) r["presence " + name(id)] += m;
      for (const auto& [id, m] : row.class_minutes)
        r["class " + query::WorkloadClassOf(names, id)] += m;
      for (const auto& [key, m] : row.cohort_class_minutes) {
        r["work " + name(static_cast<uint32_t>(key >> 32)) + " " +
          query::WorkloadClassOf(names, static_cast<uint32_t>(key))] += m;
      }
      for (const auto& [id, attempts] : row.software_failures)
        r["failures " + name(id)] += static_cast<double>(attempts.size());
      for (const auto& [attempt, id] : row.software_failure_class)
        r["failed " + query::WorkloadClassOf(names, id)] += 1;
      for (const auto& [attempt, failed] : row.failed_attempts) r["thrown away"] += failed.minutes;
    }
    return rows;
  };
  const auto same = [](const std::map<int64_t, Row>& kept, const std::map<int64_t, Row>& afresh,
                       int64_t now) {
    ASSERT_EQ(kept.size(), afresh.size()) << now;
    for (const auto& [bucket, row] : afresh) {
      ASSERT_TRUE(kept.contains(bucket)) << bucket;
      const Row& k = kept.at(bucket);
      EXPECT_EQ(k.size(), row.size()) << bucket;
      for (const auto& [key, v] : row) {
        EXPECT_NEAR(k.contains(key) ? k.at(key) : -1, v, 1e-9) << key << " at " << bucket;
      }
    }
  };
  // NORTHSTAR over the same hours, asked between: its kept hours are its
  // own, not ROLLOUTS' (nor the other way).
  const auto goodput = [&](int64_t now, bool keep) {
    query::LedgerOptions lo;
    lo.start_ns = (now - 6 * kHour) / kHour * kHour;
    lo.end_ns = now / kMinute * kMinute;
    lo.known_until_ns = now;
    lo.keep_days = keep;
    query::Ledger out;
    const Status s = query::BuildLedger(db.get(), lo, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(out.rows.size(), 1u);
    return out.rows.empty() ? std::array<double, query::kLossCount>{} : out.rows[0].minutes;
  };
  const int64_t upgrade = kT0 + kDay + 10 * kHour;
  int built = 0, reused = 0;
  double failures = 0;
  for (int64_t now = upgrade - 20 * kMinute; now <= upgrade + 2 * kHour; now += 7 * kMinute) {
    query::Ledger kept, afresh;
    const auto rows = ask(now, true, &kept);
    same(rows, ask(now, false, &afresh), now);
    EXPECT_EQ(afresh.spans_reused + afresh.spans_built, 0);
    // After the first question, the rows kept before and at most one new ten minutes.
    if (now > upgrade - 20 * kMinute) {
      EXPECT_EQ(kept.spans_reused, 1) << now;
      EXPECT_LE(kept.spans_built, 1) << now;
    }
    built += kept.spans_built;
    reused += kept.spans_reused;
    const auto northstar = goodput(now, true), afresh_northstar = goodput(now, false);
    for (size_t l = 0; l < query::kLossCount; ++l)
      EXPECT_NEAR(northstar[l], afresh_northstar[l], 1e-9) << l << " at " << now;
    for (const auto& [bucket, row] : rows) {
      if (row.contains("failures driver_version=550.90.07"))
        failures = std::max(failures, row.at("failures driver_version=550.90.07"));
    }
  }
  EXPECT_GT(failures, 0);  // the bad driver's failures were in the rows compared
  EXPECT_GE(reused, 15);
  // A late point in a kept row (a GPU fell off the bus an hour ago): the
  // rows it changed are built again, and the answer is still the same.
  std::vector<Series> gpus;
  ASSERT_TRUE(db->ListSeries("gpu", {}, &gpus).ok());
  ASSERT_FALSE(gpus.empty());
  const int64_t now = upgrade + 2 * kHour + 3 * kMinute;
  ASSERT_TRUE(db->Write({{"gpu", gpus[0].tags, {{"xid", int64_t{79}}}, now - kHour}}).ok());
  query::Ledger kept, afresh;
  same(ask(now, true, &kept), ask(now, false, &afresh), now);
  EXPECT_EQ(kept.spans_reused, 0);
  EXPECT_EQ(kept.spans_built, 1);
}

// A new image for notebooks (interactive one-GPU jobs), in a fleet whose
// other image runs notebooks on one node and training on five: three hours,
// the new image from the second on. Returns ROLLOUTS over the three hours.
StatementResult NewNotebookImage(Db* db, int old_failing_an_hour, int new_failing_an_hour) {
  std::vector<Point> points;
  int64_t jobs = 0;
  const auto add = [&](std::vector<Point> more) {
    for (Point& p : more) points.push_back(std::move(p));
  };
  for (int hour = 0; hour < 3; ++hour) {
    const int64_t from = kT0 + hour * kHour;
    add(test::CohortWorkPoints(from, {"n1", "img-old", "interactive", old_failing_an_hour}, &jobs));
    for (const std::string node : {"n2", "n3", "n4", "n5", "n6"})
      add(test::CohortWorkPoints(from, {node, "img-old", "pretrain"}, &jobs));
    if (hour > 0) {
      add(test::CohortWorkPoints(from, {"n7", "img-new", "interactive", new_failing_an_hour},
                                 &jobs));
    }
  }
  for (const std::string node : {"n1", "n2", "n3", "n4", "n5", "n6", "n7"})
    add(test::CohortNodePoints(node, kT0, kT0 + 3 * kHour));
  WriteResult written;
  EXPECT_TRUE(db->Write(points, &written).ok());
  return test::RunFirst(db,
                        "ROLLOUTS WHERE time >= " + std::to_string(kT0) + "ns AND time < " +
                            std::to_string(kT0 + 3 * kHour) + "ns",
                        kT0 + 3 * kHour);
}

// Notebooks fail far more often a GPU-hour than training jobs. A new image
// for notebooks failing as the old image's notebooks do is within chance
// (by GPU-hours alone, against the rest's mostly training work, it was
// called: 16 failures where 2.8 were expected); failing four times as
// often, it is called.
TEST_F(RolloutsTest, ANewNotebookImageIsJudgedByWhatNotebooksFailAt) {
  {
    std::unique_ptr<Db> db = test::OpenQuietDb(dir_.path() + "/as-usual");
    const StatementResult r = NewNotebookImage(db.get(), 8, 8);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.series.size(), 1u);
    EXPECT_EQ(r.series[0].tags.at(0).value, "img-new");
    EXPECT_EQ(Column(r.series[0], "failures"), std::to_string(16.0));
    EXPECT_EQ(Column(r.series[0], "verdict"), "within chance");
  }
  std::unique_ptr<Db> db = test::OpenQuietDb(dir_.path() + "/failing");
  const StatementResult r = NewNotebookImage(db.get(), 8, 32);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.series.size(), 1u);
  EXPECT_EQ(Column(r.series[0], "verdict"), "fails beyond chance");
}

TEST_F(RolloutsTest, StatementErrorsNameTheFault) {
  auto db = Simulate("fleet", {});
  const int64_t now = kT0 + kDay + 12 * kHour;
  StatementResult r = At(db.get(), now, "ROLLOUTS OVER 30m");
  EXPECT_EQ(r.status.message(),
            "line 1, column 15: OVER must be 2h or more: a rollout is what did not run in the "
            "window's first hour");
  r = At(db.get(), now, "ROLLOUTS WHERE time > now() - 6h OVER 6h");
  EXPECT_EQ(r.status.message(),
            "line 1, column 39: give the range either in WHERE time or with OVER, not both");
  r = At(db.get(), now, "ROLLOUTS WHERE time > now() - 1h");
  EXPECT_EQ(r.status.message(),
            "ROLLOUTS reads 2h or more: a rollout is what did not run in the range's first hour");
  r = At(db.get(), now, "ROLLOUTS WHERE util > 3");
  EXPECT_TRUE(r.status.IsInvalidArgument()) << r.status.ToString();
}

}  // namespace
}  // namespace gpulse
