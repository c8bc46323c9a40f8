// The gpulse command's subcommands. Each takes the arguments after its name
// and returns the process exit status; errors go to stderr.
#pragma once

#include <string>
#include <vector>

namespace gpulse::cli {

// `gpulse demo [--data DIR]`: writes a small synthetic fleet through the
// embedding API, reopens the directory, reads it back and reports.
int RunDemo(const std::vector<std::string>& args);

// `gpulse serve [--data DIR] [--listen HOST:PORT] [--config FILE]`: the HTTP
// server. Returns when SIGINT or SIGTERM arrives.
int RunServe(const std::vector<std::string>& args);

// gpulse import [options] FILE...: line protocol, Prometheus text, nvidia-smi
// CSV and XML, and Alibaba PAI tables into a data directory. Exit status 0, 1 (lines rejected) or 2
// (shell/import.cc).
int RunImport(const std::vector<std::string>& args);

// `gpulse simulate [options]`: a fleet with incidents into a data directory,
// a server or a line-protocol file (shell/simulate.cc).
int RunSimulate(const std::vector<std::string>& args);

// `gpulse verify [--data DIR] [--repair --backup DIR]`: every stored chunk
// part read; the unreadable ones listed, and with --repair dropped after a
// copy of the directory is made.
int RunVerify(const std::vector<std::string>& args);

// `gpulse backfill --url URL --target NAME --from T [--to T]`: a server's
// stored history sent to one of its remote_write targets, a step at a time
// (shell/backfill.cc).
int RunBackfill(const std::vector<std::string>& args);

}  // namespace gpulse::cli
