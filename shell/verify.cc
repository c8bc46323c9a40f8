// `gpulse verify`: reads every stored chunk of a data directory and reports
// the raw parts and tier blocks that cannot be read; with --repair, copies
// the directory to a backup first, then drops them and builds the dropped
// tier blocks again from the raw points (Db::Verify).

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "shell/commands.h"

namespace gpulse::cli {

namespace {

constexpr const char* kVerifyUsage =
    "Usage: gpulse verify [--data DIR] [--repair --backup DIR]\n"
    "\n"
    "Reads and decodes every stored raw chunk part and tier block (rollup and\n"
    "tally rows) of the data directory (the server must be stopped: the directory\n"
    "is opened exclusively) and lists those that cannot be read, such as those of\n"
    "a damaged LevelDB table, with their tier, series, field, window and reason.\n"
    "Exit status 0 when everything reads, 1 when some do not (or with --repair,\n"
    "when they could not be dropped).\n"
    "\n"
    "  --data DIR      data directory (default ./gpulse-data)\n"
    "  --repair        drop the unreadable parts and blocks, so that queries over\n"
    "                  their series answer the rest again, and build each dropped\n"
    "                  tier block again from the raw points left; what a dropped\n"
    "                  raw part held is lost\n"
    "  --backup DIR    with --repair, required: the whole data directory is copied\n"
    "                  here first (DIR must not exist)\n";

int Usage(const char* error) {
  std::fprintf(stderr, "gpulse verify: %s\n\n%s", error, kVerifyUsage);
  return 2;
}

}  // namespace

int RunVerify(const std::vector<std::string>& args) {
  std::string data = "./gpulse-data", backup;
  bool repair = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kVerifyUsage, stdout);
      return 0;
    }
    if (a == "--repair") {
      repair = true;
      continue;
    }
    if (i + 1 >= args.size()) return Usage(("missing value after " + a).c_str());
    if (a == "--data") {
      data = args[++i];
    } else if (a == "--backup") {
      backup = args[++i];
    } else {
      return Usage(("unknown option " + a).c_str());
    }
  }
  if (repair && backup.empty()) return Usage("--repair needs --backup DIR: a copy is made first");
  if (!std::filesystem::exists(data)) return Usage(("no data directory at " + data).c_str());
  if (repair) {
    std::error_code ec;
    if (std::filesystem::exists(backup, ec)) {
      return Usage(("the backup directory " + backup + " exists already").c_str());
    }
    std::filesystem::copy(data, backup, std::filesystem::copy_options::recursive, ec);
    if (ec) {
      std::fprintf(stderr, "gpulse verify: copy %s to %s: %s\n", data.c_str(), backup.c_str(),
                   ec.message().c_str());
      return 1;
    }
    std::fprintf(stderr, "gpulse verify: copied %s to %s\n", data.c_str(), backup.c_str());
  }
  Options options;
  options.create_if_missing = false;
  options.keep_stored_tiers = true;
  options.info_log = [](std::string_view line) {
    std::fprintf(stderr, "gpulse: %.*s\n", static_cast<int>(line.size()), line.data());
  };
  std::unique_ptr<Db> db;
  Status s = Db::Open(options, data, &db);
  if (!s.ok()) {
    std::fprintf(stderr, "gpulse verify: %s\n", s.ToString().c_str());
    return 1;
  }
  Db::VerifyReport report;
  s = db->Verify(repair, &report);
  const Status closed = db->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "gpulse verify: %s\n", s.ToString().c_str());
    return 1;
  }
  for (const Db::VerifyReport::Damaged& d : report.damaged) {
    const std::string what = d.tier == "raw" ? "raw chunk part" : d.tier + " tier block";
    std::printf("damaged: %s of %s field %s window %lld part %u: %s (key %s)\n", what.c_str(),
                d.series.c_str(), d.field.c_str(), static_cast<long long>(d.window_start), d.part,
                d.reason.c_str(), d.key.c_str());
  }
  const std::string repaired = ", " + std::to_string(report.dropped) + " dropped, " +
                               std::to_string(report.rebuilt) +
                               " tier blocks built again from the raw points";
  std::printf("%llu raw chunk parts and %llu tier blocks read, %zu damaged%s\n",
              static_cast<unsigned long long>(report.parts),
              static_cast<unsigned long long>(report.tier_blocks), report.damaged.size(),
              repair ? repaired.c_str() : "");
  if (!closed.ok()) std::fprintf(stderr, "gpulse verify: close: %s\n", closed.ToString().c_str());
  return report.damaged.empty() || (repair && report.dropped == report.damaged.size()) ? 0 : 1;
}

}  // namespace gpulse::cli
