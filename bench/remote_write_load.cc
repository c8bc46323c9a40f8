// remote_write_load: Prometheus remote write ingest, the same requests sent to
// any receiver (gpulse's /api/v1/write, VictoriaMetrics' /api/v1/write), so
// that the two are compared on identical bodies.
//
// Data: the shared fleet line protocol ($GPULSE_BENCH_LP, default
// /tmp/fleet/fleet-80x1.lp). Each field f of a line of measurement m is a
// sample of the metric m_f (VictoriaMetrics' naming of line protocol) with the
// line's tags as labels, at the line's time. Requests carry up to
// --samples-per-request samples (default 2,000, Prometheus 2.42's
// max_samples_per_send), in file order, one TimeSeries per series and request:
// what a Prometheus scraping the fleet would send. Every body is encoded and
// snappy-compressed before the clock starts.
//
// Usage:
//   remote_write_load --url http://127.0.0.1:8097/api/v1/write?measurement=gpu
//                     [--writers 2] [--samples-per-request 2000] [--pid PID]
//   remote_write_load --decode [--samples-per-request 2000]
// Prints requests, samples, seconds, samples/s until every request was
// answered 2xx (a 429 or 5xx is retried after Retry-After or 100 ms and
// counted), and with --pid the server's peak RSS (VmHWM) at the end.
// --decode sends nothing: it decodes every body into points as the server
// does (ingest::RemoteWriteBatch, one thread, five rounds) and prints the
// best round's nanoseconds a sample, a figure this shared machine's noise
// hides in the HTTP rate.

#include <snappy.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/fleet_lp.h"
#include "ingest/remote_write.h"
#include "prompb.pb.h"
#include "server/http_client.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string url;
  int writers = 2;
  size_t samples_per_request = 2000;
  std::string pid;
  bool decode = false;
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--url" && v) {
      f->url = v;
    } else if (a == "--writers" && v) {
      f->writers = std::atoi(v);
    } else if (a == "--samples-per-request" && v) {
      f->samples_per_request = std::strtoull(v, nullptr, 10);
    } else if (a == "--pid" && v) {
      f->pid = v;
    } else if (a == "--decode") {
      f->decode = true;
      continue;
    } else {
      return false;
    }
    ++i;
  }
  return (f->decode || !f->url.empty()) && f->writers > 0 && f->samples_per_request > 0;
}

// The bodies, snappy-compressed, and the samples they hold.
std::vector<std::string> EncodeRequests(size_t per_request, uint64_t* samples) {
  gpulse::bench::FleetLpReader reader;
  if (!reader.Open(gpulse::bench::FleetLpPath())) {
    std::fprintf(stderr, "remote_write_load: cannot open %s\n",
                 gpulse::bench::FleetLpPath().c_str());
    std::exit(1);
  }
  std::vector<std::string> bodies;
  gpulse::prompb::WriteRequest request;
  size_t in_request = 0;
  const auto finish = [&] {
    std::string raw;
    request.SerializeToString(&raw);
    bodies.emplace_back();
    snappy::Compress(raw.data(), raw.size(), &bodies.back());
    request.Clear();
    in_request = 0;
  };
  std::vector<gpulse::Point> batch;
  *samples = 0;
  while (reader.NextBatch(10000, &batch)) {
    for (const gpulse::Point& p : batch) {
      for (const gpulse::Field& f : p.fields) {
        double value = 0;
        if (const auto* d = std::get_if<double>(&f.value)) {
          value = *d;
        } else if (const auto* i = std::get_if<int64_t>(&f.value)) {
          value = static_cast<double>(*i);
        } else {
          continue;
        }
        gpulse::prompb::TimeSeries* series = request.add_timeseries();
        auto* name = series->add_labels();
        name->set_name("__name__");
        name->set_value(p.measurement + "_" + f.key);
        for (const gpulse::Tag& t : p.tags) {
          auto* l = series->add_labels();
          l->set_name(t.key);
          l->set_value(t.value);
        }
        auto* s = series->add_samples();
        s->set_value(value);
        s->set_timestamp(p.timestamp_ns / 1'000'000);
        ++*samples;
        if (++in_request == per_request) finish();
      }
    }
  }
  if (in_request > 0) finish();
  return bodies;
}

