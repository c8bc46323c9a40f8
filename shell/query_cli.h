// `gpulse query` (one statement list, for scripts) and `gpulse shell` (the
// interactive REPL). Both run on a data directory opened in-process
// (embedded) or as a client of `gpulse serve` (--url, the /query endpoint),
// and report errors the same way: "ERR: <message>", with the offending line
// and a caret under the fault for a parse error.
#pragma once

#include <string>
#include <string_view>

#include "storage/status.h"

namespace gpulse::shell {

// Both take the arguments from the subcommand's name on: argv[0] is "query"
// or "shell", argv[1..argc) the flags and, for query, the text. They return
// the process exit status: 0 on success, 1 when a statement or the
// connection failed, 2 for bad flags, 130 when Ctrl-C cancelled a one-shot
// query.
int RunQuery(int argc, char** argv);
int RunShell(int argc, char** argv);

}  // namespace gpulse::shell
