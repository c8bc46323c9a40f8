// `gpulse import` as a user runs it: the real binary on real files (the
// Telegraf README's line protocol, a dcgm-exporter scrape), gzip, bad lines
// reported by file, line and column with the good ones kept, the exit
// statuses, and what lands in the data directory.

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "engine/gpulse.h"
#include "query/query.h"
#include "tests/support/run_gpulse.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

const std::string kReal = std::string(GPULSE_SHARED_DIR) + "/data/real";

using Outcome = test::RunOutcome;

class ImportTest : public ::testing::Test {
 protected:
  Outcome Import(std::vector<std::string> args) {
    args.insert(args.begin(), {"import", "--data", data_});
    return test::RunGpulse(args, dir_.path());
  }

  // Runs `q` on the data directory; the first statement's series.
  std::vector<ResultSeries> Query(const std::string& q) { return test::QueryDirectory(data_, q); }

  void WriteGzip(const std::string& path, const std::string& text) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    gzclose(f);
  }

  storage::ScratchDir dir_;
  const std::string data_ = dir_.path() + "/data";
};

TEST_F(ImportTest, TheTelegrafReadmeLinesLandWithTheirTypesAndTags) {
  const Outcome r = Import({kReal + "/telegraf_nvidia_smi/README_example_output.lp"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("imported 3 points"), std::string::npos) << r.out;
  const auto fields = Query("SHOW FIELD KEYS FROM nvidia_smi");
  ASSERT_EQ(fields.size(), 1u);
  std::map<std::string, std::string> types;
  for (const auto& row : fields[0].values) {
    types[std::get<std::string>(row[0])] = std::get<std::string>(row[1]);
  }
  EXPECT_EQ(types.size(), 7u);
  EXPECT_EQ(types.at("utilization_gpu"), "integer");
  EXPECT_EQ(types.at("memory_used"), "integer");
  // An escaped space in a tag value.
  const auto names = Query("SHOW TAG VALUES FROM nvidia_smi WITH KEY = name");
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].values.at(0).at(1), QueryValue(std::string("GeForce GTX 1070")));
  EXPECT_EQ(Query("SELECT count(utilization_gpu) FROM nvidia_smi")[0].values[0][1],
            QueryValue(int64_t{3}));
}

TEST_F(ImportTest, BadLinesAreNamedByFileLineAndColumnAndTheGoodOnesKept) {
  const std::string path = dir_.path() + "/batch.lp.gz";
  // Line 2 does not parse; line 4 has another type than line 1 for util.
  WriteGzip(path,
            "gpu,node=a util=1i 1704067200000000000\n"
            "gpu,node=a util= 1704067260000000000\n"
            "gpu,node=a util=3i 1704067320000000000\n"
            "gpu,node=a util=2.5 1704067380000000000\n"
            "gpu,node=b util=5i\n");  // no timestamp: the import's time
  const Outcome r = Import({"--database", "fleet", path});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(path + ":2:17: expected field value"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(path + ":4:1: field util is integer"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("imported 3 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 lines rejected"), std::string::npos) << r.out;
  const auto series = Query("SELECT sum(util) FROM gpu GROUP BY db, node");
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].values[0][1], QueryValue(int64_t{4}));  // node a: 1 + 3
  EXPECT_EQ(series[1].values[0][1], QueryValue(int64_t{5}));
}

TEST_F(ImportTest, LinesAreCountedAcrossTheSlicesOfALargeFile) {
  // About 12 MB: the file is read in more than one slice, and a bad line in
  // the second slice is still named by its line in the file.
  const std::string path = dir_.path() + "/large.lp";
  std::string text;
  const int kLines = 160'000;
  for (int i = 1; i <= kLines; ++i) {
    if (i == 150'001) {
      text += "gpu,node=a util=oops 1\n";
      continue;
    }
    text += "gpu,node=n" + std::to_string(i % 16) +
            ",sku=H100,region=us-east-1 util=" + std::to_string(i % 100) + "i,temp_c=61.5 " +
            std::to_string(1704067200 + i) + "000000000\n";
  }
  ASSERT_GT(text.size(), size_t{9} << 20);
  std::ofstream(path) << text;
  const Outcome r = Import({path});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(path + ":150001:17:"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("imported 159999 points (319998 values)"), std::string::npos) << r.out;
  EXPECT_EQ(Query("SELECT count(util) FROM gpu")[0].values[0][1], QueryValue(int64_t{159'999}));
}

TEST_F(ImportTest, ADcgmExporterScrapeBecomesOnePointPerGpu) {
  const Outcome r = Import({"--format", "prom", "--measurement", "dcgm", "--tag", "cluster=c1",
                            kReal + "/dcgm_exporter/scrapes/k8s-ai-conformance_kops_L4.prom"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto util = Query("SELECT last(DCGM_FI_DEV_GPU_UTIL) FROM dcgm GROUP BY cluster");
  ASSERT_EQ(util.size(), 1u);
  EXPECT_EQ(util[0].tags, (std::vector<Tag>{{"cluster", "c1"}}));
}

TEST_F(ImportTest, ATruncatedGzipFileIsAnErrorNotAQuietEnd) {
  const std::string whole = dir_.path() + "/whole.lp.gz";
  std::string text;
  for (int i = 0; i < 20'000; ++i) {
    text += "gpu,node=n" + std::to_string(i % 7) + " util=" + std::to_string(i) + "i " +
            std::to_string(1704067200 + i) + "000000000\n";
  }
  WriteGzip(whole, text);
  const std::string gz = test::ReadWholeFile(whole);
  const std::string cut = dir_.path() + "/cut.lp.gz";
  std::ofstream(cut, std::ios::binary) << gz.substr(0, gz.size() / 2);
  const Outcome r = Import({cut});
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("truncated gzip stream"), std::string::npos) << r.err;
}

TEST_F(ImportTest, TheDirectoryKeepsItsTiers) {
  {
    Options o;
    o.info_log = [](std::string_view) {};
    o.tiers = {"5m", "1h", "1d"};  // what its server was configured with
    std::unique_ptr<Db> db;
    ASSERT_TRUE(Db::Open(o, data_, &db).ok());
  }
  ASSERT_EQ(Import({kReal + "/telegraf_nvidia_smi/README_example_output.lp"}).status, 0);
  Options o;
  o.info_log = [](std::string_view) {};
  o.keep_stored_tiers = true;
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(o, data_, &db).ok());
  EXPECT_EQ(db->KeptTiers(), 0b111u);  // the import did not drop 5m
}

TEST_F(ImportTest, UsageAndFileErrorsExitWithTwo) {
  EXPECT_EQ(Import({}).status, 2);
  EXPECT_EQ(Import({"--format", "xml", "x"}).status, 2);
  EXPECT_EQ(Import({"--precision", "days", "x"}).status, 2);
  const Outcome missing = Import({dir_.path() + "/nope.lp"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("nope.lp: cannot open"), std::string::npos) << missing.err;
  const Outcome help = Import({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--format lp|prom|nvidia-smi-csv|nvidia-smi-xml|pai"), std::string::npos);
}

}  // namespace
}  // namespace gpulse
