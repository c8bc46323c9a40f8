// `gpulse serve` as a real process: it starts, answers, stops on SIGTERM with
// status 0 after syncing, and keeps its data across a restart; its flags, a
// second server on a locked data directory and a bad config file are refused
// with clear messages. Every wait is bounded.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "tests/support/free_port.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/spawn.h"

namespace gpulse {
namespace {

using namespace std::chrono_literals;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using test::FreePort;

// A `gpulse` child process with stdout and stderr going to files.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& out_dir, const std::string& name)
      : stdout_path_(out_dir + "/" + name + ".out"), stderr_path_(out_dir + "/" + name + ".err") {
    pid_ = test::SpawnWithFiles(GPULSE_BIN, args, "", stdout_path_, stderr_path_);
  }
  // A child still running at the end of a test is killed, never left behind.
  ~Child() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !status_; }

  // The exit status once the child has exited within `limit` (-1 when a
  // signal ended it); nullopt when it is still running.
  std::optional<int> WaitExit(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (running()) {
      int raw = 0;
      const pid_t r = ::waitpid(pid_, &raw, WNOHANG);
      if (r == pid_) {
        status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
      } else if (std::chrono::steady_clock::now() > deadline) {
        return std::nullopt;
      } else {
        std::this_thread::sleep_for(20ms);
      }
    }
    return status_;
  }

  void Signal(int signal) {
    if (running()) ::kill(pid_, signal);
  }

  std::string Stdout() const { return ReadFile(stdout_path_); }
  std::string Stderr() const { return ReadFile(stderr_path_); }

 private:
  std::string stdout_path_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

class ServeProcessTest : public ::testing::Test {
 protected:
  std::string DataDir() const { return dir_.path() + "/data"; }

