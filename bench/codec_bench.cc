// codec_bench: speed and size of the chunk codecs (storage/chunk_codec.h) on
// real-shaped GPU telemetry.
//
// Data: the InfluxDB line-protocol file named by the environment variable
// GPULSE_BENCH_LP (default /tmp/fleet/fleet-80x1.lp, written by
// /work/shared/bench/peers/gen_fleet.py). Each (series, field, UTC day) becomes
// one chunk, the way the engine cuts them. Timestamps in the file are seconds
// and become nanoseconds. If the file is missing, the benchmark says so and
// uses a synthetic series of the same shape instead.
//
// Usage:
//   codec_bench                       Google Benchmark: encode and decode per field
//                                     and for all fields; counters ns_per_point and
//                                     bytes_per_value. BM_Rollup*: tier rows built
//                                     from the chunks (ns_per_value), their blocks
//                                     encoded and decoded (ns_per_row, bytes_per_row).
//   codec_bench --table               no benchmark; prints the bytes/value of every
//                                     field over the whole file, the encoder's
//                                     method choices, and the total.
//   Any Google Benchmark flag works in the first mode, e.g.
//   --benchmark_filter=power_w --benchmark_min_time=0.5s
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bench/fleet_lp.h"
#include "engine/column_ops.h"
#include "storage/chunk_codec.h"
#include "storage/column.h"
#include "storage/rollup.h"

namespace {

using gpulse::storage::Column;
using gpulse::storage::FieldType;

constexpr int64_t kNanosPerSecond = 1000000000;
constexpr int64_t kNanosPerDay = 86400 * kNanosPerSecond;

struct FieldChunks {
  std::vector<Column> chunks;
  size_t points = 0;
};

// Field name -> its chunks, in a fixed order for stable output.
using Dataset = std::map<std::string, FieldChunks>;

bool LoadLineProtocol(const std::string& path, Dataset* data) {
  gpulse::bench::FleetLpReader reader;
  if (!reader.Open(path)) return false;
  // (series key, day, field) -> column
  std::map<std::tuple<std::string, int64_t, std::string>, Column> columns;
  std::vector<gpulse::Point> batch;
  while (reader.NextBatch(10000, &batch)) {
    for (const gpulse::Point& p : batch) {
      std::string key = p.measurement;
      for (const gpulse::Tag& t : p.tags) key += "," + t.key + "=" + t.value;
      const int64_t day = p.timestamp_ns / kNanosPerDay;
      for (const gpulse::Field& f : p.fields) {
        Column& column = columns[{key, day, f.key}];
        column.type = gpulse::TypeOf(gpulse::ToRef(f.value));
        gpulse::engine::AppendValue(&column, p.timestamp_ns, gpulse::ToRef(f.value));
      }
    }
  }
  for (auto& [k, column] : columns) {
    FieldChunks& f = (*data)[std::get<2>(k)];
    f.points += column.size();
    f.chunks.push_back(std::move(column));
  }
  return true;
}

// One GPU-day of a busy GPU with 1-decimal power and a byte counter, for
// when the fleet file is absent.
void Synthesize(Dataset* data) {
  Column power, counter;
  power.type = FieldType::kFloat;
  counter.type = FieldType::kInt;
  uint64_t state = 42;
  int64_t total = 171198588053049;
  for (int i = 0; i < 1440; ++i) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    int64_t util = 80 + static_cast<int64_t>((state >> 33) % 15);
    int64_t ts = 1704067200 * kNanosPerSecond + i * 60 * kNanosPerSecond;
    power.ts.push_back(ts);
    power.floats.push_back(static_cast<double>(3000 + util * 4 + (state >> 50) % 50) / 10.0);
    counter.ts.push_back(ts);
    total += util * 20000000000;
    counter.ints.push_back(total);
  }
  (*data)["power_w"] = {{power}, 1440};
  (*data)["nvlink_tx_bytes"] = {{counter}, 1440};
}

const Dataset& Data() {
  static Dataset* data = [] {
    auto* d = new Dataset;
    const std::string path = gpulse::bench::FleetLpPath();
    if (!LoadLineProtocol(path, d)) {
      std::fprintf(stderr, "codec_bench: cannot read %s; using a synthetic series\n", path.c_str());
      Synthesize(d);
    }
    return d;
  }();
  return *data;
}

std::vector<const Column*> Select(const std::string& field) {
  std::vector<const Column*> out;
  for (const auto& [name, f] : Data()) {
    if (field != "all" && name != field) continue;
    for (const Column& c : f.chunks) out.push_back(&c);
  }
  return out;
}

