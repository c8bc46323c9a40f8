// Scraper: pulls Prometheus text exposition from the configured targets
// (dcgm-exporter, node_exporter, nvidia_gpu_exporter) on their intervals,
// maps the samples to points (ingest/prom_mapping.h) and writes them. Every
// attempt is recorded in the SourceRegistry: a target that fails to answer
// is marked down with the error. As Prometheus does, a metric of a series
// that the previous scrape of a target had and this one lacks, and every
// metric of a target whose scrape fails, gets a stale marker at the
// scrape's time (the field StaleFieldOf(metric); docs/prometheus-mapping.md,
// "Stale markers"), so that PromQL ends the series there rather than 5
// minutes later. Samples with their own timestamps get none.
//
// Thread safety: one background thread; Start and Stop from one thread;
// ScrapeOnce from one thread at a time.
#pragma once

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/prom_mapping.h"
#include "server/config.h"
#include "server/metrics.h"
#include "server/sources.h"
#include "storage/mutex.h"

namespace gpulse::server {

// Fetches `url` (plain http://host[:port]/path) within `timeout`. On success
// *body holds the response body; a non-200 status is an error naming it.
Status HttpGet(const std::string& url, std::chrono::milliseconds timeout, uint64_t max_bytes,
               std::string* body);

class Scraper {
 public:
  // All pointers must outlive the Scraper.
  Scraper(std::vector<ScrapeTarget> targets, uint64_t max_body_bytes, Db* db,
          ServerMetrics* metrics, SourceRegistry* sources);
  ~Scraper();

  void Start();
  void Stop();

  // Scrapes `target` once now: fetch, parse, map, write. Returns what went
  // wrong, if anything. Public for tests.
  Status ScrapeOnce(const ScrapeTarget& target);

 private:
  void Loop();
  // The stale markers of `url`'s metrics that `points` (a scrape's, at
  // `now`; null for a failed scrape) no longer has, and `points` noted as
  // what the target last had.
  std::vector<Point> StaleMarkers(const std::string& url, const std::vector<Point>* points,
                                  int64_t now);

  // A stored series a target's last scrape wrote, and its metrics.
  struct SeenSeries {
    std::string measurement;
    std::vector<Tag> tags;
    std::set<std::string> metrics;
  };
  // By target URL, by series key. Used by ScrapeOnce's thread only.
  std::map<std::string, std::map<std::string, SeenSeries>> seen_;

  const std::vector<ScrapeTarget> targets_;
  const uint64_t max_body_bytes_;
  Db* const db_;
  ingest::PromMeasurements prom_measurements_{db_};
  ingest::PromMetadataNotes prom_metadata_{db_};
  ServerMetrics* const metrics_;
  SourceRegistry* const sources_;

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GPULSE_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gpulse::server
