// The Prometheus parser and mapping on real exporter output, read in place
// from shared/data/real (SOURCES.md there says where each file comes from):
// dcgm-exporter scrapes, nvidia_gpu_exporter golden outputs, and
// node_exporter's end-to-end fixture. Every file must parse without an error,
// to the number of samples an independent line count gives, with exact values
// at known places; mapped, it must give one point per (tag set, timestamp),
// with the Kubernetes attribution as string fields, and the engine must accept
// the points.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/prom_mapping.h"
#include "ingest/prom_text.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::ingest {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kScrapeNs = 1'760'000'000'000'000'000;

const fs::path kReal = fs::path(GPULSE_SHARED_DIR) / "data" / "real";

// Each file, with the sample count from `grep -v '^#' | grep -c .` and the
// number of distinct non-attribution label sets (one scrape, one timestamp,
// so one point each), both counted outside this code base.
struct RealFile {
  std::string path;  // under data/real
  size_t samples;
  size_t points;
};

const std::vector<RealFile>& RealFiles() {
  static const std::vector<RealFile> kFiles = {
      {"dcgm_exporter/scrapes/datadog_dcgm_T4_driver460_dcgm-exporter-2.x.prom", 16, 1},
      {"dcgm_exporter/scrapes/datadog_dcgm_T4_driver470_attribute-labels.prom", 6, 1},
      {"dcgm_exporter/scrapes/k8s-ai-conformance_ericsson_T4.prom", 20, 1},
      {"dcgm_exporter/scrapes/k8s-ai-conformance_kops_L4.prom", 23, 1},
      {"dcgm_exporter/scrapes/k8s-ai-conformance_rafay_T4.prom", 17, 1},
      {"dcgm_exporter/scrapes/k8s-ai-conformance_upcloud_L40S.prom", 23, 1},
      {"dcgm_exporter/scrapes/k8s-ai-conformance_vks_GRID-A100-10C.prom", 11, 1},
      {"dcgm_exporter/scrapes/nvidia-aicr_H100x8_k8s-pod-labels_sampled.prom", 30, 8},
      {"nvidia_gpu_exporter/metrics/"
       "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05__idle.metrics",
       87, 3},
      {"nvidia_gpu_exporter/metrics/"
       "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05__load.metrics",
       91, 5},
      {"nvidia_gpu_exporter/metrics/"
       "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04__idle.metrics",
       87, 3},
      {"nvidia_gpu_exporter/metrics/"
       "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04__load.metrics",
       91, 5},
      {"nvidia_gpu_exporter/metrics/"
       "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05__idle.metrics",
       100, 4},
      {"nvidia_gpu_exporter/metrics/"
       "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05__load.metrics",
       104, 6},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__idle.metrics",
       132, 3},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.metrics",
       138, 6},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h100-mig__590.48.01__idle.metrics", 122,
       3},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h100-mig__590.48.01__load.metrics", 128,
       6},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h200-mig__590.48.01__idle.metrics", 123,
       3},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h200-mig__590.48.01__load.metrics", 129,
       6},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h200__590.48.01__idle.metrics", 133, 3},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h200__590.48.01__load.metrics", 139, 6},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-l40s__595.80__idle.metrics", 130, 3},
      {"nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-l40s__595.80__load.metrics", 134, 5},
      {"nvidia_gpu_exporter/metrics/"
       "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__idle.metrics",
       90, 13},
      {"nvidia_gpu_exporter/metrics/"
       "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__load.metrics",
       92, 15},
      {"nvidia_gpu_exporter/metrics/"
       "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62__idle.metrics",
       100, 22},
      {"nvidia_gpu_exporter/metrics/"
       "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62__load.metrics",
       102, 24},
      {"node_exporter/e2e-output.txt", 3027, 1099},
  };
  return kFiles;
}

std::string ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Lines that are neither blank nor comments: what the parser must turn into
// samples, counted without it.
size_t CountSampleLines(const std::string& body) {
  std::istringstream in(body);
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#') ++n;
  }
  return n;
}

