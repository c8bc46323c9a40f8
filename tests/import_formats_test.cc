// The nvidia-smi CSV, nvidia-smi XML and Alibaba PAI importers: the parsers
// on every real file of their kind in the shared data (read in place, never
// copied), with exact values from the sources' own documentation, and
// `gpulse import` end to end on the same files (exit statuses, errors by
// file, line and column, what lands in the data directory).

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/civil_time.h"
#include "ingest/nvsmi_csv.h"
#include "ingest/nvsmi_xml.h"
#include "ingest/pai_csv.h"
#include "query/query.h"
#include "tests/support/run_gpulse.h"
#include "tests/support/scratch_dir.h"

namespace gpulse {
namespace {

const std::string kReal = std::string(GPULSE_SHARED_DIR) + "/data/real";
const std::string kCsvDir = kReal + "/nvidia_smi_query_csv";
// SOURCES.md section 5: the columns of the header-less files.
const std::string kPlatoColumns =
    "timestamp,utilization.gpu,utilization.memory,memory.used,memory.free,temperature.gpu,"
    "power.draw";
const std::string kOmnioptColumns =
    "timestamp, name, pci.bus_id, driver_version, pstate, pcie.link.gen.max, "
    "pcie.link.gen.current, temperature.gpu, utilization.gpu, utilization.memory, memory.total, "
    "memory.free, memory.used";

std::vector<std::string> FilesIn(const std::string& dir, const std::string& ext) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ext) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

const FieldValue* FieldOf(const Point& p, const std::string& key) {
  for (const Field& f : p.fields) {
    if (f.key == key) return &f.value;
  }
  return nullptr;
}

std::string TagOf(const Point& p, const std::string& key) {
  for (const Tag& t : p.tags) {
    if (t.key == key) return t.value;
  }
  return "<none>";
}

int64_t Unix(const std::string& rfc3339) { return ingest::ParseInstant(rfc3339).value(); }

struct CsvOutcome {
  Status status;
  std::vector<Point> points;
  std::vector<size_t> lines;
  std::vector<ingest::RowError> errors;
};

CsvOutcome ParseCsv(const std::string& text, const std::string& query_gpu = "",
                    const std::string& zone = "UTC") {
  ingest::NvsmiCsvOptions o;
  o.query_gpu = query_gpu;
  o.tags = {{"host", "h1"}};
  o.zone = ingest::TimeZone::Find(zone).value();
  ingest::NvsmiCsvParser parser(o);
  CsvOutcome r;
  r.status = parser.Parse(text, 1, &r.points, &r.lines, &r.errors);
  return r;
}

// --- nvidia-smi --query-gpu CSV --------------------------------------------

TEST(NvsmiCsvTest, TheH100LogWithAHeaderAndIsoTimesBecomesOnePointPerGpuAndSample) {
  const CsvOutcome r = ParseCsv(test::ReadWholeFile(kCsvDir + "/gpu_glasses_8xH100_custom.csv"));
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.errors.empty());
  ASSERT_EQ(r.points.size(), 43u);
  const Point& first = r.points[0];
  EXPECT_EQ(first.measurement, "nvidia_smi");
  EXPECT_EQ(first.timestamp_ns, Unix("2025-09-08T09:26:50Z"));  // +08:00 honoured
  EXPECT_EQ(TagOf(first, "host"), "h1");
  EXPECT_EQ(TagOf(first, "gpu"), "0");  // the script's own GPU column is a tag
  EXPECT_EQ(TagOf(r.points[7], "gpu"), "7");
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "memory_used")), 4);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "memory_total")), 81559);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "temperature_gpu")), 33);
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(first, "power_draw")), 74.01);
  EXPECT_EQ(r.lines[42], 44u);
}

TEST(NvsmiCsvTest, AHeaderlessLogNeedsQueryGpuAndIsReadInTheGivenZone) {
  const std::string text = test::ReadWholeFile(kCsvDir + "/plato_noheader_5s.csv");
  const CsvOutcome refused = ParseCsv(text);
  EXPECT_TRUE(refused.status.IsInvalidArgument());
  EXPECT_NE(refused.status.message().find("--query-gpu"), std::string::npos);
  EXPECT_TRUE(refused.points.empty());

  const CsvOutcome r = ParseCsv(text, kPlatoColumns, "Asia/Shanghai");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.errors.empty());
  ASSERT_EQ(r.points.size(), 1923u);
  const Point& first =
      r.points[0];  // 2026/04/25 16:06:06.780, 0 %, 0 %, 2 MiB, 20146 MiB, 27, 11.64 W
  EXPECT_EQ(first.timestamp_ns, Unix("2026-04-25T08:06:06.780Z"));
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "utilization_gpu")), 0);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "memory_used")), 2);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "memory_free")), 20146);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "temperature_gpu")), 27);
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(first, "power_draw")), 11.64);
  for (const Point& p : r.points) ASSERT_EQ(p.fields.size(), 6u);
}

