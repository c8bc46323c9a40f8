// `gpulse query` and `gpulse shell` as the built binary, the way a script and
// a person use them: the one-shot command's output formats, exit statuses and
// error carets; the shell through a pseudo-terminal (readline sees a real
// terminal), typing multi-line statements, Tab, backslash commands and
// Ctrl-C. A remote query is made to hang on a listener that never accepts,
// so that Ctrl-C is tested against a query that is surely still running.
// Every wait is bounded.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <fstream>
#include <list>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "tests/support/free_port.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/spawn.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kT0 = 1704067200'000'000'000;  // 2024-01-01T00:00:00Z
using gpulse::test::kMinute;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// gpu: nodes alpha (util 10, 11, 12) and bravo (20, 21, 22), one a minute
// from kT0, with power_w; dbtest: one point in database fleet, one in other.
void WriteFleet(const std::string& path) {
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [](std::string_view) {};
  std::unique_ptr<Db> db;
  ASSERT_TRUE(Db::Open(options, path, &db).ok());
  std::vector<Point> points;
  for (const auto& [node, base] : {std::pair{"alpha", 10}, std::pair{"bravo", 20}}) {
    for (int i = 0; i < 3; ++i) {
      points.push_back({"gpu",
                        {{"node", node}},
                        {{"util", int64_t{base + i}}, {"power_w", 300.5 + i}},
                        kT0 + i * kMinute});
    }
  }
  points.push_back({"dbtest", {{"db", "fleet"}}, {{"v", 1.5}}, kT0});
  points.push_back({"dbtest", {{"db", "other"}}, {{"v", 2.5}}, kT0});
  const Status s = db->Write(points);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(db->Close().ok());
}

using test::FreePort;

// A server that never answers: it listens but never accepts, so the kernel
// completes a client's connect and buffers its request, and the client's
// read waits for ever.
class SilentServer {
 public:
  SilentServer() : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    acceptor_.listen();
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  // Whether a client connected within `limit` (it is then kept, unanswered).
  bool WaitForClient(std::chrono::milliseconds limit) {
    acceptor_.non_blocking(true);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      boost::system::error_code error;
      clients_.emplace_back(io_);
      acceptor_.accept(clients_.back(), error);
      if (!error) return true;
      clients_.pop_back();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::list<boost::asio::ip::tcp::socket> clients_;
};

std::optional<int> WaitExit(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    int raw = 0;
    if (::waitpid(pid, &raw, WNOHANG) == pid) return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
}

// `gpulse args...` with stdin from a file (or /dev/null) and stdout and
// stderr to files; killed if still running when destroyed.
class Process {
 public:
  Process(const std::vector<std::string>& args, const std::string& dir,
          const std::string& stdin_text = "") {
    static int count = 0;
    const std::string base = dir + "/run" + std::to_string(count++);
    out_path_ = base + ".out";
    err_path_ = base + ".err";
    const std::string in_path = base + ".in";
    std::ofstream(in_path) << stdin_text;
    pid_ = test::SpawnWithFiles(GPULSE_BIN, args, in_path, out_path_, err_path_);
  }
  ~Process() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  std::optional<int> Wait(std::chrono::milliseconds limit = 20s) {
    if (pid_ > 0 && !status_) status_ = WaitExit(pid_, limit);
    return status_;
  }
  void Signal(int signal) { ::kill(pid_, signal); }
  std::string Stdout() const { return ReadFile(out_path_); }
  std::string Stderr() const { return ReadFile(err_path_); }

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// `gpulse args...` on a pseudo-terminal, 200 columns wide so that no line
// wraps, with TERM=dumb so that readline draws with few escape sequences.
class Terminal {
 public:
  Terminal(const std::vector<std::string>& args, const std::vector<std::string>& env,
           unsigned short columns = 200) {
    // Everything the child needs is built before the fork.
    std::vector<std::string> argv_strings = {GPULSE_BIN};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (std::string& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry = *e;
      const std::string_view name = entry.substr(0, entry.find('='));
      bool overridden = false;
      for (const std::string& o : env)
        overridden = overridden || o.starts_with(std::string(name) + "=");
      if (!overridden) env_strings.emplace_back(entry);
    }
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    struct winsize size = {};
    size.ws_row = 50;
    size.ws_col = columns;
    pid_ = ::forkpty(&master_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      ::execve(GPULSE_BIN, argv.data(), envp.data());
      ::_exit(127);
    }
    if (master_ >= 0) ::fcntl(master_, F_SETFL, O_NONBLOCK);
  }
  ~Terminal() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  bool started() const { return pid_ > 0 && master_ >= 0; }

