// gpulse simulate: a fleet with incidents (ingest/fleet_sim.h) into a data
// directory (through Db::Write, the fast path), to a running server over
// HTTP, or as line protocol to a file; with its ground truth as JSON.

#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "engine/gpulse.h"
#include "ingest/fleet_sim.h"
#include "ingest/lp_format.h"
#include "query/syntax/time_literal.h"
#include "server/http_client.h"
#include "shell/commands.h"
#include "shell/connection.h"
#include "shell/query_cli.h"
#include "shell/simulate.h"

namespace gpulse::cli {

namespace {

constexpr const char* kUsage =
    "Usage: gpulse simulate [options]\n"
    "\n"
    "Simulates a GPU fleet minute by minute (jobs, scheduling, telemetry, incidents)\n"
    "and writes it in the fleet schema (docs/fleet-schema.md). Deterministic: the\n"
    "same options give the same points.\n"
    "\n"
    "Where the points go (one of):\n"
    "  --data DIR            a data directory, written directly (default ./gpulse-data;\n"
    "                        no server may have it open)\n"
    "  --url URL             a running gpulse serve (or any InfluxDB 1.x write API)\n"
    "  --out FILE            line protocol to FILE (gzip when it ends in .gz; - is stdout)\n"
    "\n"
    "The fleet:\n"
    "  --regions N           regions (default 2, at most 8)\n"
    "  --first-region K      skip the first K region names (us-east, eu-west, ...): one\n"
    "                        site of several simulates regions the others do not (default 0)\n"
    "  --nodes N             nodes in all, dealt round the regions (default 150)\n"
    "  --gpus-per-node N     (default 8)\n"
    "  --days N              how long (default 7)\n"
    "  --hours N             how long in hours instead (a live load's hour: --hours 1)\n"
    "  --jobs-per-day N      job submissions a day (default 29 per GPU: 35,000 for 1,200)\n"
    "  --seed N              (default 1)\n"
    "  --start TIME          the first minute: RFC3339 or epoch seconds (default: --days\n"
    "                        before today 00:00 UTC, so the data ends at midnight;\n"
    "                        --hours before this hour; paced, so it ends as the run does)\n"
    "  --incident SPEC       an incident (repeatable): KIND[@OFFSET][/DURATION][:SCOPE],\n"
    "                        e.g. driver-upgrade@3d/2d, thermal@2d6h/8h:us-east-c0-n003\n"
    "  --incidents all       one of each kind, spread over the span\n"
    "\n"
    "Other:\n"
    "  --truth FILE          the ground truth JSON (default: simulation-truth.json in\n"
    "                        DIR, or FILE.truth.json beside --out, or in the current\n"
    "                        directory for --url)\n"
    "  --database NAME       --url: write to this database (default gpulse)\n"
    "  --token TOKEN         --url: the write token, when the server asks for one\n"
    "  --threads N           threads that emit points (default 2)\n"
    "  --pace N              --url: send each minute's points when its time comes, N\n"
    "                        simulated minutes a wall-clock minute (1: real time, as\n"
    "                        agents would); a sustained load's test. Default: as fast\n"
    "                        as the server takes them\n"
    "\n"
    "Incident kinds and their default scope (chosen from the seed):\n"
    "  hw-fault              XID/ECC errors on 3 GPUs of 2 nodes (scope: node or node/gpu, "
    "'+'-joined)\n"
    "  thermal               throttling on 1 node (scope: nodes)\n"
    "  driver-upgrade        a new driver on half a cluster; failures spike (scope: nodes)\n"
    "  framework-regression  one image slower and failing more (scope: an image)\n"
    "  sched-fragmentation   the scheduler of a region spreads jobs, stops backfilling (scope: "
    "region)\n"
    "  io-bottleneck         data-loader time x4 in one cluster (scope: cluster)\n"
    "  network-degradation   loss and retransmits on 8 nodes' links (scope: nodes)\n"
    "  dummy-kernels         a team's jobs keep util high without progress (scope: team)\n"
    "  silent-agent          one node stops reporting (scope: node)\n"
    "  missing-gpu           one GPU of a node disappears (scope: node or node/gpu)\n"
    "  healthy-upgrade       a control: a new driver on half a cluster that works as well\n"
    "                        as the old (scope: nodes); not in --incidents all\n"
    "\n"
    "A progress line is shown on a terminal. Exit status: 0 when done, 1 when a\n"
    "write failed, 2 on a usage error.\n";

std::string FormatCount(uint64_t n) {
  char text[32];
  if (n >= 1'000'000) {
    std::snprintf(text, sizeof text, "%.1f M", n / 1e6);
  } else if (n >= 10'000) {
    std::snprintf(text, sizeof text, "%.1f k", n / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(n));
  }
  return text;
}

// Writes to a data directory, counting what was written.
class DbSink final : public fleet::PointSink {
 public:
  explicit DbSink(Db* db) : db_(db) {}
  Status Write(std::span<const PointRef> points) override {
    WriteResult result;
    Status s = db_->Write(points, &result);
    values_ += result.values_written;
    return s;
  }
  uint64_t values() const { return values_.load(); }

