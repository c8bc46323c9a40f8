// WebhookSender against a real receiver: the repo's own HttpServer on a free
// port, answering as each test scripts it. Back-offs are milliseconds here so
// that retries happen within the test; timings asserted are lower bounds
// where the sender must wait, and generous upper bounds where it must not.
#include "server/webhook.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server.h"

namespace gpulse::server {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Polls `done` until it holds or `limit` passes; returns whether it held.
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit = 2000ms) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

struct ReceivedRequest {
  std::string method;
  std::string target;
  std::string content_type;
  std::string body;
  Clock::time_point at;
};

// The endpoint under the sender. `answer` gives the response to the n-th
// request (from 0); every request is recorded.
class Receiver {
 public:
  explicit Receiver(std::function<Response(int n, unsigned version)> answer)
      : answer_(std::move(answer)),
        server_(Options(), [this](const Request& r, const RequestContext&) { return Handle(r); }) {
    const Status s = server_.Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  // Answers every request with `status` and an empty body.
  static std::function<Response(int, unsigned)> Always(http::status status) {
    return [status](int, unsigned version) { return Answer(status, version); };
  }

  static Response Answer(http::status status, unsigned version) {
    Response res{status, version};
    res.prepare_payload();
    return res;
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/hook"; }

  std::vector<ReceivedRequest> requests() const {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

  size_t count() const { return requests().size(); }

 private:
  static HttpServerOptions Options() {
    HttpServerOptions options;
    options.port = 0;
    options.threads = 1;
    options.drain_timeout = 500ms;
    return options;
  }

  Response Handle(const Request& r) {
    int n = 0;
    {
      std::lock_guard<std::mutex> l(mu_);
      n = static_cast<int>(requests_.size());
      requests_.push_back({std::string(r.method_string()), std::string(r.target()),
                           std::string(r[http::field::content_type]), r.body(), Clock::now()});
    }
    return answer_(n, r.version());
  }

  const std::function<Response(int, unsigned)> answer_;
  mutable std::mutex mu_;
  std::vector<ReceivedRequest> requests_;  // GUARDED_BY(mu_)
  HttpServer server_;                      // last: its threads call Handle until it is destroyed
};

// An http:// URL on which nothing listens: a server's port, taken and freed.
std::string DeadUrl() {
  HttpServerOptions options;
  options.port = 0;
  HttpServer server(options, [](const Request& r, const RequestContext&) {
    return Receiver::Answer(http::status::ok, r.version());
  });
  EXPECT_TRUE(server.Start().ok());
  const uint16_t port = server.port();
  server.Stop();
  return "http://127.0.0.1:" + std::to_string(port) + "/hook";
}

WebhookOptions FastOptions() {
  WebhookOptions options;
  options.timeout = 1000ms;
  options.first_backoff = 10ms;
  options.max_backoff = 1000ms;
  options.max_attempts = 10;
  return options;
}

TEST(WebhookRetryDelayTest, DoublesFromFirstBackoffUpToTheCapAndHonoursLongerRetryAfter) {
  WebhookOptions options;
  options.first_backoff = 1000ms;
  options.max_backoff = 10000ms;
  struct Case {
    int failed_attempts;
    int status;
    std::string retry_after;
    std::chrono::milliseconds want;
  };
  const std::vector<Case> cases = {
      {1, 0, "", 1000ms},                         // a connection error: the first back-off
      {2, 500, "", 2000ms},                       // doubles
      {4, 503, "", 8000ms},                       // and again
      {5, 503, "", 10000ms},                      // capped
      {60, 0, "", 10000ms},                       // no overflow however many failures
      {1, 429, "3", 3000ms},                      // Retry-After asks for longer: honoured
      {3, 503, " 2 ", 4000ms},                    // asks for shorter: the back-off stands
      {1, 503, "20", 10000ms},                    // asks past the cap: capped
      {1, 429, "99999999999999999999", 10000ms},  // absurd: capped, no overflow
      {1, 500, "5", 1000ms},  // only 429 and 503 carry a Retry-After worth honouring
      {1, 503, "Wed, 21 Oct 2015 07:28:00 GMT", 1000ms},  // date form: ignored
      {1, 503, "3s", 1000ms},                             // not a number: ignored
  };
  for (const Case& c : cases) {
    EXPECT_EQ(WebhookRetryDelay(options, c.failed_attempts, c.status, c.retry_after), c.want)
        << "attempts " << c.failed_attempts << " status " << c.status << " retry_after '"
        << c.retry_after << "'";
  }
}

TEST(WebhookSenderTest, DeliversJsonBodyAsApplicationJson) {
  Receiver receiver(Receiver::Always(http::status::no_content));
  WebhookSender sender(FastOptions());
  sender.Start();
  const std::string json = R"({"alert":"gpu_hot","state":"firing","value":91.5})";
  sender.Send(receiver.url(), json);
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().delivered == 1; }));
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/hook");
  EXPECT_EQ(requests[0].content_type, "application/json");
  EXPECT_EQ(requests[0].body, json);
  const WebhookStats stats = sender.Stats();
  EXPECT_EQ(stats.retries, 0u);
  EXPECT_EQ(stats.given_up, 0u);
  EXPECT_EQ(stats.queued, 0u);
  EXPECT_EQ(stats.last_error, "");
}

