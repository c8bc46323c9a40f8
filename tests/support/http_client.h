// HttpClient: a small blocking HTTP/1.1 client over Boost.Beast for the
// server tests, on one keep-alive connection to 127.0.0.1.
//
// Thread safety: one client per thread.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <optional>
#include <string>

namespace gpulse::test {

namespace http = boost::beast::http;

struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;
  bool keep_alive = false;
};

class HttpClient {
 public:
  explicit HttpClient(uint16_t port) : port_(port) {}

  // Sends one request; reconnects when the server closed the connection.
  HttpReply Send(http::verb method, const std::string& target, const std::string& body = "",
                 const std::map<std::string, std::string>& headers = {}) {
    if (!connected_) Connect();
    http::request<http::string_body> request{method, target, 11};
    request.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) request.set(k, v);
    request.body() = body;
    request.prepare_payload();
    boost::beast::error_code ec;
    http::write(*stream_, request, ec);
    HttpReply reply;
    if (ec) {
      connected_ = false;
      reply.status = -1;
      return reply;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    if (method == http::verb::head) parser.skip(true);
    http::read(*stream_, buffer_, parser, ec);
    if (ec) {
      connected_ = false;
      reply.status = -1;
      return reply;
    }
    const auto& response = parser.get();
    reply.status = static_cast<int>(response.result_int());
    reply.body = response.body();
    for (const auto& field : response) {
      reply.headers[std::string(field.name_string())] = std::string(field.value());
    }
    reply.keep_alive = response.keep_alive();
    if (!reply.keep_alive) connected_ = false;
    return reply;
  }

  HttpReply Post(const std::string& target, const std::string& body,
                 const std::map<std::string, std::string>& headers = {}) {
    return Send(http::verb::post, target, body, headers);
  }
  HttpReply Get(const std::string& target, const std::map<std::string, std::string>& headers = {}) {
    return Send(http::verb::get, target, "", headers);
  }

 private:
  void Connect() {
    stream_.emplace(io_);
    stream_->connect(
        boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_));
    buffer_.clear();
    connected_ = true;
  }

  uint16_t port_;
  boost::asio::io_context io_;
  std::optional<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
};

}  // namespace gpulse::test
