// SpawnWithFiles: starts a program with its standard streams on files, for
// tests that run the real `gpulse` binary as a child process.
//
// Thread safety: a free function.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>

#include <string>
#include <vector>

extern char** environ;

namespace gpulse::test {

// Runs `program` with `args` (argv[0] is the program), stdin from
// `stdin_path` (nothing when empty), stdout and stderr to the two files
// (truncated). The child's pid, or -1 when it could not be started.
inline pid_t SpawnWithFiles(const std::string& program, const std::vector<std::string>& args,
                            const std::string& stdin_path, const std::string& stdout_path,
                            const std::string& stderr_path) {
  std::vector<std::string> argv_strings = {program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!stdin_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 0, stdin_path.c_str(), O_RDONLY, 0);
  }
  posix_spawn_file_actions_addopen(&actions, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = -1;
  if (posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

}  // namespace gpulse::test
