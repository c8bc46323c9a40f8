// gpulse import: loads files into a data directory through the same write
// API a user has (Db::Write): line protocol, Prometheus text exposition (a
// saved scrape), nvidia-smi --query-gpu CSV logs and -q -x snapshots, and
// the Alibaba PAI 2020 trace's tables, each plain or gzip. A bad line is
// reported with its file, line and column and skipped; the good lines
// around it are written. The parsers live in ingest/; docs/import.md gives
// each format's mapping.
//
// Line-based formats (line protocol, the CSVs) are read in slices of
// kSliceBytes cut at a line end, so a file of any size is imported in
// bounded memory; a scrape and an XML snapshot are read whole.

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

#include "engine/gpulse.h"
#include "ingest/civil_time.h"
#include "ingest/lp_batch.h"
#include "ingest/nvsmi_csv.h"
#include "ingest/nvsmi_xml.h"
#include "ingest/pai_csv.h"
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
    "  --format lp|prom|nvidia-smi-csv|nvidia-smi-xml|pai\n"
    "                        what the files hold (default lp):\n"
    "      lp                InfluxDB line protocol\n"
    "      prom              Prometheus text exposition as dcgm-exporter serves it\n"
    "                        (a saved scrape)\n"
    "      nvidia-smi-csv    a log of nvidia-smi --query-gpu=... --format=csv -l N\n"
    "                        (units or nounits, header or noheader)\n"
    "      nvidia-smi-xml    nvidia-smi -q -x snapshots, as Telegraf's nvidia_smi\n"
    "                        input would send them\n"
    "      pai               Alibaba PAI GPU trace 2020 tables (pai_job_table.csv...)\n"
    "  --database NAME       tag every point db=NAME, as /write?db=NAME does\n"
    "  --tag KEY=VALUE       a tag for every point (repeatable; not lp). For the\n"
    "                        nvidia-smi formats host=NAME names the host, which is\n"
    "                        otherwise the file's name without directory and extension\n"
    "  --precision P         lp: the unit of timestamps: ns (default), us, ms, s, m, h\n"
    "  --measurement NAME    prom: the measurement (default prometheus)\n"
    "  --query-gpu LIST      nvidia-smi-csv: the columns of files without a header, as\n"
    "                        given to nvidia-smi (timestamp,index,utilization.gpu,...)\n"
    "  --timezone NAME       nvidia-smi-*: the IANA zone of times printed without an\n"
    "                        offset, the zone of the machine that wrote them (default UTC)\n"
    "  --table NAME          pai: the table (pai_job_table, job...; default: from the\n"
    "                        file's name)\n"
    "  --start TIME          pai: the trace's second 0, RFC 3339 or Unix seconds\n"
    "                        (default 0: the trace's own epoch)\n"
    "\n"
    "docs/import.md describes each format's measurements, tags, fields and times.\n"
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
  ingest::PromMappingOptions prom;  // its extra_tags are --tag, for every format but lp
  std::string query_gpu;
  ingest::TimeZone zone;
  const ingest::PaiTable* pai_table = nullptr;
  int64_t start_ns = 0;
  std::vector<std::string> files;
};

constexpr const char* kFormats[] = {"lp", "prom", "nvidia-smi-csv", "nvidia-smi-xml", "pai"};

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

// Writes `points` (PointRefs or Points); rejected ones go to *rejects at
// their lines. False on an error that stops the import (the Db's, not a
// point's).
template <typename Points, typename LineOf>
bool WritePoints(Db* db, const Points& points, const LineOf& line_of, Rejects* rejects,
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

// Calls fn(slice, line_base) for successive slices of the file, each ending
// at a line end (the file's end ends the last), `line_base` lines before
// it; fn returns false to stop with an error. 0 done, 2 could not read or
// fn stopped.
template <typename Fn>
int ForEachSlice(const std::string& name, Input* in, const Totals& totals, Fn&& fn) {
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
    if (!fn(slice, line_base)) return 2;
    line_base += static_cast<size_t>(std::count(slice.begin(), slice.end(), '\n'));
    buffer.erase(0, cut);
    progress.Update(in->offset(), in->size(), totals.points);
  }
  progress.Done();
  return 0;
}

