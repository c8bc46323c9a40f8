#include "server/http_server.h"

#include <algorithm>
#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "engine/gpulse.h"

namespace gpulse::server {

namespace beast = boost::beast;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// A body over this many bytes (or of unknown length) is read in calls of
// kBodyReadBytes, Beast's largest read.
constexpr size_t kLargeBodyBytes = 16 << 10;
constexpr size_t kBodyReadBytes = 64 << 10;

Response ErrorResponse(http::status status, unsigned version, const std::string& message) {
  Response res{status, version};
  res.set(http::field::content_type, "application/json");
  if (status == http::status::service_unavailable) res.set(http::field::retry_after, "1");
  res.set(http::field::connection, "close");
  res.keep_alive(false);
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped.push_back('\\');
    escaped.push_back(c);
  }
  res.body() = "{\"error\":\"" + escaped + "\"}";
  res.prepare_payload();
  return res;
}

}  // namespace

void AppendHeader(const Response& response, std::string* out) {
  const unsigned version = response.version();
  const unsigned status = response.result_int();
  const std::string_view reason = response.reason();
  out->append("HTTP/1.");
  out->push_back(static_cast<char>('0' + version % 10));
  out->push_back(' ');
  out->push_back(static_cast<char>('0' + status / 100 % 10));
  out->push_back(static_cast<char>('0' + status / 10 % 10));
  out->push_back(static_cast<char>('0' + status % 10));
  out->push_back(' ');
  out->append(reason.data(), reason.size());
  out->append("\r\n");
  for (const auto& field : response.base()) {
    const std::string_view name = field.name_string();
    const std::string_view value = field.value();
    out->append(name.data(), name.size());
    out->append(": ");
    out->append(value.data(), value.size());
    out->append("\r\n");
  }
  out->append("\r\n");
}

// --- ResponseStream -------------------------------------------------------------

bool ResponseStream::Start(Response header) {
  if (started_) return false;
  started_ = true;
  // Pieces go out as they are made: a small one (the last chunk's end)
  // must not wait behind the one before for the client's delayed ACK.
  const int on = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  header.chunked(true);
  keep_alive_ = header.keep_alive();
  std::string text;
  AppendHeader(header, &text);
  return SendAll(text, {}, {});
}

bool ResponseStream::Write(std::string_view piece) {
  if (!started_ || finished_ || !ok_) return false;
  if (piece.empty()) return true;
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
  return SendAll(std::string_view(size, static_cast<size_t>(n)), piece, "\r\n");
}

bool ResponseStream::Finish() {
  if (!started_ || finished_ || !ok_) return false;
  finished_ = true;
  return SendAll("0\r\n\r\n", {}, {});
}

bool ResponseStream::SendAll(std::string_view a, std::string_view b, std::string_view c) {
  std::array<iovec, 3> parts{iovec{const_cast<char*>(a.data()), a.size()},
                             iovec{const_cast<char*>(b.data()), b.size()},
                             iovec{const_cast<char*>(c.data()), c.size()}};
  size_t first = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (ok_) {
    while (first < parts.size() && parts[first].iov_len == 0) ++first;
    if (first == parts.size()) return true;
    msghdr msg{};
    msg.msg_iov = &parts[first];
    msg.msg_iovlen = parts.size() - first;
    const ssize_t sent = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent >= 0) {
      size_t left = static_cast<size_t>(sent);
      for (size_t i = first; i < parts.size() && left > 0; ++i) {
        const size_t take = std::min(left, parts[i].iov_len);
        parts[i].iov_base = static_cast<char*>(parts[i].iov_base) + take;
        parts[i].iov_len -= take;
        left -= take;
      }
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) break;
    // The client has not taken what was sent: wait for room, as long as a
    // read would wait for it.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
  }
  ok_ = false;
  return false;
}

