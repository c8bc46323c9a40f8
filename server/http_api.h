// HttpApi: what each HTTP endpoint means. It turns a request into engine
// calls and the result into a response; HttpServer does the I/O.
//
//   POST /write             InfluxDB 1.x line-protocol write   -> 204 | 400 partial | 413 | 503
//   POST /api/v2/write      InfluxDB 2.x line-protocol write   -> same
//   GET /, /console/*       the console: the page and its files (no token)
//   GET|HEAD /ping          liveness, with InfluxDB version headers -> 204
//   GET /health             JSON status
//   GET /metrics            the server's own metrics, Prometheus text
//   GET /api/v1/sources     pushing clients and scrape targets, last seen
//   GET|POST /api/v1/compact  flush and compact the store (write scope)
//   POST /api/v1/forward/backfill  send a stored time range to a remote_write
//                           target (server/forwarder.h; read and write scope)
//   GET|POST /query         InfluxQL-flavoured queries, InfluxDB 1.x JSON or CSV
//   GET /api/v1/alerts      alert rules and their instances, resolved ones too
//   GET /api/v1/alerts/active   pending and firing instances
//   POST /api/v1/alerts/{id}/resolve   resolve an instance (or a rule's) by hand
//   POST /api/v1/write      Prometheus remote write
//   the fleet (http_api_fleet.cc): GET /api/v1/nodes, /api/v1/nodes/{id},
//     /api/v1/nodes/{id}/metrics, PUT /api/v1/nodes/{id}/status,
//     GET /api/v1/actions, /api/v1/metrics/latest
//   the Prometheus API (http_api_prom.cc): /api/v1/query, /api/v1/query_range,
//     /api/v1/series, /api/v1/labels, /api/v1/label/<name>/values,
//     /api/v1/metadata, /api/v1/rules, /api/v1/status/buildinfo,
//     /api/v1/query_exemplars, /-/healthy, /-/ready, POST /api/v1/read (remote read)
//
// docs/http-api.md documents parameters, status codes and error bodies.
//
// Thread safety: Handle may run on several threads at once.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/prom_mapping.h"
#include "query/fleet/nodes.h"
#include "query/query.h"
#include "query/runtime/format.h"
#include "query/runtime/query_memory.h"
#include "query/syntax/parse_cache.h"
#include "query/syntax/statement_reach.h"
#include "server/alerts.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/sources.h"

namespace gpulse::server {

class Forwarder;

// The decoded query parameters of a request target ("/write?db=x&p=y"): the
// last value of each, or every one in order (match[]=a&match[]=b).
std::map<std::string, std::string> ParseQueryString(std::string_view target);
std::vector<std::pair<std::string, std::string>> ParseQueryPairs(std::string_view target);

// Every byte but RFC 3986's unreserved ones as %XX: a parameter value as a
// client puts it in a URL or a form body (ParseQueryString reads it back).
std::string PercentEncode(std::string_view text);

// The HTTP server's options that `config` sets (threads, body limit, read
// timeout, connections, and queries on threads of their own); the caller
// sets the address.
void ConfigureServer(const ServerConfig& config, HttpServerOptions* options);

class HttpApi {
 public:
  // `db`, `metrics`, `sources`, `alerts` and `forwarder` must outlive the
  // HttpApi; `alerts` may be null (rules are not evaluated: the alert
  // endpoints say so), and `forwarder` too (no target can be backfilled).
  HttpApi(Db* db, const ServerConfig& config, ServerMetrics* metrics, SourceRegistry* sources,
          AlertManager* alerts = nullptr, Forwarder* forwarder = nullptr);
  ~HttpApi();
  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Whether the request runs on the server's query threads
  // (HttpServerOptions::long_request): /query.
  static bool RunsLong(const Request& request);

  Response Handle(const Request& request, const RequestContext& context);

 private:
  // --- writes (http_api_write.cc) ---
  // /write and /api/v2/write: line protocol.
  Response Write(const Request& request, const RequestContext& context, bool v2);
  // /api/v1/write: a Prometheus remote write request.
  Response RemoteWrite(const Request& request, const RequestContext& context);
  // Who may write where: non-null (the 401 or 403) when the request may not
  // write to *database, which a token scoped to one database fills in when
  // the request named none. `hint` says how a request names a database.
  std::optional<Response> AuthorizeWrite(const Request& request,
                                         const std::map<std::string, std::string>& params,
                                         std::string_view hint, std::string* database,
                                         std::optional<Grant>* grant);
  // Non-null when Db::Write refused the request as a whole: 429 (series
  // rate), 503 (the head is full), 507 (the disk is), 500.
  std::optional<Response> WriteRefused(const Status& s, const WriteResult& result,
                                       unsigned version);