void BM_Encode(benchmark::State& state, const std::string& field) {
  std::vector<const Column*> chunks = Select(field);
  size_t points = 0, bytes = 0;
  std::string out;
  for (auto _ : state) {
    points = bytes = 0;
    for (const Column* c : chunks) {
      out.clear();
      gpulse::storage::EncodeChunk(*c, 0, &out);
      bytes += out.size();
      points += c->size();
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["ns_per_point"] =
      benchmark::Counter(static_cast<double>(points) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_value"] = static_cast<double>(bytes) / static_cast<double>(points);
}

void BM_Decode(benchmark::State& state, const std::string& field) {
  std::vector<const Column*> chunks = Select(field);
  std::vector<std::string> encoded;
  size_t points = 0;
  for (const Column* c : chunks) {
    encoded.emplace_back();
    gpulse::storage::EncodeChunk(*c, 0, &encoded.back());
    points += c->size();
  }
  Column column;
  for (auto _ : state) {
    for (const std::string& e : encoded) {
      if (!gpulse::storage::DecodeChunk(e, 0, &column).ok()) state.SkipWithError("decode failed");
    }
    benchmark::DoNotOptimize(column.ts.data());
  }
  state.counters["ns_per_point"] =
      benchmark::Counter(static_cast<double>(points) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Tier rows (storage/rollup.h) of every numeric chunk: building them from
// raw points, and encoding and decoding the blocks a flush writes. The
// width is a tier's bucket (5m, 1h or 1d).
std::vector<const Column*> NumericChunks() {
  std::vector<const Column*> out;
  for (const Column* c : Select("all")) {
    if (gpulse::storage::HasRollups(c->type)) out.push_back(c);
  }
  return out;
}

void BM_RollupBuild(benchmark::State& state, int64_t width) {
  const std::vector<const Column*> chunks = NumericChunks();
  size_t points = 0;
  gpulse::storage::RollupColumn rows;
  for (auto _ : state) {
    points = 0;
    for (const Column* c : chunks) {
      rows.Reset(c->type);
      gpulse::storage::BuildRollups(*c, 0, c->size(), width, &rows);
      points += c->size();
    }
    benchmark::DoNotOptimize(rows.bucket.data());
  }
  state.counters["ns_per_value"] =
      benchmark::Counter(static_cast<double>(points) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_RollupCodec(benchmark::State& state, int64_t width, bool decode) {
  std::vector<gpulse::storage::RollupColumn> blocks;
  std::vector<std::string> encoded;
  size_t rows = 0, bytes = 0;
  for (const Column* c : NumericChunks()) {
    blocks.emplace_back();
    blocks.back().Reset(c->type);
    gpulse::storage::BuildRollups(*c, 0, c->size(), width, &blocks.back());
    encoded.emplace_back();
    gpulse::storage::EncodeRollups(blocks.back(), true, &encoded.back());
    rows += blocks.back().size();
    bytes += encoded.back().size();
  }
  gpulse::storage::RollupColumn out;
  std::string scratch;
  for (auto _ : state) {
    if (decode) {
      for (const std::string& e : encoded) {
        if (!gpulse::storage::DecodeRollups(e, gpulse::storage::kRollupAll, &out).ok()) {
          state.SkipWithError("decode failed");
        }
      }
      benchmark::DoNotOptimize(out.bucket.data());
    } else {
      for (const auto& b : blocks) {
        scratch.clear();
        gpulse::storage::EncodeRollups(b, true, &scratch);
      }
      benchmark::DoNotOptimize(scratch.data());
    }
  }
  state.counters["ns_per_row"] =
      benchmark::Counter(static_cast<double>(rows) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_row"] = static_cast<double>(bytes) / static_cast<double>(rows);
}

void PrintTable() {
  size_t total_points = 0, total_bytes = 0, failures = 0;
  std::printf("%-18s %8s %10s %12s %9s  %s\n", "field", "chunks", "values", "bytes", "B/value",
              "methods (value codec byte: chunks)");
  for (const auto& [name, f] : Data()) {
    size_t bytes = 0;
    std::map<int, size_t> methods;
    for (const Column& c : f.chunks) {
      std::string out;
      gpulse::storage::EncodeChunk(c, 0, &out);
      bytes += out.size();
      methods[static_cast<uint8_t>(out[4]) | (static_cast<uint8_t>(out[2]) << 8)]++;
      Column back;
      if (!gpulse::storage::DecodeChunk(out, 0, &back).ok() || back.ts != c.ts ||
          back.ints != c.ints || back.floats.size() != c.floats.size() ||
          std::memcmp(back.floats.data(), c.floats.data(), c.floats.size() * sizeof(double)) != 0) {
        ++failures;
      }
    }
    std::printf("%-18s %8zu %10zu %12zu %9.4f ", name.c_str(), f.chunks.size(), f.points, bytes,
                static_cast<double>(bytes) / static_cast<double>(f.points));
    for (auto [m, n] : methods) std::printf(" %s0x%02x:%zu", m >> 8 ? "zstd+" : "", m & 0xff, n);
    std::printf("\n");
    total_points += f.points;
    total_bytes += bytes;
  }
  std::printf("%-18s %8s %10zu %12zu %9.4f\n", "total", "", total_points, total_bytes,
              static_cast<double>(total_bytes) / static_cast<double>(total_points));
  if (failures > 0) std::printf("ROUND TRIP FAILURES: %zu\n", failures);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--table") == 0) {
      PrintTable();
      return 0;
    }
  }
  std::vector<std::string> fields = {"all"};
  for (const auto& [name, f] : Data()) fields.push_back(name);
  for (const std::string& field : fields) {
    benchmark::RegisterBenchmark(("BM_Encode/" + field).c_str(), BM_Encode, field)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_Decode/" + field).c_str(), BM_Decode, field)
        ->Unit(benchmark::kMillisecond);
  }
  for (const auto& [name, width] : {std::pair<std::string, int64_t>{"5m", 300 * kNanosPerSecond},
                                    {"1h", 3600 * kNanosPerSecond},
                                    {"1d", kNanosPerDay}}) {
    benchmark::RegisterBenchmark(("BM_RollupBuild/" + name).c_str(), BM_RollupBuild, width)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_RollupEncode/" + name).c_str(), BM_RollupCodec, width, false)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_RollupDecode/" + name).c_str(), BM_RollupCodec, width, true)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
