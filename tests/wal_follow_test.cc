// Followers of the write-ahead log. The Wal (storage/wal.h): segments
// retired at or above the hold move to wal/held/, where Read finds them and
// replay does not; Read walks held and live segments in order, pages by
// bytes, resumes from the positions it hands out and follows the active
// segment as it grows. The Db (Db::FollowLog): a follower's position is
// kept across a flush and a reopen, and the log it has not read is kept
// until it advances past it.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "storage/env.h"
#include "storage/wal.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

using storage::Env;
using storage::ScratchDir;
using storage::Wal;
using storage::WalOptions;
using storage::WalPosition;

std::string Record(int i) { return "record-" + std::to_string(i) + std::string(i % 7, 'x'); }

std::unique_ptr<Wal> OpenWal(const std::string& dir, WalOptions options,
                             std::vector<std::string>* replayed = nullptr) {
  std::unique_ptr<Wal> wal;
  const Status s = Wal::Open(
      Env::Default(), dir, options,
      [&](std::string_view r) {
        if (replayed != nullptr) replayed->emplace_back(r);
        return Status::Ok();
      },
      nullptr, &wal);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return wal;
}

// Every record from `from` on, read `max_bytes` at a time; *end gets where
// reading stopped.
std::vector<std::string> ReadAll(Wal* wal, WalPosition from, uint64_t max_bytes, WalPosition* end) {
  std::vector<std::string> out;
  WalPosition at = from;
  while (true) {
    WalPosition reached;
    const Status s = wal->Read(
        at, max_bytes,
        [&](std::string_view r, WalPosition) {
          out.emplace_back(r);
          return Status::Ok();
        },
        &reached);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (reached == at) break;
    at = reached;
  }
  *end = at;
  return out;
}

TEST(WalFollowTest, HeldSegmentsAreReadNotReplayed) {
  ScratchDir dir;
  WalOptions options;
  options.segment_bytes = 200;  // a few records a segment
  options.hold = 1;             // a follower needs everything
  {
    std::unique_ptr<Wal> wal = OpenWal(dir.path(), options);
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(wal->Append(Record(i), nullptr).ok());
    const uint64_t active = wal->active_segment();
    ASSERT_GT(active, 3u);
    ASSERT_TRUE(wal->RemoveSegmentsBefore(active).ok());
    EXPECT_GT(wal->held_bytes(), 0u);
    EXPECT_TRUE(Env::Default()->FileExists(Wal::SegmentPath(dir.path() + "/held", 1)));
    EXPECT_FALSE(Env::Default()->FileExists(Wal::SegmentPath(dir.path(), 1)));

    WalPosition end;
    const std::vector<std::string> got = ReadAll(wal.get(), {1, 0}, 1, &end);
    ASSERT_EQ(got.size(), 40u);
    for (int i = 0; i < 40; ++i) EXPECT_EQ(got[i], Record(i));
    EXPECT_EQ(end, wal->end_position());
    EXPECT_EQ(wal->BytesFrom(end), 0u);
    EXPECT_EQ(wal->BytesFrom({1, 0}), wal->held_bytes() + wal->total_bytes());
    ASSERT_TRUE(wal->Close().ok());
  }
  // Reopened: the held records are not replayed (the engine has them in
  // its store), the live ones are, and new segments number above both.
  std::vector<std::string> replayed;
  std::unique_ptr<Wal> wal = OpenWal(dir.path(), options, &replayed);
  EXPECT_LT(replayed.size(), 10u);
  EXPECT_EQ(replayed.back(), Record(39));
  WalPosition end;
  EXPECT_EQ(ReadAll(wal.get(), {1, 0}, 1 << 20, &end).size(), 40u);
  ASSERT_TRUE(wal->Append(Record(40), nullptr).ok());
  std::vector<std::string> more = ReadAll(wal.get(), end, 1 << 20, &end);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0], Record(40));
}

TEST(WalFollowTest, ReadsPageByBytesAndFollowTheActiveSegment) {
  ScratchDir dir;
  std::unique_ptr<Wal> wal = OpenWal(dir.path(), WalOptions());
  const WalPosition start = wal->end_position();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(wal->Append(Record(i), nullptr).ok());
  WalPosition end;
  std::vector<WalPosition> positions;
  const Status s = wal->Read(
      start, 1,
      [&](std::string_view, WalPosition next) {
        positions.push_back(next);
        return Status::Ok();
      },
      &end);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(positions.size(), 1u) << "one record passes max_bytes 1";
  EXPECT_EQ(end, positions[0]);
  // Resuming from a handed-out position reads on exactly after it.
  WalPosition rest_end;
  std::vector<std::string> rest = ReadAll(wal.get(), end, 50, &rest_end);
  ASSERT_EQ(rest.size(), 99u);
  EXPECT_EQ(rest[0], Record(1));
  // Appends after a reader caught up are read next time.
  ASSERT_TRUE(wal->Append(Record(100), nullptr).ok());
  rest = ReadAll(wal.get(), rest_end, 50, &rest_end);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0], Record(100));
}

