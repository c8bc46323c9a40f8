// `gpulse demo`: the first thing a newcomer runs. It exercises the whole
// engine through the public API: write, close, reopen (replaying nothing,
// since Close flushed), read back, and report sizes.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "shell/commands.h"

namespace gpulse::cli {

namespace {

constexpr int kNodes = 2;
constexpr int kGpusPerNode = 8;
constexpr int kMinutes = 6 * 60;
constexpr int64_t kStart = 1704067200LL * 1000000000LL;  // 2024-01-01T00:00:00Z
constexpr int64_t kMinute = 60LL * 1000000000LL;

// A deterministic GPU-minute: a training job on most GPUs, idle on the last.
Point MakePoint(int node, int gpu, int minute) {
  const bool busy = gpu < 6;
  const double wave = std::sin(minute / 17.0 + gpu);
  const int64_t util = busy ? 90 + static_cast<int64_t>(5 * wave) : 0;
  const double power = busy ? std::round((600.0 + 20 * wave) * 10) / 10 : 62.5;
  const int64_t temp = busy ? 66 + static_cast<int64_t>(3 * wave) : 34;
  Point p;
  p.measurement = "gpu";
  p.tags = {{"node", "demo-n00" + std::to_string(node + 1)},
            {"gpu", std::to_string(gpu)},
            {"sku", "H100-SXM5-80GB"}};
  p.fields = {{"util", util}, {"power_w", power}, {"temp_c", temp}};
  p.timestamp_ns = kStart + minute * kMinute;
  return p;
}

uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

int Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "gpulse demo: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int RunDemo(const std::vector<std::string>& args) {
  std::string dir = "./gpulse-data";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--data" && i + 1 < args.size()) {
      dir = args[++i];
    } else {
      std::fprintf(stderr, "gpulse demo: unknown argument '%s' (usage: gpulse demo [--data DIR])\n",
                   args[i].c_str());
      return 2;
    }
  }

  Options options;
  options.sync_policy = SyncPolicy::kInterval;
  std::unique_ptr<Db> db;
  Status s = Db::Open(options, dir, &db);
  if (!s.ok()) return Fail("open", s);

  const auto started = std::chrono::steady_clock::now();
  uint64_t values = 0;
  for (int minute = 0; minute < kMinutes; ++minute) {
    std::vector<Point> batch;
    for (int node = 0; node < kNodes; ++node) {
      for (int gpu = 0; gpu < kGpusPerNode; ++gpu) batch.push_back(MakePoint(node, gpu, minute));
    }
    WriteResult result;
    s = db->Write(batch, &result);
    if (!s.ok()) return Fail("write", s);
    values += result.values_written;
  }
  const double write_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("wrote %llu field values (%d GPUs x %d minutes x 3 fields) to %s in %.3f s\n",
              static_cast<unsigned long long>(values), kNodes * kGpusPerNode, kMinutes, dir.c_str(),
              write_s);

  s = db->Close();
  if (!s.ok()) return Fail("close", s);
  db.reset();
  s = Db::Open(options, dir, &db);
  if (!s.ok()) return Fail("reopen", s);

  std::vector<Series> series;
  s = db->ListSeries("gpu", {}, &series);
  if (!s.ok()) return Fail("list series", s);
  std::vector<FieldInfo> fields;
  s = db->ListFields("gpu", &fields);
  if (!s.ok()) return Fail("list fields", s);
  std::printf("reopened: %zu series, fields:", series.size());
  for (const FieldInfo& f : fields) {
    std::printf(" %s (%s)", f.name.c_str(), storage::FieldTypeName(f.type));
  }
  std::printf("\n");

  ReadRequest request;
  request.measurement = "gpu";
  request.field = "util";
  request.tags = {{"node", "demo-n001"}};
  std::vector<SeriesColumn> columns;
  s = db->Read(request, &columns);
  if (!s.ok()) return Fail("read", s);
  std::printf("mean util per GPU of demo-n001 over %d minutes:\n", kMinutes);
  uint64_t read_back = 0;
  for (const SeriesColumn& c : columns) {
    double sum = 0;
    for (int64_t v : c.column.ints) sum += static_cast<double>(v);
    std::string gpu;
    for (const Tag& t : c.series.tags) {
      if (t.key == "gpu") gpu = t.value;
    }
    std::printf("  gpu %s: %6.2f %% (%zu points)\n", gpu.c_str(), sum / c.column.size(),
                c.column.size());
    read_back += c.column.size();
  }
  const uint64_t expected = static_cast<uint64_t>(kGpusPerNode) * kMinutes;
  if (read_back != expected) {
    std::fprintf(stderr, "gpulse demo: read back %llu points, expected %llu\n",
                 static_cast<unsigned long long>(read_back),
                 static_cast<unsigned long long>(expected));
    return 1;
  }
  // Merge the chunk parts the runs so far left (one per flush), so the size
  // printed is the settled one.
  s = db->Compact();
  if (!s.ok()) return Fail("compact", s);
  s = db->Close();
  if (!s.ok()) return Fail("close", s);
  const uint64_t bytes = DirectoryBytes(dir);
  std::printf(
      "data directory %s: %llu bytes on disk (%.2f bytes per field value, catalog and\n"
      "LevelDB overhead included; run it again and the same points are rewritten, not\n"
      "duplicated)\n",
      dir.c_str(), static_cast<unsigned long long>(bytes), static_cast<double>(bytes) / values);
  return 0;
}

}  // namespace gpulse::cli
