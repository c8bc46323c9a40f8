// Item 11 of the hostile probe: a damaged LevelDB table ("bad bit length")
// failed every query over its measurement and was not logged. Now the read
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
#include "storage/key_layout.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

// Writes util of node a and b (10 minutes each), flushed to chunks, and
// then overwrites the first stored chunk part (node a's) with garbage.
void WriteAndDamage(const std::string& dir) {
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
  it->Seek(storage::ChunkKey(storage::kRawTier, 0, 0, INT64_MIN));
  ASSERT_TRUE(it->Valid());
  const std::string key = it->key().ToString();
  it.reset();
  ASSERT_TRUE(
      store->Put(leveldb::WriteOptions(), key, std::string("\x07\xff\xff\xff garbage", 12)).ok());
}

// count(util) by node, and the notes said with the answer.
void Counts(Db* db, std::map<std::string, int64_t>* counts, std::vector<std::string>* notes) {
  QueryResult result;
  ASSERT_TRUE(
      db->Query("SELECT count(util) FROM \"raw\".gpu GROUP BY node", QueryOptions(), &result).ok());
  const StatementResult& st = result.statements.at(0);
  ASSERT_TRUE(st.status.ok()) << st.status.ToString();
  for (const ResultSeries& rs : st.series) {
    (*counts)[rs.tags.at(0).value] = std::get<int64_t>(rs.values.at(0).at(1));
  }
  *notes = st.notes;
}

TEST(StoreDamageTest, CorruptedTableFailsEveryQueryOverTheMeasurement) {
  storage::ScratchDir dir;
  WriteAndDamage(dir.path());
  std::vector<std::string> log;
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [&log](std::string_view line) { log.emplace_back(line); };
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, dir.path(), &db).ok());

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
  EXPECT_NE(out.find("damaged: gpu,node=a field util window 0 part 0: "), std::string::npos) << out;
  EXPECT_NE(out.find("2 chunk parts read, 1 damaged"), std::string::npos) << out;

  out = RunCommand(bin + " verify --data " + dir.path() + "/data --repair", &status);
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;  // no backup named: refused
  out = RunCommand(
      bin + " verify --data " + dir.path() + "/data --repair --backup " + dir.path() + "/backup",
      &status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  EXPECT_NE(out.find("1 damaged, 1 dropped"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/backup/store"));
  out = RunCommand(bin + " verify --data " + dir.path() + "/data", &status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  out = RunCommand(bin + " verify --data " + dir.path() + "/backup", &status);  // the copy keeps it
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;
}

}  // namespace
}  // namespace gpulse