TEST(NvsmiCsvTest, TheOmnioptLogsKeepTagsStringsAndIntegers) {
  for (const std::string& name :
       {std::string("omniopt_gpu_usage__i8033.csv"), std::string("omniopt_gpu_usage__i8037.csv")}) {
    const CsvOutcome r = ParseCsv(test::ReadWholeFile(kCsvDir + "/" + name), kOmnioptColumns);
    ASSERT_TRUE(r.status.ok()) << name << ": " << r.status.ToString();
    EXPECT_TRUE(r.errors.empty()) << name;
    EXPECT_EQ(r.points.size(), name.find("8033") != std::string::npos ? 8u : 21u) << name;
    const Point& p = r.points.at(0);
    EXPECT_EQ(TagOf(p, "name"), "NVIDIA A100-SXM4-40GB");
    EXPECT_EQ(TagOf(p, "pstate"), "P0");
    EXPECT_EQ(TagOf(p, "pci_bus_id").substr(0, 9), "00000000:");
    EXPECT_EQ(std::get<std::string>(*FieldOf(p, "driver_version")), "545.23.08");
    EXPECT_EQ(std::get<int64_t>(*FieldOf(p, "pcie_link_gen_max")), 4);
    EXPECT_EQ(std::get<int64_t>(*FieldOf(p, "memory_total")), 40960);
  }
}

TEST(NvsmiCsvTest, TheDefectiveLogReportsItsBadRowsByLineAndColumnAndKeepsTheRest) {
  const CsvOutcome r = ParseCsv(
      test::ReadWholeFile(kCsvDir + "/omniopt_gpu_usage__i8033_defective.csv"), kOmnioptColumns);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.errors.size(), 2u);
  // Line 4 is cut short: 11 of 13 columns.
  EXPECT_EQ(r.errors[0].line, 4u);
  EXPECT_NE(r.errors[0].reason.find("expected 13 columns"), std::string::npos);
  EXPECT_NE(r.errors[0].reason.find("found 11"), std::string::npos);
  // Line 8: "4a" where pcie.link.gen.max is, the first bad value of the row.
  EXPECT_EQ(r.errors[1].line, 8u);
  EXPECT_EQ(r.errors[1].column, 82u);
  EXPECT_NE(r.errors[1].reason.find("pcie.link.gen.max"), std::string::npos);
  EXPECT_EQ(r.points.size(), 6u);
  EXPECT_EQ(r.lines, (std::vector<size_t>{1, 2, 3, 5, 6, 7}));
}

TEST(NvsmiCsvTest, UnitsNotAvailableValuesAndRepeatedHeaders) {
  const std::string text =
      "timestamp, index, uuid, utilization.gpu [%], memory.used [MiB], power.draw [W], "
      "clocks.sm [MHz], fan.speed [%], clocks_throttle_reasons.sw_power_cap, ecc.mode.current\n"
      "2024/01/02 03:04:05.250, 0, GPU-a, 45 %, 1129 MiB, 33.09 W, 1410 MHz, [N/A], Active, "
      "Enabled\n"
      "\n"
      // A second log appended: its header again, then a row of a GPU that
      // reports less.
      "timestamp, index, uuid, utilization.gpu [%], memory.used [MiB], power.draw [W], "
      "clocks.sm [MHz], fan.speed [%], clocks_throttle_reasons.sw_power_cap, ecc.mode.current\n"
      "2024/01/02 03:04:10.000, 1, GPU-b, 0 %, 0 MiB, [Not Supported], 210 MHz, 30 %, Not "
      "Active, [N/A]\n"
      "2024/01/02 03:04:15.000, 1, GPU-b, 1.5 %, 0 MiB, 20 W, 210 MHz, 30 %, Not Active, N/A\n";
  const CsvOutcome r = ParseCsv(text);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.points.size(), 2u);
  const Point& a = r.points[0];
  EXPECT_EQ(a.timestamp_ns, Unix("2024-01-02T03:04:05.250Z"));
  EXPECT_EQ(TagOf(a, "uuid"), "GPU-a");
  EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "utilization_gpu")), 45);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "memory_used")), 1129);
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(a, "power_draw")), 33.09);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "clocks_current_sm")), 1410);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(a, "clocks_event_reason_sw_power_cap")), 1);
  EXPECT_EQ(std::get<std::string>(*FieldOf(a, "current_ecc")), "Enabled");
  EXPECT_EQ(FieldOf(a, "fan_speed"), nullptr);  // [N/A]: left out, not an error
  const Point& b = r.points[1];
  EXPECT_EQ(r.lines[1], 5u);
  EXPECT_EQ(FieldOf(b, "power_draw"), nullptr);
  EXPECT_EQ(FieldOf(b, "current_ecc"), nullptr);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(b, "clocks_event_reason_sw_power_cap")), 0);
  // utilization.gpu is an integer field: 1.5 is refused, not stored as a float.
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 6u);
  EXPECT_NE(r.errors[0].reason.find("utilization.gpu: expected an integer"), std::string::npos);
}

