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

}  // namespace gpulse::test
