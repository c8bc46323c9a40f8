// gpulse import: loads files into a data directory through the same write
// API a user has (Db::Write): line protocol (plain or gzip) and Prometheus
// text exposition (a saved scrape). A bad line is reported with its file,
// line and column and skipped; the good lines around it are written.
//
// Line protocol is read in slices of kSliceBytes cut at a line end, so a
// file of any size is imported in bounded memory.

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/clock.h"
#include "engine/gpulse.h"
#include "ingest/lp_batch.h"
#include "ingest/prom_mapping.h"
#include "ingest/prom_text.h"
#include "server/config.h"
#include "shell/commands.h"

namespace gpulse::cli {

namespace {

constexpr const char* kImportUsage =
    "Usage: gpulse import [options] FILE...\n"
    "\n"
    "Loads FILEs into a data directory (no server may have it open). A file\n"
    "ending in .gz is read through gzip; - reads standard input.\n"
    "\n"
    "Options:\n"
    "  --data DIR            the data directory (default ./gpulse-data)\n"
    "  --config FILE         the server's config file: its storage settings (tiers,\n"
    "                        retention) apply; without it the directory keeps the\n"
    "                        tiers it has and no retention refuses old points\n"
    "  --format lp|prom      InfluxDB line protocol (default), or Prometheus text\n"
    "                        exposition as dcgm-exporter serves it (a saved scrape)\n"
    "  --database NAME       tag every point db=NAME, as /write?db=NAME does\n"
    "  --precision P         lp: the unit of timestamps: ns (default), us, ms, s, m, h\n"
    "  --measurement NAME    prom: the measurement (default prometheus)\n"
    "  --tag KEY=VALUE       prom: a tag for every point (repeatable)\n"
    "\n"
    "Lines without a timestamp take the time of the import. Bad lines are\n"
    "reported as FILE:LINE:COLUMN: reason on stderr and skipped; the others are\n"
    "written. A progress line is shown on a terminal. Exit status: 0 when every\n"
    "line was written, 1 when some were rejected, 2 when a file or the data\n"
    "directory could not be used.\n";

// Line protocol is parsed and written this much at a time.
constexpr size_t kSliceBytes = 8 << 20;
// A line longer than this is an error rather than a reason to grow.
constexpr size_t kMaxLineBytes = 256 << 20;
// A Prometheus text file is read whole, up to this size.
constexpr size_t kMaxPromBytes = 512 << 20;
// Bad lines printed per file; the rest are counted.
constexpr size_t kMaxReported = 20;

struct ImportOptions {
  std::string data = "./gpulse-data";
  std::string config;
  std::string format = "lp";
  std::string database;
  ingest::Precision precision = ingest::Precision::kNanoseconds;
  ingest::PromMappingOptions prom;
  std::vector<std::string> files;
};

struct Totals {
  uint64_t points = 0;
  uint64_t values = 0;
  uint64_t rejected = 0;
};

// gzip or plain, file or standard input.
class Input {
 public:
  bool Open(const std::string& name) {
    if (name == "-") {
      file_ = gzdopen(dup(STDIN_FILENO), "rb");
    } else {
      struct stat st;
      if (stat(name.c_str(), &st) == 0) size_ = static_cast<uint64_t>(st.st_size);
      file_ = gzopen(name.c_str(), "rb");
    }
    if (file_ != nullptr) gzbuffer(file_, 1 << 20);
    return file_ != nullptr;
  }
  ~Input() {
    if (file_ != nullptr) gzclose(file_);
  }
  // Appends up to `n` bytes to *out; false on a read error (*error says why).
  bool Read(size_t n, std::string* out, bool* eof, std::string* error) {
    const size_t at = out->size();
    out->resize(at + n);
    const int got = gzread(file_, out->data() + at, static_cast<unsigned>(n));
    if (got < 0) {
      int code = 0;
      *error = gzerror(file_, &code);
      out->resize(at);
      return false;
    }
    out->resize(at + static_cast<size_t>(got));
    *eof = static_cast<size_t>(got) < n;
    if (*eof) {
      // A gzip stream cut short reads as a short read, not as an error.
      int code = Z_OK;
      const char* why = gzerror(file_, &code);
      if (code == Z_BUF_ERROR) {
        *error = std::string("truncated gzip stream (") + why + ")";
        return false;
      }
    }
    return true;
  }
  // Bytes of the file consumed so far (compressed bytes for gzip).
  uint64_t offset() const { return static_cast<uint64_t>(gzoffset(file_)); }
  uint64_t size() const { return size_; }

