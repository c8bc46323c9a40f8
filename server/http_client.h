// HttpClient: gpulse's one HTTP client (Boost.Beast), for the scraper's GETs,
// the webhook sender's POSTs, the forwarder's remote writes, the shell's
// queries to a server and the simulator's writes to one. A client talks to
// one server; it keeps its connection between requests while the server
// keeps it open, and opens a new one when it was closed. HttpRequest is the
// one-request form.
//
// https:// URLs are spoken over TLS (Boost.Asio's OpenSSL stream): the
// server's certificate must chain to the CA file given (the system's CAs
// when none is) and name the URL's host (or IP address); the client sends a
// certificate of its own when given one (mutual TLS).
//
// Thread safety: a client sends one request at a time (callers that share
// one serialize); HttpRequest keeps no state and may be called from any
// thread.
#pragma once

#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/status.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace gpulse::server {

// What came back. Any status is a reply: deciding what a 404 or a 503 means
// is the caller's business.
struct HttpReply {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, verbatim; empty if absent
};

// A server's address from http[s]://host[:port][/...]: an IPv6 host in
// brackets, port 80 (https: 443) when none is given (`default_port` instead
// when not empty). `target` is the path and query ("/" when there is none).
struct HttpUrl {
  bool tls = false;  // https
  std::string host;  // without brackets
  std::string port;
  std::string target;
  std::string Authority() const;  // host:port as the Host header wants it
};
Status ParseHttpUrl(std::string_view url, HttpUrl* out, std::string_view default_port = {});

class HttpClient {
 public:
  struct Options {
    // Bounds connecting, writing and reading one request together; zero:
    // no bound.
    std::chrono::milliseconds timeout{0};
    uint64_t max_reply_bytes = 64ull << 20;  // a longer reply body is an error
    std::string user_agent;                  // empty: gpulse/<version>
    std::string authorization;               // the Authorization header, when not empty
    // More headers sent with every request (a remote writer's
    // Content-Encoding: snappy).
    std::vector<std::pair<std::string, std::string>> headers;
    // Polled every 50 ms while a request waits (the shell's Ctrl-C): true
    // drops the connection and ends the request with Cancelled.
    std::function<bool()> cancelled;
    // For an https:// URL: the CA certificates (PEM) that verify the server
    // (empty: the system's), and the client's certificate chain and private
    // key (PEM; both or neither) for a server that asks for one.
    std::string tls_ca_file, tls_cert_file, tls_key_file;
  };

  // A client of the server at `url` (http[s]://host[:port]; a path is
  // ignored). InvalidArgument, naming the URL, for one that is neither, and
  // naming the file, for a TLS file that cannot be read.
  static Status Open(std::string_view url, Options options, std::unique_ptr<HttpClient>* out);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request for `target` ("/query?q=..."). `content_type` and
  // `accept` are sent when not empty. Returns Ok whenever a reply was read,
  // whatever its status; IOError, naming the server, for resolve, connect,
  // timeout and malformed replies (the connection is then dropped).
  Status Send(boost::beast::http::verb method, std::string_view target,
              std::string_view content_type, std::string_view accept, const std::string& body,
              HttpReply* reply);

  const std::string& url() const { return url_; }
  // The path and query of the URL the client was opened with ("/" when none).
  const std::string& target() const { return where_.target; }

 private:
  struct Connection;
  HttpClient(std::string url, HttpUrl where, Options options);
  Status Connect();
  // Runs the connection's pending operation to its end, the deadline or a
  // cancellation.
  Status Wait(std::string_view what);

  const std::string url_;
  const HttpUrl where_;
  const Options options_;
  std::unique_ptr<boost::asio::ssl::context> tls_;  // an https URL's
  std::unique_ptr<Connection> connection_;          // null between connections
};

// Sends one `method` request for `url` (http[s]://host[:port]/path) on a
// connection of its own and reads the reply into *reply. `content_type` and
// `body` are the request's (an empty content_type sends no Content-Type
// header); `accept`, when not empty, is sent as the Accept header. `timeout`
// bounds connect, write and read together; a reply body over `max_bytes` is
// an error. Errors name the URL.
Status HttpRequest(boost::beast::http::verb method, const std::string& url,
                   std::string_view content_type, const std::string& body,
                   std::chrono::milliseconds timeout, uint64_t max_bytes, HttpReply* reply,
                   std::string_view accept = {});

}  // namespace gpulse::server
