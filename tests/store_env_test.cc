// The chunk store's file layer (engine/store_env.h): table files read with
// pread, whole and at any offset; descriptors kept open up to the budget and
// opened for each read past it; and a Db whose queries read its table files
// maps none of them into its memory.

#include "engine/store_env.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "engine/gpulse.h"
#include "query/query.h"
#include "tests/support/quiet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

using engine::StoreEnv;

// Writes `size` bytes to `path`: byte i is (i * 7 + seed) % 251.
void WritePattern(const std::string& path, size_t size, int seed) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 7 + seed) % 251);
  std::ofstream(path, std::ios::binary) << bytes;
}

// Reads `n` bytes at `offset` of `file`; "" and fails the test on an error.
std::string ReadAt(const leveldb::RandomAccessFile& file, uint64_t offset, size_t n) {
  std::vector<char> scratch(n);
  leveldb::Slice got;
  const leveldb::Status s = file.Read(offset, n, &got, scratch.data());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return got.ToString();
}

std::string Pattern(size_t offset, size_t n, int seed) {
  std::string bytes;
  for (size_t i = offset; i < offset + n; ++i) bytes += static_cast<char>((i * 7 + seed) % 251);
  return bytes;
}

// Sets the soft RLIMIT_NOFILE for the life of the object.
class SoftDescriptorLimit {
 public:
  explicit SoftDescriptorLimit(rlim_t soft) {
    EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0);
    rlimit limit = saved_;
    limit.rlim_cur = soft;
    EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  }
  ~SoftDescriptorLimit() { setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

TEST(StoreEnvTest, ReadsWhatTheFileHoldsAtAnyOffsetAndStopsShortAtItsEnd) {
  storage::ScratchDir dir;
  const std::string path = dir.path() + "/000005.ldb";
  WritePattern(path, 10000, 3);
  StoreEnv env(leveldb::Env::Default());
  leveldb::RandomAccessFile* raw = nullptr;
  ASSERT_TRUE(env.NewRandomAccessFile(path, &raw).ok());
  std::unique_ptr<leveldb::RandomAccessFile> file(raw);
  EXPECT_EQ(ReadAt(*file, 0, 4096), Pattern(0, 4096, 3));
  EXPECT_EQ(ReadAt(*file, 5001, 1234), Pattern(5001, 1234, 3));
  EXPECT_EQ(ReadAt(*file, 9990, 100), Pattern(9990, 10, 3));  // past the end: the rest
  EXPECT_EQ(ReadAt(*file, 20000, 10), "");

  const leveldb::Status missing = env.NewRandomAccessFile(dir.path() + "/000006.ldb", &raw);
  EXPECT_TRUE(missing.IsNotFound()) << missing.ToString();
  EXPECT_EQ(raw, nullptr);
}

// Descriptors this process has open.
size_t OpenDescriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(StoreEnvTest, PastItsBudgetAFileOpensADescriptorForEachReadAndReadsTheSame) {
  rlimit hard{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &hard), 0);
  if (hard.rlim_max < 100) GTEST_SKIP() << "the hard descriptor limit is under 100";
  storage::ScratchDir dir;
  const SoftDescriptorLimit limit(100);
  EXPECT_EQ(StoreDescriptorBudget(), 20u);  // a fifth of the soft limit
  StoreEnv env(leveldb::Env::Default());
  std::vector<std::unique_ptr<leveldb::RandomAccessFile>> files;
  for (int i = 0; i < 30; ++i) {
    const std::string path = dir.path() + "/" + std::to_string(i) + ".ldb";
    WritePattern(path, 3000, i);
    leveldb::RandomAccessFile* raw = nullptr;
    ASSERT_TRUE(env.NewRandomAccessFile(path, &raw).ok()) << i;
    files.emplace_back(raw);
  }
  EXPECT_EQ(env.DescriptorsHeld(), 20);
  const size_t open_before = OpenDescriptors();
  for (int i = 0; i < 30; ++i) EXPECT_EQ(ReadAt(*files[i], 100, 500), Pattern(100, 500, i)) << i;
  EXPECT_EQ(OpenDescriptors(), open_before);  // each read past the budget closed its own

  // Files given back give their descriptors back; the next file takes one.
  files.erase(files.begin(), files.begin() + 5);
  EXPECT_EQ(env.DescriptorsHeld(), 15);
  leveldb::RandomAccessFile* raw = nullptr;
  ASSERT_TRUE(env.NewRandomAccessFile(dir.path() + "/0.ldb", &raw).ok());
  files.emplace_back(raw);
  EXPECT_EQ(env.DescriptorsHeld(), 16);
  files.clear();
  EXPECT_EQ(env.DescriptorsHeld(), 0);
}

// The lines of /proc/self/maps that name a file under `dir` (as the kernel
// names it: links resolved).
std::vector<std::string> MappingsUnder(const std::string& dir) {
  const std::string real = std::filesystem::canonical(dir).string() + "/";
  std::vector<std::string> found;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(real) != std::string::npos) found.push_back(line);
  }
  return found;
}

TEST(StoreEnvTest, AQueryReadingTheStoresTableFilesMapsNoneOfThem) {
  storage::ScratchDir dir;
  const int64_t day = 20000LL * 86400 * 1000000000;
  const int64_t minute = 60LL * 1000000000;
  {
    std::unique_ptr<Db> db = test::OpenQuietDb(dir.path());
    ASSERT_NE(db, nullptr);
    std::vector<Point> points;
    for (int node = 0; node < 200; ++node) {
      for (int64_t m = 0; m < 60; ++m) {
        points.push_back({"gpu",
                          {{"node", "n" + std::to_string(node)}},
                          {{"util", int64_t{node + m}}},
                          day + m * minute});
      }
    }
    ASSERT_TRUE(db->Write(points).ok());
    ASSERT_TRUE(db->Flush().ok());
  }
  // Opened again, LevelDB writes what its log held into a table file too:
  // every chunk the query reads comes from a table file.
  std::unique_ptr<Db> db = test::OpenQuietDb(dir.path());
  ASSERT_NE(db, nullptr);
  QueryResult r;
  ASSERT_TRUE(Query(db.get(), "SELECT count(util), sum(util) FROM gpu", {}, &r).ok());
  ASSERT_TRUE(r.statements.at(0).status.ok()) << r.statements[0].status.ToString();
  const auto& row = r.statements[0].series.at(0).values.at(0);
  EXPECT_EQ(std::get<int64_t>(row[1]), 200 * 60);
  EXPECT_EQ(std::get<int64_t>(row[2]), 60 * (199 * 200 / 2) + 200 * (59 * 60 / 2));
  EXPECT_EQ(MappingsUnder(dir.path()), std::vector<std::string>{});
}

}  // namespace
}  // namespace gpulse
