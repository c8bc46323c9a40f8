// SourceRegistry: who sends us data, and when we last heard from them. A
// source is a pushing client (by remote address) or a scrape target (by URL).
// GET /api/v1/sources lists them; `SHOW SOURCES` and staleness rules will
// read the same registry.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "storage/mutex.h"

namespace gpulse::server {

struct SourceInfo {
  std::string kind;  // "push" or "scrape"
  std::string name;  // remote address, or target URL
  int64_t first_seen_ns = 0;
  int64_t last_seen_ns = 0;  // last successful push or scrape
  int64_t last_attempt_ns = 0;
  uint64_t points = 0;
  uint64_t requests = 0;
  bool up = true;
  std::string last_error;  // of the latest attempt; empty when it succeeded
  std::string user_agent;  // pushes: the latest User-Agent
};

class SourceRegistry {
 public:
  void RecordPush(const std::string& address, const std::string& user_agent, uint64_t points,
                  int64_t now_ns);
  void RecordScrape(const std::string& url, uint64_t points, const std::string& error,
                    int64_t now_ns);

  // {"sources": [...]} sorted by kind and name.
  std::string ToJson() const;
  // The same, as a table (SHOW SOURCES).
  std::vector<SourceInfo> Snapshot() const;

 private:
  mutable Mutex mu_;
  std::map<std::pair<std::string, std::string>, SourceInfo> sources_ GPULSE_GUARDED_BY(mu_);
};

}  // namespace gpulse::server