 private:
  gzFile file_ = nullptr;
  uint64_t size_ = 0;
};

// "\r<file>: 40% (123 MB of 310 MB), 1.2 M points" on a terminal, at most
// every half second; nothing when stderr is not one.
class Progress {
 public:
  explicit Progress(const std::string& name)
      : name_(name), on_(isatty(STDERR_FILENO) != 0), last_(Clock::now()) {}
  void Update(uint64_t done, uint64_t total, uint64_t points) {
    if (!on_) return;
    const auto now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    shown_ = true;
    if (total > 0) {
      std::fprintf(stderr, "\r%s: %3d%% (%.0f MB of %.0f MB), %.1f M points   ", name_.c_str(),
                   static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)),
                   static_cast<double>(done) / 1e6, static_cast<double>(total) / 1e6,
                   static_cast<double>(points) / 1e6);
    } else {
      std::fprintf(stderr, "\r%s: %.0f MB, %.1f M points   ", name_.c_str(),
                   static_cast<double>(done) / 1e6, static_cast<double>(points) / 1e6);
    }
  }
  void Done() {
    if (shown_) std::fputs("\r\033[K", stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string name_;
  bool on_;
  bool shown_ = false;
  Clock::time_point last_;
};

// Counts a rejected line and prints it while under the per-file limit.
class Rejects {
 public:
  explicit Rejects(const std::string& name) : name_(name) {}
  void Add(size_t line, size_t column, const std::string& why) {
    if (count_++ < kMaxReported) {
      std::fprintf(stderr, "%s:%zu:%zu: %s\n", name_.c_str(), line, column, why.c_str());
    }
  }
  void AddUnlisted(uint64_t n) { count_ += n; }
  void AddPoint(const std::string& why) {
    if (count_++ < kMaxReported) std::fprintf(stderr, "%s: %s\n", name_.c_str(), why.c_str());
  }
  uint64_t count() const { return count_; }
  void Finish() const {
    if (count_ > kMaxReported) {
      std::fprintf(stderr, "%s: %llu more bad lines not listed\n", name_.c_str(),
                   static_cast<unsigned long long>(count_ - kMaxReported));
    }
  }

 private:
  std::string name_;
  uint64_t count_ = 0;
};

// Writes `points`; rejected ones go to *rejects at their lines. False on an
// error that stops the import (the Db's, not a point's).
template <typename LineOf>
bool WritePoints(Db* db, std::span<const PointRef> points, const LineOf& line_of, Rejects* rejects,
                 Totals* totals) {
  if (points.empty()) return true;
  WriteResult result;
  const Status s = db->Write(points, &result);
  if (!s.ok() && !s.IsInvalidArgument()) {
    std::fprintf(stderr, "gpulse import: write failed: %s\n", s.ToString().c_str());
    return false;
  }
  for (const WriteResult::Rejected& r : result.rejected)
    rejects->Add(line_of(r.index), 1, r.reason);
  totals->points += result.points_written;
  totals->values += result.values_written;
  return true;
}

// 0 done, 2 could not read or write.
int ImportLineProtocol(Db* db, const ImportOptions& o, const std::string& name, Input* in,
                       Rejects* rejects, Totals* totals) {
  ingest::LineProtocolParser::Options parse;
  parse.precision = o.precision;
  parse.default_time_ns = engine::WallClockNanos();
  parse.max_errors = kMaxReported;
  ingest::LineProtocolBatch batch;
  Progress progress(name);
  std::string buffer, error;
  size_t line_base = 0;  // lines before the slice
  bool eof = false;
  while (!eof || !buffer.empty()) {
    if (!eof) {
      if (!in->Read(kSliceBytes, &buffer, &eof, &error)) {
        std::fprintf(stderr, "%s: read failed: %s\n", name.c_str(), error.c_str());
        return 2;
      }
    }
    // The slice ends at the last line end (the file's end ends the last line).
    size_t cut = buffer.size();
    if (!eof) {
      const size_t nl = buffer.rfind('\n');
      if (nl == std::string::npos) {
        if (buffer.size() > kMaxLineBytes) {
          std::fprintf(stderr, "%s:%zu: a line longer than %zu bytes\n", name.c_str(),
                       line_base + 1, kMaxLineBytes);
          return 2;
        }
        continue;  // read more of this long line
      }
      cut = nl + 1;
    }
    const std::string_view slice(buffer.data(), cut);
    batch.Parse(slice, parse, o.database);
    for (const ingest::LineError& e : batch.errors()) {
      rejects->Add(line_base + e.line, e.column, e.message);
    }
    rejects->AddUnlisted(batch.error_count() - batch.errors().size());
    if (!WritePoints(
            db, batch.points(), [&](size_t i) { return line_base + batch.line_of(i); }, rejects,
            totals)) {
      return 2;
    }
    line_base += static_cast<size_t>(std::count(slice.begin(), slice.end(), '\n'));
    buffer.erase(0, cut);
    progress.Update(in->offset(), in->size(), totals->points);
  }
  progress.Done();
  return 0;
}

int ImportProm(Db* db, const ImportOptions& o, const std::string& name, Input* in, Rejects* rejects,
               Totals* totals) {
  std::string body, error;
  bool eof = false;
  while (!eof) {
    if (!in->Read(kSliceBytes, &body, &eof, &error)) {
      std::fprintf(stderr, "%s: read failed: %s\n", name.c_str(), error.c_str());
      return 2;
    }
    if (body.size() > kMaxPromBytes) {
      std::fprintf(stderr, "%s: larger than %zu bytes; a scrape is far smaller\n", name.c_str(),
                   kMaxPromBytes);
      return 2;
    }
  }
  ingest::PromTextScratch scratch;
  std::vector<ingest::PromSample> samples;
  std::vector<ingest::PromError> errors;
  ingest::ParsePromText(body, &scratch, &samples, &errors);
  for (const ingest::PromError& e : errors) rejects->Add(e.line, e.column, e.message);
  ingest::PromMappingOptions mapping = o.prom;
  if (!o.database.empty()) mapping.extra_tags.push_back({"db", o.database});
  std::vector<Point> points;
  ingest::MapSamples(samples, engine::WallClockNanos(), mapping, &points);
  WriteResult result;
  const Status s = points.empty() ? Status::Ok() : db->Write(points, &result);
  if (!s.ok() && !s.IsInvalidArgument()) {
    std::fprintf(stderr, "gpulse import: write failed: %s\n", s.ToString().c_str());
    return 2;
  }
  // A point gathers the samples of one series and instant: no line of its own.
  for (const WriteResult::Rejected& r : result.rejected) rejects->AddPoint(r.reason);
  totals->points += result.points_written;
  totals->values += result.values_written;
  return 0;
}

}  // namespace

int RunImport(const std::vector<std::string>& args) {
  ImportOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    // The option's value, the next argument; false (said) when there is none.
    const auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "gpulse import: %s needs a value\n", a.c_str());
        return false;
      }
      *out = args[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kImportUsage, stdout);
      return 0;
    } else if (a == "--data") {
      if (!value(&o.data)) return 2;
    } else if (a == "--config") {
      if (!value(&o.config)) return 2;
    } else if (a == "--format") {
      if (!value(&o.format)) return 2;
      if (o.format != "lp" && o.format != "prom") {
        std::fprintf(stderr,
                     "gpulse import: --format %s is not lp or prom (nvidia-smi and pai are not "
                     "importable yet)\n",
                     o.format.c_str());
        return 2;
      }
    } else if (a == "--database") {
      if (!value(&o.database)) return 2;
    } else if (a == "--precision") {
      if (!value(&v)) return 2;
      if (!ingest::ParsePrecision(v, &o.precision)) {
        std::fprintf(stderr, "gpulse import: --precision %s is not ns, us, ms, s, m or h\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--measurement") {
      if (!value(&o.prom.measurement)) return 2;
    } else if (a == "--tag") {
      if (!value(&v)) return 2;
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
        std::fprintf(stderr, "gpulse import: --tag %s is not KEY=VALUE\n", v.c_str());
        return 2;
      }
      o.prom.extra_tags.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "gpulse import: unknown option %s\n\n%s", a.c_str(), kImportUsage);
      return 2;
    } else {
      o.files.push_back(a);
    }
  }
  if (o.files.empty()) {
    std::fprintf(stderr, "gpulse import: no file given\n\n%s", kImportUsage);
    return 2;
  }

  Options options;
  options.keep_stored_tiers = true;  // the server's tiers, not the defaults
  if (!o.config.empty()) {
    server::ServerConfig config;
    const Status loaded = server::LoadConfigFile(o.config, &config);
    if (!loaded.ok()) {
      std::fprintf(stderr, "gpulse import: %s\n", loaded.ToString().c_str());
      return 2;
    }
    options = config.db;
  }
  options.info_log = [](std::string_view) {};
  std::unique_ptr<Db> db;
  const Status opened = Db::Open(options, o.data, &db);
  if (!opened.ok()) {
    std::fprintf(stderr, "gpulse import: %s\n", opened.ToString().c_str());
    if (opened.IsBusy()) {
      std::fprintf(stderr,
                   "(a running gpulse serve holds it: send the file to it instead, e.g. curl "
                   "--data-binary @FILE 'http://127.0.0.1:8086/write?db=NAME')\n");
    }
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  Totals totals;
  int status = 0;
  for (const std::string& name : o.files) {
    Input in;
    if (!in.Open(name)) {
      std::fprintf(stderr, "%s: cannot open: %s\n", name.c_str(), std::strerror(errno));
      status = 2;
      continue;
    }
    Rejects rejects(name);
    const int s = o.format == "lp" ? ImportLineProtocol(db.get(), o, name, &in, &rejects, &totals)
                                   : ImportProm(db.get(), o, name, &in, &rejects, &totals);
    rejects.Finish();
    totals.rejected += rejects.count();
    if (s != 0) status = 2;
  }
  const Status closed = db->Close();
  if (!closed.ok()) {
    std::fprintf(stderr, "gpulse import: closing %s: %s\n", o.data.c_str(),
                 closed.ToString().c_str());
    return 2;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("imported %llu point%s (%llu values) from %zu file%s into %s in %.1f s",
              static_cast<unsigned long long>(totals.points), totals.points == 1 ? "" : "s",
              static_cast<unsigned long long>(totals.values), o.files.size(),
              o.files.size() == 1 ? "" : "s", o.data.c_str(), seconds);
  if (totals.rejected > 0) {
    std::printf("; %llu lines rejected", static_cast<unsigned long long>(totals.rejected));
  }
  std::printf("\n");
  if (status == 0 && totals.rejected > 0) status = 1;
  return status;
}

}  // namespace gpulse::cli