TEST(WebhookSenderTest, RetriesServiceUnavailableWithBackoffThenDelivers) {
  Receiver receiver([](int n, unsigned version) {
    return Receiver::Answer(n < 2 ? http::status::service_unavailable : http::status::no_content,
                            version);
  });
  WebhookOptions options = FastOptions();
  options.first_backoff = 20ms;
  WebhookSender sender(options);
  sender.Start();
  const auto sent_at = Clock::now();
  sender.Send(receiver.url(), "{}");
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().delivered == 1; }));
  const WebhookStats stats = sender.Stats();
  EXPECT_EQ(stats.retries, 2u);
  EXPECT_EQ(stats.given_up, 0u);
  EXPECT_NE(stats.last_error.find("HTTP 503"), std::string::npos) << stats.last_error;
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 3u);
  // Waited 20 ms, then 40 ms: the back-off doubles.
  EXPECT_GE(requests[1].at - requests[0].at, 20ms);
  EXPECT_GE(requests[2].at - requests[1].at, 40ms);
  EXPECT_GE(requests[2].at - sent_at, 60ms);
}

TEST(WebhookSenderTest, HonoursRetryAfterSecondsFromTheWire) {
  Receiver receiver([](int n, unsigned version) {
    if (n > 0) return Receiver::Answer(http::status::ok, version);
    Response res = Receiver::Answer(http::status::too_many_requests, version);
    res.set(http::field::retry_after, "1");
    return res;
  });
  WebhookSender sender(FastOptions());  // first_backoff 10 ms
  sender.Start();
  sender.Send(receiver.url(), "{}");
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().delivered == 1; }, 3000ms));
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(requests[1].at - requests[0].at, 1000ms);
}

TEST(WebhookSenderTest, ClientErrorIsGivenUpAfterOneAttempt) {
  Receiver receiver(Receiver::Always(http::status::bad_request));
  WebhookSender sender(FastOptions());
  sender.Start();
  sender.Send(receiver.url(), "{not json");
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().given_up == 1; }));
  // Long enough for a retry at the 10 ms back-off to have shown up.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(receiver.count(), 1u);
  const WebhookStats stats = sender.Stats();
  EXPECT_EQ(stats.retries, 0u);
  EXPECT_EQ(stats.delivered, 0u);
  EXPECT_EQ(stats.queued, 0u);
  EXPECT_NE(stats.last_error.find(receiver.url()), std::string::npos) << stats.last_error;
  EXPECT_NE(stats.last_error.find("400"), std::string::npos) << stats.last_error;
}

TEST(WebhookSenderTest, DeadEndpointIsRetriedThenGivenUpAfterMaxAttempts) {
  const std::string dead = DeadUrl();
  WebhookOptions options = FastOptions();
  options.max_attempts = 4;
  WebhookSender sender(options);
  sender.Start();
  const auto sent_at = Clock::now();
  sender.Send(dead, "{}");
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().given_up == 1; }));
  // Three back-offs: 10 + 20 + 40 ms.
  EXPECT_GE(Clock::now() - sent_at, 70ms);
  const WebhookStats stats = sender.Stats();
  EXPECT_EQ(stats.retries, 3u);
  EXPECT_EQ(stats.delivered, 0u);
  EXPECT_EQ(stats.queued, 0u);
  EXPECT_NE(stats.last_error.find(dead), std::string::npos) << stats.last_error;
  EXPECT_NE(stats.last_error.find("connect"), std::string::npos) << stats.last_error;
  EXPECT_NE(stats.last_error.find("4 attempts"), std::string::npos) << stats.last_error;
}