// Reads the whole file into *body, up to kMaxPromBytes. False (said) when
// it cannot.
bool ReadWhole(const std::string& name, Input* in, const char* what, std::string* body) {
  std::string error;
  bool eof = false;
  while (!eof) {
    if (!in->Read(kSliceBytes, body, &eof, &error)) {
      std::fprintf(stderr, "%s: read failed: %s\n", name.c_str(), error.c_str());
      return false;
    }
    if (body->size() > kMaxPromBytes) {
      std::fprintf(stderr, "%s: larger than %zu bytes; %s is far smaller\n", name.c_str(),
                   kMaxPromBytes, what);
      return false;
    }
  }
  return true;
}

// 0 done, 2 could not read or write.
int ImportLineProtocol(Db* db, const ImportOptions& o, const std::string& name, Input* in,
                       Rejects* rejects, Totals* totals) {
  ingest::LineProtocolParser::Options parse;
  parse.precision = o.precision;
  parse.default_time_ns = WallClockNanos();
  parse.max_errors = kMaxReported;
  ingest::LineProtocolBatch batch;
  return ForEachSlice(name, in, *totals, [&](std::string_view slice, size_t line_base) {
    batch.Parse(slice, parse, o.database);
    for (const ingest::LineError& e : batch.errors()) {
      rejects->Add(line_base + e.line, e.column, e.message);
    }
    rejects->AddUnlisted(batch.error_count() - batch.errors().size());
    return WritePoints(
        db, batch.points(), [&](size_t i) { return line_base + batch.line_of(i); }, rejects,
        totals);
  });
}

