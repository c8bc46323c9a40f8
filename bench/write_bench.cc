// write_bench: write throughput through the public API (engine/gpulse.h), and
// bytes on disk after flush, on the shared GPU-fleet line protocol.
//
// Data: $GPULSE_BENCH_LP (default /tmp/fleet/fleet-80x1.lp), written by
//   python3 ../shared/bench/peers/gen_fleet.py --nodes 80 --days 1 --out /tmp/fleet/fleet-80x1.lp
// Points are parsed into memory before any clock starts; batches are 5,000
// points, as the peer harness posts them.
//
// Usage:
//   write_bench                 Google Benchmark over the first $GPULSE_BENCH_POINTS points
//                               (default 76,800: 2 hours of 80 nodes): BM_Write/<policy>/<threads>
//                               with policy 0 = every batch, 1 = interval (100 ms), 2 = none.
//                               Counters: values_per_s (Write calls only) and
//                               values_per_s_with_flush (until the head is in chunks).
//   write_bench --load [--policy every|interval|none] [--threads N] [--dir DIR] [--head-mb MB]
//                               Loads the whole file once into a fresh directory and prints
//                               values/s, then bytes per field value on disk (allocated, as
//                               `du -B1` counts, and apparent) after the flush, after
//                               Db::Compact (the settled size, as the peer harness measures
//                               InfluxDB and VictoriaMetrics after their compactions), and
//                               after close.
//   Any Google Benchmark flag works in the first mode.

#include <benchmark/benchmark.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/fleet_lp.h"
#include "engine/gpulse.h"

