// The HTTP server end to end on a loopback port: every endpoint, InfluxDB 1.x
// and 2.x writes, gzip, partial writes, limits, authentication, keep-alive,
// stalled clients, Prometheus scrapes, and a restart with the data kept.

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <csignal>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "engine/gpulse.h"
#include "server/http_api.h"
#include "server/http_server.h"
#include "server/scraper.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_server.h"

namespace gpulse::server {
namespace {

using test::HttpClient;
using test::HttpReply;
using namespace std::chrono_literals;

std::string Gzip(const std::string& data) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&s, data.size()) + 64, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The header the server prints itself is the one Beast's serializer would
// send: status line, every field in order, the blank line.
TEST(AppendHeaderTest, PrintsWhatBeastsSerializerPrints) {
  std::vector<Response> responses;
  Response ok{http::status::ok, 11};
  ok.set(http::field::content_type, "application/json");
  ok.set("X-Influxdb-Version", "1.8.10");
  ok.body() = "{}";
  ok.prepare_payload();
  responses.push_back(ok);
  Response none{http::status::no_content, 11};
  none.prepare_payload();
  responses.push_back(none);
  Response old{http::status::not_found, 10};
  old.keep_alive(true);
  old.body() = "no";
  old.prepare_payload();
  responses.push_back(old);
  Response closing{http::status::payload_too_large, 11};
  closing.keep_alive(false);
  closing.set(http::field::www_authenticate, "Token realm=\"gpulse\"");
  closing.prepare_payload();
  responses.push_back(closing);
  Response custom{http::status::service_unavailable, 11};
  custom.reason("Busy Flushing");
  custom.set("Retry-After", "1");
  responses.push_back(custom);
  for (const Response& r : responses) {
    std::ostringstream beast;
    beast << r.base();  // Beast's own printing of a header
    std::string ours;
    AppendHeader(r, &ours);
    EXPECT_EQ(ours, beast.str());
  }
  std::string ours;
  AppendHeader(custom, &ours);
  EXPECT_TRUE(ours.starts_with("HTTP/1.1 503 Busy Flushing\r\nRetry-After: 1\r\n")) << ours;
}

// A running server on an embedded Db in a scratch directory.
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }
  void TearDown() override { Stop(); }

  void Start() {
    test::UseQuietTestDb(&config_.db);
    const Status s = server_.Start(dir_.path(), config_, &metrics_, &sources_, read_timeout_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  void Stop() {
    const Status s = server_.Stop();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  void Restart() {
    Stop();
    Start();
  }

  // The int64 values of field `field` of all series with tag node=`node`.
  std::vector<int64_t> Ints(const std::string& node, const std::string& field = "util",
                            const std::string& measurement = "gpu") {
    std::vector<SeriesColumn> out;
    const Status s = server_.db()->Read({measurement, {{"node", node}}, field}, &out);
    std::vector<int64_t> values;
    if (!s.ok()) return values;
    for (const SeriesColumn& c : out)
      values.insert(values.end(), c.column.ints.begin(), c.column.ints.end());
    return values;
  }

  storage::ScratchDir dir_;
  ServerConfig config_;
  std::chrono::milliseconds read_timeout_{5000};
  ServerMetrics metrics_;
  SourceRegistry sources_;
  test::TestServer server_;
};

TEST_F(ServerTest, PingAnswersWithVersionHeaders) {
  HttpClient client(server_.port());
  HttpReply r = client.Get("/ping");
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.headers["X-Influxdb-Version"], "1.8.10");
  EXPECT_EQ(r.headers["X-Gpulse-Version"], Version());
  EXPECT_EQ(client.Send(http::verb::head, "/ping").status, 204);
}

TEST_F(ServerTest, HeadAnswersCarryNoBodyOnKeepAlive) {
  HttpClient client(server_.port());
  const HttpReply head = client.Send(http::verb::head, "/health");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_NE(head.headers.at("Content-Length"), "0");
  // The same connection still reads the next answer from its first byte.
  const HttpReply get = client.Get("/health");
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(nlohmann::json::parse(get.body)["status"], "pass");
  EXPECT_EQ(std::to_string(get.body.size()), head.headers.at("Content-Length"));
}

TEST_F(ServerTest, InfluxV1WriteStoresEveryType) {
  HttpClient client(server_.port());
  const HttpReply r = client.Post(
      "/write?db=telemetry&precision=s",
      "gpu,node=n1,gpu=0 util=93i,power_w=612.3,ok=true,job=\"train-7\",ecc=3u 1704067200\n");
  ASSERT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(Ints("n1"), std::vector<int64_t>{93});
  std::vector<SeriesColumn> out;
  ASSERT_TRUE(server_.db()->Read({"gpu", {{"db", "telemetry"}}, "job"}, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].column.strings, std::vector<std::string>{"train-7"});
  EXPECT_EQ(out[0].column.ts, std::vector<int64_t>{1704067200'000'000'000});
  std::vector<FieldInfo> fields;
  ASSERT_TRUE(server_.db()->ListFields("gpu", &fields).ok());
  ASSERT_EQ(fields.size(), 5u);
  EXPECT_EQ(fields[0].name, "ecc");
  EXPECT_EQ(fields[0].type, FieldType::kUint);
  EXPECT_EQ(fields[2].name, "ok");
  EXPECT_EQ(fields[2].type, FieldType::kBool);
}

TEST_F(ServerTest, EscapedTextSurvivesTheZeroCopyPath) {
  // Unescaped text lives in the parser's per-line scratch: every line must
  // keep its own, not the last line's.
  HttpClient client(server_.port());
  const HttpReply r = client.Post("/write",
                                  "gpu,node=a\\ b,gpu=0 util=1i,job=\"x \\\"1\\\"\" 1\n"
                                  "gpu,node=c\\,d,gpu=0 util=2i,job=\"y\" 2\n");
  ASSERT_EQ(r.status, 204) << r.body;
  std::vector<std::string> nodes;
  ASSERT_TRUE(server_.db()->ListTagValues("gpu", "node", &nodes).ok());
  EXPECT_EQ(nodes, (std::vector<std::string>{"a b", "c,d"}));
  std::vector<SeriesColumn> out;
  ASSERT_TRUE(server_.db()->Read({"gpu", {{"node", "a b"}}, "job"}, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].column.strings, std::vector<std::string>{"x \"1\""});
}

TEST_F(ServerTest, InfluxV2WriteNeedsABucket) {
  HttpClient client(server_.port());
  EXPECT_EQ(
      client.Post("/api/v2/write?org=o&bucket=b&precision=ms", "gpu,node=n2 util=5i 1000").status,
      204);
  EXPECT_EQ(Ints("n2"), std::vector<int64_t>{5});
  const HttpReply r = client.Post("/api/v2/write?org=o", "gpu,node=n2 util=6i 2000");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("bucket"), std::string::npos);
  EXPECT_EQ(client.Post("/api/v2/write?bucket=b&precision=h", "gpu,node=n2 util=6i 2").status, 400);
}

TEST_F(ServerTest, PartialWriteStoresGoodLinesAndNamesBadOnes) {
  HttpClient client(server_.port());
  const std::string body =
      "gpu,node=n3 util=1i 1\n"
      "gpu,node=n3 util= 2\n"  // line 2: no value
      "gpu,node=n3 util=3i 3\n"
      "gpu,node=n3 util=4.5 4\n"     // line 4: float into an integer field
      "gpu,node=n3,bad util=5i 5\n"  // line 5: tag without '='
      "gpu,node=n3 util=6i 6\n";
  const HttpReply r = client.Post("/write", body);
  ASSERT_EQ(r.status, 400);
  const auto json = nlohmann::json::parse(r.body);
  EXPECT_EQ(json["rejected"], 3);
  EXPECT_EQ(json["written"], 3);
  ASSERT_EQ(json["lines"].size(), 3u);
  EXPECT_EQ(json["lines"][0]["line"], 2);
  EXPECT_EQ(json["lines"][1]["line"], 4);
  EXPECT_NE(json["lines"][1]["error"].get<std::string>().find("integer"), std::string::npos);
  EXPECT_EQ(json["lines"][2]["line"], 5);
  EXPECT_GT(json["lines"][2]["column"], 1);
  EXPECT_NE(json["error"].get<std::string>().find("partial write"), std::string::npos);
  EXPECT_EQ(Ints("n3"), (std::vector<int64_t>{1, 3, 6}));
}

TEST_F(ServerTest, GzipBodiesAreInflatedAndBombsStopped) {
  HttpClient client(server_.port());
  std::string body;
  for (int i = 0; i < 100; ++i)
    body += "gpu,node=n4 util=" + std::to_string(i) + "i " + std::to_string(i) + "\n";
  HttpReply r = client.Post("/write", Gzip(body), {{"Content-Encoding", "gzip"}});
  ASSERT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(Ints("n4").size(), 100u);

  r = client.Post("/write", "not gzip at all", {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("gzip"), std::string::npos);

  // 200 MiB of newlines compress to about 200 KiB: inflating must stop at the limit.
  const std::string bomb = Gzip(std::string(200u << 20, '\n'));
  ASSERT_LT(bomb.size(), config_.max_body_bytes);
  r = client.Post("/write", bomb, {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(client.Post("/write", "x", {{"Content-Encoding", "br"}}).status, 415);
}

TEST_F(ServerTest, BodyOverTheLimitIs413) {
  Stop();
  config_.max_body_bytes = 1000;
  Start();
  HttpClient client(server_.port());
  EXPECT_EQ(client.Post("/write", std::string(2000, '#')).status, 413);
  HttpClient again(server_.port());
  EXPECT_EQ(again.Post("/write", "gpu,node=n5 util=1i 1").status, 204);
}

TEST_F(ServerTest, UnknownPathsAre404AndWrongMethods405) {
  HttpClient client(server_.port());
  EXPECT_EQ(client.Get("/nope").status, 404);
  EXPECT_EQ(client.Get("/write").status, 405);
  EXPECT_EQ(client.Post("/ping", "").status, 405);
}

TEST_F(ServerTest, KeepAliveAndChunkedBodies) {
  // Several requests on one connection, one of them with a chunked body.
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), server_.port()});
  const std::string requests =
      "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /write HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "c\r\ngpu,node=n6 \r\n"
      "b\r\nutil=42i 7\n\r\n"
      "0\r\n\r\n"
      "GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  asio::write(socket, asio::buffer(requests));
  std::string replies;
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(replies), ec);  // until the server closes
  size_t count = 0;
  for (size_t at = replies.find("HTTP/1.1 204"); at != std::string::npos;
       at = replies.find("HTTP/1.1 204", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 3u) << replies;
  EXPECT_EQ(Ints("n6"), std::vector<int64_t>{42});
}

TEST_F(ServerTest, ExpectContinueGetsA100BeforeTheBody) {
  // curl sends `Expect: 100-continue` for bodies over 1 MB and waits (a
  // second) for the 100 before sending the body: the server answers it at once.
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), server_.port()});
  const std::string body = "gpu,node=n9 util=5i 9\n";
  asio::write(socket, asio::buffer("POST /write HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                                   "Content-Length: " +
                                   std::to_string(body.size()) + "\r\n\r\n"));
  std::string reply;
  boost::system::error_code ec;
  asio::read_until(socket, asio::dynamic_buffer(reply), "\r\n\r\n", ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(reply.rfind("HTTP/1.1 100 Continue\r\n", 0), 0u) << reply;
  reply.erase(0, reply.find("\r\n\r\n") + 4);
  asio::write(socket, asio::buffer(body));
  asio::read_until(socket, asio::dynamic_buffer(reply), "\r\n\r\n", ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(reply.rfind("HTTP/1.1 204", 0), 0u) << reply;
  EXPECT_EQ(Ints("n9"), std::vector<int64_t>{5});
}

// How long until the server hangs up on `socket`, which sends nothing more.
std::chrono::steady_clock::duration TimeToHangUp(boost::asio::ip::tcp::socket& socket) {
  const auto started = std::chrono::steady_clock::now();
  char byte;
  boost::system::error_code ec;
  socket.read_some(boost::asio::buffer(&byte, 1), ec);  // returns when the server hangs up
  EXPECT_TRUE(ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset)
      << ec.message();
  return std::chrono::steady_clock::now() - started;
}

TEST_F(ServerTest, StalledClientTimesOut) {
  Stop();
  read_timeout_ = std::chrono::milliseconds(300);
  Start();
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), server_.port()});
  asio::write(socket, asio::buffer(std::string("POST /write HTTP/1.1\r\nHost: x\r\n")));
  EXPECT_LT(TimeToHangUp(socket), std::chrono::seconds(5));
}