int ImportProm(Db* db, const ImportOptions& o, const std::string& name, Input* in, Rejects* rejects,
               Totals* totals) {
  std::string body;
  if (!ReadWhole(name, in, "a scrape", &body)) return 2;
  ingest::PromTextScratch scratch;
  std::vector<ingest::PromSample> samples;
  std::vector<ingest::PromError> errors;
  std::vector<ingest::PromMetadata> metadata;
  ingest::ParsePromText(body, &scratch, &samples, &errors, &metadata);
  for (const ingest::PromError& e : errors) rejects->Add(e.line, e.column, e.message);
  ingest::PromMappingOptions mapping = o.prom;
  if (!o.database.empty()) mapping.extra_tags.push_back({"db", o.database});
  std::vector<Point> points;
  ingest::MapSamples(samples, WallClockNanos(), mapping, &points);
  WriteResult result;
  ingest::PromMeasurements prom_measurements(db);
  Status s = points.empty() ? Status::Ok() : prom_measurements.Note(mapping.measurement);
  if (s.ok()) s = ingest::PromMetadataNotes(db).Note(metadata);
  if (s.ok() && !points.empty()) s = db->Write(points, &result);
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

// "/logs/node-7.csv.gz" -> "node-7": the host of an nvidia-smi file when
// --tag host= does not name it.
std::string FileHost(const std::string& name) {
  if (name == "-") return "stdin";
  std::string base = name.substr(name.find_last_of('/') + 1);
  if (base.size() > 3 && base.compare(base.size() - 3, 3, ".gz") == 0) base.resize(base.size() - 3);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

// --tag, db=NAME, and for the nvidia-smi formats host (from the file's name
// unless --tag gave it).
std::vector<Tag> FileTags(const ImportOptions& o, const std::string& name, bool with_host) {
  std::vector<Tag> tags = o.prom.extra_tags;
  if (!o.database.empty()) tags.push_back({"db", o.database});
  if (!with_host) return tags;
  for (const Tag& t : tags) {
    if (t.key == "host") return tags;
  }
  tags.push_back({"host", FileHost(name)});
  return tags;
}

// Reports the rows a CSV parser rejected and writes the points it made
// from a slice. False on an error that stops the import.
bool WriteRows(Db* db, const std::vector<Point>& points, const std::vector<size_t>& lines,
               const std::vector<ingest::RowError>& errors, Rejects* rejects, Totals* totals) {
  for (const ingest::RowError& e : errors) rejects->Add(e.line, e.column, e.reason);
  return WritePoints(
      db, points, [&](size_t i) { return lines[i]; }, rejects, totals);
}

int ImportNvsmiCsv(Db* db, const ImportOptions& o, const std::string& name, Input* in,
                   Rejects* rejects, Totals* totals) {
  ingest::NvsmiCsvOptions options;
  options.query_gpu = o.query_gpu;
  options.tags = FileTags(o, name, true);
  options.zone = o.zone;
  ingest::NvsmiCsvParser parser(std::move(options));
  return ForEachSlice(name, in, *totals, [&](std::string_view slice, size_t line_base) {
    std::vector<Point> points;
    std::vector<size_t> lines;
    std::vector<ingest::RowError> errors;
    const Status s = parser.Parse(slice, line_base + 1, &points, &lines, &errors);
    if (!WriteRows(db, points, lines, errors, rejects, totals)) return false;
    if (!s.ok()) std::fprintf(stderr, "%s: %s\n", name.c_str(), s.message().c_str());
    return s.ok();
  });
}

int ImportPai(Db* db, const ImportOptions& o, const std::string& name, Input* in, Rejects* rejects,
              Totals* totals) {
  ingest::PaiCsvOptions options;
  options.table = o.pai_table != nullptr ? o.pai_table : ingest::PaiTableForFile(name);
  if (options.table == nullptr) {
    std::fprintf(stderr,
                 "%s: no PAI table in the file's name (pai_job_table.csv...); pass --table\n",
                 name.c_str());
    return 2;
  }
  options.tags = FileTags(o, name, false);
  options.start_ns = o.start_ns;
  ingest::PaiCsvParser parser(std::move(options));
  return ForEachSlice(name, in, *totals, [&](std::string_view slice, size_t line_base) {
    std::vector<Point> points;
    std::vector<size_t> lines;
    std::vector<ingest::RowError> errors;
    parser.Parse(slice, line_base + 1, &points, &lines, &errors);
    return WriteRows(db, points, lines, errors, rejects, totals);
  });
}

int ImportNvsmiXml(Db* db, const ImportOptions& o, const std::string& name, Input* in,
                   Rejects* rejects, Totals* totals) {
  std::string body;
  if (!ReadWhole(name, in, "an nvidia-smi snapshot", &body)) return 2;
  ingest::NvsmiXmlOptions options;
  options.tags = FileTags(o, name, true);
  options.zone = o.zone;
  options.default_time_ns = WallClockNanos();
  std::vector<Point> points;
  std::vector<ingest::RowError> errors;
  const Status s = ingest::ParseNvsmiXml(body, options, &points, &errors);
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), s.message().c_str());
    return 2;
  }
  for (const ingest::RowError& e : errors) rejects->Add(e.line, e.column, e.reason);
  // A point is an element of the snapshot, not a line of its own.
  WriteResult result;
  const Status w = points.empty() ? Status::Ok() : db->Write(points, &result);
  if (!w.ok() && !w.IsInvalidArgument()) {
    std::fprintf(stderr, "gpulse import: write failed: %s\n", w.ToString().c_str());
    return 2;
  }
  for (const WriteResult::Rejected& r : result.rejected) rejects->AddPoint(r.reason);
  totals->points += result.points_written;
  totals->values += result.values_written;
  return 0;
}

int ImportFile(Db* db, const ImportOptions& o, const std::string& name, Input* in, Rejects* rejects,
               Totals* totals) {
  if (o.format == "prom") return ImportProm(db, o, name, in, rejects, totals);
  if (o.format == "nvidia-smi-csv") return ImportNvsmiCsv(db, o, name, in, rejects, totals);
  if (o.format == "nvidia-smi-xml") return ImportNvsmiXml(db, o, name, in, rejects, totals);
  if (o.format == "pai") return ImportPai(db, o, name, in, rejects, totals);
  return ImportLineProtocol(db, o, name, in, rejects, totals);
}