// One connection: read a request, answer it, repeat while keep-alive.
//
// A plain socket and one timer per request or response, rather than
// beast::tcp_stream: that stream arms its timer for every read_some, which
// cost 7% of the server's CPU on large write bodies (perf, fleet load).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer* server)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), server_(server) {
    beast::error_code ec;
    const tcp::endpoint remote = socket_.remote_endpoint(ec);
    if (!ec) context_.remote_address = remote.address().to_string();
    context_.client_gone = [fd = socket_.native_handle()] {
      pollfd p{fd, POLLRDHUP, 0};
      if (::poll(&p, 1, 0) <= 0) return false;
      return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    };
  }

  ~Session() { server_->Unregister(this); }

  void Start() {
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  // Closes the connection if it waits for a request (not mid-request).
  void CloseIfIdle() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }

 private:
  // Gives the operation about to start (reading a request, writing a
  // response) read_timeout to finish; past that the socket is cancelled.
  // The timer is not set per operation (two timerfd calls a request): once
  // armed it fires at the deadline it was set for, and re-arms itself for a
  // later one.
  void ArmTimer() {
    timed_out_ = false;
    in_flight_ = true;
    deadline_ = std::chrono::steady_clock::now() + server_->options_.read_timeout;
    if (!timer_armed_) WaitForDeadline();
  }

  // The operation in flight finished.
  void DisarmTimer() { in_flight_ = false; }

  // A timer that runs late ran on a loop another connection's request held
  // up: the client had no chance to be read from meanwhile, so it gets a
  // new read_timeout from now rather than being cut off for the server's
  // delay.
  static constexpr std::chrono::milliseconds kLate{250};

  void WaitForDeadline() {
    timer_armed_ = true;
    timer_.expires_at(deadline_);
    timer_.async_wait([self = shared_from_this(), due = deadline_](beast::error_code ec) {
      self->timer_armed_ = false;
      if (ec || !self->in_flight_) return;  // closed, or nothing to time
      const auto now = std::chrono::steady_clock::now();
      if (now - due > kLate) self->deadline_ = now + self->server_->options_.read_timeout;
      if (now < self->deadline_) return self->WaitForDeadline();
      self->timed_out_ = true;
      beast::error_code ignored;
      self->socket_.cancel(ignored);
    });
  }

  void Read() {
    if (server_->stopping()) return Close();
    parser_.emplace();
    parser_->body_limit(server_->options_.max_body_bytes);
    parser_->header_limit(64 << 10);
    buffer_.consume(buffer_.size() > (1 << 20) ? buffer_.size() : 0);
    // An idle keep-alive connection holds no large read buffer: a thousand
    // agents' connections would otherwise keep 64 MiB between their writes.
    if (buffer_.size() == 0 && buffer_.capacity() > kLargeBodyBytes) buffer_.shrink_to_fit();
    ArmTimer();
    // The header first: a client that sent `Expect: 100-continue` (curl does
    // for bodies over 1 MB) waits for a 100 before it sends the body.
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnRead(ec);
    const auto expect = parser_->get()[http::field::expect];
    if (beast::iequals(expect, "100-continue") && !parser_->is_done()) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                        [self = shared_from_this()](beast::error_code wec, size_t) {
                          if (wec) return self->OnRead(wec);
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    // A request without a body (a GET, a HEAD) is whole once its header is:
    // answered now, rather than after a read that has nothing to read but
    // goes round the event loop (60 us of a small query's 450 on a CPU whose
    // caches another process has emptied, the harness's case).
    if (parser_->is_done()) return OnRead({});
    // Beast reads into the buffer's spare capacity, at least 512 bytes and at
    // most 64 KiB a call. A buffer left small by the header would take a
    // 230 KiB write body in 450 reads of 512 bytes: 0.44 M recv and 0.23 M
    // epoll calls for the 215 MiB harness load, a fifth of the server's CPU.
    // A large body gets the most Beast will read at once; Read() gives the
    // memory back before the connection waits for its next request.
    const auto length = parser_->content_length();
    if (!length || *length > kLargeBodyBytes) buffer_.reserve(kBodyReadBytes);
    http::async_read(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    DisarmTimer();
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || timed_out_) {
      return Close();  // the client left, we stop, or it stalled past the read timeout
    }
    if (ec == http::error::body_limit) {
      return Send(ErrorResponse(http::status::payload_too_large, 11,
                                "request body is larger than the limit of " +
                                    std::to_string(server_->options_.max_body_bytes) + " bytes"));
    }
    if (ec) {
      return Send(
          ErrorResponse(http::status::bad_request, 11, "malformed HTTP request: " + ec.message()));
    }
    busy_ = true;
    const Request& request = parser_->get();
    if (server_->options_.long_request && server_->options_.long_request(request)) {
      return RunLong();
    }
    Answer(server_->handler_(request, context_));
  }

  void Answer(Response response) {
    const Request& request = parser_->get();
    response.keep_alive(request.keep_alive() && response.keep_alive() && !server_->stopping());
    Send(std::move(response));
  }

  // Runs the handler on the server's long-request threads; the answer (or
  // what follows a streamed one) comes back to this connection's loop.
  void RunLong() {
    if (!server_->AdmitLong()) {
      return Send(ErrorResponse(
          http::status::service_unavailable, parser_->get().version(),
          std::to_string(server_->long_requests()) +
              " queries are running or waiting, the most the server takes (query.threads + "
              "query.max_waiting); retry later"));
    }
    asio::post(*server_->long_pool_, [self = shared_from_this()] {
      HttpServer* server = self->server_;
      ResponseStream stream(self->socket_.native_handle(), server->options_.read_timeout);
      RequestContext context = self->context_;
      context.stream = &stream;
      context.client_gone = [gone = self->context_.client_gone, server] {
        return server->stopping() || gone();
      };
      Response response = server->handler_(self->parser_->get(), context);
      --server->long_requests_;
      const bool streamed = stream.started();
      const bool keep = streamed && stream.whole() && stream.keep_alive() &&
                        self->parser_->get().keep_alive() && !server->stopping();
      asio::post(self->socket_.get_executor(),
                 [self, response = std::move(response), streamed, keep]() mutable {
                   if (!streamed) return self->Answer(std::move(response));
                   self->busy_ = false;
                   if (!keep) return self->Close();
                   self->Read();
                 });
    });
  }

  // The response goes out in one gathered write: its header, printed here,
  // and its body as it is. Beast's serializer (http::async_write) walks the
  // same fields through a chain of buffer views and composed operations:
  // 13 k instructions a response, a third of a small query's server work,
  // spread over code a cold CPU fetches from memory (docs/performance.md,
  // session 15). A response is always whole (a string body, its
  // Content-Length set by the handler), so nothing else of the serializer
  // is needed.
  void Send(Response response) {
    busy_ = true;
    response_ = std::move(response);
    // The header must say where the body ends: the handlers set the length,
    // and one that did not gets its body's here (a status that has no body
    // has no length either).
    const unsigned status = response_.result_int();
    const bool bodiless = status / 100 == 1 || status == 204 || status == 304;
    if (!bodiless && !response_.has_content_length() && !response_.chunked()) {
      response_.content_length(response_.body().size());
    }
    keep_alive_ = response_.keep_alive();
    header_.clear();
    AppendHeader(response_, &header_);
    const std::array<asio::const_buffer, 2> buffers{asio::buffer(header_),
                                                    asio::buffer(response_.body())};
    ArmTimer();
    asio::async_write(socket_, buffers, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->DisarmTimer();
      self->busy_ = false;
      if (ec || !self->keep_alive_) return self->Close();
      self->Read();
    });
  }

  void Close() {
    beast::error_code ec;
    timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Response response_;
  std::string header_;      // response_'s, as sent
  bool keep_alive_ = true;  // response_'s
  HttpServer* const server_;
  RequestContext context_;
  bool busy_ = false;       // between a request read and its response written
  bool timed_out_ = false;  // the timer fired for the operation in flight
  bool in_flight_ = false;  // a read or write is under way, timed to deadline_
  bool timer_armed_ = false;
  std::chrono::steady_clock::time_point deadline_;
};

