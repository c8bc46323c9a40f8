// Long requests (queries) on threads of their own: in the hostile probe,
// eight heavy queries held every I/O thread, /ping went unanswered for 50 s
// and a write waited over 120 s. Now a request the server calls long runs off
// the I/O threads, at most long_request_threads at once with a bounded
// number waiting (more get a 503), and may stream its answer in chunks.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "server/http_server.h"
#include "tests/support/http_client.h"

namespace gpulse::server {
namespace {

using namespace std::chrono_literals;
using test::HttpClient;
using test::HttpReply;

// A server with one I/O thread whose /slow takes `slow` on a long-request
// thread and whose /stream answers in three chunks.
class LongServer {
 public:
  LongServer(int long_threads, size_t max_waiting, std::chrono::milliseconds slow,
             std::chrono::milliseconds drain = 10s)
      : server_(Options(long_threads, max_waiting, drain),
                [this, slow](const Request& request, const RequestContext& context) {
                  return Handle(request, context, slow);
                }) {
    EXPECT_TRUE(server_.Start().ok());
  }

  uint16_t port() const { return server_.port(); }
  HttpServer& server() { return server_; }
  std::atomic<int> streamed_ok{0};

 private:
  static HttpServerOptions Options(int long_threads, size_t max_waiting,
                                   std::chrono::milliseconds drain) {
    HttpServerOptions o;
    o.port = 0;
    o.drain_timeout = drain;
    o.threads = 1;  // every connection on one loop
    o.long_request = [](const Request& r) { return r.target() != "/ping"; };
    o.long_request_threads = long_threads;
    o.max_long_waiting = max_waiting;
    return o;
  }

  Response Handle(const Request& request, const RequestContext& context,
                  std::chrono::milliseconds slow) {
    Response res{http::status::no_content, request.version()};
    if (request.target() == "/slow") std::this_thread::sleep_for(slow);
    if (request.target() == "/stream" && context.stream != nullptr) {
      Response header{http::status::ok, request.version()};
      header.set(http::field::content_type, "text/plain");
      header.keep_alive(request.keep_alive());
      const bool ok = context.stream->Start(header) && context.stream->Write("ab") &&
                      context.stream->Write("") && context.stream->Write("cde") &&
                      context.stream->Finish();
      if (ok) ++streamed_ok;
    }
    return res;
  }

  HttpServer server_;
};

TEST(HttpServerLongTest, PingIsAnsweredWhileALongRequestRunsOnTheSameLoop) {
  LongServer server(1, 4, 1500ms);
  HttpClient busy(server.port()), other(server.port());
  const auto started = std::chrono::steady_clock::now();
  auto slow = std::async(std::launch::async, [&] { return busy.Get("/slow").status; });
  while (server.server().long_requests() == 0) std::this_thread::sleep_for(1ms);
  const auto ping_started = std::chrono::steady_clock::now();
  EXPECT_EQ(other.Get("/ping").status, 204);
  const auto ping = std::chrono::steady_clock::now() - ping_started;
  EXPECT_EQ(slow.get(), 204);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 1500ms);
  // On the I/O thread, the ping would have waited for the whole /slow.
  EXPECT_LT(ping, 500ms);
}

TEST(HttpServerLongTest, PastTheWaitingBoundALongRequestGetsA503WithRetryAfter) {
  LongServer server(1, 0, 800ms);
  HttpClient first(server.port()), second(server.port());
  auto slow = std::async(std::launch::async, [&] { return first.Get("/slow").status; });
  while (server.server().long_requests() == 0) std::this_thread::sleep_for(1ms);
  const HttpReply refused = second.Get("/slow");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.headers.at("Retry-After"), "1");
  EXPECT_NE(refused.body.find("query.threads + query.max_waiting"), std::string::npos)
      << refused.body;
  EXPECT_EQ(server.server().connection_stats().queries_in_flight, 1u);
  EXPECT_EQ(slow.get(), 204);
  EXPECT_EQ(second.Get("/slow").status, 204);  // its turn now
}

TEST(HttpServerLongTest, AStreamedAnswerArrivesInChunksAndKeepsTheConnection) {
  LongServer server(2, 4, 0ms);
  HttpClient client(server.port());
  for (int i = 0; i < 2; ++i) {  // twice on one keep-alive connection
    const HttpReply r = client.Get("/stream");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "abcde");
    EXPECT_EQ(r.headers.at("Transfer-Encoding"), "chunked");
    EXPECT_TRUE(r.keep_alive);
  }
  // The handler counts once Finish returns, which can be after the client
  // has read the last chunk.
  for (int k = 0; k < 5000 && server.streamed_ok.load() < 2; ++k) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(server.streamed_ok.load(), 2);
  EXPECT_EQ(client.Get("/slow").status, 204);
}

// `n` clients that each GET /slow at once; made once the server counts
// all n long requests.
struct Clients {
  Clients(LongServer* server, int n) {
    for (int i = 0; i < n; ++i) {
      clients.push_back(std::make_unique<HttpClient>(server->port()));
      replies.push_back(std::async(std::launch::async,
                                   [c = clients.back().get()] { return c->Get("/slow").status; }));
    }
    while (server->server().long_requests() < static_cast<size_t>(n)) {
      std::this_thread::sleep_for(1ms);
    }
  }
  std::vector<std::unique_ptr<HttpClient>> clients;
  std::vector<std::future<int>> replies;
};

TEST(HttpServerLongTest, StopEndsWithLongRequestsWaiting) {
  auto server = std::make_unique<LongServer>(1, 8, 300ms);
  Clients clients(server.get(), 4);
  const auto started = std::chrono::steady_clock::now();
  server->server().Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  for (auto& r : clients.replies) {
    const int status = r.get();
    EXPECT_TRUE(status == 204 || status == -1) << status;  // answered, or closed at the stop
  }
}

// Past the drain timeout, long requests still waiting for a thread are
// dropped with their connections (under the sanitizers: nothing of a session
// outlives the loop its socket belongs to).
TEST(HttpServerLongTest, StopDropsLongRequestsStillWaiting) {
  auto server = std::make_unique<LongServer>(1, 8, 500ms, 100ms);
  Clients clients(server.get(), 4);
  server.reset();  // Stop, then the server is gone
  int answered = 0;
  for (auto& r : clients.replies) answered += r.get() == 204;
  EXPECT_LE(answered, 2);  // the one running, perhaps the next; the others were dropped
}

}  // namespace
}  // namespace gpulse::server