// One parsed file; the samples view `body` and `scratch`.
struct ParsedFile {
  std::string body;
  PromTextScratch scratch;
  std::vector<PromSample> samples;
  std::vector<PromError> errors;
};

void ParseFile(const std::string& rel, ParsedFile* out) {
  out->body = ReadWhole(kReal / rel);
  ParsePromText(out->body, &out->scratch, &out->samples, &out->errors);
}

std::string Label(const PromSample& s, std::string_view name) {
  for (const auto& [k, v] : s.labels) {
    if (k == name) return std::string(v);
  }
  return "<absent>";
}

// The sample named `name` whose label `key` is `value`; fails the test when
// there is not exactly one.
const PromSample* Find(const ParsedFile& f, std::string_view name, std::string_view key,
                       std::string_view value) {
  const PromSample* found = nullptr;
  for (const PromSample& s : f.samples) {
    if (s.name != name || Label(s, key) != value) continue;
    EXPECT_EQ(found, nullptr) << "two samples " << name << " with " << key << "=" << value;
    found = &s;
  }
  EXPECT_NE(found, nullptr) << "no sample " << name << " with " << key << "=" << value;
  return found;
}

const Field* FindField(const Point& p, std::string_view key) {
  for (const Field& f : p.fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

const Tag* FindTag(const Point& p, std::string_view key) {
  for (const Tag& t : p.tags) {
    if (t.key == key) return &t;
  }
  return nullptr;
}

class PromRealScrapesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::is_directory(kReal)) GTEST_SKIP() << kReal << " is missing";
  }
};

TEST_F(PromRealScrapesTest, EveryFileParsesToItsSampleCount) {
  for (const RealFile& file : RealFiles()) {
    SCOPED_TRACE(file.path);
    ParsedFile f;
    ParseFile(file.path, &f);
    ASSERT_FALSE(f.body.empty());
    for (const PromError& e : f.errors) ADD_FAILURE() << e.ToString();
    EXPECT_EQ(f.samples.size(), CountSampleLines(f.body));
    EXPECT_EQ(f.samples.size(), file.samples);
  }
}

TEST_F(PromRealScrapesTest, NoRealFileIsLeftOut) {
  std::set<std::string> listed;
  for (const RealFile& file : RealFiles()) listed.insert(file.path);
  for (const char* dir : {"dcgm_exporter/scrapes", "nvidia_gpu_exporter/metrics"}) {
    for (const auto& entry : fs::directory_iterator(kReal / dir)) {
      std::string rel = std::string(dir) + "/" + entry.path().filename().string();
      if (entry.path().extension() == ".json") continue;  // a Prometheus API answer, not text
      EXPECT_EQ(listed.count(rel), 1u) << rel << " is not in RealFiles()";
    }
  }
}

