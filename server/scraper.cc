#include "server/scraper.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "ingest/prom_mapping.h"
#include "ingest/prom_text.h"

namespace gpulse::server {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status HttpGet(const std::string& url, std::chrono::milliseconds timeout, uint64_t max_bytes,
               std::string* body) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) return Status::InvalidArgument(url + ": not an http:// URL");
  const std::string rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const std::string target = slash == std::string::npos ? "/" : rest.substr(slash);
  const size_t colon = authority.rfind(':');
  const std::string host = authority.substr(0, colon);
  const std::string port = colon == std::string::npos ? "80" : authority.substr(colon + 1);

  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.expires_after(timeout);
  asio::ip::tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return Status::IOError(url + ": resolve " + host + ": " + ec.message());
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_bytes);
  // Asynchronous calls, so the stream's deadline bounds connect, write and read.
  stream.async_connect(endpoints, [&](beast::error_code e, const auto&) { ec = e; });
  io.run();
  if (ec) return Status::IOError(url + ": connect: " + ec.message());
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, authority);
  request.set(http::field::user_agent, std::string("gpulse/") + Version());
  request.set(http::field::accept, "text/plain;version=0.0.4");
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
  const auto& response = parser.get();
  if (response.result() != http::status::ok) {
    return Status::IOError(url + ": HTTP " + std::to_string(response.result_int()));
  }
  *body = response.body();
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return Status::Ok();
}

Scraper::Scraper(std::vector<ScrapeTarget> targets, uint64_t max_body_bytes, Db* db,
                 ServerMetrics* metrics, SourceRegistry* sources)
    : targets_(std::move(targets)),
      max_body_bytes_(max_body_bytes),
      db_(db),
      metrics_(metrics),
      sources_(sources) {}

Scraper::~Scraper() { Stop(); }

void Scraper::Start() {
  if (targets_.empty()) return;
  thread_ = std::thread([this] { Loop(); });
}

void Scraper::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status Scraper::ScrapeOnce(const ScrapeTarget& target) {
  const int64_t now = NowNanos();
  std::string body;
  Status s = HttpGet(target.url, target.timeout, max_body_bytes_, &body);
  std::vector<Point> points;
  if (s.ok()) {
    ingest::PromTextScratch scratch;
    std::vector<ingest::PromSample> samples;
    std::vector<ingest::PromError> errors;
    ingest::ParsePromText(body, &scratch, &samples, &errors);
    metrics_->scrape_samples += samples.size();
    ingest::PromMappingOptions mapping;
    mapping.measurement = target.measurement;
    mapping.extra_tags = target.tags;
    ingest::MapSamples(samples, now, mapping, &points);
    WriteResult result;
    if (!points.empty()) s = db_->Write(points, &result);
    if (s.ok() && !errors.empty()) {
      s = Status::InvalidArgument(std::to_string(errors.size()) +
                                  " bad lines; first: " + errors.front().ToString());
    }
    metrics_->points_received += result.points_written;
    metrics_->values_received += result.values_written;
  }
  if (s.ok()) {
    ++metrics_->scrapes_ok;
  } else {
    ++metrics_->scrapes_failed;
  }
  sources_->RecordScrape(target.url, s.ok() ? points.size() : 0, s.ok() ? "" : s.ToString(), now);
  return s;
}

void Scraper::Loop() {
  std::vector<Clock::time_point> due(targets_.size(), Clock::now());
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    size_t next = 0;
    for (size_t i = 1; i < targets_.size(); ++i) {
      if (due[i] < due[next]) next = i;
    }
    if (cv_.wait_until(l, due[next], [this] { return stopping_; })) return;
    l.unlock();
    (void)ScrapeOnce(targets_[next]);
    // Keep the grid: the next scrape is one interval after this one was due,
    // unless that is already past (a slow target), then one from now.
    due[next] = std::max(due[next] + targets_[next].interval, Clock::now());
    l.lock();
  }
}

}  // namespace gpulse::server
