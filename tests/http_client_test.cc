// HttpClient (server/http_client.h), gpulse's one HTTP client: it keeps its
// connection to a real `gpulse serve` API between requests and comes back
// when the server closed it; a server that never answers ends a request at
// its deadline, or at once when the caller cancels it; URLs parse as the
// shell's --url and the scrape targets write them.
#include "server/http_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "server/config.h"
#include "server/metrics.h"
#include "server/sources.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_server.h"

namespace gpulse::server {
namespace {

using boost::beast::http::verb;

TEST(HttpClientTest, KeepsItsConnectionAndComesBackAfterTheServerClosedIt) {
  storage::ScratchDir dir;
  ServerConfig config;
  test::UseQuietTestDb(&config.db);
  ServerMetrics metrics;
  SourceRegistry sources;
  test::TestServer server;
  // The server closes a connection idle for 300 ms.
  ASSERT_TRUE(
      server.Start(dir.path(), config, &metrics, &sources, std::chrono::milliseconds(300)).ok());
  std::unique_ptr<HttpClient> client;
  ASSERT_TRUE(
      HttpClient::Open("http://127.0.0.1:" + std::to_string(server.port()), {}, &client).ok());
  for (int i = 0; i < 3; ++i) {
    HttpReply reply;
    ASSERT_TRUE(client->Send(verb::get, "/ping", "", "", "", &reply).ok());
    EXPECT_EQ(reply.status, 204);
  }
  EXPECT_EQ(metrics.connections().open, 1u) << "three requests, one connection";

  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // the server hung up
  HttpReply reply;
  const Status again = client->Send(verb::post, "/write?db=x", "text/plain", "", "m v=1 1", &reply);
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(reply.status, 204);
}

// A listening socket that never accepts: connecting succeeds (the kernel
// queues the connection), and no answer ever comes.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool ok() const { return port_ != 0; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

TEST(HttpClientTest, AServerThatNeverAnswersEndsARequestAtItsDeadlineOrItsCancel) {
  SilentListener silent;
  ASSERT_TRUE(silent.ok());
  HttpClient::Options timed;
  timed.timeout = std::chrono::milliseconds(200);
  std::unique_ptr<HttpClient> client;
  ASSERT_TRUE(HttpClient::Open(silent.url(), timed, &client).ok());
  HttpReply reply;
  auto start = std::chrono::steady_clock::now();
  Status s = client->Send(verb::get, "/ping", "", "", "", &reply);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("no answer within 200 ms"), std::string::npos) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));

  std::atomic<int> polls{0};
  HttpClient::Options cancelled;
  cancelled.cancelled = [&polls] { return ++polls >= 4; };  // about 200 ms in
  ASSERT_TRUE(HttpClient::Open(silent.url(), cancelled, &client).ok());
  start = std::chrono::steady_clock::now();
  s = client->Send(verb::get, "/query?q=SHOW%20DATABASES", "", "", "", &reply);
  EXPECT_TRUE(s.IsCancelled()) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(HttpClientTest, UrlsParseAsTheShellAndTheScrapeTargetsWriteThem) {
  HttpUrl u;
  ASSERT_TRUE(ParseHttpUrl("http://node7:9400/metrics", &u).ok());
  EXPECT_EQ(u.host, "node7");
  EXPECT_EQ(u.port, "9400");
  EXPECT_EQ(u.target, "/metrics");
  EXPECT_EQ(u.Authority(), "node7:9400");
  ASSERT_TRUE(ParseHttpUrl("http://[::1]:8086", &u).ok());
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.target, "/");
  EXPECT_EQ(u.Authority(), "[::1]:8086");
  ASSERT_TRUE(ParseHttpUrl("http://collector", &u, "8086").ok());
  EXPECT_EQ(u.port, "8086");
  ASSERT_TRUE(ParseHttpUrl("http://collector/x", &u).ok());
  EXPECT_EQ(u.port, "80");
  ASSERT_TRUE(ParseHttpUrl("https://collector/api/v1/write", &u).ok());
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.port, "443");
  EXPECT_TRUE(ParseHttpUrl("ftp://collector", &u).IsInvalidArgument());
  EXPECT_TRUE(ParseHttpUrl("http://[::1", &u).IsInvalidArgument());
  EXPECT_TRUE(ParseHttpUrl("http://:80", &u).IsInvalidArgument());
}

}  // namespace
}  // namespace gpulse::server
