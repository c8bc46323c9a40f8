// The GPU-minute ledger written as series (server/ledger_export.h): on a
// simulated fleet, the exported gpu_minutes rows of a day add up to what
// NORTHSTAR says of that day, productive and capacity alike; each bucket is
// written once, at one second before its end; an export goes on after a
// restart from where it stood.

#include "server/ledger_export.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/support/fleet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::server {
namespace {

constexpr int64_t kMinute = 60'000'000'000;
constexpr int64_t kDay = 1440 * kMinute;
constexpr int64_t kT0 = 1'793'491'200'000'000'000;  // 2026-11-01T00:00:00Z

// Sums of the exported fields over [from, to), and the number of rows.
std::map<std::string, double> Exported(Db* db, int64_t from, int64_t to) {
  const StatementResult r =
      test::RunFirst(db,
                     "SELECT sum(capacity), sum(productive), sum(hardware), count(capacity) "
                     "FROM gpu_minutes WHERE time >= " +
                         std::to_string(from) + "ns AND time < " + std::to_string(to) + "ns");
  std::map<std::string, double> out;
  if (r.series.empty()) return out;
  const ResultSeries& s = r.series[0];
  for (size_t c = 1; c < s.columns.size(); ++c) {
    out[s.columns[c]] = std::visit(
        [](const auto& v) -> double {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_arithmetic_v<V>) return static_cast<double>(v);
          return 0;
        },
        s.values[0][c]);
  }
  return out;
}

TEST(LedgerExportTest, RowsAddUpToNorthstar) {
  storage::ScratchDir dir;
  std::unique_ptr<Db> db = test::OpenQuietDb(dir.path() + "/fleet");
  test::SimulateInto(db.get(), test::SmallFleet(6, 2, 5, kT0, {"hw-fault@1d2h/3h"}));

  LedgerExportConfig config;
  config.enabled = true;
  config.backfill_ns = 3 * kDay;
  LedgerExport exporter(config, db.get());
  uint64_t rows = 0;
  const int64_t now = kT0 + 2 * kDay + config.lag_ns;  // the fleet's two days have closed
  ASSERT_TRUE(exporter.ExportUntil(now, &rows).ok());
  EXPECT_GT(rows, 2u * 288) << "a row per 5-minute bucket and group at least";

  const StatementResult ns =
      test::RunFirst(db.get(),
                     "NORTHSTAR WHERE time >= " + std::to_string(kT0 + kDay) + "ns AND time < " +
                         std::to_string(kT0 + 2 * kDay) + "ns",
                     now);
  ASSERT_FALSE(ns.series.empty());
  const ResultSeries& s = ns.series[0];
  auto column = [&](const std::string& name) {
    for (size_t c = 0; c < s.columns.size(); ++c) {
      if (s.columns[c] == name) return std::get<double>(s.values[0][c]);
    }
    ADD_FAILURE() << "no column " << name;
    return 0.0;
  };
  // The second day's buckets: stamped a second before their ends, so the
  // day's rows lie in [day + 5m - 1s, next day - 1s].
  const std::map<std::string, double> day = Exported(db.get(), kT0 + kDay, kT0 + 2 * kDay);
  ASSERT_FALSE(day.empty());
  const double capacity = column("capacity_gpu_minutes");
  EXPECT_NEAR(day.at("sum"), capacity, 1e-6 * capacity);
  EXPECT_NEAR(day.at("sum_1"), column("productive_gpu_minutes"), 1e-6 * capacity);
  EXPECT_NEAR(day.at("sum_2"), column("hardware") * capacity, 1e-6 * capacity);
  EXPECT_GT(day.at("sum_2"), 0) << "the hardware fault's minutes are exported";

  // Nothing new closed: nothing written. A restart goes on from the cursor.
  ASSERT_TRUE(exporter.ExportUntil(now + kMinute, &rows).ok());
  EXPECT_EQ(rows, 0u);
  db.reset();
  db = test::OpenQuietDb(dir.path() + "/fleet");
  LedgerExport again(config, db.get());
  ASSERT_TRUE(again.ExportUntil(now + 10 * kMinute, &rows).ok());
  EXPECT_LE(rows, 2u * 100) << "only the buckets closed since";
  const std::map<std::string, double> all = Exported(db.get(), kT0, kT0 + 3 * kDay);
  EXPECT_EQ(all.at("count"),
            Exported(db.get(), kT0, kT0 + 2 * kDay).at("count") + static_cast<double>(rows))
      << "each bucket written once";
}

}  // namespace
}  // namespace gpulse::server