TEST_F(PromRealScrapesTest, DcgmExporterValuesAndLabels) {
  ParsedFile aicr;
  ParseFile("dcgm_exporter/scrapes/nvidia-aicr_H100x8_k8s-pod-labels_sampled.prom", &aicr);
  const PromSample* power = Find(aicr, "DCGM_FI_DEV_POWER_USAGE", "gpu", "0");
  ASSERT_NE(power, nullptr);
  EXPECT_EQ(power->value, 113.611);
  EXPECT_EQ(power->type, "untyped");  // this file has no # TYPE lines
  EXPECT_EQ(Label(*power, "UUID"), "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005");
  EXPECT_EQ(Label(*power, "Hostname"), "gpu-node-1");
  EXPECT_EQ(Label(*power, "modelName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(Label(*power, "pod"), "vllm-agg-0-vllmdecodeworker-s65j5");
  EXPECT_EQ(Label(*power, "pod_uid"), "");
  EXPECT_EQ(power->labels.size(), 11u);
  const PromSample* temp = Find(aicr, "DCGM_FI_DEV_GPU_TEMP", "gpu", "7");
  ASSERT_NE(temp, nullptr);
  EXPECT_EQ(temp->value, 26);
  EXPECT_EQ(Label(*temp, "pod"), "<absent>");
  EXPECT_EQ(power->line, 9u);

  ParsedFile kops;
  ParseFile("dcgm_exporter/scrapes/k8s-ai-conformance_kops_L4.prom", &kops);
  const PromSample* l4 = Find(kops, "DCGM_FI_DEV_POWER_USAGE", "gpu", "0");
  ASSERT_NE(l4, nullptr);
  EXPECT_EQ(l4->value, 16.365);
  EXPECT_EQ(l4->type, "gauge");
  const PromSample* energy = Find(kops, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gpu", "0");
  ASSERT_NE(energy, nullptr);
  EXPECT_EQ(energy->value, 4742776);
  EXPECT_EQ(energy->type, "counter");
  EXPECT_EQ(Label(*energy, "Hostname"), "i-030791dc5a37cd257");

  ParsedFile dd;
  ParseFile("dcgm_exporter/scrapes/datadog_dcgm_T4_driver470_attribute-labels.prom", &dd);
  const PromSample* slowdown = Find(dd, "DCGM_FI_DEV_SLOWDOWN_TEMP", "gpu", "0");
  ASSERT_NE(slowdown, nullptr);
  EXPECT_EQ(slowdown->value, 93);
  EXPECT_EQ(Label(*slowdown, "DCGM_FI_DEV_SERIAL"), "1565220008176");

  // Every dcgm-exporter sample names its host and its GPU model.
  for (const RealFile& file : RealFiles()) {
    if (file.path.rfind("dcgm_exporter/", 0) != 0) continue;
    SCOPED_TRACE(file.path);
    ParsedFile f;
    ParseFile(file.path, &f);
    for (const PromSample& s : f.samples) {
      EXPECT_TRUE(Label(s, "Hostname") != "<absent>" || Label(s, "hostname") != "<absent>");
      EXPECT_NE(Label(s, "modelName"), "<absent>");
      EXPECT_NE(Label(s, "gpu"), "<absent>");
    }
  }
}

TEST_F(PromRealScrapesTest, NvidiaGpuExporterValuesAndEscapedWindowsPaths) {
  ParsedFile h100;
  ParseFile(
      "nvidia_gpu_exporter/metrics/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.metrics",
      &h100);
  const std::string uuid = "00000000-0000-0000-0000-000000000000";
  const PromSample* power = Find(h100, "nvidia_smi_power_draw_watts", "uuid", uuid);
  ASSERT_NE(power, nullptr);
  EXPECT_EQ(power->value, 631.95);
  EXPECT_EQ(power->type, "gauge");
  const PromSample* used = Find(h100, "nvidia_smi_memory_used_bytes", "uuid", uuid);
  ASSERT_NE(used, nullptr);
  EXPECT_EQ(used->value, 2.0780679168e+10);
  const PromSample* info = Find(h100, "nvidia_smi_gpu_info", "uuid", uuid);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(Label(*info, "name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(Label(*info, "driver_version"), "590.48.01");

  ParsedFile win;
  ParseFile(
      "nvidia_gpu_exporter/metrics/"
      "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__load.metrics",
      &win);
  const PromSample* app = Find(win, "nvidia_smi_compute_app_info", "pid", "12332");
  ASSERT_NE(app, nullptr);
  EXPECT_EQ(Label(*app, "process_name"), "C:\\Windows\\explorer.exe");
  EXPECT_FALSE(win.scratch.unescaped.empty());
}

TEST_F(PromRealScrapesTest, NodeExporterValues) {
  ParsedFile node;
  ParseFile("node_exporter/e2e-output.txt", &node);
  const PromSample* idle = nullptr;
  for (const PromSample& s : node.samples) {
    if (s.name == "node_cpu_seconds_total" && Label(s, "cpu") == "0" &&
        Label(s, "mode") == "idle") {
      idle = &s;
    }
  }
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->value, 10870.69);
  EXPECT_EQ(idle->type, "counter");
  const PromSample* dirty = Find(node, "node_bcache_dirty_target_bytes", "backing_device", "bdev0");
  ASSERT_NE(dirty, nullptr);
  EXPECT_EQ(dirty->value, 2.189426688e+10);
  size_t typed = 0;
  for (const PromSample& s : node.samples) typed += s.type != "untyped";
  EXPECT_GT(typed, node.samples.size() / 2);
}

// Independent of MapSamples: the distinct (non-empty, non-attribution label
// set) among the samples, all of which share the scrape time.
size_t DistinctGroups(const std::vector<PromSample>& samples) {
  const std::vector<std::string>& attribution = DefaultAttributionLabels();
  std::set<std::map<std::string, std::string>> groups;
  for (const PromSample& s : samples) {
    std::map<std::string, std::string> tags;
    for (const auto& [k, v] : s.labels) {
      if (v.empty()) continue;
      if (std::find(attribution.begin(), attribution.end(), k) != attribution.end()) continue;
      tags.emplace(k, v);
    }
    groups.insert(tags);
  }
  return groups.size();
}

TEST_F(PromRealScrapesTest, MappingGivesOnePointPerTagSetWithAttributionAsFields) {
  for (const RealFile& file : RealFiles()) {
    SCOPED_TRACE(file.path);
    ParsedFile f;
    ParseFile(file.path, &f);
    PromMappingOptions options;
    options.measurement = "scrape";
    std::vector<Point> points;
    PromMappingStats stats;
    MapSamples(f.samples, kScrapeNs, options, &points, &stats);
    EXPECT_EQ(points.size(), DistinctGroups(f.samples));
    EXPECT_EQ(points.size(), file.points);
    EXPECT_EQ(stats.points, points.size());
    EXPECT_EQ(stats.fields, f.samples.size());
    EXPECT_EQ(stats.duplicate_fields, 0u);
    for (const Point& p : points) {
      EXPECT_EQ(p.measurement, "scrape");
      EXPECT_EQ(p.timestamp_ns, kScrapeNs);
      for (const char* attribution : {"pod", "namespace", "container", "pod_uid"}) {
        EXPECT_EQ(FindTag(p, attribution), nullptr) << attribution;
      }
    }
  }
}

TEST_F(PromRealScrapesTest, DcgmPodLabelsBecomeStringFieldsOfTheGpuSeries) {
  ParsedFile f;
  ParseFile("dcgm_exporter/scrapes/nvidia-aicr_H100x8_k8s-pod-labels_sampled.prom", &f);
  PromMappingOptions options;
  options.measurement = "dcgm";
  options.extra_tags = {{"cluster", "use1-a"}};
  std::vector<Point> points;
  MapSamples(f.samples, kScrapeNs, options, &points);
  ASSERT_EQ(points.size(), 8u);

  const Point& gpu0 = points[0];
  ASSERT_NE(FindTag(gpu0, "gpu"), nullptr);
  EXPECT_EQ(FindTag(gpu0, "gpu")->value, "0");
  const std::vector<Tag> want_tags = {
      {"DCGM_FI_DRIVER_VERSION", "580.105.08"},
      {"Hostname", "gpu-node-1"},
      {"UUID", "GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005"},
      {"cluster", "use1-a"},
      {"device", "nvidia0"},
      {"gpu", "0"},
      {"modelName", "NVIDIA H100 80GB HBM3"},
      {"pci_bus_id", "00000000:53:00.0"},
  };
  EXPECT_EQ(gpu0.tags, want_tags);
  std::vector<std::string> field_keys;
  for (const Field& field : gpu0.fields) field_keys.push_back(field.key);
  const std::vector<std::string> want_fields = {
      "DCGM_FI_DEV_GPU_TEMP",
      "DCGM_FI_DEV_POWER_USAGE",
      "DCGM_FI_DEV_GPU_UTIL",
      "DCGM_FI_DEV_MEM_COPY_UTIL",
      "container",
      "namespace",
      "pod",
  };
  EXPECT_EQ(field_keys, want_fields);
  EXPECT_EQ(std::get<double>(FindField(gpu0, "DCGM_FI_DEV_GPU_TEMP")->value), 30);
  EXPECT_EQ(std::get<double>(FindField(gpu0, "DCGM_FI_DEV_POWER_USAGE")->value), 113.611);
  EXPECT_EQ(std::get<std::string>(FindField(gpu0, "pod")->value),
            "vllm-agg-0-vllmdecodeworker-s65j5");
  EXPECT_EQ(std::get<std::string>(FindField(gpu0, "namespace")->value), "dynamo-workload");
  EXPECT_EQ(std::get<std::string>(FindField(gpu0, "container")->value), "main");
  EXPECT_EQ(FindField(gpu0, "pod_uid"), nullptr);  // pod_uid="" is no label

  // GPUs 6 and 7 have no DCGM_FI_DEV_MEM_COPY_UTIL in this sampled scrape,
  // and no pod.
  EXPECT_EQ(points[7].fields.size(), 3u);
  EXPECT_EQ(FindTag(points[7], "gpu")->value, "7");
  EXPECT_EQ(FindField(points[7], "pod"), nullptr);

  // The engine takes them: eight series, one per GPU, pods in string fields.
  storage::ScratchDir dir;
  Options db_options;
  db_options.sync_policy = SyncPolicy::kNone;
  db_options.info_log = [](std::string_view) {};
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(db_options, dir.path(), &db).ok());
  Status s = db->Write(points);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<Series> series;
  ASSERT_TRUE(db->ListSeries("dcgm", {}, &series).ok());
  EXPECT_EQ(series.size(), 8u);
  std::vector<SeriesColumn> pods;
  ASSERT_TRUE(db->Read({"dcgm", {{"gpu", "0"}}, "pod"}, &pods).ok());
  ASSERT_EQ(pods.size(), 1u);
  ASSERT_EQ(pods[0].column.strings.size(), 1u);
  EXPECT_EQ(pods[0].column.strings[0], "vllm-agg-0-vllmdecodeworker-s65j5");
  EXPECT_TRUE(db->Close().ok());
}

TEST_F(PromRealScrapesTest, ProcessLabelsAsAttributionCollapseToTheGpuPoint) {
  ParsedFile f;
  ParseFile(
      "nvidia_gpu_exporter/metrics/"
      "windows-x86_64__nvidia-geforce-rtx-2080-super__591.86__load.metrics",
      &f);
  size_t apps = 0;
  for (const PromSample& s : f.samples) apps += s.name == "nvidia_smi_compute_app_info";
  ASSERT_EQ(apps, 12u);

  // By default pid and process_name are tags: one series per process, besides
  // the label-less exporter metrics, the GPU's uuid-only metrics and gpu_info.
  std::vector<Point> by_default;
  MapSamples(f.samples, kScrapeNs, PromMappingOptions(), &by_default);
  EXPECT_EQ(by_default.size(), 15u);

  // Declared attribution, the 12 processes fold into the GPU's point: one
  // value of the info metric, and the processes listed in string fields.
  PromMappingOptions options;
  options.attribution_labels.push_back("pid");
  options.attribution_labels.push_back("process_name");
  std::vector<Point> points;
  PromMappingStats stats;
  MapSamples(f.samples, kScrapeNs, options, &points, &stats);
  EXPECT_EQ(points.size(), 3u);
  EXPECT_EQ(stats.duplicate_fields, 11u);
  const Point* gpu = nullptr;
  for (const Point& p : points) {
    if (FindField(p, "nvidia_smi_compute_app_info") != nullptr) gpu = &p;
  }
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->tags, (std::vector<Tag>{{"uuid", "00000000-0000-0000-0000-000000000000"}}));
  EXPECT_NE(FindField(*gpu, "nvidia_smi_power_draw_watts"), nullptr);
  const Field* pids = FindField(*gpu, "pid");
  ASSERT_NE(pids, nullptr);
  const std::string& list = std::get<std::string>(pids->value);
  EXPECT_EQ(list.rfind("12332,12444,14160,", 0), 0u) << list;
  EXPECT_EQ(std::count(list.begin(), list.end(), ',') + 1, 12);
  const Field* names = FindField(*gpu, "process_name");
  ASSERT_NE(names, nullptr);
  EXPECT_EQ(std::get<std::string>(names->value).rfind("C:\\Windows\\explorer.exe,", 0), 0u);
}

}  // namespace
}  // namespace gpulse::ingest
