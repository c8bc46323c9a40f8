// RunGpulse: runs the real `gpulse` binary with arguments and waits for it,
// for tests of the command line (import, simulate): its exit status and
// what it wrote on stdout and stderr.
//
// Thread safety: a free function; `scratch` must be the caller's own.
#pragma once

#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <memory>

#include "engine/gpulse.h"
#include "query/query.h"
#include "tests/support/spawn.h"

namespace gpulse::test {

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct RunOutcome {
  int status = -1;  // the exit status; -1 when it did not start or did not exit
  std::string out, err;
};

// `args` after the program's name; stdout and stderr go through files in
// the directory `scratch`.
inline RunOutcome RunGpulse(const std::vector<std::string>& args, const std::string& scratch) {
  const std::string out = scratch + "/gpulse.out", err = scratch + "/gpulse.err";
  RunOutcome r;
  const pid_t pid = SpawnWithFiles(GPULSE_BIN, args, "", out, err);
  if (pid < 0) return r;
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = ReadWholeFile(out);
  r.err = ReadWholeFile(err);
  return r;
}

// Opens the data directory `dir` in-process, runs `q`, and returns its
// first statement's series (a failure is a test failure).
inline std::vector<ResultSeries> QueryDirectory(const std::string& dir, const std::string& q) {
  Options o;
  o.info_log = [](std::string_view) {};
  std::unique_ptr<Db> db;
  EXPECT_TRUE(Db::Open(o, dir, &db).ok());
  if (db == nullptr) return {};
  QueryResult r;
  EXPECT_TRUE(gpulse::Query(db.get(), q, QueryOptions(), &r).ok()) << q;
  EXPECT_TRUE(r.statements.at(0).status.ok()) << r.statements[0].status.ToString();
  return r.statements[0].series;
}

}  // namespace gpulse::test
