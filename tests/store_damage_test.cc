// Item 11 of the hostile probe: a damaged LevelDB table ("bad bit length")
// failed every query over its measurement and was not logged, raw chunks and
// tier rows alike. Now the read
// logs the damaged window with its store key range, a query answers the
// other series and names the damaged part, and `gpulse verify` lists the
// damaged parts and, with --repair after a backup, drops them.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "leveldb/db.h"
#include "query/query.h"
#include "storage/key_layout.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

// Writes util of node a and b (10 minutes each), flushed to chunks, and
// then overwrites the first stored block of `tier` (node a's: its first raw
// chunk part, or its first tier block, storage::kTiers' id) with garbage.
void WriteAndDamage(const std::string& dir, uint8_t tier = storage::kRawTier) {
  {
    Options options;
    options.sync_policy = SyncPolicy::kNone;
    options.info_log = [](std::string_view) {};
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(options, dir, &db).ok());
    std::vector<Point> points;
    for (const char* node : {"a", "b"}) {
      for (int m = 0; m < 10; ++m) {
        points.push_back({"gpu", {{"node", node}}, {{"util", int64_t{m}}}, m * 60'000'000'000LL});
      }
    }
    ASSERT_TRUE(db->Write(points).ok());
    ASSERT_TRUE(db->Close().ok());
  }
  leveldb::DB* raw = nullptr;
  ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir + "/store", &raw).ok());
  std::unique_ptr<leveldb::DB> store(raw);
  std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
  it->Seek(storage::ChunkKey(tier, 0, 0, INT64_MIN));
  ASSERT_TRUE(it->Valid());
  const std::string key = it->key().ToString();
  it.reset();
  ASSERT_TRUE(
      store->Put(leveldb::WriteOptions(), key, std::string("\x07\xff\xff\xff garbage", 12)).ok());
}

// count(util) by node from the raw points (or the tier named), and the
// notes said with the answer.
void Counts(Db* db, std::map<std::string, int64_t>* counts, std::vector<std::string>* notes,
            const std::string& from = "raw") {
  QueryResult result;
  // A tier answers a range bounded on both sides: the first hour.
  ASSERT_TRUE(gpulse::Query(db,
                            "SELECT count(util) FROM \"" + from +
                                "\".gpu WHERE time >= 0 AND time < 1h GROUP BY node",
                            QueryOptions(), &result)
                  .ok());
  const StatementResult& st = result.statements.at(0);
  ASSERT_TRUE(st.status.ok()) << st.status.ToString();
  for (const ResultSeries& rs : st.series) {
    (*counts)[rs.tags.at(0).value] = std::get<int64_t>(rs.values.at(0).at(1));
  }
  *notes = st.notes;
}

// The Db at `dir`, its log lines kept in *log.
std::unique_ptr<Db> OpenLogged(const std::string& dir, std::vector<std::string>* log) {
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [log](std::string_view line) { log->emplace_back(line); };
  std::unique_ptr<Db> db;
  const Status s = Db::Open(options, dir, &db);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return db;
}

TEST(StoreDamageTest, CorruptedTableFailsEveryQueryOverTheMeasurement) {
  storage::ScratchDir dir;
  WriteAndDamage(dir.path());
  std::vector<std::string> log;
  std::unique_ptr<Db> db = OpenLogged(dir.path(), &log);
  ASSERT_TRUE(db);

  std::map<std::string, int64_t> counts;
  std::vector<std::string> notes;
  Counts(db.get(), &counts, &notes);
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"b", 10}}));  // a is damaged
  ASSERT_GE(notes.size(), 2u);
  EXPECT_NE(notes[0].find("damaged stored data was left out of this answer"), std::string::npos);
  EXPECT_NE(notes[1].find("chunk of series 0 field 0 window 0 part 0"), std::string::npos)
      << notes[1];
  const auto logged = [&](const std::string& text) {
    return std::any_of(log.begin(), log.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(logged("damaged stored data, left out of answers: chunk of series 0"));
  EXPECT_TRUE(logged("(store keys "));
  // A scan of both series at once reads b past a's damage, and names it.
  std::vector<Series> series;
  std::vector<SeriesId> ids;
  ASSERT_TRUE(db->ListSeries("gpu", {}, &series, &ids).ok());
  ASSERT_EQ(ids.size(), 2u);
  std::map<size_t, size_t> points;  // by position
  const Status scanned = db->ScanSeries(
      ids, std::vector<std::string>{"util"}, 0, 3600'000'000'000LL,
      [&](size_t s, size_t, const Column&, size_t b, size_t e) { points[s] += e - b; }, nullptr);
  EXPECT_TRUE(scanned.IsCorruption()) << scanned.ToString();
  EXPECT_EQ(points[1], 10u);

  Db::VerifyReport report;
  ASSERT_TRUE(db->Verify(/*drop_damaged=*/false, &report).ok());
  EXPECT_EQ(report.parts, 2u);
  ASSERT_EQ(report.damaged.size(), 1u);
  EXPECT_EQ(report.damaged[0].series, "gpu,node=a");
  EXPECT_EQ(report.damaged[0].field, "util");
  EXPECT_EQ(report.dropped, 0u);

  ASSERT_TRUE(db->Verify(/*drop_damaged=*/true, &report).ok());
  EXPECT_EQ(report.dropped, 1u);
  counts.clear();
  Counts(db.get(), &counts, &notes);
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"b", 10}}));
  EXPECT_TRUE(notes.empty()) << notes.front();
  ASSERT_TRUE(db->Verify(false, &report).ok());
  EXPECT_TRUE(report.damaged.empty());
}