TEST(NvsmiCsvTest, ColumnsWithoutATimestampAreRefused) {
  const CsvOutcome r = ParseCsv("index, utilization.gpu [%]\n0, 5 %\n");
  EXPECT_TRUE(r.status.IsInvalidArgument());
  EXPECT_NE(r.status.message().find("timestamp"), std::string::npos);
  EXPECT_TRUE(r.points.empty());
}

TEST(NvsmiCsvTest, ColumnNamesMapToTelegrafsFields) {
  using C = ingest::NvsmiCsvParser;
  EXPECT_EQ(C::ColumnFor("utilization.gpu").key, "utilization_gpu");
  EXPECT_EQ(C::ColumnFor("clocks.sm").key, "clocks_current_sm");
  EXPECT_EQ(C::ColumnFor("clocks.current.sm").key, "clocks_current_sm");
  EXPECT_EQ(C::ColumnFor("power.draw").kind, C::Kind::kFloat);
  EXPECT_EQ(C::ColumnFor("temperature.gpu").kind, C::Kind::kInteger);
  EXPECT_EQ(C::ColumnFor("pci.bus_id").kind, C::Kind::kTag);
  EXPECT_EQ(C::ColumnFor("clocks_throttle_reasons.hw_slowdown").key,
            "clocks_event_reason_hw_slowdown");
  EXPECT_EQ(C::ColumnFor("mig.mode.current").key, "mig_mode_current");  // unknown: dots
}

// --- nvidia-smi -q -x --------------------------------------------------------

struct XmlOutcome {
  Status status;
  std::vector<Point> points;
  std::vector<ingest::RowError> errors;
};

XmlOutcome ParseXml(const std::string& path) {
  ingest::NvsmiXmlOptions o;
  o.tags = {{"host", "h1"}};
  o.default_time_ns = 42;
  XmlOutcome r;
  r.status = ingest::ParseNvsmiXml(test::ReadWholeFile(path), o, &r.points, &r.errors);
  return r;
}

size_t CountOf(const std::vector<Point>& points, const std::string& measurement) {
  return static_cast<size_t>(std::count_if(
      points.begin(), points.end(), [&](const Point& p) { return p.measurement == measurement; }));
}

// Found by the fuzz target: a year no int64 nanosecond count holds is not a
// time (it overflowed), and a column spelled as its field key takes the
// known column's type (it was inferred, giving one field two types).
TEST(NvsmiCsvTest, FuzzFoundRowsAreErrorsNotOverflowsOrSecondTypes) {
  const CsvOutcome far = ParseCsv(
      "timestamp, utilization.gpu [%]\n1012/01/01 00:00:00.000, 5 %\n2024/06/01 11:27:05.177, 7 "
      "%\n");
  ASSERT_EQ(far.points.size(), 1u);
  ASSERT_EQ(far.errors.size(), 1u);
  EXPECT_EQ(far.errors[0].line, 2u);
  const CsvOutcome keyed = ParseCsv(
      "timestamp, utilization.gpu [%]\n2024/06/01 11:27:05.177, 5 %\n"
      "timestamp, utilization_gpu\n2024/06/01 11:27:15.177, 0.5\n2024/06/01 11:27:25.177, 9\n");
  ASSERT_EQ(keyed.errors.size(), 1u);
  EXPECT_EQ(keyed.errors[0].line, 4u);  // 0.5 is no integer percentage
  for (const Point& p : keyed.points) {
    for (const Field& f : p.fields) {
      if (f.key == "utilization_gpu") {
        EXPECT_TRUE(std::holds_alternative<int64_t>(f.value));
      }
    }
  }
}