TEST(WebhookSenderTest, SendReturnsAtOnceWhileRetryingADeadEndpoint) {
  WebhookOptions options = FastOptions();
  options.first_backoff = 60s;
  WebhookSender sender(options);
  sender.Start();
  const std::string dead = DeadUrl();
  sender.Send(dead, "{}");
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().retries == 1; }));
  const auto start = Clock::now();
  for (int i = 0; i < 1000; ++i) sender.Send(dead, R"({"n":)" + std::to_string(i) + "}");
  EXPECT_LT(Clock::now() - start, 100ms);
}

TEST(WebhookSenderTest, SendReturnsAtOnceWhileAnAttemptHangs) {
  // Accepts connections (the kernel's backlog does) but never answers, so the
  // sender's thread sits in an attempt until its timeout.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor silent(
      io, {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(0)});
  const std::string url =
      "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/hook";
  WebhookOptions options = FastOptions();
  options.timeout = 300ms;
  WebhookSender sender(options);
  sender.Start();
  sender.Send(url, "{}");
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().queued == 0; }));  // taken: in flight
  const auto start = Clock::now();
  for (int i = 0; i < 1000; ++i) sender.Send(url, R"({"n":)" + std::to_string(i) + "}");
  EXPECT_LT(Clock::now() - start, 100ms);
  EXPECT_EQ(sender.Stats().queued, 1000u);  // none went out: the one in flight still hangs
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().retries >= 1; }));
  EXPECT_NE(sender.Stats().last_error.find("no answer within 300 ms"), std::string::npos)
      << sender.Stats().last_error;
}

TEST(WebhookSenderTest, WaitingNotificationDoesNotDelayOthers) {
  Receiver live(Receiver::Always(http::status::ok));
  WebhookOptions options = FastOptions();
  options.first_backoff = 60s;
  WebhookSender sender(options);
  sender.Start();
  sender.Send(DeadUrl(), "{}");
  // The dead one, queued first, has failed once and now waits a minute.
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().retries == 1; }));
  const auto start = Clock::now();
  sender.Send(live.url(), R"({"live":true})");
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().delivered == 1; }, 1000ms));
  EXPECT_LT(Clock::now() - start, 1000ms);
  EXPECT_EQ(sender.Stats().queued, 1u);  // the dead one, still waiting
}

TEST(WebhookSenderTest, FullQueueDropsTheOldest) {
  Receiver receiver(Receiver::Always(http::status::ok));
  WebhookOptions options = FastOptions();
  options.max_queued = 3;
  WebhookSender sender(options);
  // Not started yet, so everything stays queued.
  for (int i = 1; i <= 5; ++i) sender.Send(receiver.url(), std::to_string(i));
  WebhookStats stats = sender.Stats();
  EXPECT_EQ(stats.dropped, 2u);
  EXPECT_EQ(stats.queued, 3u);
  sender.Start();
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().delivered == 3; }));
  std::vector<std::string> bodies;
  for (const ReceivedRequest& r : receiver.requests()) bodies.push_back(r.body);
  EXPECT_EQ(bodies, (std::vector<std::string>{"3", "4", "5"}));
}

TEST(WebhookSenderTest, NonHttpUrlIsGivenUpAtOnce) {
  WebhookSender sender(FastOptions());
  sender.Send("ftp://hooks.example.com/alert", "{}");
  const WebhookStats stats = sender.Stats();
  EXPECT_EQ(stats.given_up, 1u);
  EXPECT_EQ(stats.queued, 0u);
  EXPECT_NE(stats.last_error.find("ftp://hooks.example.com/alert"), std::string::npos);
  EXPECT_NE(stats.last_error.find("not an http:// or https:// URL"), std::string::npos)
      << stats.last_error;
}

TEST(WebhookSenderTest, StopIsPromptWhileLongBackoffsArePending) {
  WebhookOptions options = FastOptions();
  options.first_backoff = 5min;
  options.max_backoff = 10min;
  WebhookSender sender(options);
  sender.Start();
  const std::string dead = DeadUrl();
  for (int i = 0; i < 3; ++i) sender.Send(dead, "{}");
  ASSERT_TRUE(WaitFor([&] { return sender.Stats().retries == 3; }));
  const auto start = Clock::now();
  sender.Stop();
  EXPECT_LT(Clock::now() - start, 1s);
  const WebhookStats stats = sender.Stats();
  EXPECT_EQ(stats.queued, 0u);  // discarded, not delivered
  EXPECT_EQ(stats.delivered, 0u);
}

}  // namespace
}  // namespace gpulse::server