// The same for a tier block: a query over the tier answered a "bad bit
// length" for every series until the block was gone; now it answers the
// other series and names the block, and verify --repair builds the block
// again from the raw points.
TEST(StoreDamageTest, ADamagedTierBlockIsLeftOutNamedAndBuiltAgain) {
  storage::ScratchDir dir;
  WriteAndDamage(dir.path(), storage::kTiers[1].id);  // 1h
  std::vector<std::string> log;
  std::unique_ptr<Db> db = OpenLogged(dir.path(), &log);
  ASSERT_TRUE(db);

  std::map<std::string, int64_t> counts;
  std::vector<std::string> notes;
  Counts(db.get(), &counts, &notes, "1h");
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"b", 10}}));
  ASSERT_GE(notes.size(), 2u);
  EXPECT_NE(notes[1].find("tier 1h block of gpu,node=a from 0: "), std::string::npos) << notes[1];
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
    return l.find("damaged stored data, left out of answers: tier 1h block") != std::string::npos;
  }));
  Counts(db.get(), &counts, &notes);  // the raw points are whole
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"a", 10}, {"b", 10}}));

  Db::VerifyReport report;
  ASSERT_TRUE(db->Verify(/*drop_damaged=*/false, &report).ok());
  EXPECT_EQ(report.parts, 2u);
  EXPECT_EQ(report.tier_blocks, 4u);  // 1h and 1d of two series
  ASSERT_EQ(report.damaged.size(), 1u);
  EXPECT_EQ(report.damaged[0].tier, "1h");
  EXPECT_EQ(report.damaged[0].series, "gpu,node=a");

  ASSERT_TRUE(db->Verify(/*drop_damaged=*/true, &report).ok());
  EXPECT_EQ(report.dropped, 1u);
  EXPECT_EQ(report.rebuilt, 1u);
  counts.clear();
  Counts(db.get(), &counts, &notes, "1h");
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"a", 10}, {"b", 10}}));
  EXPECT_TRUE(notes.empty()) << notes.front();
  ASSERT_TRUE(db->Verify(false, &report).ok());
  EXPECT_TRUE(report.damaged.empty());
  EXPECT_EQ(report.tier_blocks, 4u);
}

std::string RunCommand(const std::string& command, int* status) {
  const std::string out = ::testing::TempDir() + "verify-out.txt";
  *status = std::system((command + " > " + out + " 2>&1").c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(StoreDamageTest, VerifyCommandListsAndRepairsAfterABackup) {
  storage::ScratchDir dir;
  WriteAndDamage(dir.path() + "/data");
  const std::string bin = GPULSE_BIN;
  int status = 0;
  std::string out = RunCommand(bin + " verify --data " + dir.path() + "/data", &status);
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
  EXPECT_NE(out.find("damaged: raw chunk part of gpu,node=a field util window 0 part 0: "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("2 raw chunk parts and 4 tier blocks read, 1 damaged"), std::string::npos)
      << out;

  out = RunCommand(bin + " verify --data " + dir.path() + "/data --repair", &status);
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;  // no backup named: refused
  out = RunCommand(
      bin + " verify --data " + dir.path() + "/data --repair --backup " + dir.path() + "/backup",
      &status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("1 damaged, 1 dropped, 0 tier blocks built again"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/backup/store"));
  out = RunCommand(bin + " verify --data " + dir.path() + "/data", &status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  out = RunCommand(bin + " verify --data " + dir.path() + "/backup", &status);  // the copy keeps it
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
}

}  // namespace
}  // namespace gpulse