TEST(NvsmiXmlTest, EveryRealSnapshotImportsWithoutErrors) {
  std::vector<std::string> files = FilesIn(kReal + "/telegraf_nvidia_smi", ".xml");
  const std::vector<std::string> netdata = FilesIn(kReal + "/netdata_nvidia_smi", ".xml");
  files.insert(files.end(), netdata.begin(), netdata.end());
  ASSERT_EQ(files.size(), 18u);
  for (const std::string& f : files) {
    const XmlOutcome r = ParseXml(f);
    ASSERT_TRUE(r.status.ok()) << f << ": " << r.status.ToString();
    EXPECT_TRUE(r.errors.empty()) << f << ": " << r.errors[0].reason;
    ASSERT_EQ(CountOf(r.points, "nvidia_smi"), 1u) << f;  // one <gpu> each
    const Point& gpu = r.points[0];
    EXPECT_EQ(TagOf(gpu, "host"), "h1") << f;
    EXPECT_EQ(TagOf(gpu, "index"), "0") << f;
    EXPECT_NE(TagOf(gpu, "name"), "<none>") << f;
    for (const Point& p : r.points) {
      EXPECT_FALSE(p.fields.empty()) << f;
      if (p.measurement == "nvidia_smi") {
        // Every known field has one type, whichever file it comes from.
        for (const char* key : {"memory_used", "temperature_gpu", "utilization_gpu"}) {
          if (const FieldValue* v = FieldOf(p, key)) {
            EXPECT_TRUE(std::holds_alternative<int64_t>(*v)) << f << " " << key;
          }
        }
        if (const FieldValue* v = FieldOf(p, "power_draw")) {
          EXPECT_TRUE(std::holds_alternative<double>(*v)) << f;
        }
      }
    }
  }
}

TEST(NvsmiXmlTest, TheA100SnapshotGivesTelegrafsValues) {
  const XmlOutcome r = ParseXml(kReal + "/telegraf_nvidia_smi/a100-sxm4-v12.xml");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.points.size(), 5u);  // the GPU and its 4 MIG devices
  const Point& gpu = r.points[0];
  EXPECT_EQ(gpu.measurement, "nvidia_smi");
  EXPECT_EQ(TagOf(gpu, "name"), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(TagOf(gpu, "pstate"), "P0");
  EXPECT_EQ(TagOf(gpu, "arch"), "Ampere");
  EXPECT_EQ(TagOf(gpu, "compute_mode"), "Default");
  EXPECT_EQ(TagOf(gpu, "uuid"), "GPU-513536b6-7d19-9063-b049-1e69664bb298");
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "memory_total")), 81920);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "memory_used")), 50);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "memory_free")), 80999);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "memory_reserved")), 869);
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(gpu, "power_draw")), 67.03);
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(gpu, "power_limit")), 500);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "temperature_gpu")), 27);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "temperature_memory")), 44);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "pcie_tx_util")), 4000);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "clocks_current_sm")), 1275);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(gpu, "clocks_event_reason_gpu_idle")), 0);
  EXPECT_EQ(std::get<std::string>(*FieldOf(gpu, "driver_version")), "535.54.03");
  EXPECT_EQ(std::get<std::string>(*FieldOf(gpu, "cuda_version")), "12.2");
  EXPECT_EQ(FieldOf(gpu, "utilization_gpu"), nullptr);  // N/A under MIG
  EXPECT_EQ(FieldOf(gpu, "fan_speed"), nullptr);
  EXPECT_EQ(gpu.timestamp_ns, Unix("2023-08-04T11:44:30Z"));  // Fri Aug  4 11:44:30 2023, UTC
  const Point& mig = r.points[2];
  EXPECT_EQ(mig.measurement, "nvidia_smi_mig");
  EXPECT_EQ(TagOf(mig, "index"), "1");
  EXPECT_EQ(TagOf(mig, "gpu_index"), "4");
  EXPECT_EQ(TagOf(mig, "compute_index"), "0");
  EXPECT_EQ(TagOf(mig, "arch"), "Ampere");
  EXPECT_EQ(std::get<int64_t>(*FieldOf(mig, "memory_fb_total")), 19968);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(mig, "memory_bar1_free")), 32767);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(mig, "sram_uncorrectable")), 0);
}