// The read timeout is for each request and response, not the connection:
// one connection busy for three times the timeout stays open, and once it
// falls silent the server closes it after about the timeout. (The timer is
// armed once and moves with the deadline.)
TEST_F(ServerTest, TheReadTimeoutMovesWithEachRequest) {
  Stop();
  read_timeout_ = std::chrono::milliseconds(300);
  Start();
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), server_.port()});
  namespace asio = boost::asio;
  const auto started = std::chrono::steady_clock::now();
  int answered = 0;
  auto last_reply = started;
  while (std::chrono::steady_clock::now() - started < std::chrono::milliseconds(900)) {
    asio::write(socket, asio::buffer(std::string("GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")));
    std::string reply;
    asio::read_until(socket, asio::dynamic_buffer(reply), "\r\n\r\n");
    last_reply = std::chrono::steady_clock::now();
    ASSERT_EQ(reply.rfind("HTTP/1.1 204", 0), 0u) << reply;
    ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(answered, 6);
  // The server's timeout for the next request started when it wrote the
  // last reply, a little before the client read it.
  TimeToHangUp(socket);
  const auto silent_for = std::chrono::steady_clock::now() - last_reply;
  EXPECT_GE(silent_for, std::chrono::milliseconds(250));
  EXPECT_LT(silent_for, std::chrono::seconds(3));
}