 private:
  Db* db_;
  std::atomic<uint64_t> values_{0};
};

// Line protocol to a file or standard output, gzip by the name.
class FileSink final : public fleet::PointSink {
 public:
  Status Open(const std::string& path) {
    path_ = path;
    const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
    file_ =
        path == "-" ? gzdopen(dup(STDOUT_FILENO), "wT") : gzopen(path.c_str(), gz ? "wb6" : "wT");
    if (file_ == nullptr) return Status::IOError(path + ": cannot open for writing");
    gzbuffer(file_, 1 << 20);
    return Status::Ok();
  }
  Status Write(std::span<const PointRef> points) override {
    std::string text;
    text.reserve(points.size() * 256);
    for (const PointRef& p : points) ingest::AppendLineProtocol(p, &text);
    std::lock_guard lock(mutex_);
    if (gzwrite(file_, text.data(), static_cast<unsigned>(text.size())) !=
        static_cast<int>(text.size())) {
      return Status::IOError(path_ + ": write failed");
    }
    return Status::Ok();
  }
  Status Close() {
    if (file_ == nullptr) return Status::Ok();
    const int rc = gzclose(file_);
    file_ = nullptr;
    return rc == Z_OK ? Status::Ok() : Status::IOError(path_ + ": close failed");
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  std::mutex mutex_;
};

// Line protocol POSTed to /write over one keep-alive connection; a 503 (the
// server's back-pressure) is retried after the Retry-After it names, and
// counted.
class HttpSink final : public fleet::PointSink {
 public:
  HttpSink(std::unique_ptr<server::HttpClient> client, std::string database)
      : client_(std::move(client)), target_("/write?db=" + database + "&precision=ns") {}

  Status Write(std::span<const PointRef> points) override {
    std::string body;
    body.reserve(points.size() * 256);
    for (const PointRef& p : points) ingest::AppendLineProtocol(p, &body);
    std::lock_guard lock(mutex_);
    for (int attempt = 0;; ++attempt) {
      server::HttpReply reply;
      Status s = client_->Send(boost::beast::http::verb::post, target_, "text/plain; charset=utf-8",
                               "", body, &reply);
      if (!s.ok()) {
        if (attempt < 3) continue;  // the server may be restarting
        return s;
      }
      if (reply.status == 204) return Status::Ok();
      if (reply.status == 503) ++refused_;
      if (reply.status == 503 && attempt < 600) {
        const int retry_after = std::atoi(reply.retry_after.c_str());
        std::this_thread::sleep_for(std::chrono::seconds(std::clamp(retry_after, 1, 10)));
        continue;
      }
      return Status::IOError("the server answered " + std::to_string(reply.status) + ": " +
                             reply.body.substr(0, 500));
    }
  }

  uint64_t refused() const { return refused_.load(); }

 private:
  std::unique_ptr<server::HttpClient> client_;  // one request at a time: mutex_
  const std::string target_;
  std::mutex mutex_;
  std::atomic<uint64_t> refused_{0};
};

// Holds each write until the wall clock reaches its newest point's minute
// on the paced clock: minute m of the simulation (from `first_ns`) goes
// out (m + 1) / pace wall-clock minutes after the start, as an agent sends
// a minute's samples once the minute is over.
class PacedSink final : public fleet::PointSink {
 public:
  PacedSink(fleet::PointSink* to, int64_t first_ns, int pace)
      : to_(to), first_ns_(first_ns), pace_(pace), start_(std::chrono::steady_clock::now()) {}
  Status Write(std::span<const PointRef> points) override {
    int64_t newest = first_ns_;
    for (const PointRef& p : points) newest = std::max(newest, p.timestamp_ns);
    constexpr int64_t kMinuteNs = 60'000'000'000;
    const int64_t minute = (newest - first_ns_) / kMinuteNs;
    std::this_thread::sleep_until(start_ +
                                  std::chrono::nanoseconds((minute + 1) * kMinuteNs / pace_));
    return to_->Write(points);
  }