TEST(NvsmiXmlTest, ProcessesAndArchComeFromV12OnAsInTelegraf) {
  const XmlOutcome v12 = ParseXml(kReal + "/telegraf_nvidia_smi/rtx-3080-v12.xml");
  ASSERT_TRUE(v12.status.ok());
  EXPECT_EQ(CountOf(v12.points, "nvidia_smi_process"), 5u);
  const Point& proc = v12.points[1];
  EXPECT_EQ(proc.measurement, "nvidia_smi_process");
  EXPECT_NE(TagOf(proc, "type"), "<none>");
  EXPECT_TRUE(std::holds_alternative<int64_t>(*FieldOf(proc, "pid")));
  EXPECT_TRUE(std::holds_alternative<int64_t>(*FieldOf(proc, "used_memory")));
  // v11 (Telegraf's v11 parser): the process and MIG elements are not read.
  const XmlOutcome v11 = ParseXml(kReal + "/telegraf_nvidia_smi/tesla-t4.xml");
  ASSERT_TRUE(v11.status.ok());
  EXPECT_EQ(v11.points.size(), 1u);
  EXPECT_EQ(TagOf(v11.points[0], "arch"), "<none>");
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(v11.points[0], "power_draw")), 26.78);
  // Old drivers' throttle reasons carry the new names.
  const XmlOutcome p400 = ParseXml(kReal + "/telegraf_nvidia_smi/quadro-p400.xml");
  EXPECT_EQ(std::get<int64_t>(*FieldOf(p400.points[0], "clocks_event_reason_gpu_idle")), 1);
}

TEST(NvsmiXmlTest, TheTrimmedExcerptAndASnapshotWithoutTimestampStillImport) {
  const XmlOutcome pro = ParseXml(kReal + "/netdata_nvidia_smi/rtx-pro-6000-driver-580.xml");
  ASSERT_TRUE(pro.status.ok());
  ASSERT_EQ(pro.points.size(), 1u);
  const Point& p = pro.points[0];
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(p, "power_draw")), 66.84);  // the instant reading
  EXPECT_EQ(std::get<int64_t>(*FieldOf(p, "fan_speed")), 40);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(p, "temperature_max_tlimit_threshold")), -5);
  EXPECT_EQ(p.timestamp_ns, 42);  // no <timestamp>: the import's time
  const XmlOutcome gtx = ParseXml(kReal + "/telegraf_nvidia_smi/gtx-1070-ti.xml");
  ASSERT_TRUE(gtx.status.ok());
  EXPECT_EQ(gtx.points.at(0).timestamp_ns, 42);
}

TEST(NvsmiXmlTest, BrokenXmlIsRefusedWithItsPosition) {
  std::vector<Point> points;
  std::vector<ingest::RowError> errors;
  const Status s =
      ingest::ParseNvsmiXml("<nvidia_smi_log>\n  <gpu>\n  </gp>\n", {}, &points, &errors);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("line 3"), std::string::npos) << s.message();
  EXPECT_TRUE(points.empty());
  const Status other = ingest::ParseNvsmiXml("<html/>", {}, &points, &errors);
  EXPECT_TRUE(other.IsInvalidArgument());
  // A value that does not read as its type is named by its line; the rest
  // of the GPU is kept.
  const std::string bad =
      "<nvidia_smi_log><timestamp>Fri Aug  4 11:44:30 2023</timestamp>\n<gpu>\n"
      "<fb_memory_usage><total>lots MiB</total><used>5 MiB</used></fb_memory_usage>\n"
      "</gpu></nvidia_smi_log>";
  ASSERT_TRUE(ingest::ParseNvsmiXml(bad, {}, &points, &errors).ok());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 3u);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(points[0], "memory_used")), 5);
  EXPECT_EQ(FieldOf(points[0], "memory_total"), nullptr);
}

// --- Alibaba PAI 2020 ------------------------------------------------------------

struct PaiOutcome {
  std::vector<Point> points;
  std::vector<size_t> lines;
  std::vector<ingest::RowError> errors;
};

PaiOutcome ParsePai(const std::string& table, const std::string& text, int64_t start_ns = 0) {
  ingest::PaiCsvOptions o;
  o.table = ingest::FindPaiTable(table);
  EXPECT_NE(o.table, nullptr) << table;
  o.start_ns = start_ns;
  ingest::PaiCsvParser parser(o);
  PaiOutcome r;
  parser.Parse(text, 1, &r.points, &r.lines, &r.errors);
  return r;
}

// Found by the fuzz target: a time past what a timestamp holds was an
// int64 overflow; it is a row error at that field.
TEST(PaiCsvTest, ATimeOutsideTheTimestampRangeIsARowError) {
  const PaiOutcome r = ParsePai(
      "pai_job_table", "j1,i1,u1,Terminated,9999999999,9999999999\nj2,i2,u2,Terminated,10,20\n");
  ASSERT_EQ(r.points.size(), 1u);  // the good row is kept
  ASSERT_FALSE(r.errors.empty());
  for (const ingest::RowError& e : r.errors) {
    EXPECT_EQ(e.line, 1u);
    EXPECT_NE(e.reason.find("outside"), std::string::npos) << e.reason;
  }
}

