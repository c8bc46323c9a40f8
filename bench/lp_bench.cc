// lp_bench: speed of the line-protocol parser (ingest/line_protocol.h), the
// ingest hot path, in MB/s and lines/s.
//
// Data: the InfluxDB line-protocol file named by the environment variable
// GPULSE_BENCH_LP (default /tmp/fleet/fleet-80x1.lp, 215 MB, written by
// `python3 /work/shared/bench/peers/gen_fleet.py --nodes 80 --days 1 --out
// /tmp/fleet/fleet-80x1.lp`). Its timestamps are seconds. The whole file is
// read into memory before any timing; if it is missing, each benchmark says
// so and is skipped.
//
// Benchmarks:
//   BM_Parse                 LineProtocolParser::Parse over the whole file in
//                            one call: zero-copy views, the callback only
//                            counts. The parser's own speed.
//   BM_ParseToPoints/BYTES   ParseToPoints over request bodies of about BYTES
//                            (cut at line ends), the point vector cleared
//                            between bodies as a server handling requests
//                            would: adds the cost of copying every string
//                            into gpulse::Points.
// Counters: bytes_per_second (MB/s of line protocol) and lines/s.
//
// Usage: lp_bench [any Google Benchmark flag], e.g.
//   lp_bench --benchmark_filter=BM_Parse$ --benchmark_min_time=2s
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/line_protocol.h"

namespace gpulse::ingest {
namespace {

std::string BenchPath() {
  const char* env = std::getenv("GPULSE_BENCH_LP");
  return env != nullptr && *env != '\0' ? env : "/tmp/fleet/fleet-80x1.lp";
}

// The file's bytes, read once; empty when it cannot be read.
const std::string& Body() {
  static const std::string body = [] {
    std::ifstream in(BenchPath(), std::ios::binary);
    std::ostringstream s;
    if (in) s << in.rdbuf();
    return s.str();
  }();
  return body;
}

LineProtocolParser::Options FleetOptions() {
  LineProtocolParser::Options options;
  options.precision = Precision::kSeconds;
  return options;
}

bool HaveBody(benchmark::State& state) {
  if (!Body().empty()) return true;
  state.SkipWithError(
      ("no line protocol at " + BenchPath() + " (see the top of lp_bench.cc)").c_str());
  return false;
}

void BM_Parse(benchmark::State& state) {
  if (!HaveBody(state)) return;
  const std::string& body = Body();
  const LineProtocolParser::Options options = FleetOptions();
  LineProtocolParser parser;
  size_t lines = 0;
  size_t errors = 0;
  for (auto _ : state) {
    size_t n = 0;
    parser.Parse(
        body, options, [&n](const PointView& p) { n += p.fields.size() != 0; }, nullptr, &errors);
    benchmark::DoNotOptimize(n);
    lines += n;
  }
  if (errors != 0) state.SkipWithError("the file has bad lines");
  state.SetBytesProcessed(static_cast<int64_t>(body.size() * state.iterations()));
  state.counters["lines/s"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Parse)->Unit(benchmark::kMillisecond);

void BM_ParseToPoints(benchmark::State& state) {
  if (!HaveBody(state)) return;
  const std::string_view body = Body();
  // Cut the file into bodies of about state.range(0) bytes at line ends.
  std::vector<std::string_view> bodies;
  for (size_t pos = 0; pos < body.size();) {
    size_t end = std::min(body.size(), pos + static_cast<size_t>(state.range(0)));
    const size_t nl = body.find('\n', end == 0 ? 0 : end - 1);
    end = nl == std::string_view::npos ? body.size() : nl + 1;
    bodies.push_back(body.substr(pos, end - pos));
    pos = end;
  }
  const LineProtocolParser::Options options = FleetOptions();
  std::vector<Point> points;
  size_t lines = 0;
  for (auto _ : state) {
    for (std::string_view b : bodies) {
      points.clear();
      ParseToPoints(b, options, &points, nullptr);
      lines += points.size();
    }
    benchmark::DoNotOptimize(points.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(body.size() * state.iterations()));
  state.counters["lines/s"] =
      benchmark::Counter(static_cast<double>(lines), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ParseToPoints)->Arg(64 << 10)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpulse::ingest

BENCHMARK_MAIN();