namespace {

using gpulse::Db;
using gpulse::Options;
using gpulse::Point;
using gpulse::SyncPolicy;
using Clock = std::chrono::steady_clock;

constexpr size_t kBatchPoints = 5000;

struct Batches {
  std::vector<std::vector<Point>> batches;
  uint64_t values = 0;
};

Batches LoadBatches(size_t max_points) {
  Batches data;
  gpulse::bench::FleetLpReader reader;
  if (!reader.Open(gpulse::bench::FleetLpPath())) {
    std::fprintf(stderr, "write_bench: cannot open %s (see the comment at the top)\n",
                 gpulse::bench::FleetLpPath().c_str());
    std::exit(2);
  }
  size_t points = 0;
  std::vector<Point> batch;
  while (points < max_points &&
         reader.NextBatch(std::min(kBatchPoints, max_points - points), &batch)) {
    points += batch.size();
    for (const Point& p : batch) data.values += p.fields.size();
    data.batches.push_back(std::move(batch));
  }
  return data;
}

std::string FreshDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gpulse-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

Options BenchOptions(SyncPolicy policy) {
  Options options;
  options.sync_policy = policy;
  options.info_log = [](std::string_view) {};
  return options;
}

// Writes every batch, threads taking batches round-robin; returns seconds.
double WriteAll(Db* db, const Batches& data, int threads) {
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (size_t i = t; i < data.batches.size(); i += threads) {
        const gpulse::Status s = db->Write(data.batches[i]);
        if (!s.ok()) {
          std::fprintf(stderr, "write_bench: %s\n", s.ToString().c_str());
          std::abort();
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const Batches& BenchData() {
  static const Batches data = [] {
    const char* env = std::getenv("GPULSE_BENCH_POINTS");
    return LoadBatches(env ? std::strtoull(env, nullptr, 10) : 76'800);
  }();
  return data;
}

void BM_Write(benchmark::State& state) {
  const auto policy = static_cast<SyncPolicy>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const Batches& data = BenchData();
  double write_s = 0, total_s = 0;
  for (auto _ : state) {
    const std::string dir = FreshDir();
    std::unique_ptr<Db> db;
    if (!Db::Open(BenchOptions(policy), dir, &db).ok()) std::abort();
    const auto start = Clock::now();
    const double w = WriteAll(db.get(), data, threads);
    if (!db->Flush().ok()) std::abort();
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    state.SetIterationTime(t);
    write_s += w;
    total_s += t;
    db.reset();
    std::filesystem::remove_all(dir);
  }
  const double values = static_cast<double>(data.values) * state.iterations();
  state.counters["values_per_s"] = values / write_s;
  state.counters["values_per_s_with_flush"] = values / total_s;
}
BENCHMARK(BM_Write)
    ->ArgNames({"policy", "threads"})
    ->ArgsProduct({{0, 1, 2}, {1, 2}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

struct DiskUsage {
  uint64_t allocated = 0;
  uint64_t apparent = 0;
};

DiskUsage Measure(const std::string& dir) {
  DiskUsage usage;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st;
    if (entry.is_regular_file() && stat(entry.path().c_str(), &st) == 0) {
      usage.allocated += static_cast<uint64_t>(st.st_blocks) * 512;
      usage.apparent += static_cast<uint64_t>(st.st_size);
    }
  }
  return usage;
}

int Load(int argc, char** argv) {
  SyncPolicy policy = SyncPolicy::kInterval;
  int threads = 1;
  uint64_t head_mb = 0;  // 0: the engine's default
  std::string dir;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--policy" && i + 1 < argc) {
      const std::string p = argv[++i];
      policy = p == "every"  ? SyncPolicy::kEveryBatch
               : p == "none" ? SyncPolicy::kNone
                             : SyncPolicy::kInterval;
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (arg == "--head-mb" && i + 1 < argc) {
      head_mb = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "write_bench: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  const auto parse_start = Clock::now();
  const Batches data = LoadBatches(SIZE_MAX);
  std::printf("parsed %zu batches, %llu field values in %.1f s\n", data.batches.size(),
              static_cast<unsigned long long>(data.values),
              std::chrono::duration<double>(Clock::now() - parse_start).count());
  const bool temporary = dir.empty();
  if (temporary) dir = FreshDir();
  std::unique_ptr<Db> db;
  Options options = BenchOptions(policy);
  if (head_mb != 0) options.head_memory_bytes = head_mb << 20;
  const gpulse::Status s = Db::Open(options, dir, &db);
  if (!s.ok()) {
    std::fprintf(stderr, "write_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  const auto start = Clock::now();
  const double write_s = WriteAll(db.get(), data, threads);
  const gpulse::DbStats before_flush = db->GetStats();
  if (!db->Flush().ok()) return 1;
  const double total_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double values = static_cast<double>(data.values);
  std::printf(
      "threads %d: %.0f values/s acknowledged (%.2f s), %.0f values/s until flushed (%.2f s)\n",
      threads, values / write_s, write_s, values / total_s, total_s);
  std::printf(
      "flushes %llu; head at the end %.1f MiB for %llu values (%.2f bytes/value)\n",
      static_cast<unsigned long long>(before_flush.flushes), before_flush.head_bytes / 1048576.0,
      static_cast<unsigned long long>(before_flush.head_values),
      before_flush.head_values ? double(before_flush.head_bytes) / before_flush.head_values : 0.0);
  const auto report = [&](const char* when) {
    const DiskUsage usage = Measure(dir);
    std::printf(
        "disk %s: %llu bytes allocated = %.3f bytes/value; %llu apparent = %.3f bytes/value\n",
        when, static_cast<unsigned long long>(usage.allocated), usage.allocated / values,
        static_cast<unsigned long long>(usage.apparent), usage.apparent / values);
  };
  report("after flush");
  const auto compact_start = Clock::now();
  if (!db->Compact().ok()) return 1;
  std::printf("compacted in %.2f s\n",
              std::chrono::duration<double>(Clock::now() - compact_start).count());
  report("after compaction");
  if (!db->Close().ok()) return 1;
  db.reset();
  report("after close");
  if (temporary) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--load") == 0) return Load(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
