// The Prometheus HTTP API's endpoints that need no PromQL: build information
// (what Grafana's Prometheus data source reads to learn what it talks to),
// exemplars (gpulse keeps none), and the health and readiness probes.
// docs/http-api.md, "Prometheus API".

#include <string>

#include "server/http_api.h"
#include "server/http_reply.h"

namespace gpulse::server {

namespace {

// The Prometheus release whose API gpulse answers as: Grafana enables its
// features by this version, and no `features` map (a Mimir or Cortex one)
// is sent.
constexpr const char* kPrometheusVersion = "2.42.0";

Response Text(unsigned version, const std::string& body) {
  Response res{http::status::ok, version};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = body;
  res.prepare_payload();
  return res;
}

}  // namespace

Response HttpApi::PromBuildInfo(const Request& request) {
  return Json(http::status::ok, request.version(),
              {{"status", "success"},
               {"data",
                {{"version", kPrometheusVersion},
                 {"revision", std::string("gpulse ") + Version()},
                 {"branch", ""},
                 {"buildUser", ""},
                 {"buildDate", ""},
                 {"goVersion", ""}}}});
}

Response HttpApi::PromExemplars(const Request& request) {
  return Json(http::status::ok, request.version(),
              {{"status", "success"}, {"data", nlohmann::json::array()}});
}

Response HttpApi::PromProbe(const Request& request, bool ready) {
  if (!ready) return Text(request.version(), "gpulse is Healthy.\n");
  // Ready: the database takes writes (a full disk refuses them, 507).
  if (db_->GetStats().disk_full) {
    Response res = Text(request.version(), "gpulse is not ready: the disk is full.\n");
    res.result(http::status::service_unavailable);
    return res;
  }
  return Text(request.version(), "gpulse is Ready.\n");
}

}  // namespace gpulse::server
