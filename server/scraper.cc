#include "server/scraper.h"

#include <iterator>
#include <variant>

#include "ingest/prom_mapping.h"
#include "ingest/prom_text.h"
#include "server/http_client.h"

namespace gpulse::server {

namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status HttpGet(const std::string& url, std::chrono::milliseconds timeout, uint64_t max_bytes,
               std::string* body) {
  HttpReply reply;
  Status s = HttpRequest(boost::beast::http::verb::get, url, /*content_type=*/"", /*body=*/"",
                         timeout, max_bytes, &reply, "text/plain;version=0.0.4");
  if (!s.ok()) return s;
  if (reply.status != 200) return Status::IOError(url + ": HTTP " + std::to_string(reply.status));
  *body = std::move(reply.body);
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
    MutexLock l(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

Status Scraper::ScrapeOnce(const ScrapeTarget& target) {
  const int64_t now = NowNanos();
  std::string body;
  Status s = HttpGet(target.url, target.timeout, max_body_bytes_, &body);
  const bool fetched = s.ok();
  std::vector<Point> points;
  if (fetched) {
    ingest::PromTextScratch scratch;
    std::vector<ingest::PromSample> samples;
    std::vector<ingest::PromError> errors;
    std::vector<ingest::PromMetadata> metadata;
    ingest::ParsePromText(body, &scratch, &samples, &errors, &metadata);
    metrics_->scrape_samples += samples.size();
    ingest::PromMappingOptions mapping;
    mapping.measurement = target.measurement;
    mapping.extra_tags = target.tags;
    ingest::MapSamples(samples, now, mapping, &points);
    std::vector<Point> stale = StaleMarkers(target.url, &points, now);
    for (const Point& p : stale) metrics_->scrape_stale_markers += p.fields.size();
    const size_t scraped = points.size();
    points.insert(points.end(), std::make_move_iterator(stale.begin()),
                  std::make_move_iterator(stale.end()));
    WriteResult result;
    if (!points.empty()) s = prom_measurements_.Note(target.measurement);
    if (s.ok()) s = prom_metadata_.Note(metadata);
    if (s.ok() && !points.empty()) s = db_->Write(points, &result);
    points.resize(scraped);
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
    if (!fetched) {
      // The target is down: every series it had ends now.
      const std::vector<Point> stale = StaleMarkers(target.url, nullptr, now);
      if (!stale.empty() && db_->Write(stale).ok()) {
        for (const Point& p : stale) metrics_->scrape_stale_markers += p.fields.size();
      }
    }
  }
  sources_->RecordScrape(target.url, s.ok() ? points.size() : 0, s.ok() ? "" : s.ToString(), now);
  return s;
}

std::vector<Point> Scraper::StaleMarkers(const std::string& url, const std::vector<Point>* points,
                                         int64_t now) {
  std::map<std::string, SeenSeries> current;
  if (points != nullptr) {
    for (const Point& p : *points) {
      if (p.timestamp_ns != now) continue;  // a sample with its own time: no staleness
      std::string key = p.measurement;
      for (const Tag& t : p.tags) key += '\0' + t.key + '\0' + t.value;
      SeenSeries& s = current[key];
      if (s.measurement.empty()) s.measurement = p.measurement, s.tags = p.tags;
      for (const Field& f : p.fields) {
        if (!std::holds_alternative<std::string>(f.value)) s.metrics.insert(f.key);
      }
    }
  }
  std::vector<Point> stale;
  std::map<std::string, SeenSeries>& before = seen_[url];
  for (const auto& [key, was] : before) {
    const auto now_there = current.find(key);
    Point p{was.measurement, was.tags, {}, now};
    for (const std::string& metric : was.metrics) {
      if (now_there == current.end() || now_there->second.metrics.count(metric) == 0) {
        p.fields.push_back(Field{StaleFieldOf(metric), true});
      }
    }
    if (!p.fields.empty()) stale.push_back(std::move(p));
  }
  before = std::move(current);
  return stale;
}

void Scraper::Loop() {
  std::vector<Clock::time_point> due(targets_.size(), Clock::now());
  MutexLock l(&mu_);
  while (!stopping_) {
    size_t next = 0;
    for (size_t i = 1; i < targets_.size(); ++i) {
      if (due[i] < due[next]) next = i;
    }
    // Back to the top on any wake before the target is due: Stop, or a
    // spurious one.
    if (cv_.WaitUntil(&mu_, due[next])) continue;
    l.Unlock();
    (void)ScrapeOnce(targets_[next]);
    // Keep the grid: the next scrape is one interval after this one was due,
    // unless that is already past (a slow target), then one from now.
    due[next] = std::max(due[next] + targets_[next].interval, Clock::now());
    l.Lock();
  }
}

}  // namespace gpulse::server