 private:
  fleet::PointSink* to_;
  int64_t first_ns_;
  int pace_;
  std::chrono::steady_clock::time_point start_;
};

bool ParseInt(const std::string& text, int64_t lo, int64_t hi, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// One incident of each kind, spread over the span and short enough that
// most of the span is normal.
std::vector<fleet::IncidentRequest> AllIncidents(int days) {
  const int64_t span = days * 86400LL * 1'000'000'000;
  std::vector<fleet::IncidentRequest> all;
  const auto names = fleet::IncidentKindNames();
  size_t faults = 0;  // the kinds but the controls, which come last
  while (faults < names.size()) {
    fleet::IncidentKind kind;
    fleet::ParseIncidentKind(names[faults], &kind);
    if (fleet::IsControl(kind)) break;
    ++faults;
  }
  for (size_t i = 0; i < faults; ++i) {
    fleet::IncidentRequest r;
    fleet::ParseIncidentKind(names[i], &r.kind);
    r.offset_ns = span / 8 + span * 3 / 4 * static_cast<int64_t>(i) / static_cast<int64_t>(faults);
    r.duration_ns = span / 14;
    all.push_back(r);
  }
  return all;
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "gpulse simulate: %s\n(gpulse simulate --help lists the options)\n",
               message.c_str());
  return 2;
}

// A bulk load into a data directory. The head is flushed when it holds 512
// MiB rather than 64 (fewer, fuller chunk parts), nothing is synced until
// Close, and a new directory gets its tiers built in one pass over the
// chunks once the load is done (Db::Open builds the tiers it lacks), which
// costs a third of keeping them up to date flush by flush
// (docs/performance.md). A directory that already holds data keeps its
// tiers up to date as it goes, as a server would.
Status SimulateIntoDirectory(const fleet::Simulator& sim, const SimulateArgs& a,
                             const std::function<void(double)>& progress,
                             SimulationReport* report) {
  std::error_code ec;
  const bool fresh = !std::filesystem::exists(a.data, ec) || std::filesystem::is_empty(a.data, ec);
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.head_memory_bytes = 512ull << 20;
  options.info_log = [](std::string_view) {};
  if (fresh) {
    options.tiers.clear();
  } else {
    options.keep_stored_tiers = true;
  }
  std::unique_ptr<Db> db;
  GPULSE_RETURN_IF_ERROR(Db::Open(options, a.data, &db).WithContext(a.data));
  DbSink sink(db.get());
  Status s = sim.Emit(&sink, a.threads, progress, &report->points);
  report->values = sink.values();
  const Status closed = db->Close();
  GPULSE_RETURN_IF_ERROR(s);
  GPULSE_RETURN_IF_ERROR(closed);
  if (!fresh) return Status::Ok();
  const auto started = std::chrono::steady_clock::now();
  Options with_tiers;
  with_tiers.info_log = options.info_log;
  db.reset();
  GPULSE_RETURN_IF_ERROR(Db::Open(with_tiers, a.data, &db).WithContext(a.data));
  GPULSE_RETURN_IF_ERROR(db->Close());
  report->tier_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return Status::Ok();
}

}  // namespace

int64_t DefaultSimulationStart(int days) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return (now / 86400 - days) * 86400 * 1'000'000'000;
}

int64_t DefaultSimulationStart(int hours, int pace) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  if (pace <= 0) return (now / 3600 - hours) * 3600 * 1'000'000'000;
  const int64_t minutes = int64_t{hours} * 60;
  return (now / 60 - minutes + minutes / pace) * 60 * 1'000'000'000;
}