namespace {

std::vector<std::unique_ptr<asio::io_context>> MakeLoops(int threads) {
  std::vector<std::unique_ptr<asio::io_context>> loops;
  // Concurrency hint 1: each loop is run by one thread, and never wakes
  // another for its handlers.
  for (int i = 0; i < std::max(threads, 1); ++i)
    loops.push_back(std::make_unique<asio::io_context>(1));
  return loops;
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      loops_(MakeLoops(options_.threads)),
      accept_loop_(1),
      acceptor_(accept_loop_),
      accept_pause_(accept_loop_) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(options_.host, ec);
  if (ec) return Status::InvalidArgument("listen host \"" + options_.host + "\" is not an address");
  const tcp::endpoint endpoint(address, options_.port);
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IOError("listen on " + where + ": " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  max_connections_ = options_.max_connections;
  if (max_connections_ == 0) {
    rlimit limit{};
    const size_t descriptors =
        ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
            ? static_cast<size_t>(limit.rlim_cur)
            : 1'048'576;
    const size_t reserved = kReservedDescriptors + StoreDescriptorBudget();
    max_connections_ = std::max<size_t>(16, descriptors > reserved ? descriptors - reserved : 0);
  }
  long_pool_ = std::make_unique<asio::thread_pool>(
      static_cast<size_t>(std::max(options_.long_request_threads, 1)));
  Accept();
  for (auto& loop : loops_) {
    keep_running_.emplace_back(loop->get_executor());
    threads_.emplace_back([io = loop.get()] { io->run(); });
  }
  threads_.emplace_back([this] { accept_loop_.run(); });
  return Status::Ok();
}

void HttpServer::Accept() {
  asio::io_context& loop = *loops_[next_loop_];
  next_loop_ = (next_loop_ + 1) % loops_.size();
  acceptor_.async_accept(loop, [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!stopping_ && ec != asio::error::operation_aborted) AcceptLater(ec);
      return;
    }
    pause_ = std::chrono::milliseconds(0);
    size_t open = 0;
    {
      MutexLock l(&sessions_mu_);
      open = sessions_.size();
    }
    if (open >= max_connections_) {
      Refuse(std::move(socket));
    } else {
      auto session = std::make_shared<Session>(std::move(socket), this);
      Register(session);
      session->Start();
    }
    if (!stopping_) Accept();
  });
}