// Decodes every body as /api/v1/write does, five times; prints the best.
int Decode(const std::vector<std::string>& bodies, uint64_t samples) {
  double best = 0;
  size_t points = 0;
  for (int round = 0; round < 5; ++round) {
    points = 0;
    const auto started = Clock::now();
    for (const std::string& body : bodies) {
      gpulse::ingest::RemoteWriteBatch batch;
      const gpulse::Status s = batch.Parse(body, 64 << 20, gpulse::ingest::PromMappingOptions());
      if (!s.ok()) {
        std::fprintf(stderr, "remote_write_load: %s\n", s.ToString().c_str());
        return 1;
      }
      points += batch.points().size();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (round == 0 || seconds < best) best = seconds;
  }
  std::printf(
      "%zu requests, %llu samples, %zu points, decoded in %.3f s (best of 5): %.1f ns a sample\n",
      bodies.size(), static_cast<unsigned long long>(samples), points, best,
      best * 1e9 / static_cast<double>(samples));
  return 0;
}

std::string PeakRss(const std::string& pid) {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return line.substr(6);
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) {
    std::fprintf(stderr,
                 "usage: remote_write_load --url URL [--writers N] [--samples-per-request N] "
                 "[--pid PID]\n"
                 "       remote_write_load --decode [--samples-per-request N]\n");
    return 2;
  }
  uint64_t samples = 0;
  const std::vector<std::string> bodies = EncodeRequests(flags.samples_per_request, &samples);
  if (flags.decode) return Decode(bodies, samples);
  gpulse::server::HttpClient::Options options;
  options.timeout = std::chrono::seconds(60);
  options.headers = {{"Content-Encoding", "snappy"},
                     {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> retried{0};
  std::atomic<bool> failed{false};
  const auto started = Clock::now();
  std::vector<std::thread> writers;
  for (int w = 0; w < flags.writers; ++w) {
    writers.emplace_back([&] {
      std::unique_ptr<gpulse::server::HttpClient> client;
      gpulse::Status s = gpulse::server::HttpClient::Open(flags.url, options, &client);
      while (s.ok() && !failed) {
        const size_t i = next.fetch_add(1);
        if (i >= bodies.size()) return;
        while (true) {
          gpulse::server::HttpReply reply;
          s = client->Send(boost::beast::http::verb::post, client->target(),
                           "application/x-protobuf", "", bodies[i], &reply);
          if (!s.ok()) break;
          if (reply.status / 100 == 2) break;
          if (reply.status == 429 || reply.status / 100 == 5) {
            ++retried;
            std::this_thread::sleep_for(std::chrono::milliseconds(
                reply.retry_after.empty() ? 100 : 1000 * std::atoi(reply.retry_after.c_str())));
            continue;
          }
          std::fprintf(stderr, "remote_write_load: HTTP %d: %s\n", reply.status,
                       reply.body.substr(0, 300).c_str());
          failed = true;
          return;
        }
      }
      if (!s.ok()) {
        std::fprintf(stderr, "remote_write_load: %s\n", s.ToString().c_str());
        failed = true;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (failed) return 1;
  std::printf("%zu requests, %llu samples, %.2f s, %.0f samples/s, %llu retried", bodies.size(),
              static_cast<unsigned long long>(samples), seconds,
              static_cast<double>(samples) / seconds, static_cast<unsigned long long>(retried));
  if (!flags.pid.empty()) std::printf(", peak RSS%s", PeakRss(flags.pid).c_str());
  std::printf("\n");
  return 0;
}
