// gpulse: the command-line entry point. Subcommands dispatch to shell/*.cc.

#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "shell/commands.h"
#include "shell/query_cli.h"

namespace {

constexpr const char* kUsage =
    "gpulse: a time-series database for GPU fleets\n"
    "\n"
    "Usage: gpulse <command> [options]\n"
    "\n"
    "Commands:\n"
    "  demo [--data DIR]   Simulate a week of a small GPU fleet (16 nodes x 8 GPUs) with two\n"
    "                      incidents into DIR (default ./gpulse-data) and print the first\n"
    "                      questions to ask it, as commands to copy.\n"
    "  simulate [options]  Simulate a fleet of any size with chosen incidents into a data\n"
    "                      directory, a server or a line-protocol file, with its ground\n"
    "                      truth. `gpulse simulate --help` for details.\n"
    "  serve [--data DIR] [--listen HOST:PORT] [--config FILE]\n"
    "                      Run the HTTP server: InfluxDB 1.x/2.x line-protocol writes on\n"
    "                      127.0.0.1:8086 by default, Prometheus scrapes, /metrics, /health.\n"
    "                      `gpulse serve --help` for details.\n"
    "  query [--data DIR | --url URL] [--format table|csv|json] QUERY\n"
    "                      Run QUERY on a data directory or a server and print the\n"
    "                      result; exit status 1 on error, for scripts.\n"
    "                      `gpulse query --help` for details.\n"
    "  shell [--data DIR | --url URL]\n"
    "                      The interactive query shell: line editing, history, tab\n"
    "                      completion, aligned tables. `gpulse shell --help` for details.\n"
    "  import [--data DIR] [--format FORMAT] FILE...\n"
    "                      Load files into a data directory: line protocol (plain or .gz),\n"
    "                      Prometheus text, nvidia-smi CSV logs and XML snapshots, Alibaba\n"
    "                      PAI trace tables; bad rows are reported with file and line.\n"
    "                      `gpulse import --help` for details.\n"
    "  verify [--data DIR] [--repair --backup DIR]\n"
    "                      Read every stored chunk and list the parts that cannot be read;\n"
    "                      --repair drops them after copying the directory to a backup.\n"
    "                      `gpulse verify --help` for details.\n"
    "  backfill --url URL --target NAME --from TIME [--to TIME]\n"
    "                      Send a server's stored history for a time range to one of its\n"
    "                      remote_write targets (a central store that was configured\n"
    "                      after the data came). `gpulse backfill --help` for details.\n"
    "  version             Print the version.\n"
    "  help, --help, -h    Print this help.\n"
    "\n"
    "Documentation: README.md and docs/ in the source tree.\n";

// The soft limit on open descriptors raised to the hard one, as Go's runtime
// does for VictoriaMetrics and Prometheus: the chunk store keeps a descriptor
// open for each table file it reads (up to 1,000, or a fifth of the soft limit)
// and each connection takes one. Debian's default soft limit is 1,024 under a
// hard limit of 524,288 or more.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);  // a refusal leaves the limit as it was
}

}  // namespace

int main(int argc, char** argv) {
  RaiseDescriptorLimit();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "version" || command == "--version") {
    std::printf("gpulse %s\n", gpulse::Version());
    return 0;
  }
  if (command == "demo") return gpulse::cli::RunDemo(args);
  if (command == "serve") return gpulse::cli::RunServe(args);
  if (command == "import") return gpulse::cli::RunImport(args);
  if (command == "simulate") return gpulse::cli::RunSimulate(args);
  if (command == "verify") return gpulse::cli::RunVerify(args);
  if (command == "backfill") return gpulse::cli::RunBackfill(args);
  // argv[1] is the command's name: they take argc/argv from it on.
  if (command == "query") return gpulse::shell::RunQuery(argc - 1, argv + 1);
  if (command == "shell") return gpulse::shell::RunShell(argc - 1, argv + 1);
  std::fprintf(stderr, "gpulse: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
