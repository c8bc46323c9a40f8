#include "server/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>

#include "engine/gpulse.h"

namespace gpulse::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;

std::string HttpUrl::Authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + port;
}

Status ParseHttpUrl(std::string_view url, HttpUrl* out, std::string_view default_port) {
  const Status bad =
      Status::InvalidArgument(std::string(url) + ": not an http[s]://HOST[:PORT] URL");
  out->tls = url.starts_with("https://");
  if (!out->tls && !url.starts_with("http://")) return bad;
  std::string_view rest = url.substr(out->tls ? 8 : 7);
  const size_t slash = rest.find('/');
  out->target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  std::string_view authority = rest.substr(0, slash);
  size_t port_at = authority.rfind(':');
  if (!authority.empty() && authority.front() == '[') {  // [v6 address]
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad;
    out->host = std::string(authority.substr(1, close - 1));
    port_at =
        close + 1 < authority.size() && authority[close + 1] == ':' ? close + 1 : std::string::npos;
  } else {
    out->host = std::string(authority.substr(0, port_at));
  }
  out->port = port_at != std::string_view::npos ? std::string(authority.substr(port_at + 1))
              : !default_port.empty()           ? std::string(default_port)
              : out->tls                        ? "443"
                                                : "80";
  if (out->host.empty() || out->port.empty()) return bad;
  return Status::Ok();
}

// One connection: plain TCP, or TLS over it.
struct HttpClient::Connection {
  explicit Connection(asio::ssl::context* tls) {
    if (tls != nullptr) {
      secure.emplace(io, *tls);
    } else {
      plain.emplace(io);
    }
  }
  beast::tcp_stream& tcp() { return secure ? secure->next_layer() : *plain; }

  asio::io_context io;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  beast::error_code ec;
};

HttpClient::HttpClient(std::string url, HttpUrl where, Options options)
    : url_(std::move(url)), where_(std::move(where)), options_(std::move(options)) {}

HttpClient::~HttpClient() = default;

Status HttpClient::Open(std::string_view url, Options options, std::unique_ptr<HttpClient>* out) {
  HttpUrl where;
  GPULSE_RETURN_IF_ERROR(ParseHttpUrl(url, &where));
  std::unique_ptr<asio::ssl::context> tls;
  if (where.tls) {
    tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                     asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                     asio::ssl::context::no_tlsv1_1);
    beast::error_code ec;
    auto failed = [&](const std::string& what) {
      return Status::InvalidArgument(std::string(url) + ": " + what + ": " + ec.message());
    };
    if (options.tls_ca_file.empty()) {
      tls->set_default_verify_paths(ec);
      if (ec) return failed("the system's CA certificates");
    } else {
      tls->load_verify_file(options.tls_ca_file, ec);
      if (ec) return failed("CA file " + options.tls_ca_file);
    }
    if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
      return Status::InvalidArgument(std::string(url) +
                                     ": a client certificate needs its key, and a key its "
                                     "certificate");
    }
    if (!options.tls_cert_file.empty()) {
      tls->use_certificate_chain_file(options.tls_cert_file, ec);
      if (ec) return failed("certificate file " + options.tls_cert_file);
      tls->use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
      if (ec) return failed("key file " + options.tls_key_file);
    }
  } else if (!options.tls_ca_file.empty() || !options.tls_cert_file.empty()) {
    return Status::InvalidArgument(std::string(url) +
                                   ": TLS files are given for a URL that is not https://");
  }
  out->reset(new HttpClient(std::string(url), std::move(where), std::move(options)));
  (*out)->tls_ = std::move(tls);
  return Status::Ok();
}

Status HttpClient::Wait(std::string_view what) {
  Connection& c = *connection_;
  c.io.restart();
  while (!c.io.stopped()) {
    if (!options_.cancelled) {
      c.io.run();
      break;
    }
    c.io.run_for(std::chrono::milliseconds(50));
    if (!c.io.stopped() && options_.cancelled()) {
      connection_.reset();  // closes the socket; its handlers never run
      return Status::Cancelled("cancelled");
    }
  }
  if (c.ec == beast::error::timeout) {
    connection_.reset();
    return Status::IOError(url_ + ": no answer within " + std::to_string(options_.timeout.count()) +
                           " ms");
  }
  if (c.ec) {
    const std::string message = c.ec.message();
    connection_.reset();
    return Status::IOError(url_ + ": " + std::string(what) + message);
  }
  return Status::Ok();
}