  // --- the fleet (http_api_fleet.cc) ---
  // /api/v1/nodes and /api/v1/nodes/{id}[/metrics|/status].
  Response Nodes(const Request& request, std::string_view path);
  Response NodeMetrics(const Request& request, const std::map<std::string, std::string>& params,
                       const query::NodeRow& row, int64_t now_ns);
  Response SetStatus(const Request& request, const std::map<std::string, std::string>& params,
                     const query::NodeRow& row, int64_t now_ns);
  Response Actions(const Request& request);
  Response LatestMetrics(const Request& request);
  // Which database's nodes a request is about (db=, or the one database a
  // token may reach), and non-null when the token may not `access` it.
  std::optional<Response> FleetScope(const Request& request,
                                     const std::map<std::string, std::string>& params,
                                     Access access, query::NodeScope* scope);
  // Who made a request, for the audit trail: "token:<name>" or "anonymous".
  std::string ActorOf(const Request& request, const std::map<std::string, std::string>& params);
  // The pending and firing alerts whose group names a node, by node.
  std::map<std::string, size_t> ActiveAlertsByNode() const;

  // / and /console/*: the page and its files (server/console.h).
  Response Console(const Request& request, std::string_view path);
  Response Compact(const Request& request);
  // /api/v1/forward/backfill?target=&start=&end=
  Response Backfill(const Request& request);
  // --- the Prometheus API (http_api_prom.cc) ---
  Response PromBuildInfo(const Request& request);
  Response PromExemplars(const Request& request);
  // /api/v1/query (range false) and /api/v1/query_range.
  Response PromQuery(const Request& request, const RequestContext& context, bool range);
  // /api/v1/read: Prometheus remote read (server/prom_remote_read.h).
  Response PromRemoteRead(const Request& request, const RequestContext& context);
  // /api/v1/metadata: what scrapes said of each metric (# TYPE, # HELP).
  Response PromMetadata(const Request& request);
  // /api/v1/rules: the alert rules in Prometheus' shape.
  Response PromRules(const Request& request);
  // /api/v1/series, /api/v1/labels and /api/v1/label/<name>/values.
  Response PromListing(const Request& request, std::string_view path);
  // /-/healthy (ready false) and /-/ready.
  Response PromProbe(const Request& request, bool ready);
  Response Query(const Request& request, const RequestContext& context);
  // chunked=true: the answer in objects of chunk_rows rows, streamed through
  // context.stream as the statements make it (a raw SELECT a window of its
  // range at a time); `header` is the response's status and header.
  Response QueryChunked(const query::StatementList& statements, size_t chunk_rows,
                        query::TimeFormat time_format, const RequestContext& context,
                        QueryOptions* options, Response header);
  // A /query answer in one body: JSON, or CSV when the client accepts it.
  Response AnswerInRows(const Request& request, query::TimeFormat time_format, bool pretty,
                        QueryMemory* memory, QueryResult* result);
  void CountErrors(const QueryResult& result);
  Response Metrics(const Request& request);
  Response Sources(const Request& request);
  Response Health(const Request& request);
  Response Alerts(const Request& request, std::string_view path);
  Response Ping(const Request& request);
  // Who the request is: its grant, or nullopt with the 401 to send in
  // *refusal.
  std::optional<Grant> Authenticate(const Request& request,
                                    const std::map<std::string, std::string>& params,
                                    Response* refusal);
  // Non-null when `grant` does not cover `database` ("*": every database)
  // for `access`: the 403 to send, naming what the token may reach, and
  // `hint` (how to name a database) when the request could have named one.
  std::optional<Response> Forbid(const Request& request, const Grant& grant,
                                 std::string_view database, Access access,
                                 std::string_view hint = {});
  // Non-null when a statement reaches past `grant` (`reaches`, one for each
  // statement: statement_reach.h): the 403.
  std::optional<Response> ForbidStatements(const Request& request, const Grant& grant,
                                           const std::vector<query::Reach>& reaches);
  // Both: non-null when the request may not proceed.
  std::optional<Response> Authorize(const Request& request,
                                    const std::map<std::string, std::string>& params,
                                    std::string_view database, Access access);

  Db* const db_;
  ingest::PromMeasurements prom_measurements_{db_};
  ingest::PromMetadataNotes prom_metadata_{db_};
  const ServerConfig& config_;
  Authenticator auth_;
  ServerMetrics* const metrics_;
  SourceRegistry* const sources_;
  AlertManager* const alerts_;
  Forwarder* const forwarder_;
  query::ParseCache parse_cache_;
  QueryMemoryPool query_memory_;  // every /query's budget draws on it
};

}  // namespace gpulse::server
