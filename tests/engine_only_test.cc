// The engine alone: a program that stores and reads points includes
// engine/gpulse.h and links gpulse_engine, nothing of the query language or
// the ingest formats (tests/CMakeLists.txt builds this test so). Points
// written are read back by series, field and range, and survive a reopen.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

constexpr int64_t kMinute = 60'000'000'000;

TEST(EngineOnlyTest, PointsWrittenAreReadBackBySeriesFieldAndRangeAfterAReopen) {
  storage::ScratchDir dir;
  Options options;
  options.info_log = [](std::string_view) {};
  {
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
    std::vector<Point> points;
    for (int gpu = 0; gpu < 2; ++gpu) {
      for (int m = 0; m < 10; ++m) {
        Point p;
        p.measurement = "gpu";
        p.tags = {{"gpu", std::to_string(gpu)}, {"node", "n1"}};
        p.fields = {{"util", static_cast<int64_t>(gpu * 100 + m)}};
        p.timestamp_ns = m * kMinute;
        points.push_back(std::move(p));
      }
    }
    ASSERT_TRUE(db->Write(points).ok());
    ASSERT_TRUE(db->Close().ok());
  }
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());
  ReadRequest request;
  request.measurement = "gpu";
  request.tags = {{"gpu", "1"}};
  request.field = "util";
  request.start_ns = 2 * kMinute;
  request.end_ns = 5 * kMinute;
  std::vector<SeriesColumn> read;
  ASSERT_TRUE(db->Read(request, &read).ok());
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].column.ts, (std::vector<int64_t>{2 * kMinute, 3 * kMinute, 4 * kMinute}));
  EXPECT_EQ(read[0].column.ints, (std::vector<int64_t>{102, 103, 104}));
}

}  // namespace
}  // namespace gpulse