Status HttpClient::Connect() {
  connection_ = std::make_unique<Connection>(tls_.get());
  Connection& c = *connection_;
  asio::ip::tcp::resolver resolver(c.io);
  const auto endpoints = resolver.resolve(where_.host, where_.port, c.ec);
  if (c.ec) {
    const std::string message = c.ec.message();
    connection_.reset();
    return Status::IOError(url_ + ": resolve " + where_.host + ": " + message);
  }
  if (options_.timeout.count() > 0) c.tcp().expires_after(options_.timeout);
  c.tcp().async_connect(endpoints, [&c](beast::error_code e, const auto&) { c.ec = e; });
  GPULSE_RETURN_IF_ERROR(Wait("connect: "));
  if (!c.secure) return Status::Ok();
  // The certificate must name the host (or IP address) of the URL; a host
  // name goes as SNI, so a server of many names can pick its certificate.
  beast::error_code not_ip;
  asio::ip::make_address(where_.host, not_ip);
  if (not_ip && !SSL_set_tlsext_host_name(c.secure->native_handle(), where_.host.c_str())) {
    connection_.reset();
    return Status::IOError(url_ + ": TLS: cannot set the server name " + where_.host);
  }
  c.secure->set_verify_mode(asio::ssl::verify_peer);
  c.secure->set_verify_callback(asio::ssl::host_name_verification(where_.host));
  c.secure->async_handshake(asio::ssl::stream_base::client,
                            [&c](beast::error_code e) { c.ec = e; });
  return Wait("TLS handshake: ");
}

Status HttpClient::Send(http::verb method, std::string_view target, std::string_view content_type,
                        std::string_view accept, const std::string& body, HttpReply* reply) {
  // A kept connection the server closed meanwhile fails at once: then the
  // request goes again on a new one.
  for (int attempt = 0;; ++attempt) {
    const bool kept = connection_ != nullptr;
    if (!kept) GPULSE_RETURN_IF_ERROR(Connect());
    Connection& c = *connection_;
    http::request<http::string_body> request{method, target, 11};
    request.set(http::field::host, where_.Authority());
    request.set(http::field::user_agent, options_.user_agent.empty()
                                             ? std::string("gpulse/") + Version()
                                             : options_.user_agent);
    if (!accept.empty()) request.set(http::field::accept, accept);
    if (!content_type.empty()) request.set(http::field::content_type, content_type);
    if (!options_.authorization.empty()) {
      request.set(http::field::authorization, options_.authorization);
    }
    for (const auto& [name, value] : options_.headers) request.set(name, value);
    request.body() = body;
    // Sets Content-Length, except on a GET without a body, which sends none.
    request.prepare_payload();
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_reply_bytes);
    if (options_.timeout.count() > 0) c.tcp().expires_after(options_.timeout);
    c.ec = {};
    auto exchange = [&c, &request, &parser](auto& stream) {
      http::async_write(stream, request, [&c, &stream, &parser](beast::error_code e, size_t) {
        c.ec = e;
        if (!e) {
          http::async_read(stream, c.buffer, parser,
                           [&c](beast::error_code r, size_t) { c.ec = r; });
        }
      });
    };
    if (c.secure) {
      exchange(*c.secure);
    } else {
      exchange(*c.plain);
    }
    const bool fresh_fail = kept && attempt == 0;
    const Status waited = Wait("");
    if (!waited.ok()) {
      if (fresh_fail && !waited.IsCancelled()) continue;
      return waited;
    }
    auto& response = parser.get();
    reply->status = response.result_int();
    reply->retry_after = std::string(response[http::field::retry_after]);
    reply->body = std::move(response.body());
    if (!response.keep_alive()) connection_.reset();
    return Status::Ok();
  }
}

Status HttpRequest(http::verb method, const std::string& url, std::string_view content_type,
                   const std::string& body, std::chrono::milliseconds timeout, uint64_t max_bytes,
                   HttpReply* reply, std::string_view accept) {
  HttpClient::Options options;
  options.timeout = timeout;
  options.max_reply_bytes = max_bytes;
  std::unique_ptr<HttpClient> client;
  GPULSE_RETURN_IF_ERROR(HttpClient::Open(url, options, &client));
  return client->Send(method, client->target(), content_type, accept, body, reply);
}

}  // namespace gpulse::server
