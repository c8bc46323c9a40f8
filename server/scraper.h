// Scraper: pulls Prometheus text exposition from the configured targets
// (dcgm-exporter, node_exporter, nvidia_gpu_exporter) on their intervals,
// maps the samples to points (ingest/prom_mapping.h) and writes them. Every
// attempt is recorded in the SourceRegistry: a target that fails to answer
// is marked down with the error.
//
// Thread safety: one background thread; Start and Stop from one thread.
#pragma once

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
