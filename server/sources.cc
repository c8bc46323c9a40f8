#include "server/sources.h"

#include <nlohmann/json.hpp>

namespace gpulse::server {

void SourceRegistry::RecordPush(const std::string& address, const std::string& user_agent,
                                uint64_t points, int64_t now_ns) {
  MutexLock l(&mu_);
  SourceInfo& s = sources_[{"push", address}];
  if (s.first_seen_ns == 0) s.first_seen_ns = now_ns;
  s.kind = "push";
  s.name = address;
  s.last_seen_ns = s.last_attempt_ns = now_ns;
  s.points += points;
  ++s.requests;
  s.up = true;
  s.user_agent = user_agent;
}

void SourceRegistry::RecordScrape(const std::string& url, uint64_t points, const std::string& error,
                                  int64_t now_ns) {
  MutexLock l(&mu_);
  SourceInfo& s = sources_[{"scrape", url}];
  if (s.first_seen_ns == 0) s.first_seen_ns = now_ns;
  s.kind = "scrape";
  s.name = url;
  s.last_attempt_ns = now_ns;
  ++s.requests;
  s.up = error.empty();
  s.last_error = error;
  if (s.up) {
    s.last_seen_ns = now_ns;
    s.points += points;
  }
}

std::string SourceRegistry::ToJson() const {
  nlohmann::json list = nlohmann::json::array();
  MutexLock l(&mu_);
  for (const auto& [key, s] : sources_) {
    nlohmann::json j = {{"kind", s.kind},
                        {"name", s.name},
                        {"up", s.up},
                        {"points", s.points},
                        {"requests", s.requests},
                        {"first_seen_ns", s.first_seen_ns},
                        {"last_attempt_ns", s.last_attempt_ns}};
    j["last_seen_ns"] = s.last_seen_ns == 0 ? nlohmann::json() : nlohmann::json(s.last_seen_ns);
    if (!s.last_error.empty()) j["error"] = s.last_error;
    if (!s.user_agent.empty()) j["user_agent"] = s.user_agent;
    list.push_back(std::move(j));
  }
  return nlohmann::json{{"sources", list}}.dump();
}

std::vector<SourceInfo> SourceRegistry::Snapshot() const {
  MutexLock l(&mu_);
  std::vector<SourceInfo> out;
  for (const auto& [key, s] : sources_) out.push_back(s);
  return out;
}

}  // namespace gpulse::server