  // Keys as a person types them: "\r" is Enter, "\t" Tab, "\x03" Ctrl-C.
  void Type(std::string_view keys) {
    while (!keys.empty()) {
      const ssize_t n = ::write(master_, keys.data(), keys.size());
      if (n <= 0) return;
      keys.remove_prefix(n);
    }
  }

  // Where the screen text ends now: pass it to WaitFor to look only at what
  // comes after.
  size_t Mark() {
    Drain(0ms);
    return Text().size();
  }

  // True once `needle` shows after `from` (within 10 s).
  bool WaitFor(std::string_view needle, size_t from = 0, std::chrono::milliseconds limit = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (true) {
      const std::string text = Text();
      if (text.size() > from && text.find(needle, from) != std::string::npos) return true;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return false;
      Drain(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    }
  }

  // Types `keys`, which end with Enter, and waits for the next main prompt,
  // as a person does before typing on (keys typed while a statement runs
  // reach the terminal in its cooked mode, where Tab and Ctrl-D mean other
  // things). Returns what the terminal showed from the keys to the prompt.
  std::string Submit(std::string_view keys) {
    const size_t mark = Mark();
    Type(keys);
    if (!WaitFor("gpulse> ", mark)) return Text().substr(mark) + "\n[no prompt within 10 s]";
    const std::string text = Text();
    return text.substr(mark, text.find("gpulse> ", mark) - mark);
  }

  std::optional<int> WaitExit(std::chrono::milliseconds limit) {
    if (!status_) {
      const auto deadline = std::chrono::steady_clock::now() + limit;
      while (!status_ && std::chrono::steady_clock::now() < deadline) {
        Drain(20ms);  // a child blocked writing to a full terminal never exits
        status_ = ::gpulse::WaitExit(pid_, 0ms);
      }
    }
    return status_;
  }

  // What the terminal shows, as text: a line at a time, with carriage
  // returns and backspaces moving the cursor as on a screen (readline redraws
  // a completed word that way on a dumb terminal) and escape sequences left
  // out.
  std::string Text() const {
    std::string text;
    size_t line_start = 0, cursor = 0;
    for (size_t i = 0; i < raw_.size(); ++i) {
      const char c = raw_[i];
      if (c == '\x1b') {
        if (i + 1 < raw_.size() && raw_[i + 1] == '[') {  // CSI: parameters, then a final byte
          i += 2;
          while (i < raw_.size() && !(raw_[i] >= 0x40 && raw_[i] <= 0x7e)) ++i;
        } else {
          ++i;  // a two-byte escape
        }
      } else if (c == '\r') {
        cursor = line_start;
      } else if (c == '\b') {
        if (cursor > line_start) --cursor;
      } else if (c == '\n') {
        text.push_back('\n');
        line_start = cursor = text.size();
      } else if (c != '\a') {
        if (cursor < text.size()) {
          text[cursor] = c;
        } else {
          text.push_back(c);
        }
        ++cursor;
      }
    }
    return text;
  }

 private:
  // Reads what the child wrote, waiting up to `limit` for the first bytes.
  void Drain(std::chrono::milliseconds limit) {
    pollfd fd = {master_, POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(limit.count())) <= 0) return;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(master_, buffer, sizeof(buffer))) > 0) raw_.append(buffer, n);
  }

  int master_ = -1;
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string raw_;
};

class ShellTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteFleet(DataDir()); }

  std::string DataDir() const { return dir_.path() + "/data"; }
  std::string HistoryPath() const { return dir_.path() + "/history"; }

  // `gpulse query --data DIR args...`: the exit status, stdout and stderr.
  std::optional<int> Query(const std::vector<std::string>& args, std::string* out, std::string* err,
                           const std::string& stdin_text = "") {
    std::vector<std::string> all = {"query", "--data", DataDir()};
    all.insert(all.end(), args.begin(), args.end());
    Process p(all, dir_.path(), stdin_text);
    const std::optional<int> status = p.Wait();
    *out = p.Stdout();
    *err = p.Stderr();
    return status;
  }

  std::unique_ptr<Terminal> StartShell(const std::vector<std::string>& args,
                                       unsigned short columns = 200) {
    std::vector<std::string> all = {"shell"};
    all.insert(all.end(), args.begin(), args.end());
    return std::make_unique<Terminal>(
        all,
        std::vector<std::string>{"TERM=dumb", "GPULSE_HISTORY=" + HistoryPath(),
                                 "HOME=" + dir_.path(), "INPUTRC=/dev/null"},
        columns);
  }

  storage::ScratchDir dir_;
};

// --- gpulse query ------------------------------------------------------------

TEST_F(ShellTest, QueryPrintsAnAlignedTableWithTheRowCount) {
  std::string out, err;
  ASSERT_EQ(Query({"SELECT util FROM gpu WHERE node = 'alpha'"}, &out, &err), 0) << err;
  EXPECT_EQ(out,
            "name: gpu\n"
            "time                  util\n"
            "----                  ----\n"
            "2024-01-01T00:00:00Z    10\n"
            "2024-01-01T00:01:00Z    11\n"
            "2024-01-01T00:02:00Z    12\n"
            "(3 rows)\n");
}

