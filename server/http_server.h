// HttpServer: HTTP/1.1 over Boost.Beast and Asio. It owns the listening
// socket, the I/O threads and the connections: keep-alive, chunked request
// bodies (Beast's parser), the body size limit (413), the read timeout for
// stalled clients, and a graceful stop. What a request means is the
// handler's business (server/handlers.h).
//
// Threads: one event loop (an io_context) per I/O thread, and each accepted
// connection is served by one of them for its whole life, taken in turn; a
// thread of its own accepts. A request thus runs on the thread that read it,
// with no hand-off between threads (with one loop shared by all threads,
// every request woke a second thread: on this project's VM that cost 15 us of
// CPU a request). The price: a long request holds up the other connections
// of its thread, not those of the others nor new ones; their read timeouts
// do not count the time it held them.
//
// Thread safety: Start and Stop from one thread; the handler is called on
// the I/O threads, several at once.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/metrics.h"
#include "storage/mutex.h"
#include "storage/status.h"

namespace gpulse::server {

namespace http = boost::beast::http;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// A response sent as its handler makes it, in HTTP/1.1 chunks, so that a
// large answer never waits whole in memory: Start sends the status line and
// header (with Transfer-Encoding: chunked), Write one piece, Finish the
// last chunk. Each call blocks until the client has taken the bytes, at most
// the server's read_timeout, and returns false once the client is gone or
// stalled: the connection is then closed, and the handler should stop.
// Offered only to requests run off the I/O threads
// (HttpServerOptions::long_request), where blocking holds up no other
// connection. One thread at a time.
class ResponseStream {
 public:
  ResponseStream(int fd, std::chrono::milliseconds timeout) : fd_(fd), timeout_(timeout) {}
  ResponseStream(const ResponseStream&) = delete;
  ResponseStream& operator=(const ResponseStream&) = delete;

  bool Start(Response header);
  bool Write(std::string_view piece);  // an empty piece sends nothing
  bool Finish();

  bool started() const { return started_; }
  // Started, finished and every byte sent: the connection may be kept.
  bool whole() const { return finished_ && ok_; }
  bool keep_alive() const { return keep_alive_; }

 private:
  bool SendAll(std::string_view a, std::string_view b, std::string_view c);

  const int fd_;
  const std::chrono::milliseconds timeout_;
  bool started_ = false;
  bool finished_ = false;
  bool ok_ = true;
  bool keep_alive_ = false;
};

// What the handler sees of a connection.
struct RequestContext {
  std::string remote_address;  // "127.0.0.1"
  // True once the client has closed or reset the connection (or the server
  // is stopping): a long query polls it to stop work nobody will read.
  // Cheap (one poll(2)).
  std::function<bool()> client_gone;
  // Set for a request run off the I/O threads: the handler may answer
  // through it instead of returning its Response (which is then ignored).
  ResponseStream* stream = nullptr;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8086;  // 0: any free port (tests)
  int threads = 2;
  uint64_t max_body_bytes = 64ull << 20;
  std::chrono::milliseconds read_timeout{30000};
  // How long Stop waits for requests in flight before closing them.
  std::chrono::milliseconds drain_timeout{10000};
  // Open connections at most; one more is answered 503 (Retry-After: 1) and
  // closed. 0: the file-descriptor limit (RLIMIT_NOFILE) less
  // kReservedDescriptors and the chunk store's table files
  // (StoreDescriptorBudget), so that the WAL, LevelDB, scrapes and webhooks
  // always find a descriptor.
  size_t max_connections = 0;
  // Where the server says what goes wrong outside a request (accept errors).
  std::function<void(std::string_view)> log;
  // Requests for which this says true (queries) run on long_request_threads
  // of their own rather than on the I/O thread that read them, so that a
  // heavy query holds up no write, /ping or other connection of its I/O
  // thread. Past long_request_threads running, up to max_long_waiting more
  // wait their turn; one more is answered 503 with Retry-After.
  std::function<bool(const Request&)> long_request;
  int long_request_threads = 2;
  size_t max_long_waiting = 64;
};

// Descriptors kept free of connections when max_connections is 0.
inline constexpr size_t kReservedDescriptors = 128;

using Handler = std::function<Response(const Request&, const RequestContext&)>;

// Appends the status line and header of `response` as HTTP/1.x sends them,
// through the blank line that ends the header: its fields in their order,
// as set (the handler sets Content-Length; a HEAD answer's, with no body).
void AppendHeader(const Response& response, std::string* out);

class Session;

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads. IOError naming the address
  // when the port is taken or the host is not an address of this machine.
  Status Start();

  // The bound port (the real one when options.port was 0).
  uint16_t port() const { return port_; }

  ConnectionStats connection_stats() const;
  // Long requests running or waiting for a thread now.
  size_t long_requests() const { return long_requests_.load(); }

  // Stops accepting, lets requests in flight finish (up to drain_timeout),
  // closes idle keep-alive connections, and joins the I/O threads.
  void Stop();

 private:
  friend class Session;
  void Accept();
  // After an accept error: says so (at most once a minute), then accepts
  // again after a pause that doubles up to a second while errors go on, so
  // that a full descriptor table does not spin the accept thread.
  void AcceptLater(const boost::system::error_code& error);
  // Answers a connection past max_connections with 503 and closes it.
  void Refuse(boost::asio::ip::tcp::socket socket);
  // Counts one more long request; false (counting none) when
  // long_request_threads + max_long_waiting are already in.
  bool AdmitLong();
  void Register(const std::shared_ptr<Session>& session);
  void Unregister(Session* session);
  bool stopping() const { return stopping_; }

  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;

  const HttpServerOptions options_;
  const Handler handler_;
  // Declared before the loops so they outlive them: destroying a loop
  // destroys its pending handlers, whose sessions unregister here.
  mutable Mutex sessions_mu_;
  CondVar sessions_cv_;
  // Live connections; weak, so a closing connection is never revived.
  std::map<Session*, std::weak_ptr<Session>> sessions_ GPULSE_GUARDED_BY(sessions_mu_);
  // Runs long requests; declared here for the same reason as the loops.
  std::unique_ptr<boost::asio::thread_pool> long_pool_;
  std::atomic<size_t> long_requests_{0};
  // One loop per I/O thread, and one that only accepts.
  std::vector<std::unique_ptr<boost::asio::io_context>> loops_;
  std::vector<WorkGuard> keep_running_;  // a loop with no connection waits for one
  boost::asio::io_context accept_loop_;
  boost::asio::ip::tcp::acceptor acceptor_;
  size_t next_loop_ = 0;        // the loop the next connection goes to; the accept handler's
  size_t max_connections_ = 0;  // set by Start
  boost::asio::steady_timer accept_pause_;          // the accept thread's
  std::chrono::milliseconds pause_{0};              // the accept thread's
  std::chrono::steady_clock::time_point last_log_;  // the accept thread's
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> accept_errors_{0};
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
};

}  // namespace gpulse::server