TEST(PaiCsvTest, TablesAreFoundByNameAndByFileName) {
  EXPECT_EQ(ingest::PaiTableForFile("/x/pai_job_table.csv")->measurement, std::string("pai_job"));
  EXPECT_EQ(ingest::PaiTableForFile("pai_machine_metric.csv.gz")->measurement,
            std::string("pai_machine_metric"));
  EXPECT_EQ(ingest::PaiTableForFile("pai_machine_spec.csv")->measurement,
            std::string("pai_machine_spec"));
  EXPECT_EQ(ingest::PaiTableForFile("jobs.csv"), nullptr);
  EXPECT_EQ(ingest::FindPaiTable("sensor")->name, std::string("pai_sensor_table"));
  EXPECT_EQ(ingest::FindPaiTable("pai_group_tag")->name, std::string("pai_group_tag_table"));
}

TEST(PaiCsvTest, TheMachineSpecTableWithItsHeaderLine) {
  const PaiOutcome r = ParsePai(
      "pai_machine_spec", test::ReadWholeFile(kReal + "/alibaba/gpu-v2020/pai_machine_spec.csv"),
      Unix("2020-07-01T00:00:00Z"));
  EXPECT_TRUE(r.errors.empty());
  // SOURCES.md says 1,896 machines, but its gpu_type counts add up to the
  // 1,897 distinct machines the file holds.
  ASSERT_EQ(r.points.size(), 1897u);
  std::map<std::string, int> by_type;
  for (const Point& p : r.points) {
    ++by_type[TagOf(p, "gpu_type")];
    ASSERT_EQ(p.timestamp_ns, Unix("2020-07-01T00:00:00Z"));
  }
  EXPECT_EQ(by_type["P100"], 798);
  EXPECT_EQ(by_type["T4"], 497);
  EXPECT_EQ(by_type["MISC"], 280);
  EXPECT_EQ(by_type["V100M32"], 135);
  EXPECT_EQ(by_type["V100"], 104);
  EXPECT_EQ(by_type["CPU"], 83);
  const Point& first = r.points[0];  // 7399a758eb02bae1a3621236,CPU,96,512,0
  EXPECT_EQ(first.measurement, "pai_machine_spec");
  EXPECT_EQ(TagOf(first, "machine"), "7399a758eb02bae1a3621236");
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "cap_cpu")), 96);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "cap_mem")), 512);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(first, "cap_gpu")), 0);
  EXPECT_EQ(r.lines[0], 2u);
}

TEST(PaiCsvTest, JobRowsKeepIdsAsFieldsAndTimesFromTheStart) {
  const int64_t start = Unix("2020-07-01T00:00:00Z");
  const PaiOutcome r = ParsePai("pai_job_table",
                                "job_name,inst_id,user,status,start_time,end_time\n"
                                "4b3f04b66a525d2df903eb16,8e7f3b5d2f4c,58540f191766,Terminated,"
                                "2019.0,3600.0\n"
                                "a1,b1,u1,Terminated,2019.0,2100.0\n"
                                "a2,b2,u2,Waiting,,4000\n"
                                "a3,b3,u3,Failed,,\n"
                                "a4,b4,u4,Running,soon,\n",
                                start);
  ASSERT_EQ(r.points.size(), 3u);
  const Point& p = r.points[0];
  EXPECT_EQ(p.measurement, "pai_job");
  EXPECT_EQ(p.tags, (std::vector<Tag>{{"status", "Terminated"}}));
  EXPECT_EQ(std::get<std::string>(*FieldOf(p, "job_name")), "4b3f04b66a525d2df903eb16");
  EXPECT_EQ(std::get<std::string>(*FieldOf(p, "user")), "58540f191766");
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(p, "end_time")), 3600.0);
  // Second 2019 of the trace, plus the row's line in nanoseconds so the two
  // jobs that started in that second stay two points.
  EXPECT_EQ(p.timestamp_ns, start + 2019'000'000'000 + 2);
  EXPECT_EQ(r.points[1].timestamp_ns, start + 2019'000'000'000 + 3);
  EXPECT_EQ(r.points[2].timestamp_ns, start + 4000'000'000'000 + 4);  // never started: its end
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].line, 5u);
  EXPECT_NE(r.errors[0].reason.find("no start_time"), std::string::npos);
  EXPECT_EQ(r.errors[1].line, 6u);
  EXPECT_EQ(r.errors[1].column, 18u);
  EXPECT_NE(r.errors[1].reason.find("start_time: expected a number"), std::string::npos);
}