TEST_F(ShellTest, QueryNamesTheGroupOfEachTable) {
  std::string out, err;
  ASSERT_EQ(Query({"SELECT last(util) FROM gpu GROUP BY node"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("name: gpu  tags: node=alpha\n"), std::string::npos) << out;
  EXPECT_NE(out.find("name: gpu  tags: node=bravo\n"), std::string::npos) << out;
  EXPECT_NE(out.find("(2 rows)\n"), std::string::npos) << out;
}

TEST_F(ShellTest, QueryWritesCsvAndJsonForScripts) {
  std::string out, err;
  ASSERT_EQ(Query({"--format", "csv", "SELECT util FROM gpu WHERE node = 'alpha'"}, &out, &err), 0)
      << err;
  EXPECT_EQ(out,
            "name,tags,time,util\n"
            "gpu,,2024-01-01T00:00:00Z,10\n"
            "gpu,,2024-01-01T00:01:00Z,11\n"
            "gpu,,2024-01-01T00:02:00Z,12\n");

  ASSERT_EQ(Query({"--format", "csv", "--epoch", "s", "SELECT util FROM gpu WHERE node = 'alpha'"},
                  &out, &err),
            0)
      << err;
  EXPECT_NE(out.find("gpu,,1704067200,10\n"), std::string::npos) << out;

  ASSERT_EQ(Query({"--format", "json", "SELECT util FROM gpu WHERE node = 'alpha'"}, &out, &err), 0)
      << err;
  EXPECT_EQ(out.rfind("{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"gpu\"", 0), 0u)
      << out;
  EXPECT_NE(out.find("\"columns\":[\"time\",\"util\"]"), std::string::npos) << out;
  EXPECT_NE(out.find("[\"2024-01-01T00:02:00Z\",12]"), std::string::npos) << out;
}

// A table shows a float as a person reads it; CSV keeps every digit.
TEST_F(ShellTest, TablesShowFourSignificantDigitsAndCsvEveryOne) {
  std::string out, err;
  const std::string q =
      "SELECT mean(util) / 7 AS ratio, sum(util) * 1000.3 AS big FROM gpu WHERE node = 'alpha'";
  ASSERT_EQ(Query({q}, &out, &err), 0) << err;
  EXPECT_NE(out.find("1.571"), std::string::npos) << out;
  EXPECT_EQ(out.find("1.5714285714285714"), std::string::npos) << out;
  EXPECT_NE(out.find("33009.9"), std::string::npos) << "integer digits all kept: " << out;
  ASSERT_EQ(Query({"--format", "csv", q}, &out, &err), 0) << err;
  EXPECT_NE(out.find(",1.5714285714285714,"), std::string::npos) << out;
}

TEST_F(ShellTest, QueryReadsTheQueryFromStdinForDash) {
  std::string out, err;
  ASSERT_EQ(Query({"--format", "csv", "-"}, &out, &err,
                  "SELECT util FROM gpu\n"
                  "WHERE node = 'bravo' AND util > 20\n"),
            0)
      << err;
  EXPECT_EQ(out,
            "name,tags,time,util\ngpu,,2024-01-01T00:01:00Z,21\ngpu,,2024-01-01T00:02:00Z,22\n");
}

TEST_F(ShellTest, QueryParseErrorGoesToStderrWithACaretAndStatusOne) {
  std::string out, err;
  EXPECT_EQ(Query({"SELECT util gpu"}, &out, &err), 1);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err,
            "ERR: line 1, column 13: expected FROM, found gpu\n"
            "SELECT util gpu\n"
            "            ^\n");
}

TEST_F(ShellTest, QueryTakesPromQLBehindItsPrefix) {
  std::string out, err;
  ASSERT_EQ(Query({"--format", "csv", "promql: max by (node) (last_over_time(gpu_util[2000d]))"},
                  &out, &err),
            0)
      << err;
  EXPECT_EQ(out.rfind("name,tags,time,value\n", 0), 0u) << out;
  EXPECT_NE(out.find(",node=alpha,"), std::string::npos) << out;
  EXPECT_NE(out.find(",12\n"), std::string::npos) << out;
  EXPECT_NE(out.find(",22\n"), std::string::npos) << out;
  // The expression's error, with the caret under it in the whole text.
  EXPECT_EQ(Query({"promql: sum(gpu_util"}, &out, &err), 1);
  EXPECT_NE(err.find("ERR: line 1, column 21: "), std::string::npos) << err;
  EXPECT_NE(err.find("promql: sum(gpu_util\n" + std::string(20, ' ') + "^\n"), std::string::npos)
      << err;
  EXPECT_EQ(Query({"promql 1h: up"}, &out, &err), 1);
  EXPECT_NE(err.find("a range and a step"), std::string::npos) << err;
}

TEST_F(ShellTest, QueryDatabaseSeesOnlyThatDatabase) {
  std::string out, err;
  ASSERT_EQ(Query({"--database", "fleet", "--format", "csv", "SELECT v FROM dbtest"}, &out, &err),
            0)
      << err;
  EXPECT_EQ(out, "name,tags,time,v\ndbtest,,2024-01-01T00:00:00Z,1.5\n");
}

TEST_F(ShellTest, QueryHelpExplainsEveryFlag) {
  Process p({"query", "--help"}, dir_.path());
  ASSERT_EQ(p.Wait(), 0);
  const std::string help = p.Stdout();
  for (const char* flag : {"--data DIR", "--url URL", "--database NAME", "--token TOKEN",
                           "--format FMT", "--epoch UNIT", "--help", "Examples:"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag << " in\n" << help;
  }
  Process shell_help({"shell", "--help"}, dir_.path());
  ASSERT_EQ(shell_help.Wait(), 0);
  EXPECT_NE(shell_help.Stdout().find("--url URL"), std::string::npos);
  EXPECT_NE(shell_help.Stdout().find("GPULSE_HISTORY"), std::string::npos);
}

TEST_F(ShellTest, QueryRefusesBadFlagsAndAMissingDirectory) {
  std::string out, err;
  EXPECT_EQ(Query({"--format", "xml", "SHOW MEASUREMENTS"}, &out, &err), 2);
  EXPECT_NE(err.find("--format xml: expected table, csv or json"), std::string::npos) << err;
  EXPECT_EQ(Query({"--url", "http://127.0.0.1:1", "SHOW MEASUREMENTS"}, &out, &err), 2);
  EXPECT_NE(err.find("--data and --url exclude each other"), std::string::npos) << err;

  Process p({"query", "--data", dir_.path() + "/missing", "SHOW MEASUREMENTS"}, dir_.path());
  EXPECT_EQ(p.Wait(), 1);
  EXPECT_EQ(p.Stderr().rfind("ERR: ", 0), 0u) << p.Stderr();
}

TEST_F(ShellTest, QueryCtrlCCancelsARemoteQueryThatHangs) {
  SilentServer server;
  Process p({"query", "--url", server.url(), "SHOW MEASUREMENTS"}, dir_.path());
  // Connected, so its Ctrl-C handler is in place (a fixed sleep was too
  // short for a sanitizer build's start-up on a busy machine).
  ASSERT_TRUE(server.WaitForClient(20s)) << p.Stderr();
  ASSERT_FALSE(p.Wait(0ms)) << "returned before the server answered: " << p.Stderr();
  p.Signal(SIGINT);
  EXPECT_EQ(p.Wait(5s), 130);
  EXPECT_NE(p.Stderr().find("ERR: query cancelled"), std::string::npos) << p.Stderr();
}

TEST_F(ShellTest, QueryAndShellAsClientsOfAServer) {
  const uint16_t port = FreePort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  Process server({"serve", "--data", DataDir(), "--listen", "127.0.0.1:" + std::to_string(port)},
                 dir_.path());
  // The server is up once a query gets through.
  std::string out;
  for (int attempt = 0; attempt < 100 && out.empty(); ++attempt) {
    Process p(
        {"query", "--url", url, "--format", "csv", "SELECT util FROM gpu WHERE node = 'alpha'"},
        dir_.path());
    if (p.Wait() == 0) out = p.Stdout();
    if (out.empty()) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(out,
            "name,tags,time,util\n"
            "gpu,,2024-01-01T00:00:00Z,10\n"
            "gpu,,2024-01-01T00:01:00Z,11\n"
            "gpu,,2024-01-01T00:02:00Z,12\n");
  // A parse error is caught before anything is sent, with the same caret.
  Process bad({"query", "--url", url, "SELECT util gpu"}, dir_.path());
  EXPECT_EQ(bad.Wait(), 1);
  EXPECT_NE(bad.Stderr().find("            ^\n"), std::string::npos) << bad.Stderr();

  // The shell as a client: completion words come from the server too.
  auto shell = StartShell({"--url", url});
  ASSERT_TRUE(shell->WaitFor("gpulse> ")) << shell->Text();
  const std::string answer = shell->Submit("SELECT max(ut\t) FROM gpu WHERE node = al\t;\r");
  EXPECT_NE(answer.find("max(util ) FROM gpu WHERE node = 'alpha' ;\n"), std::string::npos)
      << answer;
  EXPECT_NE(answer.find("  12\n(1 row, "), std::string::npos) << answer;
  shell->Type("\\q\r");
  EXPECT_EQ(shell->WaitExit(10s), 0) << shell->Text();

  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait(10s), 0) << server.Stderr();
}

// --- gpulse shell ------------------------------------------------------------

TEST_F(ShellTest, ShellRunsMultiLineStatementsAndPrintsTables) {
  auto shell = StartShell({"--data", DataDir()});
  ASSERT_TRUE(shell->started());
  ASSERT_TRUE(shell->WaitFor("gpulse> ")) << shell->Text();

  size_t mark = shell->Mark();
  shell->Type("SELECT util\r");
  ASSERT_TRUE(shell->WaitFor("     -> ", mark)) << shell->Text();
  mark = shell->Mark();
  shell->Type("FROM gpu\r");
  ASSERT_TRUE(shell->WaitFor("     -> ", mark)) << shell->Text();
  std::string out = shell->Submit("WHERE node = 'alpha';\r");
  EXPECT_NE(out.find("name: gpu\n"
                     "time                  util\n"
                     "----                  ----\n"
                     "2024-01-01T00:00:00Z    10\n"
                     "2024-01-01T00:01:00Z    11\n"
                     "2024-01-01T00:02:00Z    12\n"
                     "(3 rows, "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" ms)\n"), std::string::npos) << out;

  // An error points at the fault with a caret, and the shell goes on.
  out = shell->Submit("SELECT util gpu;\r");
  EXPECT_NE(out.find("ERR: line 1, column 13: expected FROM, found gpu\n"
                     "SELECT util gpu;\n"
                     "            ^\n"),
            std::string::npos)
      << out;

  shell->Type("\\q\r");
  EXPECT_EQ(shell->WaitExit(10s), 0) << shell->Text();

  // Each statement is one history entry, its lines joined.
  const std::string history = ReadFile(HistoryPath());
  EXPECT_NE(history.find("SELECT util FROM gpu WHERE node = 'alpha';"), std::string::npos)
      << history;
}

TEST_F(ShellTest, ShellTabCompletesKeywordsFieldsAndTagValues) {
  auto shell = StartShell({"--data", DataDir()});
  ASSERT_TRUE(shell->WaitFor("gpulse> ")) << shell->Text();

  size_t mark = shell->Mark();
  shell->Type("SELECT mean(ut\t");
  ASSERT_TRUE(shell->WaitFor("mean(util", mark)) << shell->Text();
  shell->Type(") FROM gpu WHERE node = br\t");
  ASSERT_TRUE(shell->WaitFor("'bravo'", mark)) << shell->Text();
  std::string out = shell->Submit(";\r");
  EXPECT_NE(out.find("mean\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  21\n(1 row, "), std::string::npos) << out;

  mark = shell->Mark();
  shell->Type("SHOW MEAS\t");
  ASSERT_TRUE(shell->WaitFor("MEASUREMENTS", mark)) << shell->Text();
  out = shell->Submit(";\r");
  EXPECT_NE(out.find("name: measurements\nname\n----\ndbtest\ngpu\n(2 rows, "), std::string::npos)
      << out;

  // Keywords in the case they are typed in; measurements after FROM.
  mark = shell->Mark();
  shell->Type("show field k\t");
  ASSERT_TRUE(shell->WaitFor("show field keys", mark)) << shell->Text();
  shell->Type("from g\t");
  ASSERT_TRUE(shell->WaitFor("from gpu", mark)) << shell->Text();
  out = shell->Submit(";\r");
  EXPECT_NE(out.find("power_w   float\n"), std::string::npos) << out;

  shell->Type("\x04");  // Ctrl-D quits too
  EXPECT_EQ(shell->WaitExit(10s), 0) << shell->Text();
}

TEST_F(ShellTest, ShellBackslashCommands) {
  auto shell = StartShell({"--data", DataDir()});
  ASSERT_TRUE(shell->WaitFor("gpulse> ")) << shell->Text();

  std::string out = shell->Submit("\\help\r");
  for (const char* command : {"\\format table|csv|json", "\\timing", "\\refresh", "\\q"}) {
    EXPECT_NE(out.find(command), std::string::npos) << command << " in\n" << out;
  }

  EXPECT_NE(shell->Submit("\\format csv\r").find("Output format is csv."), std::string::npos);
  out = shell->Submit("SELECT util FROM gpu WHERE node = 'alpha';\r");
  EXPECT_NE(out.find("name,tags,time,util\n"
                     "gpu,,2024-01-01T00:00:00Z,10\n"
                     "gpu,,2024-01-01T00:01:00Z,11\n"
                     "gpu,,2024-01-01T00:02:00Z,12\n"
                     "(3 rows, "),
            std::string::npos)
      << out;

  EXPECT_NE(shell->Submit("\\timing\r").find("Timing is off."), std::string::npos);
  EXPECT_NE(shell->Submit("\\format table\r").find("Output format is table."), std::string::npos);
  out = shell->Submit("SELECT util FROM gpu WHERE node = 'bravo' AND util > 21;\r");
  EXPECT_NE(out.find("2024-01-01T00:02:00Z    22\n(1 row)\n"), std::string::npos) << out;

  out = shell->Submit("\\nope\r");
  EXPECT_NE(out.find("ERR: unknown command \\nope"), std::string::npos) << out;

  shell->Type("\\q\r");
  EXPECT_EQ(shell->WaitExit(10s), 0) << shell->Text();
}

TEST_F(ShellTest, ShellCtrlCAtThePromptDropsTheLineAndKeepsRunning) {
  auto shell = StartShell({"--data", DataDir()});
  ASSERT_TRUE(shell->WaitFor("gpulse> ")) << shell->Text();

  size_t mark = shell->Mark();
  shell->Type("SELECT util\r");
  ASSERT_TRUE(shell->WaitFor("     -> ", mark)) << shell->Text();
  mark = shell->Mark();
  shell->Type("FROM nowhere");
  ASSERT_TRUE(shell->WaitFor("FROM nowhere", mark)) << shell->Text();
  shell->Type("\x03");
  ASSERT_TRUE(shell->WaitFor("^C\ngpulse> ", mark)) << shell->Text();

  // The dropped statement left nothing behind: this one runs on its own.
  const std::string out = shell->Submit("SHOW MEASUREMENTS;\r");
  EXPECT_NE(out.find("name: measurements\n"), std::string::npos) << out;

  shell->Type("\\q\r");
  EXPECT_EQ(shell->WaitExit(10s), 0) << shell->Text();
}

TEST_F(ShellTest, ShellCtrlCCancelsARunningQueryNotTheShell) {
  SilentServer server;
  auto shell = StartShell({"--url", server.url()});
  ASSERT_TRUE(shell->started());
  // Loading the completion words hangs on this server; Ctrl-C gives up on
  // them and the prompt comes.
  ASSERT_TRUE(shell->WaitFor("\\q to quit.\n")) << shell->Text();
  std::this_thread::sleep_for(200ms);
  shell->Type("\x03");
  ASSERT_TRUE(shell->WaitFor("Completion words not loaded (Ctrl-C)")) << shell->Text();
  ASSERT_TRUE(shell->WaitFor("gpulse> ")) << shell->Text();

  const size_t mark = shell->Mark();
  shell->Type("SELECT util FROM gpu;\r");
  EXPECT_FALSE(shell->WaitFor("gpulse> ", mark, 500ms))
      << "the query did not wait for the server:\n"
      << shell->Text();
  shell->Type("\x03");
  ASSERT_TRUE(shell->WaitFor("ERR: query cancelled (Ctrl-C)\n", mark)) << shell->Text();
  ASSERT_TRUE(shell->WaitFor("gpulse> ", mark)) << shell->Text();

  shell->Type("\\q\r");
  EXPECT_EQ(shell->WaitExit(10s), 0) << shell->Text();
}

TEST_F(ShellTest, ShellReadsStatementsFromAPipe) {
  Process p({"shell", "--data", DataDir(), "--format", "csv"}, dir_.path(),
            "SELECT util FROM gpu\n  WHERE node = 'alpha' AND util = 11;\n"
            "\\timing\n"
            "SHOW MEASUREMENTS;\n");
  ASSERT_EQ(p.Wait(), 0) << p.Stderr();
  const std::string out = p.Stdout();
  EXPECT_NE(out.find("name,tags,time,util\ngpu,,2024-01-01T00:01:00Z,11\n(1 row, "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Timing is off.\nname,tags,name\nmeasurements,,dbtest\nmeasurements,,gpu\n"
                     "(2 rows)\n"),
            std::string::npos)
      << out;

  Process bad({"shell", "--data", DataDir()}, dir_.path(), "SELECT util gpu;\n");
  EXPECT_EQ(bad.Wait(), 1);
  EXPECT_NE(bad.Stdout().find("ERR: line 1, column 13"), std::string::npos) << bad.Stdout();
}

// A table wider than the terminal (`gpulse query` writing to one 60
// columns wide) folds into blocks that fit, each led by the time column.
TEST_F(ShellTest, AWideTableFoldsToTheTerminal) {
  Terminal terminal(
      {"query", "--data", DataDir(),
       "SELECT util AS aaaaaaaaaaaaaaaaaaaaaaaaa, util * 2 AS bbbbbbbbbbbbbbbbbbbbbbbbb, "
       "util * 3 AS ccccccccccccccccccccccccc FROM gpu WHERE node = 'alpha'"},
      {"TERM=dumb"}, 60);
  ASSERT_TRUE(terminal.started());
  ASSERT_EQ(terminal.WaitExit(10s), 0);
  const std::string out = terminal.Text();
  const size_t a = out.find("time                  aaaaaaaaaaaaaaaaaaaaaaaaa\n");
  const size_t b = out.find("time                  bbbbbbbbbbbbbbbbbbbbbbbbb\n");
  const size_t c = out.find("time                  ccccccccccccccccccccccccc\n");
  ASSERT_NE(a, std::string::npos) << out;
  ASSERT_NE(b, std::string::npos) << out;
  ASSERT_NE(c, std::string::npos) << out;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_NE(out.find("2024-01-01T00:02:00Z                         36\n"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace gpulse