// Reads the command's flags into *o: -1 when the import goes on, else the
// exit status (0 after --help, 2 for a bad flag).
int ParseImportFlags(const std::vector<std::string>& args, ImportOptions* o) {
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
      if (!value(&o->data)) return 2;
    } else if (a == "--config") {
      if (!value(&o->config)) return 2;
    } else if (a == "--format") {
      if (!value(&o->format)) return 2;
      if (std::find(std::begin(kFormats), std::end(kFormats), o->format) == std::end(kFormats)) {
        std::fprintf(stderr,
                     "gpulse import: --format %s is not lp, prom, nvidia-smi-csv, nvidia-smi-xml "
                     "or pai\n",
                     o->format.c_str());
        return 2;
      }
    } else if (a == "--database") {
      if (!value(&o->database)) return 2;
    } else if (a == "--precision") {
      if (!value(&v)) return 2;
      if (!ingest::ParsePrecision(v, &o->precision)) {
        std::fprintf(stderr, "gpulse import: --precision %s is not ns, us, ms, s, m or h\n",
                     v.c_str());
        return 2;
      }
    } else if (a == "--measurement") {
      if (!value(&o->prom.measurement)) return 2;
    } else if (a == "--tag") {
      if (!value(&v)) return 2;
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
        std::fprintf(stderr, "gpulse import: --tag %s is not KEY=VALUE\n", v.c_str());
        return 2;
      }
      o->prom.extra_tags.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (a == "--query-gpu") {
      if (!value(&o->query_gpu)) return 2;
    } else if (a == "--timezone") {
      if (!value(&v)) return 2;
      Result<ingest::TimeZone> zone = ingest::TimeZone::Find(v);
      if (!zone.ok()) {
        std::fprintf(stderr, "gpulse import: --timezone: %s\n", zone.status().message().c_str());
        return 2;
      }
      o->zone = *zone;
    } else if (a == "--table") {
      if (!value(&v)) return 2;
      o->pai_table = ingest::FindPaiTable(v);
      if (o->pai_table == nullptr) {
        std::fprintf(stderr, "gpulse import: --table %s is not a PAI table (", v.c_str());
        for (const ingest::PaiTable& t : ingest::PaiTables()) std::fprintf(stderr, " %s", t.name);
        std::fprintf(stderr, " )\n");
        return 2;
      }
    } else if (a == "--start") {
      if (!value(&v)) return 2;
      const auto start = ingest::ParseInstant(v);
      if (!start) {
        std::fprintf(stderr,
                     "gpulse import: --start %s is not RFC 3339 (2020-07-01T00:00:00Z) or Unix "
                     "seconds\n",
                     v.c_str());
        return 2;
      }
      o->start_ns = *start;
    } else if (a.size() > 1 && a[0] == '-') {
      std::fprintf(stderr, "gpulse import: unknown option %s\n\n%s", a.c_str(), kImportUsage);
      return 2;
    } else {
      o->files.push_back(a);
    }
  }
  if (o->files.empty()) {
    std::fprintf(stderr, "gpulse import: no file given\n\n%s", kImportUsage);
    return 2;
  }
  return -1;
}

// Opens the data directory (with the config file's storage settings, when
// given); the exit status 2, said, when it cannot.
int OpenImportTarget(const ImportOptions& o, std::unique_ptr<Db>* db) {
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
  const Status opened = Db::Open(options, o.data, db);
  if (!opened.ok()) {
    std::fprintf(stderr, "gpulse import: %s\n", opened.ToString().c_str());
    if (opened.IsBusy()) {
      std::fprintf(stderr,
                   "(a running gpulse serve holds it: send the file to it instead, e.g. curl "
                   "--data-binary @FILE 'http://127.0.0.1:8086/write?db=NAME')\n");
    }
    return 2;
  }
  return -1;
}

}  // namespace

int RunImport(const std::vector<std::string>& args) {
  ImportOptions o;
  if (const int status = ParseImportFlags(args, &o); status >= 0) return status;
  std::unique_ptr<Db> db;
  if (const int status = OpenImportTarget(o, &db); status >= 0) return status;
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
    const int s = ImportFile(db.get(), o, name, &in, &rejects, &totals);
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