Status ParseSimulateArgs(const std::vector<std::string>& args, SimulateArgs* out) {
  SimulateArgs a;
  bool start_given = false, all = false, days_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--help" || flag == "-h") {
      a.help = true;
      continue;
    }
    if (i + 1 >= args.size())
      return Status::InvalidArgument(flag == "" ? "empty argument" : flag + " needs a value");
    const std::string& v = args[++i];
    int64_t n = 0;
    const auto number = [&](int64_t lo, int64_t hi, int* field) {
      if (!ParseInt(v, lo, hi, &n)) {
        return Status::InvalidArgument(flag + " '" + v + "' is not a whole number from " +
                                       std::to_string(lo) + " to " + std::to_string(hi));
      }
      *field = static_cast<int>(n);
      return Status::Ok();
    };
    if (flag == "--data") {
      a.data = v;
    } else if (flag == "--url") {
      a.url = v;
    } else if (flag == "--out") {
      a.out = v;
    } else if (flag == "--truth") {
      a.truth = v;
    } else if (flag == "--database") {
      a.database = v;
    } else if (flag == "--token") {
      a.token = v;
    } else if (flag == "--regions") {
      GPULSE_RETURN_IF_ERROR(number(1, 8, &a.sim.regions));
    } else if (flag == "--first-region") {
      GPULSE_RETURN_IF_ERROR(number(0, 7, &a.sim.first_region));
    } else if (flag == "--nodes") {
      GPULSE_RETURN_IF_ERROR(number(1, 100000, &a.sim.nodes));
    } else if (flag == "--gpus-per-node") {
      GPULSE_RETURN_IF_ERROR(number(1, 16, &a.sim.gpus_per_node));
    } else if (flag == "--days") {
      GPULSE_RETURN_IF_ERROR(number(1, 400, &a.sim.days));
      days_given = true;
    } else if (flag == "--hours") {
      GPULSE_RETURN_IF_ERROR(number(1, 400 * 24, &a.sim.hours));
    } else if (flag == "--pace") {
      GPULSE_RETURN_IF_ERROR(number(1, 100'000, &a.pace));
    } else if (flag == "--jobs-per-day") {
      GPULSE_RETURN_IF_ERROR(number(0, 10'000'000, &a.sim.jobs_per_day));
    } else if (flag == "--threads") {
      GPULSE_RETURN_IF_ERROR(number(1, 64, &a.threads));
    } else if (flag == "--seed") {
      if (!ParseInt(v, 0, INT64_MAX, &n))
        return Status::InvalidArgument("--seed '" + v + "' is not a whole number");
      a.sim.seed = static_cast<uint64_t>(n);
    } else if (flag == "--start") {
      int64_t ns = 0;
      if (ParseInt(v, 0, 4'000'000'000LL, &n)) {
        ns = n * 1'000'000'000;
      } else if (!query::ParseTimeLiteral(v, &ns)) {
        return Status::InvalidArgument(
            "--start '" + v + "' is neither RFC3339 (2026-11-02T00:00:00Z) nor epoch seconds");
      }
      a.sim.start_ns = ns;
      start_given = true;
    } else if (flag == "--incident") {
      fleet::IncidentRequest r;
      std::string why;
      if (!fleet::ParseIncidentRequest(v, &r, &why))
        return Status::InvalidArgument("--incident '" + v + "': " + why);
      a.sim.incidents.push_back(std::move(r));
    } else if (flag == "--incidents") {
      if (v != "all" && v != "none")
        return Status::InvalidArgument("--incidents takes all or none, not '" + v + "'");
      all = v == "all";
    } else {
      return Status::InvalidArgument("unknown option '" + flag + "'");
    }
  }
  if (!a.url.empty() + !a.out.empty() + !a.data.empty() > 1) {
    return Status::InvalidArgument("give one of --data, --url and --out");
  }
  if (a.url.empty() && a.out.empty() && a.data.empty()) a.data = "./gpulse-data";
  if (days_given && a.sim.hours > 0)
    return Status::InvalidArgument("give --days or --hours, not both");
  if (a.pace > 0 && a.url.empty()) {
    return Status::InvalidArgument("--pace sends to a server: give --url");
  }
  if (all && a.sim.hours > 0) {
    return Status::InvalidArgument("--incidents all spreads incidents over days: give --days");
  }
  if (a.pace > 0) a.sim.batch_minutes = 1;
  if (all) {
    auto spread = AllIncidents(a.sim.days);
    a.sim.incidents.insert(a.sim.incidents.begin(), spread.begin(), spread.end());
  }
  if (!start_given) {
    a.sim.start_ns = a.sim.hours > 0 ? DefaultSimulationStart(a.sim.hours, a.pace)
                                     : DefaultSimulationStart(a.sim.days);
  }
  if (a.truth.empty()) {
    a.truth = !a.data.empty()                  ? a.data + "/simulation-truth.json"
              : !a.out.empty() && a.out != "-" ? a.out + ".truth.json"
                                               : "simulation-truth.json";
  }
  *out = std::move(a);
  return Status::Ok();
}

Status RunSimulation(const SimulateArgs& a, SimulationReport* report, bool show_progress) {
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<fleet::Simulator> sim;
  GPULSE_RETURN_IF_ERROR(fleet::Simulator::Create(a.sim, &sim));
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  report->plan_seconds = since(started);
  report->summary = sim->summary();
  report->incidents = sim->incidents();

  std::function<void(double)> progress;
  if (show_progress) {
    progress = [](double f) { std::fprintf(stderr, "\rsimulate: %3.0f%%", 100 * f); };
  }
  Status s;
  if (!a.data.empty()) {
    s = SimulateIntoDirectory(*sim, a, progress, report);
  } else if (!a.out.empty()) {
    FileSink sink;
    GPULSE_RETURN_IF_ERROR(sink.Open(a.out));
    s = sim->Emit(&sink, a.threads, progress, &report->points);
    const Status closed = sink.Close();
    if (s.ok()) s = closed;
  } else {
    std::string host, port;
    GPULSE_RETURN_IF_ERROR(shell::ParseUrl(a.url, &host, &port));
    server::HttpClient::Options options;
    options.user_agent = std::string("gpulse-simulate/") + Version();
    if (!a.token.empty()) options.authorization = "Token " + a.token;
    std::unique_ptr<server::HttpClient> client;
    const bool v6 = host.find(':') != std::string::npos;
    GPULSE_RETURN_IF_ERROR(server::HttpClient::Open(
        "http://" + (v6 ? "[" + host + "]" : host) + ":" + port, options, &client));
    HttpSink sink(std::move(client), a.database);
    PacedSink paced(&sink, report->summary.start_ns, std::max(a.pace, 1));
    s = sim->Emit(a.pace > 0 ? static_cast<fleet::PointSink*>(&paced) : &sink, a.threads, progress,
                  &report->points);
    report->refused = sink.refused();
  }
  if (show_progress) std::fprintf(stderr, "\r              \r");
  GPULSE_RETURN_IF_ERROR(s);
  std::ofstream truth(a.truth);
  truth << sim->GroundTruthJson();
  truth.close();
  if (!truth) return Status::IOError(a.truth + ": cannot write the ground truth");
  report->seconds = since(started);
  return Status::Ok();
}

void PrintSimulationReport(const SimulateArgs& a, const SimulationReport& r) {
  const fleet::SimSummary& s = r.summary;
  const int span = a.sim.hours > 0 ? a.sim.hours : a.sim.days;
  const std::string unit = a.sim.hours > 0 ? "hour" : "day";
  std::printf("simulated %d GPUs (%d nodes, %d region%s) for %d %s%s from %s\n", s.gpus, s.nodes,
              a.sim.regions, a.sim.regions == 1 ? "" : "s", span, unit.c_str(),
              span == 1 ? "" : "s", fleet::FormatUtcTime(s.start_ns).c_str());
  std::printf("  %s points", FormatCount(r.points).c_str());
  if (r.values > 0) std::printf(", %s values", FormatCount(r.values).c_str());
  std::printf(" in %.1f s (planning %.1f s", r.seconds, r.plan_seconds);
  if (r.tier_seconds > 0) std::printf(", building the 1h and 1d tiers %.1f s", r.tier_seconds);
  std::printf(")\n");
  if (!a.url.empty()) {
    std::printf("  writes the server refused (503, each retried): %llu\n",
                static_cast<unsigned long long>(r.refused));
  }
  std::printf("  %s jobs: %s succeeded, %s failed, %s preempted\n", FormatCount(s.jobs).c_str(),
              FormatCount(s.jobs_succeeded).c_str(), FormatCount(s.jobs_failed).c_str(),
              FormatCount(s.jobs_preempted).c_str());
  std::printf(
      "  GPUs allocated %.1f%% of capacity (capacity excludes %llu planned maintenance windows)\n",
      s.capacity_gpu_minutes ? 100.0 * s.allocated_gpu_minutes / s.capacity_gpu_minutes : 0.0,
      static_cast<unsigned long long>(s.maintenance_windows));
  for (const fleet::Incident& inc : r.incidents) {
    std::printf("  incident %s (%s) %s to %s: %s\n", inc.name.c_str(), inc.cause_class.c_str(),
                fleet::FormatUtcTime(inc.start_ns).c_str(),
                fleet::FormatUtcTime(inc.end_ns).c_str(), inc.description.c_str());
  }
  std::printf("  ground truth: %s\n", a.truth.c_str());
}

int RunSimulate(const std::vector<std::string>& args) {
  SimulateArgs a;
  const Status parsed = ParseSimulateArgs(args, &a);
  if (!parsed.ok()) return Usage(parsed.message());
  if (a.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  SimulationReport report;
  const Status s = RunSimulation(a, &report, isatty(STDERR_FILENO) != 0);
  if (!s.ok()) {
    std::fprintf(stderr, "gpulse simulate: %s\n", s.ToString().c_str());
    return s.IsInvalidArgument() ? 2 : 1;
  }
  PrintSimulationReport(a, report);
  return 0;
}

}  // namespace gpulse::cli
