// Where `gpulse query` and `gpulse shell` run statements: a data directory
// opened in-process (embedded), or a client of `gpulse serve` (--url, the
// /query endpoint).
//
// Thread safety: a connection runs one statement list at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "query/runtime/result.h"
#include "storage/status.h"

namespace gpulse::shell {

struct ConnectionFlags {
  std::string data;  // embedded on this directory (default ./gpulse-data)
  std::string url;   // or a client of this server
  std::string database;
  std::string token;
};

class Connection {
 public:
  virtual ~Connection() = default;
  // Runs the statements of `text`. Not OK when they could not be run at all
  // (the server is unreachable, Ctrl-C before it answered); a statement's own
  // error, a cancellation included, is in its StatementResult.
  virtual Status Query(std::string_view text, QueryResult* out) = 0;
  virtual Status Close() { return Status::Ok(); }
  // "./data" or "http://127.0.0.1:8086", for the greeting.
  virtual std::string Describe() const = 0;
};

// "http://HOST[:PORT][/]", HOST possibly "[v6]"; the port defaults to 8086.
// InvalidArgument naming the URL otherwise (no https: put a proxy in front).
Status ParseUrl(std::string_view url, std::string* host, std::string* port);

// Opens the connection the flags name. `cancelled` is polled while a
// statement runs (the shell's Ctrl-C): true cancels it.
Status OpenConnection(const ConnectionFlags& flags, std::function<bool()> cancelled,
                      std::unique_ptr<Connection>* out);

// What a statement cancelled by Ctrl-C answers.
Status CancelledByUser();

}  // namespace gpulse::shell