// An HttpServer whose /slow requests hold their I/O thread for `hold`
// (a long query, as the loop sees it); everything else is a 204.
class SlowServer {
 public:
  SlowServer(int threads, std::chrono::milliseconds read_timeout, std::chrono::milliseconds hold)
      : server_(Options(threads, read_timeout), [hold](const Request& r, const RequestContext&) {
          if (r.target() == "/slow") std::this_thread::sleep_for(hold);
          Response res{http::status::no_content, r.version()};
          res.keep_alive(r.keep_alive());
          res.prepare_payload();
          return res;
        }) {
    EXPECT_TRUE(server_.Start().ok());
  }

  // A connection; the server deals them to its loops in turn, the first to
  // loop 0.
  std::unique_ptr<boost::asio::ip::tcp::socket> Connect() {
    auto socket = std::make_unique<boost::asio::ip::tcp::socket>(io_);
    socket->connect({boost::asio::ip::make_address("127.0.0.1"), server_.port()});
    return socket;
  }

  // Sends a GET of `target` on `socket` and returns the status line.
  static std::string Get(boost::asio::ip::tcp::socket& socket, const std::string& target) {
    boost::asio::write(socket,
                       boost::asio::buffer("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    std::string reply;
    boost::system::error_code ec;
    boost::asio::read_until(socket, boost::asio::dynamic_buffer(reply), "\r\n\r\n", ec);
    return ec ? "error: " + ec.message() : reply.substr(0, reply.find("\r\n"));
  }

 private:
  static HttpServerOptions Options(int threads, std::chrono::milliseconds read_timeout) {
    HttpServerOptions o;
    o.port = 0;
    o.threads = threads;
    o.read_timeout = read_timeout;
    return o;
  }

  boost::asio::io_context io_;
  HttpServer server_;
};

// While a long request holds the first I/O thread, a new connection is still
// accepted and answered (by the other thread): accepting has a thread of its
// own.
TEST(HttpServerLoopsTest, ALongRequestDoesNotHoldUpNewConnections) {
  SlowServer server(2, std::chrono::milliseconds(30000), std::chrono::milliseconds(3000));
  auto busy = server.Connect();  // loop 0
  auto slow = std::async(std::launch::async, [&] { return SlowServer::Get(*busy, "/slow"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // /slow is running
  const auto started = std::chrono::steady_clock::now();
  auto other = server.Connect();  // loop 1
  EXPECT_EQ(SlowServer::Get(*other, "/ping"), "HTTP/1.1 204 No Content");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1500));
  EXPECT_EQ(slow.get(), "HTTP/1.1 204 No Content");
}

// A client whose request waits on a loop that another request holds for
// longer than the read timeout is not cut off for the server's delay: it
// gets the timeout again from when the loop is free.
TEST(HttpServerLoopsTest, TimeALoopWasHeldDoesNotCountAgainstItsClients) {
  SlowServer server(1, std::chrono::milliseconds(300), std::chrono::milliseconds(1000));
  auto waiting = server.Connect();
  auto holder = server.Connect();
  // Half a request: the server is reading it, timed, when the loop is taken.
  boost::asio::write(
      *waiting, boost::asio::buffer(
                    std::string("POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab")));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto slow = std::async(std::launch::async, [&] { return SlowServer::Get(*holder, "/slow"); });
  EXPECT_EQ(slow.get(), "HTTP/1.1 204 No Content");  // the loop held 1 s, past 300 ms
  // The rest, at once: the request completes.
  boost::asio::write(*waiting, boost::asio::buffer(std::string("cd")));
  std::string reply;
  boost::system::error_code ec;
  boost::asio::read_until(*waiting, boost::asio::dynamic_buffer(reply), "\r\n\r\n", ec);
  EXPECT_FALSE(ec) << "the server closed a client it had kept waiting: " << ec.message();
  EXPECT_EQ(reply.rfind("HTTP/1.1 204", 0), 0u) << reply;
  // A client that then stays silent is still closed after about the timeout.
  boost::asio::write(*waiting, boost::asio::buffer(std::string("POST /write HTTP/1.1\r\n")));
  const auto waited = TimeToHangUp(*waiting);
  EXPECT_LT(waited, std::chrono::seconds(3));
}

TEST_F(ServerTest, TokensAreCheckedWithScopes) {
  Stop();
  config_.tokens = {{"writer", "secret-write-token", {"*"}, {"fleet"}},
                    {"reader", "secret-read-token", {"*"}, {}}};
  Start();
  HttpClient client(server_.port());
  const std::string line = "gpu,node=n7 util=1i 1";
  EXPECT_EQ(client.Post("/write?db=fleet", line).status, 401);
  EXPECT_EQ(client.Post("/write?db=fleet", line, {{"Authorization", "Token wrong-token!"}}).status,
            401);
  EXPECT_EQ(
      client.Post("/write?db=fleet", line, {{"Authorization", "Token secret-read-token"}}).status,
      403);
  EXPECT_EQ(
      client.Post("/write?db=other", line, {{"Authorization", "Token secret-write-token"}}).status,
      403);
  EXPECT_EQ(
      client.Post("/write?db=fleet", line, {{"Authorization", "Token secret-write-token"}}).status,
      204);
  EXPECT_EQ(client.Post("/write?db=fleet&u=me&p=secret-write-token", line).status, 204);
  // Basic auth as the 1.x clients send it: base64("me:secret-write-token").
  EXPECT_EQ(
      client
          .Post("/write?db=fleet", line, {{"Authorization", "Basic bWU6c2VjcmV0LXdyaXRlLXRva2Vu"}})
          .status,
      204);
  EXPECT_EQ(
      client
          .Post("/api/v2/write?bucket=fleet", line, {{"Authorization", "Token secret-write-token"}})
          .status,
      204);
  EXPECT_EQ(client.Get("/metrics").status, 401);
  const HttpReply metrics = client.Get("/metrics", {{"Authorization", "Token secret-read-token"}});
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("gpulse_auth_failures_total{reason=\"unauthenticated\"} 3"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("gpulse_auth_failures_total{reason=\"forbidden\"} 2"),
            std::string::npos);
  EXPECT_EQ(client.Get("/ping").status, 204);  // liveness needs no token
}

TEST_F(ServerTest, MetricsHealthAndSourcesReportWhatHappened) {
  HttpClient client(server_.port());
  ASSERT_EQ(client
                .Post("/write", "gpu,node=n8 util=1i,temp=50i 1\ngpu,node=n8 util=2i 2\nbad\n",
                      {{"User-Agent", "Telegraf/1.30"}})
                .status,
            400);
  const HttpReply metrics = client.Get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("gpulse_points_received_total 2\n"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("gpulse_values_received_total 3\n"), std::string::npos);
  EXPECT_NE(metrics.body.find("gpulse_lines_rejected_total 1\n"), std::string::npos);
  EXPECT_NE(metrics.body.find("gpulse_series 1\n"), std::string::npos);
  EXPECT_NE(metrics.body.find("gpulse_http_request_duration_seconds_bucket{le=\"+Inf\"}"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("gpulse_wal_bytes"), std::string::npos);
  EXPECT_NE(metrics.body.find("gpulse_ledger_spans_built_total"), std::string::npos);

  const auto health = nlohmann::json::parse(client.Get("/health").body);
  EXPECT_EQ(health["status"], "pass");
  EXPECT_EQ(health["series"], 1);

  const auto sources = nlohmann::json::parse(client.Get("/api/v1/sources").body);
  ASSERT_EQ(sources["sources"].size(), 1u);
  EXPECT_EQ(sources["sources"][0]["kind"], "push");
  EXPECT_EQ(sources["sources"][0]["name"], "127.0.0.1");
  EXPECT_EQ(sources["sources"][0]["points"], 2);
  EXPECT_EQ(sources["sources"][0]["user_agent"], "Telegraf/1.30");
}

TEST_F(ServerTest, RestartKeepsTheData) {
  HttpClient client(server_.port());
  ASSERT_EQ(client.Post("/write", "gpu,node=n9 util=9i 9").status, 204);
  Restart();
  EXPECT_EQ(Ints("n9"), std::vector<int64_t>{9});
  HttpClient again(server_.port());
  EXPECT_EQ(again.Post("/write", "gpu,node=n9 util=10i 10").status, 204);
  EXPECT_EQ(Ints("n9"), (std::vector<int64_t>{9, 10}));
}

TEST_F(ServerTest, FullHeadAnswers503WithRetryAfter) {
  Stop();
  config_.db.head_memory_bytes = 1;  // every write asks for a flush
  Start();
  std::atomic<int> busy{0}, ok{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      HttpClient client(server_.port());
      for (int i = 0; i < 300; ++i) {
        std::string body;
        for (int g = 0; g < 50; ++g) {
          body += "gpu,node=w" + std::to_string(w) + ",gpu=" + std::to_string(g) +
                  " util=" + std::to_string(i) + "i " + std::to_string(i) + "\n";
        }
        const HttpReply r = client.Post("/write", body);
        if (r.status == 503) {
          ++busy;
          EXPECT_EQ(r.headers.at("Retry-After"), "1");
        } else if (r.status == 204) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_GT(busy.load(), 0) << "no write was refused: the head never looked full";
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(busy + ok, 1200);
}

// A stand-in exporter on a free loopback port: the same HTTP server class,
// answering every request with body().
struct Exporter {
  explicit Exporter(std::function<std::string()> body)
      : server(Options(), [body = std::move(body)](const Request& r, const RequestContext&) {
          Response res{http::status::ok, r.version()};
          res.body() = body();
          res.prepare_payload();
          return res;
        }) {}
  static HttpServerOptions Options() {
    HttpServerOptions options;
    options.port = 0;
    return options;
  }
  // A scrape target of it, writing to `measurement`.
  ScrapeTarget Target(const std::string& measurement) {
    ScrapeTarget target;
    target.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics";
    target.measurement = measurement;
    return target;
  }
  HttpServer server;
};

TEST_F(ServerTest, ScrapesRealDcgmExporterOutput) {
  const std::string scrape_file =
      std::string(GPULSE_SHARED_DIR) +
      "/data/real/dcgm_exporter/scrapes/k8s-ai-conformance_kops_L4.prom";
  const std::string exposition = ReadFile(scrape_file);
  if (exposition.empty()) GTEST_SKIP() << scrape_file << " is missing";
  Exporter exporter([&] { return exposition; });
  ASSERT_TRUE(exporter.server.Start().ok());
  Scraper scraper({}, config_.max_body_bytes, server_.db(), &metrics_, &sources_);
  ScrapeTarget target = exporter.Target("dcgm");
  target.tags = {{"cluster", "kops"}};
  const Status s = scraper.ScrapeOnce(target);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<FieldInfo> fields;
  ASSERT_TRUE(server_.db()->ListFields("dcgm", &fields).ok());
  bool has_util = false;
  for (const FieldInfo& f : fields) has_util = has_util || f.name == "DCGM_FI_DEV_GPU_UTIL";
  EXPECT_TRUE(has_util);
  std::vector<std::string> clusters;
  ASSERT_TRUE(server_.db()->ListTagValues("dcgm", "cluster", &clusters).ok());
  EXPECT_EQ(clusters, std::vector<std::string>{"kops"});
  // What the scrape said of its metrics, for Prometheus' clients; and its
  // fields are metrics by their own names.
  HttpClient client(server_.port());
  const HttpReply metadata = client.Get("/api/v1/metadata?metric=DCGM_FI_DEV_SM_CLOCK");
  EXPECT_EQ(metadata.status, 200);
  EXPECT_EQ(metadata.body,
            R"({"data":{"DCGM_FI_DEV_SM_CLOCK":[{"help":"SM clock frequency (in MHz).",)"
            R"("type":"gauge","unit":""}]},"status":"success"})");
  EXPECT_GT(nlohmann::json::parse(client.Get("/api/v1/metadata").body)["data"].size(), 10u);
  EXPECT_EQ(nlohmann::json::parse(client.Get("/api/v1/metadata?limit=2").body)["data"].size(), 2u);
  const HttpReply util = client.Get("/api/v1/query?query=count(DCGM_FI_DEV_GPU_UTIL)");
  EXPECT_EQ(nlohmann::json::parse(util.body)["data"]["result"][0]["value"][1], "1") << util.body;

  // A target that does not answer is recorded as down with the error.
  ScrapeTarget dead = target;
  dead.url = "http://127.0.0.1:1/metrics";
  dead.timeout = std::chrono::milliseconds(500);
  EXPECT_FALSE(scraper.ScrapeOnce(dead).ok());
  const auto sources = nlohmann::json::parse(sources_.ToJson())["sources"];
  ASSERT_EQ(sources.size(), 2u);
  for (const auto& source : sources) {
    if (source["name"] == dead.url) {
      EXPECT_FALSE(source["up"].get<bool>());
      EXPECT_NE(source["error"].get<std::string>().find("connect"), std::string::npos);
    } else {
      EXPECT_TRUE(source["up"].get<bool>());
      EXPECT_GT(source["points"].get<int>(), 0);
    }
  }
  exporter.server.Stop();
}

// As Prometheus does: a metric gone from a target's scrape ends at that
// scrape for PromQL, and every metric of a target that stops answering ends
// at the failed scrape; InfluxQL sees only the samples.
TEST_F(ServerTest, ScrapesEndTheSeriesTheyNoLongerHave) {
  std::atomic<int> phase{0};
  Exporter exporter([&] {
    std::string body = "gpu_temp{gpu=\"0\"} 40\ngpu_power{gpu=\"0\"} 300\n";
    if (phase == 0) body += "gpu_temp{gpu=\"1\"} 50\ngpu_power{gpu=\"1\"} 310\n";
    return body;
  });
  ASSERT_TRUE(exporter.server.Start().ok());
  Scraper scraper({}, config_.max_body_bytes, server_.db(), &metrics_, &sources_);
  ScrapeTarget target = exporter.Target("node");
  HttpClient client(server_.port());
  const auto series_now = [&] {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() +
        0.5;
    const HttpReply r = client.Get("/api/v1/query?query=gpu_temp&time=" + std::to_string(now));
    EXPECT_EQ(r.status, 200) << r.body;
    return nlohmann::json::parse(r.body)["data"]["result"].size();
  };
  ASSERT_TRUE(scraper.ScrapeOnce(target).ok());
  EXPECT_EQ(series_now(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  phase = 1;  // GPU 1 leaves the exposition
  ASSERT_TRUE(scraper.ScrapeOnce(target).ok());
  EXPECT_EQ(metrics_.scrape_stale_markers.load(), 2u);  // its temp and power
  EXPECT_EQ(series_now(), 1u);
  exporter.server.Stop();  // the target goes down
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  target.timeout = std::chrono::milliseconds(500);
  EXPECT_FALSE(scraper.ScrapeOnce(target).ok());
  EXPECT_EQ(metrics_.scrape_stale_markers.load(), 4u);
  EXPECT_EQ(series_now(), 0u);
  const HttpReply influx = client.Get("/query?q=" + PercentEncode("SELECT * FROM node"));
  const auto rows = nlohmann::json::parse(influx.body)["results"][0]["series"][0];
  EXPECT_EQ(rows["columns"].dump(), R"(["time","gpu","gpu_power","gpu_temp"])");
  EXPECT_EQ(rows["values"].size(), 3u);  // two scrapes of GPU 0, one of GPU 1
}

TEST(QueryStringTest, DecodesPercentAndPlus) {
  const auto params = ParseQueryString("/write?db=my%20db&p=a+b&empty=&flag");
  EXPECT_EQ(params.at("db"), "my db");
  EXPECT_EQ(params.at("p"), "a b");
  EXPECT_EQ(params.at("empty"), "");
  EXPECT_EQ(params.at("flag"), "");
}

TEST(QueryStringTest, KeepsMalformedEscapesAsWrittenAndDecodesBytes) {
  const auto params = ParseQueryString("/query?epoch=%C2%B5&a=%G1x&b=50%&c=%4&d=%2b%2B%25");
  EXPECT_EQ(params.at("epoch"), "\xC2\xB5");  // µ, two bytes
  EXPECT_EQ(params.at("a"), "%G1x");
  EXPECT_EQ(params.at("b"), "50%");
  EXPECT_EQ(params.at("c"), "%4");
  EXPECT_EQ(params.at("d"), "++%");
}

// Item 8 of the hostile probe: connections past max_connections are answered
// 503 with Retry-After and closed, not left hanging; one closing makes room.
TEST_F(ServerTest, ConnectionsPastMaxConnectionsGetA503) {
  Stop();
  config_.max_connections = 4;
  Start();
  const auto open = [&] { return metrics_.connections().open; };
  const auto wait_for_open = [&](uint64_t n) {
    for (int i = 0; i < 500 && open() != n; ++i) std::this_thread::sleep_for(10ms);
    return open();
  };
  boost::asio::io_context io;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::socket>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<boost::asio::ip::tcp::socket>(io));
    idle.back()->connect({boost::asio::ip::make_address("127.0.0.1"), server_.port()});
  }
  ASSERT_EQ(wait_for_open(4), 4u);
  HttpClient fifth(server_.port());
  const HttpReply refused = fifth.Get("/ping");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.headers.at("Retry-After"), "1");
  EXPECT_NE(refused.body.find("too many connections: at most 4 (max_connections)"),
            std::string::npos)
      << refused.body;
  idle.pop_back();
  ASSERT_EQ(wait_for_open(3), 3u);
  HttpClient later(server_.port());
  EXPECT_EQ(later.Get("/ping").status, 204);
  const std::string text = metrics_.Render(server_.db()->GetStats());
  EXPECT_NE(text.find("gpulse_http_connections_refused_total 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpulse_http_max_connections 4\n"), std::string::npos) << text;
}

// Item 8: at the file-descriptor limit, accept(2) fails (EMFILE) for as long
// as the connections stay. The accept loop used to retry at once, spinning
// a core and logging nothing. A server in a child process under a limit of
// 64 descriptors, 120 connections from the parent: the server logs the
// failure, uses little CPU while it lasts, and serves again once
// connections close.
TEST(ServerLimitsTest, AcceptLoopSpinsAtTheDescriptorLimit) {
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizers' runtime itself needs descriptors (UBSan reads the memory
  // map to check a virtual call): at the limit it reports a false error and
  // stops the server. The Release run of the unit tests runs this test.
  GTEST_SKIP() << "not under the sanitizers";
#endif
  int ports[2], logs[2];
  ASSERT_EQ(pipe(ports), 0);
  ASSERT_EQ(pipe(logs), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(ports[0]);
    close(logs[0]);
    const rlimit limit{64, 64};
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(3);
    HttpServerOptions options;
    options.port = 0;
    options.max_connections = 1000;  // past the descriptors: accept(2) itself fails
    options.log = [fd = logs[1]](std::string_view line) {
      if (write(fd, line.data(), line.size()) < 0 || write(fd, "\n", 1) < 0) _exit(4);
    };
    HttpServer server(options, [](const Request& r, const RequestContext&) {
      Response res{http::status::no_content, r.version()};
      res.prepare_payload();
      return res;
    });
    if (!server.Start().ok()) _exit(5);
    const uint16_t port = server.port();
    if (write(ports[1], &port, sizeof(port)) != sizeof(port)) _exit(6);
    pause();  // until the parent kills it
    _exit(0);
  }
  close(ports[1]);
  close(logs[1]);
  uint16_t port = 0;
  ASSERT_EQ(read(ports[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  const auto cpu_ticks = [pid] {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string field;
    long ticks = 0;
    for (int i = 1; i <= 15 && stat >> field; ++i) {
      if (i == 14 || i == 15) ticks += std::stol(field);  // utime, stime
    }
    return ticks;
  };
  boost::asio::io_context io;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::socket>> held;
  for (int i = 0; i < 120; ++i) {
    held.push_back(std::make_unique<boost::asio::ip::tcp::socket>(io));
    held.back()->connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }
  std::this_thread::sleep_for(300ms);  // the accept loop reaches the limit
  const long before = cpu_ticks();
  std::this_thread::sleep_for(1s);
  const long spent = cpu_ticks() - before;
  EXPECT_LT(spent, 30) << "the server used " << spent << " ticks of CPU in 1 s at the limit";
  held.clear();  // room again: the server accepts and answers
  std::this_thread::sleep_for(1100ms);
  HttpClient client(port);
  EXPECT_EQ(client.Get("/ping").status, 204);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  char buffer[4096];
  const ssize_t n = read(logs[0], buffer, sizeof(buffer));
  const std::string logged(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  EXPECT_NE(logged.find("accepting a connection failed: Too many open files"), std::string::npos)
      << logged;
  close(ports[0]);
  close(logs[0]);
}

// Item 10 of the hostile probe: after the disk filled, writes were refused
// until a restart even once space was freed, and /health said "pass". On a
// tmpfs of 16 MiB, mostly taken by a filler file: writes go on until the
// disk is full, which /health reports and writes answer with 507; once the
// filler goes the server resumes by itself, and every acknowledged point is
// there, also after a restart.
TEST(ServerDiskFullTest, WritesAreRefusedUntilARestartOnceTheDiskFilled) {
  storage::ScratchDir mount_point;
  const std::string where = mount_point.path();
  if (::mount("tmpfs", where.c_str(), "tmpfs", 0, "size=16m") != 0) {
    GTEST_SKIP() << "mounting a tmpfs needs root: " << std::strerror(errno);
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{where};
  const std::string filler = where + "/filler";
  {
    std::ofstream out(filler, std::ios::binary);
    const std::string mib(1 << 20, 'x');
    for (int i = 0; i < 12; ++i) out << mib;
  }
  {
    ServerConfig config;
    test::UseQuietTestDb(&config.db);
    config.db.head_memory_bytes = 256 << 10;  // flushes often: the store fills too
    ServerMetrics metrics;
    SourceRegistry sources;
    test::TestServer server;
    ASSERT_TRUE(server.Start(where + "/data", config, &metrics, &sources).ok());
    HttpClient client(server.port());
    int64_t acked = 0, t = 0;
    std::mt19937 rng(7);
    int status = 204;
    for (int batch = 0; batch < 400 && status == 204; ++batch) {
      std::string body;
      for (int i = 0; i < 2'000; ++i, ++t) {
        // Random text, which no codec shrinks: the disk fills within a few batches.
        std::string noise(24, ' ');
        for (char& c : noise) c = static_cast<char>('a' + rng() % 26);
        body += "m,gpu=" + std::to_string(t % 64) + " v=" + std::to_string(t) + "i,s=\"" + noise +
                "\" " + std::to_string(t) + "\n";
      }
      HttpReply r = client.Post("/write", body);
      for (int i = 0; i < 500 && r.status == 503; ++i) {  // the head is flushing: as agents do
        std::this_thread::sleep_for(10ms);
        r = client.Post("/write", body);
      }
      status = r.status;
      if (status == 204) acked += 2'000;
      if (status != 204) {
        EXPECT_EQ(status, 507) << r.body;
        EXPECT_EQ(r.headers.at("Retry-After"), "10");
        EXPECT_NE(r.body.find("the disk is full"), std::string::npos) << r.body;
      }
    }
    ASSERT_EQ(status, 507) << "the disk never filled; acknowledged " << acked;
    ASSERT_GT(acked, 0);
    const HttpReply health = client.Get("/health");
    EXPECT_EQ(health.status, 503) << health.body;
    EXPECT_NE(health.body.find("disk full"), std::string::npos) << health.body;

    std::filesystem::remove(filler);  // space returns
    for (int i = 0; i < 100 && status != 204; ++i) {
      std::this_thread::sleep_for(100ms);
      status = client.Post("/write", "m,gpu=0 v=-1i " + std::to_string(t) + "\n").status;
    }
    ASSERT_EQ(status, 204) << "writes did not resume once space returned";
    ++acked;
    for (int i = 0; i < 100 && client.Get("/health").status != 200; ++i) {
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(client.Get("/health").status, 200);
    const auto count = [](HttpClient& c) {
      const HttpReply r = c.Get("/query?q=" + PercentEncode("SELECT count(v) FROM m"));
      return nlohmann::json::parse(r.body)["results"][0]["series"][0]["values"][0][1]
          .get<int64_t>();
    };
    EXPECT_EQ(count(client), acked);
    ASSERT_TRUE(server.Stop().ok());
    ASSERT_TRUE(server.Start(where + "/data", config, &metrics, &sources).ok());
    HttpClient again(server.port());
    EXPECT_EQ(count(again), acked);
  }
}

}  // namespace
}  // namespace gpulse::server