  // Starts `gpulse serve` on a fresh loopback port; true once GET /ping
  // answers 204 (within 15 s).
  bool StartServer(std::unique_ptr<Child>* child, const std::string& name) {
    port_ = FreePort();
    *child =
        std::make_unique<Child>(std::vector<std::string>{"serve", "--data", DataDir(), "--listen",
                                                         "127.0.0.1:" + std::to_string(port_)},
                                dir_.path(), name);
    if (!(*child)->started()) return false;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (std::chrono::steady_clock::now() < deadline) {
      if ((*child)->WaitExit(0ms)) return false;  // it gave up: the test prints stderr
      try {
        test::HttpClient client(port_);
        if (client.Get("/ping").status == 204) return true;
      } catch (const std::exception&) {
        // Not listening yet.
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  // Runs `gpulse args...` to completion (10 s at most).
  std::optional<int> Run(const std::vector<std::string>& args, std::string* out, std::string* err) {
    Child child(args, dir_.path(), "run" + std::to_string(runs_++));
    if (!child.started()) return std::nullopt;
    const std::optional<int> status = child.WaitExit(10s);
    *out = child.Stdout();
    *err = child.Stderr();
    return status;
  }

  storage::ScratchDir dir_;
  uint16_t port_ = 0;
  int runs_ = 0;
};

// The int64 values of field `field` of measurement gpu, series node=`node`.
std::vector<int64_t> StoredInts(Db* db, const std::string& node, const std::string& field) {
  std::vector<SeriesColumn> out;
  EXPECT_TRUE(db->Read({"gpu", {{"node", node}}, field}, &out).ok());
  std::vector<int64_t> values;
  for (const SeriesColumn& c : out)
    values.insert(values.end(), c.column.ints.begin(), c.column.ints.end());
  return values;
}

TEST_F(ServeProcessTest, SigtermStopsCleanlyAndARestartKeepsTheData) {
  std::unique_ptr<Child> server;
  ASSERT_TRUE(StartServer(&server, "first")) << server->Stderr();
  {
    test::HttpClient client(port_);
    const test::HttpReply r = client.Post("/write?db=fleet&precision=s",
                                          "gpu,node=n1 util=11i 1704067200\n"
                                          "gpu,node=n1 util=12i 1704067260\n"
                                          "gpu,node=n2 util=21i,power_w=301.5 1704067200\n");
    ASSERT_EQ(r.status, 204) << r.body;
  }
  server->Signal(SIGTERM);
  ASSERT_EQ(server->WaitExit(10s), std::optional<int>(0)) << server->Stderr();
  EXPECT_NE(server->Stderr().find("gpulse: SIGTERM: stopping"), std::string::npos)
      << server->Stderr();
  EXPECT_NE(server->Stderr().find("gpulse: stopped cleanly"), std::string::npos)
      << server->Stderr();

  // The restarted server replays what the first one stored, and takes more.
  ASSERT_TRUE(StartServer(&server, "second")) << server->Stderr();
  {
    test::HttpClient client(port_);
    const test::HttpReply r = client.Post("/api/v2/write?org=o&bucket=fleet&precision=s",
                                          "gpu,node=n1 util=13i 1704067320\n");
    ASSERT_EQ(r.status, 204) << r.body;
  }
  server->Signal(SIGINT);
  ASSERT_EQ(server->WaitExit(10s), std::optional<int>(0)) << server->Stderr();
  EXPECT_NE(server->Stderr().find("gpulse: SIGINT: stopping"), std::string::npos);

  Options options;
  options.create_if_missing = false;
  options.info_log = [](std::string_view) {};
  std::unique_ptr<Db> db;
  const Status s = Db::Open(options, DataDir(), &db);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(StoredInts(db.get(), "n1", "util"), (std::vector<int64_t>{11, 12, 13}));
  EXPECT_EQ(StoredInts(db.get(), "n2", "util"), std::vector<int64_t>{21});
  std::vector<SeriesColumn> out;
  ASSERT_TRUE(db->Read({"gpu", {{"node", "n2"}}, "power_w"}, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].column.floats, std::vector<double>{301.5});
  EXPECT_EQ(out[0].column.ts, std::vector<int64_t>{1704067200'000'000'000});
  EXPECT_EQ(out[0].series.tags, (std::vector<Tag>{{"db", "fleet"}, {"node", "n2"}}));
  ASSERT_TRUE(db->Close().ok());
}

// The server raises its soft descriptor limit to the hard one: the chunk
// store keeps a descriptor for each table file it reads, and each connection
// takes one.
TEST_F(ServeProcessTest, TheServerRaisesItsDescriptorLimitToTheHardOne) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max <= 256) GTEST_SKIP() << "the hard descriptor limit is 256 or less";
  rlimit low = saved;
  low.rlim_cur = 256;  // the child inherits it
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::unique_ptr<Child> server;
  const bool started = StartServer(&server, "limits");
  setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(started) << server->Stderr();
  std::ifstream limits("/proc/" + std::to_string(server->pid()) + "/limits");
  std::string soft, hard;
  for (std::string line; std::getline(limits, line);) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(std::strlen("Max open files")));
    fields >> soft >> hard;
  }
  const std::string want =
      saved.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(saved.rlim_max);
  EXPECT_EQ(soft, want);
  EXPECT_EQ(hard, want);
}

TEST_F(ServeProcessTest, HelpPrintsTheUsageAndExitsZero) {
  std::string out, err;
  EXPECT_EQ(Run({"serve", "--help"}, &out, &err), std::optional<int>(0)) << err;
  EXPECT_EQ(out.rfind("Usage: gpulse serve [--data DIR] [--listen HOST:PORT] [--config FILE]\n", 0),
            0u)
      << out;
  EXPECT_NE(out.find("SIGTERM"), std::string::npos);
}

TEST_F(ServeProcessTest, AnUnknownFlagExits2NamingIt) {
  std::string out, err;
  EXPECT_EQ(Run({"serve", "--bogus", "1"}, &out, &err), std::optional<int>(2));
  EXPECT_EQ(err.rfind("gpulse serve: unknown option --bogus\n", 0), 0u) << err;
  EXPECT_NE(err.find("Usage: gpulse serve"), std::string::npos);
  EXPECT_EQ(Run({"serve", "--listen"}, &out, &err), std::optional<int>(2));
  EXPECT_NE(err.find("missing value after --listen"), std::string::npos) << err;
  EXPECT_EQ(Run({"serve", "--listen", "127.0.0.1:99999"}, &out, &err), std::optional<int>(2));
  EXPECT_NE(err.find("bad port"), std::string::npos) << err;
}

TEST_F(ServeProcessTest, ASecondServerOnTheSameDataDirectoryIsRefused) {
  std::unique_ptr<Child> server;
  ASSERT_TRUE(StartServer(&server, "holder")) << server->Stderr();
  std::string out, err;
  const std::optional<int> status =
      Run({"serve", "--data", DataDir(), "--listen", "127.0.0.1:" + std::to_string(FreePort())},
          &out, &err);
  EXPECT_EQ(status, std::optional<int>(1)) << err;
  EXPECT_NE(err.find("data directory " + DataDir() + " is in use by another process"),
            std::string::npos)
      << err;
  // The first server is unharmed. (The client hangs up before SIGTERM: a
  // keep-alive connection left idle has been seen to hold the stop for the
  // whole drain timeout, 10 s.)
  {
    test::HttpClient client(port_);
    EXPECT_EQ(client.Get("/ping").status, 204);
  }
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitExit(10s), std::optional<int>(0)) << server->Stderr();
}

TEST_F(ServeProcessTest, AConfigFileWithAnUnknownKeyIsRefusedNamingIt) {
  const std::string config = dir_.path() + "/gpulse.json";
  std::ofstream(config) << R"({"listen": "127.0.0.1:0", "storage": {"sync": "none", "fsync": 1}})";
  std::string out, err;
  EXPECT_EQ(Run({"serve", "--data", DataDir(), "--config", config}, &out, &err),
            std::optional<int>(2));
  EXPECT_NE(err.find("storage: unknown key \"fsync\""), std::string::npos) << err;
  EXPECT_NE(err.find(config), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(DataDir()));  // refused before opening anything
}

}  // namespace
}  // namespace gpulse