TEST(PaiCsvTest, TaskSensorAndMachineMetricRows) {
  const PaiOutcome task = ParsePai(
      "task", "j1,worker,1.0,Terminated,100,200,600.0,29.296875,100.0,V100\nj2,ps,2,Running\n");
  ASSERT_EQ(task.points.size(), 1u);
  const Point& t = task.points[0];
  EXPECT_EQ(t.measurement, "pai_task");
  EXPECT_EQ(TagOf(t, "gpu_type"), "V100");
  EXPECT_EQ(TagOf(t, "status"), "Terminated");
  EXPECT_EQ(std::get<std::string>(*FieldOf(t, "task_name")), "worker");
  EXPECT_EQ(std::get<int64_t>(*FieldOf(t, "inst_num")), 1);
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(t, "plan_mem")), 29.296875);
  ASSERT_EQ(task.errors.size(), 1u);
  EXPECT_NE(task.errors[0].reason.find("expected 10 columns"), std::string::npos);

  const PaiOutcome sensor = ParsePai(
      "pai_sensor_table",
      "j1,worker,w1,i1,m1,/dev/nvidia0,450.5,28.0,12.5,14.0,2.5,3.0,1024.0,2048.0,10,20\n");
  ASSERT_EQ(sensor.points.size(), 1u);
  const Point& s = sensor.points[0];
  EXPECT_EQ(s.measurement, "pai_sensor");
  EXPECT_EQ(TagOf(s, "machine"), "m1");
  EXPECT_EQ(TagOf(s, "gpu_name"), "/dev/nvidia0");
  EXPECT_EQ(std::get<std::string>(*FieldOf(s, "worker_name")), "w1");
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(s, "gpu_wrk_util")), 28.0);
  EXPECT_EQ(std::get<int64_t>(*FieldOf(s, "write_count")), 20);
  EXPECT_EQ(s.timestamp_ns, 1);  // no time column: the start, plus its line

  const PaiOutcome metric =
      ParsePai("pai_machine_metric", "w1,m1,3600,3660,0.5,4.1,20.2,75.0,12.0,1000.0,3,24.8\n");
  ASSERT_EQ(metric.points.size(), 1u);
  const Point& m = metric.points[0];
  EXPECT_EQ(m.measurement, "pai_machine_metric");
  EXPECT_EQ(m.tags, (std::vector<Tag>{{"machine", "m1"}}));
  EXPECT_EQ(std::get<int64_t>(*FieldOf(m, "machine_num_worker")), 3);
  EXPECT_DOUBLE_EQ(std::get<double>(*FieldOf(m, "machine_gpu")), 75.0);
  EXPECT_EQ(m.timestamp_ns, 3600'000'000'000 + 1);
}

// --- gpulse import end to end -----------------------------------------------------

using Outcome = test::RunOutcome;

class ImportFormatsTest : public ::testing::Test {
 protected:
  Outcome Import(std::vector<std::string> args) {
    args.insert(args.begin(), {"import", "--data", data_});
    return test::RunGpulse(args, dir_.path());
  }

  std::vector<ResultSeries> Query(const std::string& q) { return test::QueryDirectory(data_, q); }

  storage::ScratchDir dir_;
  const std::string data_ = dir_.path() + "/data";
};

TEST_F(ImportFormatsTest, TheDefectiveCsvExitsOneNamingItsRowsAndWritesTheRest) {
  const std::string file = kCsvDir + "/omniopt_gpu_usage__i8033_defective.csv";
  const Outcome r = Import({"--format", "nvidia-smi-csv", "--query-gpu", kOmnioptColumns, file});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(file + ":4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(file + ":8:82: pcie.link.gen.max: expected an integer"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("imported 6 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 lines rejected"), std::string::npos) << r.out;
  const auto hosts = Query("SHOW TAG VALUES FROM nvidia_smi WITH KEY = host");
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].values.at(0).at(1),
            QueryValue(std::string("omniopt_gpu_usage__i8033_defective")));
}

TEST_F(ImportFormatsTest, AHeaderlessCsvWithoutQueryGpuExitsTwo) {
  const Outcome r =
      Import({"--format", "nvidia-smi-csv", kCsvDir + "/omniopt_gpu_usage__i8037.csv"});
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("--query-gpu"), std::string::npos) << r.err;
}

