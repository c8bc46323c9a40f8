// AlertReplay: plays a simulated fleet through a running test server the way
// node agents would deliver it, minute by minute over HTTP, evaluating the
// alert rules at each minute as the server's loop does, and records when
// each (rule, group) began to fire. What lies before the live part is
// stored directly: it is the history a server would already hold.
//
// Thread safety: one thread drives it.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ingest/fleet_sim.h"
#include "ingest/lp_format.h"
#include "server/alerts.h"
#include "tests/support/http_client.h"
#include "tests/support/test_server.h"

namespace gpulse::test {

// The page rules docs/metric-framework.md recommends, which the replay test
// and bench/alert_replay hold to the 15-minute target. The goodput rule
// watches the share of capacity lost to ill health, 1 - goodput - slack
// (capacity idle for want of demand is not an outage), and asks that the
// loss be spread over three failed jobs or more: one large job failing
// moves a cluster's goodput as much as a regression's first minutes do.
// The rollout rule watches each driver and image new to the last six hours
// and pages when its software failures are beyond chance at the rest's
// rate (query/fleet/rollouts.h): a bad deploy, from its first failures.
inline constexpr const char* kRecommendedPageRules[] = {
    "CREATE ALERT goodput_drop ON NORTHSTAR BY cluster OVER 15m WHEN 1 - value - slack > "
    "baseline(1 - value - slack) + 0.05 AND failed_jobs >= 3 FOR 1m SEVERITY page OWNER infra",
    "CREATE ALERT thermal_node ON SELECT count(throttle_reasons) FROM gpu WHERE throttle_reasons "
    ">= 32 AND throttle_reasons < 128 AND time > now() - 5m GROUP BY node WHEN value >= 20 FOR "
    "5m SEVERITY page OWNER infra",
    "CREATE ALERT bad_rollout ON ROLLOUTS WHEN evidence >= 3 SEVERITY page OWNER infra",
};

struct Firing {
  std::string rule;
  std::string group;
  int64_t fired_ns = 0;
};

class AlertReplay {
 public:
  static constexpr int64_t kMinuteNs = 60LL * 1'000'000'000;

  AlertReplay(TestServer* server, int64_t live_from_ns)
      : server_(server), client_(server->port()), live_from_(live_from_ns) {}

  // Simulates `options`: points before the live instant go straight into
  // the server's Db, later ones are kept as line protocol by minute.
  Status Simulate(const fleet::SimOptions& options) {
    std::unique_ptr<fleet::Simulator> sim;
    GPULSE_RETURN_IF_ERROR(fleet::Simulator::Create(options, &sim));
    incidents_ = sim->incidents();
    Sink sink(this);
    return sim->Emit(&sink, 2, {}, nullptr);
  }

  const std::vector<fleet::Incident>& incidents() const { return incidents_; }

  // Delivers the minutes [from, to) one by one through POST /write; after
  // minute m arrives, the rules are evaluated as of m + 1 minute (the
  // instant at which minute m is complete) when `evaluate` is set. Returns
  // the instances that began to fire meanwhile, in *fired.
  Status Play(int64_t from_ns, int64_t to_ns, bool evaluate, std::vector<Firing>* fired) {
    for (int64_t m = from_ns; m < to_ns; m += kMinuteNs) {
      const auto it = minutes_.find(m);
      if (it != minutes_.end()) {
        HttpReply r = client_.Post("/write", it->second);
        // A keep-alive connection idle past the server's read timeout (a slow
        // evaluation) is closed; the client reconnects on the next request.
        if (r.status == -1) r = client_.Post("/write", it->second);
        if (r.status != 204) {
          return Status::IOError("POST /write: HTTP " + std::to_string(r.status) + ": " +
                                 r.body.substr(0, 500));
        }
        minutes_.erase(it);
      }
      if (!evaluate) continue;
      server_->alerts()->EvaluateAt(m + kMinuteNs);
      for (const server::AlertInstance& a : server_->alerts()->Instances(false)) {
        if (a.state == "firing" && a.fired_ns == m + kMinuteNs) {
          fired->push_back({a.rule, a.group, a.fired_ns});
        }
      }
    }
    return Status::Ok();
  }

  // Creates a rule through POST /query; the error message, or "" when it was created.
  std::string Create(const std::string& rule) {
    const HttpReply r = client_.Post("/query?q=" + server::PercentEncode(rule), "");
    if (r.status != 200) return r.body;
    const size_t error = r.body.find("\"error\"");
    return error == std::string::npos ? "" : r.body;
  }

 private:
  struct Sink final : fleet::PointSink {
    explicit Sink(AlertReplay* r) : replay(r) {}
    Status Write(std::span<const PointRef> points) override {
      std::vector<PointRef> history;
      std::map<int64_t, std::string> live;
      for (const PointRef& p : points) {
        if (p.timestamp_ns < replay->live_from_) {
          history.push_back(p);
        } else {
          ingest::AppendLineProtocol(p, &live[p.timestamp_ns / kMinuteNs * kMinuteNs]);
        }
      }
      if (!history.empty()) GPULSE_RETURN_IF_ERROR(replay->server_->db()->Write(history));
      std::lock_guard<std::mutex> l(replay->mu_);
      for (auto& [m, text] : live) replay->minutes_[m] += text;
      return Status::Ok();
    }
    AlertReplay* replay;
  };

  TestServer* server_;
  HttpClient client_;
  const int64_t live_from_;
  std::vector<fleet::Incident> incidents_;
  std::mutex mu_;
  std::map<int64_t, std::string> minutes_;  // line protocol by minute
};

}  // namespace gpulse::test
