// Retention per tier: whole raw chunk windows and tier rows past their
// retention go (and nothing else, and nothing more when run again), old
// points are refused, restarts keep the result, and a query reaching past
// the raw retention is answered from a tier or says what is missing.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/query.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/tier_rows.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
using gpulse::test::kMinute;

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.sync_policy = SyncPolicy::kNone;
    options_.info_log = [](std::string_view) {};
    options_.out_of_order_window = std::chrono::nanoseconds(0);
    options_.tiers = {"1h", "1d"};
    options_.retention = {{"raw", std::chrono::hours(3 * 24)}, {"1h", std::chrono::hours(6 * 24)}};
    Reopen();
  }

  void Reopen() {
    db_.reset();
    const Status s = Db::Open(options_, dir_.path(), &db_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Rows of `tier` of node a's util.
  storage::RollupColumn Rows(size_t tier) {
    return test::AllRollups(db_.get(), Series{"gpu", {{"node", "a"}}}, "util", tier);
  }

  Column Raw() {
    std::vector<Column> out;
    const std::vector<std::string> fields{"util"};
    EXPECT_TRUE(
        db_->ReadSeries(Series{"gpu", {{"node", "a"}}}, fields, INT64_MIN, INT64_MAX, &out).ok());
    return out.empty() ? Column() : out[0];
  }

  Options options_;
  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

TEST_F(RetentionTest, WholeWindowsAndRowsPastRetentionGoAndNothingElse) {
  // Ten days of points every 10 minutes, up to an hour ago; written while
  // the raw retention is off (as if the data had been kept that long).
  const int64_t now = Now();
  const int64_t first = storage::WindowStart(now - 10 * kDay, kDay);
  options_.retention.clear();
  Reopen();
  std::vector<Point> points;
  for (int64_t t = first; t < now - kHour; t += 10 * kMinute) {
    points.push_back(Point{"gpu", {{"node", "a"}}, {{"util", int64_t{1}}}, t});
  }
  ASSERT_TRUE(db_->Write(points).ok());
  ASSERT_TRUE(db_->Flush().ok());
  const size_t days_before = Rows(2).size();
  options_.retention = {{"raw", std::chrono::hours(3 * 24)}, {"1h", std::chrono::hours(6 * 24)}};
  Reopen();  // Open runs a pass too; the one below finds it done

  ASSERT_TRUE(db_->EnforceRetention(now).ok());
  // Raw: every window before the one holding now - 3d is gone; from it on,
  // every point is there.
  const int64_t raw_from = storage::WindowStart(now - 3 * kDay, kDay);
  const Column raw = Raw();
  ASSERT_FALSE(raw.ts.empty());
  EXPECT_EQ(raw.ts.front(), raw_from);
  EXPECT_EQ(static_cast<int64_t>(raw.size()),
            (points.back().timestamp_ns - raw_from) / (10 * kMinute) + 1);
  // 1h rows: from the hour holding now - 6d on, all of them.
  const storage::RollupColumn hours = Rows(1);
  const int64_t hours_from = storage::WindowStart(now - 6 * kDay, kHour);
  ASSERT_FALSE(hours.bucket.empty());
  EXPECT_EQ(hours.bucket.front(), hours_from);
  EXPECT_EQ(static_cast<int64_t>(hours.size()),
            (storage::WindowStart(points.back().timestamp_ns, kHour) - hours_from) / kHour + 1);
  for (size_t i = 0; i + 1 < hours.size(); ++i) EXPECT_EQ(hours.count[i], 6u) << i;
  // 1d rows: kept forever, all of them, the first day still whole.
  const storage::RollupColumn days = Rows(2);
  EXPECT_EQ(days.size(), days_before);
  EXPECT_EQ(days.bucket.front(), first);
  EXPECT_EQ(days.count.front(), 144u);

  // Again: nothing more goes.
  EXPECT_GE(db_->GetStats().retention_runs, 1u);
  const uint64_t deleted = db_->GetStats().retention_deleted_keys;
  ASSERT_TRUE(db_->EnforceRetention(now).ok());
  EXPECT_EQ(db_->GetStats().retention_deleted_keys, deleted);
  EXPECT_EQ(Raw().size(), raw.size());

  // A point behind the raw retention is refused; one inside is taken.
  WriteResult result;
  const Point old{"gpu", {{"node", "a"}}, {{"util", int64_t{5}}}, now - 4 * kDay};
  const Status refused = db_->Write({old}, &result);
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused.ToString();
  EXPECT_NE(refused.ToString().find("older than the raw retention"), std::string::npos);
  EXPECT_TRUE(db_->Write({Point{"gpu", {{"node", "a"}}, {{"util", int64_t{5}}}, now - kDay}}).ok());

  // A delete behind the raw retention must keep to whole days: a cut tier
  // bucket could not be computed again from raw points that are gone.
  const std::vector<Series> a{Series{"gpu", {{"node", "a"}}}};
  EXPECT_TRUE(db_->Delete(a, first + kHour, first + 2 * kHour).IsInvalidArgument());
  ASSERT_TRUE(db_->Delete(a, first + kDay, first + 2 * kDay).ok());
  EXPECT_EQ(Rows(2).bucket.at(1), first + 2 * kDay);  // the second day's row went whole
  ASSERT_TRUE(db_->Write({Point{"gpu", {{"node", "a"}}, {{"util", int64_t{1}}}, first + kDay}})
                  .IsInvalidArgument());  // and behind the cut nothing comes back

  // A daily question over the whole ten days comes from the 1d tier, whole;
  // an hourly one over them says what the retention took.
  auto run = [&](const std::string& q, QueryResult* r) {
    QueryOptions o;
    o.now_ns = now;
    ASSERT_TRUE(gpulse::Query(db_.get(), q, o, r).ok());
    ASSERT_TRUE(r->statements.at(0).status.ok()) << r->statements[0].status.ToString();
  };
  const std::string range =
      " WHERE time >= " + std::to_string(first) + " AND time < " + std::to_string(now);
  QueryResult daily;
  run("SELECT count(util) FROM gpu" + range + " GROUP BY time(1d)", &daily);
  EXPECT_EQ(std::get<int64_t>(daily.statements[0].series.at(0).values.at(0).at(1)), 144);
  EXPECT_TRUE(daily.statements[0].notes.empty());
  QueryResult hourly;
  run("SELECT count(util) FROM gpu" + range + " GROUP BY time(1h)", &hourly);
  ASSERT_EQ(hourly.statements[0].notes.size(), 1u);
  EXPECT_NE(hourly.statements[0].notes[0].find("retention keeps of the 1h rows"), std::string::npos)
      << hourly.statements[0].notes[0];

  Reopen();
  EXPECT_EQ(Raw().ts.front(), raw_from);
  EXPECT_EQ(Rows(1).bucket.front(), hours_from);
}

TEST_F(RetentionTest, EachDatabaseKeepsItsDataAsLongAsItsOwnRetentionSays) {
  const int64_t now = Now();
  const int64_t first = storage::WindowStart(now - 10 * kDay, kDay);
  options_.retention.clear();
  Reopen();
  // Ten days of three series: db=short, db=long and no db at all.
  const std::vector<std::vector<Tag>> who{
      {{"db", "short"}, {"node", "a"}}, {{"db", "long"}, {"node", "a"}}, {{"node", "a"}}};
  std::vector<Point> points;
  for (int64_t t = first; t < now - kHour; t += 30 * kMinute) {
    for (const auto& tags : who) points.push_back(Point{"gpu", tags, {{"util", int64_t{1}}}, t});
  }
  ASSERT_TRUE(db_->Write(points).ok());
  ASSERT_TRUE(db_->Flush().ok());
  options_.retention = {{"raw", std::chrono::hours(24 * 8)}};
  options_.retention_by_database = {{"short", {{"raw", std::chrono::hours(24 * 2)}}},
                                    {"long", {{"raw", std::chrono::nanoseconds(0)}}}};
  Reopen();
  ASSERT_TRUE(db_->EnforceRetention(now).ok());
  const std::vector<std::string> fields{"util"};
  auto first_point = [&](const std::vector<Tag>& tags) {
    std::vector<Column> out;
    EXPECT_TRUE(db_->ReadSeries(Series{"gpu", tags}, fields, INT64_MIN, INT64_MAX, &out).ok());
    return out.at(0).ts.empty() ? INT64_MAX : out[0].ts.front();
  };
  EXPECT_EQ(first_point(who[0]), storage::WindowStart(now - 2 * kDay, kDay));  // 2 days
  EXPECT_EQ(first_point(who[1]), first);                                       // forever
  EXPECT_EQ(first_point(who[2]), storage::WindowStart(now - 8 * kDay, kDay));  // the default
  // Writes are refused by the same rule.
  const int64_t old = now - 5 * kDay;
  EXPECT_TRUE(db_->Write({Point{"gpu", who[0], {{"util", int64_t{2}}}, old}}).IsInvalidArgument());
  EXPECT_TRUE(db_->Write({Point{"gpu", who[1], {{"util", int64_t{2}}}, old}}).ok());
  EXPECT_TRUE(db_->Write({Point{"gpu", who[2], {{"util", int64_t{2}}}, old}}).ok());

  // SHOW RETENTION POLICIES tells each database's.
  auto policies = [&](const std::string& database) {
    QueryResult r;
    QueryOptions o;
    o.database = database;
    EXPECT_TRUE(gpulse::Query(db_.get(), "SHOW RETENTION POLICIES", o, &r).ok());
    std::vector<std::string> out;
    for (const auto& row : r.statements.at(0).series.at(0).values) {
      out.push_back(std::get<std::string>(row[0]) + "=" + std::get<std::string>(row[1]));
    }
    return out;
  };
  EXPECT_EQ(policies("short"),
            (std::vector<std::string>{"autogen=48h0m0s", "raw=48h0m0s", "1h=0s", "1d=0s"}));
  EXPECT_EQ(policies(""),
            (std::vector<std::string>{"autogen=192h0m0s", "raw=192h0m0s", "1h=0s", "1d=0s"}));
}

TEST_F(RetentionTest, ATagWhoseValueIsDbIsNotTheDbTag) {
  // Tags a=db, node=x: the key reads gpu\0a\0db\0node\0x, where "\0db\0"
  // is a value followed by the key node, not the db tag.
  options_.retention.clear();
  options_.retention_by_database = {{"node", {{"raw", std::chrono::hours(24)}}}};
  Reopen();
  const Point p{"gpu", {{"a", "db"}, {"node", "x"}}, {{"util", int64_t{1}}}, Now() - 3 * kDay};
  EXPECT_TRUE(db_->Write({p}).ok());  // no database: kept forever
  const Point q{"gpu", {{"db", "node"}, {"node", "x"}}, {{"util", int64_t{1}}}, Now() - 3 * kDay};
  EXPECT_TRUE(db_->Write({q}).IsInvalidArgument());  // database "node": one day
}

TEST_F(RetentionTest, UnknownOrNegativeRetentionIsRefusedAtOpen) {
  db_.reset();
  Options bad = options_;
  bad.retention = {{"2h", std::chrono::hours(1)}};
  std::unique_ptr<Db> db;
  Status s = Db::Open(bad, dir_.path(), &db);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  bad.retention = {{"raw", std::chrono::hours(-1)}};
  s = Db::Open(bad, dir_.path(), &db);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  bad.retention.clear();
  bad.retention_by_database = {{"fleet", {{"1w", std::chrono::hours(1)}}}};
  s = Db::Open(bad, dir_.path(), &db);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.ToString().find("fleet"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace gpulse