TEST_F(ImportFormatsTest, AGzipCsvWithATimezoneAndAHostTag) {
  const std::string path = dir_.path() + "/node.csv.gz";
  const std::string text = test::ReadWholeFile(kCsvDir + "/plato_noheader_5s.csv");
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  const Outcome r = Import({"--format", "nvidia-smi-csv", "--query-gpu", kPlatoColumns,
                            "--timezone", "Europe/Berlin", "--tag", "host=plato", path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1923 points"), std::string::npos) << r.out;
  const auto first = Query("SELECT first(power_draw) FROM nvidia_smi GROUP BY host");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].tags, (std::vector<Tag>{{"host", "plato"}}));
  EXPECT_EQ(first[0].values[0][1], QueryValue(11.64));
  // 16:06:06.780 in Berlin's summer time is 14:06:06.780 UTC.
  EXPECT_EQ(first[0].values[0][0], QueryValue(Unix("2026-04-25T14:06:06.780Z")));
  EXPECT_EQ(Import({"--format", "nvidia-smi-csv", "--timezone", "Mars/Olympus", path}).status, 2);
}

TEST_F(ImportFormatsTest, EveryXmlSnapshotImports) {
  std::vector<std::string> args = {"--format", "nvidia-smi-xml"};
  for (const char* dir : {"/telegraf_nvidia_smi", "/netdata_nvidia_smi"}) {
    for (const std::string& f : FilesIn(kReal + dir, ".xml")) args.push_back(f);
  }
  const Outcome r = Import(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("from 18 files"), std::string::npos) << r.out;
  const auto types = Query("SHOW FIELD KEYS FROM nvidia_smi");
  ASSERT_EQ(types.size(), 1u);
  std::map<std::string, std::string> type_of;
  for (const auto& row : types[0].values) {
    type_of[std::get<std::string>(row[0])] = std::get<std::string>(row[1]);
  }
  EXPECT_EQ(type_of.at("memory_total"), "integer");
  EXPECT_EQ(type_of.at("power_draw"), "float");
  EXPECT_EQ(type_of.at("driver_version"), "string");
  const auto total =
      Query("SELECT last(memory_total) FROM nvidia_smi WHERE host = 'a100-sxm4-v12' GROUP BY arch");
  ASSERT_EQ(total.size(), 1u);
  EXPECT_EQ(total[0].tags, (std::vector<Tag>{{"arch", "Ampere"}}));
  EXPECT_EQ(total[0].values[0][1], QueryValue(int64_t{81920}));
  EXPECT_EQ(Query("SELECT count(memory_fb_total) FROM nvidia_smi_mig")[0].values[0][1],
            QueryValue(int64_t{4}));
}

TEST_F(ImportFormatsTest, ThePaiMachineSpecLandsOneSeriesPerMachine) {
  const Outcome r = Import({"--format", "pai", "--start", "2020-07-01T00:00:00Z",
                            kReal + "/alibaba/gpu-v2020/pai_machine_spec.csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("imported 1897 points (5691 values)"), std::string::npos) << r.out;
  const auto counts = Query("SELECT count(cap_gpu) FROM pai_machine_spec GROUP BY gpu_type");
  std::map<std::string, int64_t> by_type;
  for (const ResultSeries& s : counts) {
    by_type[s.tags.at(0).value] = std::get<int64_t>(s.values.at(0).at(1));
  }
  EXPECT_EQ(by_type["P100"], 798);
  EXPECT_EQ(by_type["T4"], 497);
  EXPECT_EQ(by_type["CPU"], 83);
  const auto sum = Query("SELECT sum(cap_gpu) FROM pai_machine_spec WHERE gpu_type = 'V100M32'");
  EXPECT_EQ(sum.at(0).values.at(0).at(1), QueryValue(int64_t{135 * 8}));
}

TEST_F(ImportFormatsTest, PaiFilesNeedATableAndAGoodStart) {
  const std::string path = dir_.path() + "/rows.csv";
  std::ofstream(path) << "w1,m1,3600,3660,0.5,4.1,20.2,75.0,12.0,1000.0,3,24.8\n";
  const Outcome unnamed = Import({"--format", "pai", path});
  EXPECT_EQ(unnamed.status, 2);
  EXPECT_NE(unnamed.err.find("--table"), std::string::npos) << unnamed.err;
  EXPECT_EQ(Import({"--format", "pai", "--table", "nope", path}).status, 2);
  EXPECT_EQ(Import({"--format", "pai", "--start", "yesterday", path}).status, 2);
  const Outcome named =
      Import({"--format", "pai", "--table", "machine_metric", "--start", "1593561600", path});
  ASSERT_EQ(named.status, 0) << named.err;
  const auto gpu = Query("SELECT machine_gpu FROM pai_machine_metric");
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].values.at(0).at(0), QueryValue(Unix("2020-07-01T01:00:00Z") + 1));
}

}  // namespace
}  // namespace gpulse