TEST(WalFollowTest, ReleasingTheHoldDeletesHeldSegments) {
  ScratchDir dir;
  WalOptions options;
  options.segment_bytes = 200;
  options.hold = 1;
  std::unique_ptr<Wal> wal = OpenWal(dir.path(), options);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(wal->Append(Record(i), nullptr).ok());
  const uint64_t active = wal->active_segment();
  ASSERT_TRUE(wal->RemoveSegmentsBefore(active).ok());
  const uint64_t held = wal->held_bytes();
  ASSERT_GT(held, 0u);
  // A follower past segment 3: 1 and 2 go.
  ASSERT_TRUE(wal->SetHold(3).ok());
  EXPECT_LT(wal->held_bytes(), held);
  EXPECT_FALSE(Env::Default()->FileExists(Wal::SegmentPath(dir.path() + "/held", 2)));
  EXPECT_TRUE(Env::Default()->FileExists(Wal::SegmentPath(dir.path() + "/held", 3)));
  // A position in a deleted segment reads on from the next one there is.
  std::vector<std::string> got;
  WalPosition end;
  ASSERT_TRUE(wal->Read(
                     {1, 0}, 1 << 20,
                     [&](std::string_view r, WalPosition) {
                       got.emplace_back(r);
                       return Status::Ok();
                     },
                     &end)
                  .ok());
  ASSERT_FALSE(got.empty());
  EXPECT_NE(got[0], Record(0));
  // No follower: everything held goes, and later retirements delete.
  ASSERT_TRUE(wal->SetHold(UINT64_MAX).ok());
  EXPECT_EQ(wal->held_bytes(), 0u);
  ASSERT_TRUE(wal->Rotate(nullptr).ok());
  ASSERT_TRUE(wal->RemoveSegmentsBefore(wal->active_segment()).ok());
  EXPECT_EQ(wal->held_bytes(), 0u);
}

// The points of a Db's log from `from` on, as "series_key@ts".
std::vector<std::string> LoggedPoints(Db* db, LogPosition from, LogPosition* end) {
  std::vector<std::string> out;
  const Status s = db->ReadLog(
      from, 1 << 20,
      [&](std::span<const LoggedPoint> points, LogPosition) {
        for (const LoggedPoint& p : points) {
          std::string key(p.series_key);
          std::replace(key.begin(), key.end(), '\0', ',');
          out.push_back(key + "@" + std::to_string(p.timestamp_ns));
        }
        return Status::Ok();
      },
      end);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

Status WriteGpu(Db* db, int64_t ts, double util) {
  Point p;
  p.measurement = "gpu";
  p.tags = {{"gpu", "0"}, {"host", "n1"}};
  p.fields = {{"util", util}};
  p.timestamp_ns = ts;
  return db->Write({p});
}

TEST(WalFollowTest, DbKeepsAFollowersLogAcrossFlushAndReopen) {
  ScratchDir dir;
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [](std::string_view) {};
  LogPosition start;
  {
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
    ASSERT_TRUE(WriteGpu(db.get(), 1, 10).ok());  // before the follower: not its
    ASSERT_TRUE(db->FollowLog("forward:a", &start).ok());
    for (int64_t i = 2; i <= 5; ++i) {
      ASSERT_TRUE(WriteGpu(db.get(), i * 1'000'000'000, static_cast<double>(i)).ok());
    }
    ASSERT_TRUE(db->Flush().ok());
    EXPECT_GT(db->GetStats().wal_held_bytes, 0u);
    ASSERT_TRUE(db->Close().ok());
  }
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  EXPECT_EQ(db->GetStats().head_values, 0u) << "held log is not replayed";
  std::vector<std::pair<std::string, LogPosition>> followers;
  ASSERT_TRUE(db->LogFollowers(&followers).ok());
  ASSERT_EQ(followers.size(), 1u);
  EXPECT_EQ(followers[0].first, "forward:a");
  EXPECT_EQ(followers[0].second, start);
  LogPosition again;
  ASSERT_TRUE(db->FollowLog("forward:a", &again).ok());
  EXPECT_EQ(again, start) << "following again goes on from where it stood";

  LogPosition end;
  const std::vector<std::string> got = LoggedPoints(db.get(), start, &end);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "gpu,gpu,0,host,n1@2000000000");
  EXPECT_EQ(got[3], "gpu,gpu,0,host,n1@5000000000");
  EXPECT_GT(db->LogBytesFrom(start), 0u);
  EXPECT_EQ(db->LogBytesFrom(end), 0u);

  ASSERT_TRUE(db->AdvanceLog("forward:a", end).ok());
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(db->GetStats().wal_held_bytes, 0u);
  EXPECT_TRUE(db->AdvanceLog("forward:b", end).IsNotFound());
  ASSERT_TRUE(db->UnfollowLog("forward:a").ok());
  ASSERT_TRUE(db->LogFollowers(&followers).ok());
  EXPECT_TRUE(followers.empty());
  EXPECT_TRUE(db->UnfollowLog("forward:a").IsNotFound());
  EXPECT_TRUE(db->FollowLog("", &again).IsInvalidArgument());
}

}  // namespace
}  // namespace gpulse
