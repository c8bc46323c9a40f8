#include "server/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "engine/gpulse.h"

namespace gpulse::server {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;

// The parts of http://host[:port]/path that a request needs.
struct HttpUrl {
  std::string authority;  // host[:port], sent as the Host header
  std::string host;
  std::string port;
  std::string target;  // path and query, "/" when the URL has none
};

bool ParseHttpUrl(const std::string& url, HttpUrl* parsed) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return false;
  const std::string rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  parsed->authority = rest.substr(0, slash);
  parsed->target = slash == std::string::npos ? "/" : rest.substr(slash);
  const size_t colon = parsed->authority.rfind(':');
  parsed->host = parsed->authority.substr(0, colon);
  parsed->port = colon == std::string::npos ? "80" : parsed->authority.substr(colon + 1);
  return true;
}

}  // namespace

Status HttpRequest(http::verb method, const std::string& url, std::string_view content_type,
                   const std::string& body, std::chrono::milliseconds timeout, uint64_t max_bytes,
                   HttpReply* reply, std::string_view accept) {
  HttpUrl parsed;
  if (!ParseHttpUrl(url, &parsed)) return Status::InvalidArgument(url + ": not an http:// URL");

  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.expires_after(timeout);
  asio::ip::tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(parsed.host, parsed.port, ec);
  if (ec) return Status::IOError(url + ": resolve " + parsed.host + ": " + ec.message());
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_bytes);
  // Asynchronous calls, so the stream's deadline bounds connect, write and read.
  stream.async_connect(endpoints, [&](beast::error_code e, const auto&) { ec = e; });
  io.run();
  if (ec) return Status::IOError(url + ": connect: " + ec.message());

  http::request<http::string_body> request{method, parsed.target, 11};
  request.set(http::field::host, parsed.authority);
  request.set(http::field::user_agent, std::string("gpulse/") + Version());
  if (!accept.empty()) request.set(http::field::accept, accept);
  if (!content_type.empty()) request.set(http::field::content_type, content_type);
  request.body() = body;
  // Sets Content-Length, except on a GET without a body, which sends none.
  request.prepare_payload();
  beast::flat_buffer buffer;
  http::async_write(stream, request, [&](beast::error_code e, size_t) {
    ec = e;
    if (!e) http::async_read(stream, buffer, parser, [&](beast::error_code r, size_t) { ec = r; });
  });
  io.restart();
  io.run();
  if (ec == beast::error::timeout) {
    return Status::IOError(url + ": no answer within " + std::to_string(timeout.count()) + " ms");
  }
  if (ec) return Status::IOError(url + ": " + ec.message());

  auto& response = parser.get();
  reply->status = response.result_int();
  reply->retry_after = std::string(response[http::field::retry_after]);
  reply->body = std::move(response.body());
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return Status::Ok();
}

}  // namespace gpulse::server