void HttpServer::AcceptLater(const boost::system::error_code& error) {
  ++accept_errors_;
  const auto now = std::chrono::steady_clock::now();
  if (options_.log && now - last_log_ >= std::chrono::minutes(1)) {
    last_log_ = now;
    options_.log("accepting a connection failed: " + error.message() + " (" +
                 std::to_string(accept_errors_.load()) +
                 " failures so far); retrying with a pause of up to 1 s. At the descriptor "
                 "limit, raise `ulimit -n` or lower max_connections");
  }
  pause_ = std::clamp(pause_ * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  accept_pause_.expires_after(pause_);
  accept_pause_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && !stopping_) Accept();
  });
}

void HttpServer::Refuse(tcp::socket socket) {
  ++refused_;
  const std::string body = "{\"error\":\"too many connections: at most " +
                           std::to_string(max_connections_) + " (max_connections); retry later\"}";
  const std::string response =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: "
      "1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  // A new socket's send buffer takes this whole: the write does not block.
  beast::error_code ec;
  asio::write(socket, asio::buffer(response), ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

ConnectionStats HttpServer::connection_stats() const {
  ConnectionStats stats;
  {
    MutexLock l(&sessions_mu_);
    stats.open = sessions_.size();
  }
  stats.refused = refused_.load();
  stats.accept_errors = accept_errors_.load();
  stats.max_connections = max_connections_;
  stats.queries_in_flight = long_requests_.load();
  return stats;
}

bool HttpServer::AdmitLong() {
  const size_t most =
      static_cast<size_t>(std::max(options_.long_request_threads, 1)) + options_.max_long_waiting;
  size_t n = long_requests_.load();
  do {
    if (n >= most) return false;
  } while (!long_requests_.compare_exchange_weak(n, n + 1));
  return true;
}

void HttpServer::Register(const std::shared_ptr<Session>& session) {
  MutexLock l(&sessions_mu_);
  sessions_[session.get()] = session;
}

void HttpServer::Unregister(Session* session) {
  MutexLock l(&sessions_mu_);
  sessions_.erase(session);
  sessions_cv_.SignalAll();
}

void HttpServer::Stop() {
  if (stopped_ || threads_.empty()) return;
  stopped_ = true;
  stopping_ = true;
  asio::post(accept_loop_, [this] {
    beast::error_code ec;
    acceptor_.close(ec);
    accept_pause_.cancel();
  });
  // Take the live sessions out under the lock, but close them and drop the
  // references outside it: the last reference may be ours, and destroying a
  // session unregisters it under sessions_mu_.
  std::vector<std::shared_ptr<Session>> live;
  {
    MutexLock l(&sessions_mu_);
    for (auto& [raw, weak] : sessions_) {
      if (auto session = weak.lock()) live.push_back(std::move(session));
    }
  }
  for (const auto& session : live) session->CloseIfIdle();
  live.clear();
  {
    // Requests in flight finish and close their connections themselves.
    MutexLock l(&sessions_mu_);
    const auto deadline = std::chrono::steady_clock::now() + options_.drain_timeout;
    while (!sessions_.empty() && sessions_cv_.WaitUntil(&sessions_mu_, deadline)) {
    }
  }
  // Long requests still running see stopping() through client_gone and end;
  // those still waiting are dropped with their connections.
  long_pool_->stop();
  long_pool_->join();
  // The tasks that never ran hold their sessions: destroyed now, while the
  // loops their sockets and timers belong to are still there.
  long_pool_.reset();
  keep_running_.clear();
  for (auto& loop : loops_) loop->stop();
  accept_loop_.stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace gpulse::server
