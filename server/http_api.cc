#include "server/http_api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include <malloc.h>

#include "ingest/civil_time.h"
#include "query/executor.h"
#include "query/promeval/statement.h"
#include "query/query.h"
#include "query/runtime/format.h"
#include "query/syntax/parser.h"
#include "query/syntax/statement_reach.h"
#include "server/console.h"
#include "server/forwarder.h"
#include "server/http_reply.h"

namespace gpulse::server {

namespace {

// InfluxDB clients read these to decide what the server speaks; 1.8 is the
// 1.x API gpulse implements.
constexpr const char* kInfluxVersion = "1.8.10";

// chunked=true answers in objects of this many rows unless chunk_size says
// otherwise (InfluxDB's default).
constexpr size_t kDefaultChunkRows = 10'000;
// What a cell of an answer takes as JSON text, about (the text is charged
// before it is made).
constexpr uint64_t kTextBytesACell = 12;
// A query that held this much gives the freed memory back when it is done.
constexpr uint64_t kTrimAfterBytes = 64ull << 20;

// Gives freed memory back to the system when a query that held much of it
// ends: the server's one malloc arena otherwise keeps it (glibc returns only
// the heap's top past M_TRIM_THRESHOLD), and RSS would stay at a burst's
// peak. malloc_trim also returns free pages inside the heap.
class TrimAfter {
 public:
  explicit TrimAfter(const QueryMemory* memory) : memory_(memory) {}
  ~TrimAfter() {
    if (memory_->peak() >= kTrimAfterBytes) ::malloc_trim(0);
  }
  TrimAfter(const TrimAfter&) = delete;
  TrimAfter& operator=(const TrimAfter&) = delete;

 private:
  const QueryMemory* const memory_;
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view s) {
  // Written through a pointer (the text only shrinks): push_back's
  // capacity check a character was most of a query string's decoding.
  std::string out(s.size(), '\0');
  char* p = out.data();
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '+') {
      *p++ = ' ';
    } else if (c == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      *p++ = static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2]));
      i += 2;
    } else {
      *p++ = c;
    }
  }
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

}  // namespace

Response Json(http::status status, unsigned version, const nlohmann::json& body) {
  Response res{status, version};
  res.set(http::field::content_type, "application/json");
  res.body() = body.dump();
  res.prepare_payload();
  return res;
}

Response Error(http::status status, unsigned version, const std::string& message) {
  return Json(status, version, {{"error", message}});
}

Response NoContent(unsigned version) {
  Response res{http::status::no_content, version};
  res.prepare_payload();
  return res;
}

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out += {'%', kHex[u >> 4], kHex[u & 15]};
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseQueryPairs(std::string_view target) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return pairs;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    if (!pair.empty()) {
      pairs.emplace_back(
          PercentDecode(pair.substr(0, eq)),
          eq == std::string_view::npos ? std::string() : PercentDecode(pair.substr(eq + 1)));
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return pairs;
}

std::map<std::string, std::string> ParseQueryString(std::string_view target) {
  std::map<std::string, std::string> params;
  for (auto& [key, value] : ParseQueryPairs(target)) params[std::move(key)] = std::move(value);
  return params;
}

void ConfigureServer(const ServerConfig& config, HttpServerOptions* options) {
  options->threads = HttpIoThreads(config);
  options->max_body_bytes = config.max_body_bytes;
  options->read_timeout = config.read_timeout;
  options->max_connections = config.max_connections;
  options->long_request = &HttpApi::RunsLong;
  options->long_request_threads =
      config.query_threads > 0 ? config.query_threads
                               : std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
  options->max_long_waiting = config.max_waiting_queries;
}

HttpApi::HttpApi(Db* db, const ServerConfig& config, ServerMetrics* metrics,
                 SourceRegistry* sources, AlertManager* alerts, Forwarder* forwarder)
    : db_(db),
      config_(config),
      auth_(config.tokens),
      metrics_(metrics),
      sources_(sources),
      alerts_(alerts),
      forwarder_(forwarder),
      query_memory_(config.server_query_memory_bytes) {
  metrics_->query_memory = [this] {
    return QueryMemoryStats{query_memory_.held(), query_memory_.limit(), query_memory_.refused()};
  };
}

HttpApi::~HttpApi() { metrics_->query_memory = nullptr; }

bool HttpApi::RunsLong(const Request& request) {
  const std::string_view target = request.target();
  const std::string_view path = target.substr(0, target.find('?'));
  return path == "/query" || path == "/api/v1/query" || path == "/api/v1/query_range" ||
         path == "/api/v1/read" || path == "/api/v1/forward/backfill" ||
         // The fleet's listings read a series or more of every node.
         path.starts_with("/api/v1/nodes") || path == "/api/v1/metrics/latest" ||
         path == "/api/v1/actions";
}

Response HttpApi::Handle(const Request& request, const RequestContext& context) {
  const auto started = std::chrono::steady_clock::now();
  const std::string_view target = request.target();
  const std::string_view path = target.substr(0, target.find('?'));
  const http::verb method = request.method();
  const auto only = [&](std::initializer_list<http::verb> allowed) {
    for (http::verb v : allowed) {
      if (method == v) return true;
    }
    return false;
  };
  Response response;
  bool known = true;
  bool allowed = true;
  if (path == "/write") {
    allowed = only({http::verb::post});
    if (allowed) response = Write(request, context, /*v2=*/false);
  } else if (path == "/api/v2/write") {
    allowed = only({http::verb::post});
    if (allowed) response = Write(request, context, /*v2=*/true);
  } else if (path == "/api/v1/write") {
    allowed = only({http::verb::post});
    if (allowed) response = RemoteWrite(request, context);
  } else if (path == "/api/v1/read") {
    allowed = only({http::verb::post});
    if (allowed) response = PromRemoteRead(request, context);
  } else if (path == "/api/v1/status/buildinfo") {
    allowed = only({http::verb::get});
    if (allowed) response = PromBuildInfo(request);
  } else if (path == "/api/v1/query" || path == "/api/v1/query_range") {
    allowed = only({http::verb::get, http::verb::post});
    if (allowed) response = PromQuery(request, context, path == "/api/v1/query_range");
  } else if (path == "/api/v1/series" || path == "/api/v1/labels") {
    allowed = only({http::verb::get, http::verb::post});
    if (allowed) response = PromListing(request, path);
  } else if (path.starts_with("/api/v1/label/") && path.ends_with("/values")) {
    allowed = only({http::verb::get});
    if (allowed) response = PromListing(request, path);
  } else if (path == "/api/v1/metadata") {
    allowed = only({http::verb::get});
    if (allowed) response = PromMetadata(request);
  } else if (path == "/api/v1/rules") {
    allowed = only({http::verb::get});
    if (allowed) response = PromRules(request);
  } else if (path == "/api/v1/query_exemplars") {
    allowed = only({http::verb::get, http::verb::post});
    if (allowed) response = PromExemplars(request);
  } else if (path == "/-/healthy" || path == "/-/ready") {
    allowed = only({http::verb::get, http::verb::head});
    if (allowed) response = PromProbe(request, path == "/-/ready");
  } else if (path == "/ping") {
    allowed = only({http::verb::get, http::verb::head});
    if (allowed) response = Ping(request);
  } else if (path == "/health") {
    allowed = only({http::verb::get, http::verb::head});
    if (allowed) response = Health(request);
  } else if (path == "/metrics") {
    allowed = only({http::verb::get});
    if (allowed) response = Metrics(request);
  } else if (path == "/api/v1/sources") {
    allowed = only({http::verb::get});
    if (allowed) response = Sources(request);
  } else if (path == "/query") {
    allowed = only({http::verb::get, http::verb::post});
    if (allowed) response = Query(request, context);
  } else if (path == "/api/v1/alerts" || path == "/api/v1/alerts/active") {
    allowed = only({http::verb::get});
    if (allowed) response = Alerts(request, path);
  } else if (path.starts_with("/api/v1/alerts/") && path.ends_with("/resolve")) {
    allowed = only({http::verb::post});
    if (allowed) response = Alerts(request, path);
  } else if (path == "/api/v1/nodes" || path.starts_with("/api/v1/nodes/")) {
    allowed = only({http::verb::get, http::verb::put});
    if (allowed) response = Nodes(request, path);
  } else if (path == "/api/v1/actions") {
    allowed = only({http::verb::get});
    if (allowed) response = Actions(request);
  } else if (path == "/api/v1/metrics/latest") {
    allowed = only({http::verb::get});
    if (allowed) response = LatestMetrics(request);
  } else if (path == "/" || path.starts_with("/console/")) {
    allowed = only({http::verb::get, http::verb::head});
    if (allowed) response = Console(request, path);
  } else if (path == "/api/v1/compact") {
    allowed = only({http::verb::get, http::verb::post});
    if (allowed) response = Compact(request);
  } else if (path == "/api/v1/forward/backfill") {
    allowed = only({http::verb::post});
    if (allowed) response = Backfill(request);
  } else {
    known = false;
  }
  if (!known) {
    response = Error(http::status::not_found, request.version(),
                     "no such endpoint: " + std::string(path) + " (see docs/http-api.md)");
  } else if (!allowed) {
    response =
        Error(http::status::method_not_allowed, request.version(),
              std::string(request.method_string()) + " is not allowed on " + std::string(path));
  }
  if (method == http::verb::head) {
    // A HEAD answer carries the length a GET would have, but no body: a body
    // here would be read as the start of the next response on keep-alive.
    const size_t length = response.body().size();
    response.body().clear();
    response.content_length(length);
  }
  response.set(http::field::server, std::string("gpulse/") + Version());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  metrics_->RecordRequest(static_cast<int>(response.result_int()), seconds);
  return response;
}

std::optional<Grant> HttpApi::Authenticate(const Request& request,
                                           const std::map<std::string, std::string>& params,
                                           Response* refusal) {
  const auto p = params.find("p");
  Grant grant;
  if (auth_.Authenticate(request[http::field::authorization],
                         p == params.end() ? std::string_view() : p->second,
                         &grant) == AuthResult::kAllowed) {
    return grant;
  }
  ++metrics_->auth_unauthenticated;
  *refusal = Error(http::status::unauthorized, request.version(),
                   "authentication required: send \"Authorization: Token <token>\"");
  refusal->set(http::field::www_authenticate, "Token realm=\"gpulse\"");
  return std::nullopt;
}

std::optional<Response> HttpApi::Forbid(const Request& request, const Grant& grant,
                                        std::string_view database, Access access,
                                        std::string_view hint) {
  const DatabaseScope& scope = grant.For(access);
  if (scope.Covers(database)) return std::nullopt;
  ++metrics_->auth_forbidden;
  const char* verb = access == Access::kRead ? "read" : "write";
  const std::string what =
      database == "*" ? std::string("every database") : "database " + std::string(database);
  const bool name_one = !hint.empty() && !scope.empty();
  return Error(http::status::forbidden, request.version(),
               std::string("this token may not ") + verb + " " + what + " (it may " + verb + " " +
                   scope.Describe() +
                   (name_one ? ": name one with " + std::string(hint) : std::string()) + ")");
}

std::optional<Response> HttpApi::Authorize(const Request& request,
                                           const std::map<std::string, std::string>& params,
                                           std::string_view database, Access access) {
  Response refusal;
  const std::optional<Grant> grant = Authenticate(request, params, &refusal);
  if (!grant) return refusal;
  return Forbid(request, *grant, database, access);
}

std::optional<Response> HttpApi::ForbidStatements(const Request& request, const Grant& grant,
                                                  const std::vector<query::Reach>& reaches) {
  for (const query::Reach& reach : reaches) {
    // SHOW DATABASES lists only what the token may read (the executor
    // filters it); every other statement needs its database in the scope,
    // and a statement over every database (no db=, rules, sources) needs "*".
    if (reach.kind == query::Reach::Kind::kNames) continue;
    const bool everything = reach.kind == query::Reach::Kind::kEverything;
    const std::string_view need =
        everything || reach.database.empty() ? std::string_view("*") : reach.database;
    // A statement over every database only because none was named could
    // name one; rules, seasons and sources cannot.
    const std::string_view hint = !everything && reach.database.empty() ? "db=" : "";
    if (auto denied = Forbid(request, grant, need, Access::kRead, hint)) return denied;
    if (reach.changes) {
      if (auto denied = Forbid(request, grant, need, Access::kWrite, hint)) return denied;
    }
  }
  return std::nullopt;
}

Response HttpApi::Query(const Request& request, const RequestContext& context) {
  auto params = ParseQueryString(request.target());
  // Grafana and the influx CLI may POST the parameters as a form.
  if (request.method() == http::verb::post &&
      request[http::field::content_type].starts_with("application/x-www-form-urlencoded")) {
    for (auto& [k, v] : ParseQueryString("?" + request.body())) params[k] = std::move(v);
  }
  const auto param = [&](const char* key) {
    const auto it = params.find(key);
    return it == params.end() ? std::string() : it->second;
  };
  Response refusal;
  const std::optional<Grant> grant = Authenticate(request, params, &refusal);
  if (!grant) return refusal;
  // A token scoped to one database reads that one when db= names none; a
  // token of several must name one (or name it in FROM).
  std::string database = param("db");
  if (database.empty() && !grant->read.everything()) database = grant->read.Sole();
  const std::string text = param("q");
  if (text.empty()) {
    return Error(http::status::bad_request, request.version(), "missing required parameter \"q\"");
  }
  query::TimeFormat time_format;
  if (!query::ParseEpoch(param("epoch"), &time_format)) {
    return Error(http::status::bad_request, request.version(),
                 "epoch \"" + param("epoch") + "\" is not one of ns, u, ms, s, m, h");
  }
  const std::string chunked_text = param("chunked");
  const bool chunked = chunked_text == "true" || chunked_text == "1";
  size_t chunk_rows = kDefaultChunkRows;
  if (const std::string size = param("chunk_size"); !size.empty()) {
    const auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), chunk_rows);
    if (ec != std::errc() || end != size.data() + size.size() || chunk_rows == 0) {
      return Error(http::status::bad_request, request.version(),
                   "chunk_size \"" + size + "\" is not a positive number of rows");
    }
  }
  QueryOptions options;
  options.database = database;
  if (!grant->read.everything()) options.readable_databases = grant->read.names();
  options.limits = config_.query_limits;
  options.cancelled = context.client_gone;
  options.answers_by_column = true;  // read only by FormatJson and FormatCsv
  options.show_sources = [this](ResultSeries* out) {
    out->name = "sources";
    out->columns = {"kind", "name", "up", "last_seen", "points", "requests", "error"};
    for (const SourceInfo& s : sources_->Snapshot()) {
      out->values.push_back({s.kind, s.name, s.up,
                             s.last_seen_ns ? QueryValue(s.last_seen_ns) : QueryValue(),
                             static_cast<int64_t>(s.points), static_cast<int64_t>(s.requests),
                             s.last_error.empty() ? QueryValue() : QueryValue(s.last_error)});
    }
  };
  if (alerts_ != nullptr) {
    options.show_alerts = [this](ResultSeries* out) { alerts_->ShowAlerts(out); };
  }
  const bool pretty = param("pretty") == "true" || param("pretty") == "1";
  ++metrics_->queries;
  if (query::promeval::IsPromQLStatement(text)) {
    // "promql: EXPR" (docs/promql.md): PromQL answered in InfluxQL's shape.
    QueryMemory memory(config_.query_limits.max_memory_bytes, &query_memory_);
    options.memory = &memory;
    const TrimAfter trim(&memory);
    QueryResult result;
    query::promeval::RunPromQLStatement(db_, text, options, &result.statements.emplace_back());
    CountErrors(result);
    return AnswerInRows(request, time_format, pretty, &memory, &result);
  }
  bool parsed_before = false;
  Result<std::shared_ptr<const query::StatementList>> parsed =
      parse_cache_.Parse(text, nullptr, &parsed_before);
  if (parsed_before) ++metrics_->query_parse_hits;
  if (!parsed.ok()) {
    ++metrics_->query_errors;
    return Error(http::status::bad_request, request.version(),
                 "error parsing query: " + parsed.status().message());
  }
  const query::StatementList& statements = **parsed;
  std::vector<query::Reach> reaches;
  for (const auto& st : statements) {
    Result<query::Reach> reach = query::StatementReach(*st, database);
    if (!reach.ok()) {
      ++metrics_->query_errors;
      return Error(http::status::bad_request, request.version(), reach.status().message());
    }
    reaches.push_back(std::move(*reach));
  }
  // Statements that change data (DELETE, DROP, CREATE) come by POST, as
  // InfluxDB 1.x asks.
  const bool changes =
      std::any_of(reaches.begin(), reaches.end(), [](const query::Reach& r) { return r.changes; });
  if (changes && request.method() != http::verb::post) {
    ++metrics_->query_errors;
    return Error(http::status::method_not_allowed, request.version(),
                 "DELETE, DROP and CREATE change data: send them with POST");
  }
  if (auto denied = ForbidStatements(request, *grant, reaches)) return *denied;
  // What the query holds counts against its budget and the server's until
  // it is answered; a large one's memory goes back to the system after.
  QueryMemory memory(config_.query_limits.max_memory_bytes, &query_memory_);
  options.memory = &memory;
  const TrimAfter trim(&memory);
  Response res{http::status::ok, request.version()};
  res.set("X-Influxdb-Version", kInfluxVersion);
  res.keep_alive(request.keep_alive());
  const bool csv = request[http::field::accept].find("text/csv") != std::string_view::npos;
  if (chunked && !csv) {
    res.set(http::field::content_type, "application/json");
    return QueryChunked(statements, chunk_rows, time_format, context, &options, std::move(res));
  }
  QueryResult result;
  query::Execute(db_, statements, options, &result);
  CountErrors(result);
  return AnswerInRows(request, time_format, pretty, &memory, &result);
}

Response HttpApi::AnswerInRows(const Request& request, query::TimeFormat time_format, bool pretty,
                               QueryMemory* memory, QueryResult* result) {
  // The text is charged before it is made: an answer that fits in memory
  // as rows may not as text.
  for (StatementResult& st : result->statements) {
    if (!st.status.ok()) continue;
    uint64_t cells = 0;
    for (const ResultSeries& rs : st.series) cells += rs.RowCount() * rs.columns.size();
    Status charged = memory->Charge(cells * kTextBytesACell, "the answer's text");
    if (!charged.ok()) {
      st.status = std::move(charged);
      st.series.clear();
      ++metrics_->query_errors;
    }
  }
  Response res{http::status::ok, request.version()};
  res.set("X-Influxdb-Version", kInfluxVersion);
  // What the SELECTs read, for the console's query box (docs/http-api.md).
  uint64_t series_read = 0, points_read = 0;
  for (const StatementResult& st : result->statements) {
    series_read += st.series_read;
    points_read += st.points_read;
  }
  res.set("X-Gpulse-Series-Read", std::to_string(series_read));
  res.set("X-Gpulse-Points-Read", std::to_string(points_read));
  res.keep_alive(request.keep_alive());
  if (request[http::field::accept].find("text/csv") != std::string_view::npos) {
    res.set(http::field::content_type, "text/csv");
    res.body() = query::FormatCsv(*result, time_format);
  } else {
    res.set(http::field::content_type, "application/json");
    res.body() = query::FormatJson(*result, time_format, pretty);
  }
  res.prepare_payload();
  return res;
}

Response HttpApi::QueryChunked(const query::StatementList& statements, size_t chunk_rows,
                               query::TimeFormat time_format, const RequestContext& context,
                               QueryOptions* options, Response header) {
  if (context.stream == nullptr || header.version() < 11) {
    // Not on a query thread (an embedder's own server), or an HTTP/1.0
    // client, which knows no chunked transfer: the same objects, in one
    // body.
    std::string body;
    query::JsonChunkWriter writer(time_format, chunk_rows, [&body](std::string_view text) {
      body.append(text);
      return true;
    });
    options->sink = &writer;
    QueryResult result;
    query::Execute(db_, statements, *options, &result);
    CountErrors(result);
    header.body() = std::move(body);
    header.prepare_payload();
    return header;
  }
  header.set(http::field::server, std::string("gpulse/") + Version());
  if (!context.stream->Start(header)) return header;  // the client left
  query::JsonChunkWriter writer(time_format, chunk_rows, [&context](std::string_view text) {
    return context.stream->Write(text);
  });
  options->sink = &writer;
  QueryResult result;
  query::Execute(db_, statements, *options, &result);
  CountErrors(result);
  context.stream->Finish();
  return header;  // sent already
}

void HttpApi::CountErrors(const QueryResult& result) {
  for (const StatementResult& st : result.statements) {
    if (!st.status.ok()) ++metrics_->query_errors;
  }
}

Response HttpApi::Ping(const Request& request) {
  Response res = NoContent(request.version());
  res.set("X-Influxdb-Version", kInfluxVersion);
  res.set("X-Influxdb-Build", "OSS");
  res.set("X-Gpulse-Version", Version());
  return res;
}

Response HttpApi::Health(const Request& request) {
  const DbStats stats = db_->GetStats();
  // A full disk refuses writes (507) until space returns: not ready.
  return Json(stats.disk_full ? http::status::service_unavailable : http::status::ok,
              request.version(),
              {{"name", "gpulse"},
               {"status", stats.disk_full ? "fail" : "pass"},
               {"message", stats.disk_full ? "disk full: writes are refused (507) until space "
                                             "returns; the server resumes by itself"
                                           : "ready for writes"},
               {"version", Version()},
               {"series", stats.series},
               {"head_bytes", stats.head_bytes},
               {"wal_bytes", stats.wal_bytes}});
}

Response HttpApi::Metrics(const Request& request) {
  // The server's counters and gauges carry no database's data or names: any
  // token that may read something may scrape them.
  Response refusal;
  const std::optional<Grant> grant =
      Authenticate(request, ParseQueryString(request.target()), &refusal);
  if (!grant) return refusal;
  if (grant->read.empty()) {
    if (auto denied = Forbid(request, *grant, "*", Access::kRead)) return *denied;
  }
  DbStats stats = db_->GetStats();
  // The series count of each database names the databases: a scoped token
  // sees its own.
  std::erase_if(stats.series_by_database,
                [&](const auto& entry) { return !grant->read.Covers(entry.first); });
  Response res{http::status::ok, request.version()};
  res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  res.body() = metrics_->Render(stats);
  if (alerts_ != nullptr) res.body() += AlertCountersText(alerts_->Counters());
  res.prepare_payload();
  return res;
}

Response HttpApi::Sources(const Request& request) {
  // Every pushing host and scrape target, of every database.
  if (auto denied = Authorize(request, ParseQueryString(request.target()), "*", Access::kRead)) {
    return *denied;
  }
  Response res{http::status::ok, request.version()};
  res.set(http::field::content_type, "application/json");
  res.body() = sources_->ToJson();
  res.prepare_payload();
  return res;
}

Response HttpApi::Alerts(const Request& request, std::string_view path) {
  const auto params = ParseQueryString(request.target());
  const bool resolve = request.method() == http::verb::post;
  // Rules span every database: their alerts carry any database's groups, so
  // listing them takes a token that may read all, resolving one a token that
  // may write to all.
  if (auto denied = Authorize(request, params, "*", resolve ? Access::kWrite : Access::kRead)) {
    return *denied;
  }
  if (alerts_ == nullptr) {
    return Error(http::status::service_unavailable, request.version(),
                 "this server does not evaluate alert rules (alerts.evaluate is false)");
  }
  if (!resolve) {
    const bool active = path.ends_with("/active");
    Response res{http::status::ok, request.version()};
    res.set(http::field::content_type, "application/json");
    res.body() = AlertsToJson(alerts_->Instances(!active), alerts_->Rules());
    res.prepare_payload();
    return res;
  }
  constexpr std::string_view kPrefix = "/api/v1/alerts/", kSuffix = "/resolve";
  if (path.size() <= kPrefix.size() + kSuffix.size()) {
    return Error(http::status::not_found, request.version(),
                 "POST /api/v1/alerts/{id}/resolve names an alert id or a rule");
  }
  // The id as a client percent-encodes it (a rule named "my rule").
  const std::string id = ParseQueryString(
      "?id=" + std::string(path.substr(kPrefix.size(),
                                       path.size() - kPrefix.size() - kSuffix.size())))["id"];
  size_t resolved = 0;
  const Status s = alerts_->Resolve(id, WallClockNanos(), &resolved);
  if (s.IsNotFound()) return Error(http::status::not_found, request.version(), s.message());
  if (!s.ok()) return Error(http::status::internal_server_error, request.version(), s.ToString());
  return Json(http::status::ok, request.version(), {{"resolved", resolved}});
}

Response HttpApi::Console(const Request& request, std::string_view path) {
  // The page's files hold no data: they are answered without a token, and
  // the page asks for one when the API it calls wants it.
  const ConsoleAsset* asset = FindConsoleAsset(path);
  if (asset == nullptr) {
    return Error(http::status::not_found, request.version(),
                 "no such file of the console: " + std::string(path));
  }
  Response res{http::status::ok, request.version()};
  res.set(http::field::content_type, asset->content_type);
  // Asked again each time: a new server's page is never an old one's.
  res.set(http::field::cache_control, "no-cache");
  res.set("X-Content-Type-Options", "nosniff");
  // Nothing but the server's own scripts, styles and API (Chart.js sets
  // inline styles on its canvases).
  res.set("Content-Security-Policy",
          "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
          "frame-ancestors 'none'");
  res.body() = std::string(asset->body);
  res.prepare_payload();
  return res;
}

Response HttpApi::Compact(const Request& request) {
  // Compaction rewrites every database's data.
  if (auto denied = Authorize(request, ParseQueryString(request.target()), "*", Access::kWrite)) {
    return *denied;
  }
  const auto started = std::chrono::steady_clock::now();
  const Status s = db_->Compact();
  if (!s.ok()) {
    return Error(http::status::internal_server_error, request.version(),
                 "compact failed: " + s.ToString());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return Json(http::status::ok, request.version(), {{"compacted", true}, {"seconds", seconds}});
}

Response HttpApi::Backfill(const Request& request) {
  const auto params = ParseQueryString(request.target());
  // A backfill reads every database and sends it on.
  if (auto denied = Authorize(request, params, "*", Access::kRead)) return *denied;
  if (auto denied = Authorize(request, params, "*", Access::kWrite)) return *denied;
  if (forwarder_ == nullptr) {
    return Error(http::status::not_found, request.version(),
                 "no remote_write target is configured");
  }
  auto param = [&](const char* name) {
    const auto it = params.find(name);
    return it == params.end() ? std::string() : it->second;
  };
  const std::string target = param("target");
  if (target.empty()) {
    std::string names;
    for (const std::string& name : forwarder_->TargetNames()) {
      names += (names.empty() ? "" : ", ") + name;
    }
    return Error(http::status::bad_request, request.version(),
                 "missing target: the name of a remote_write target (configured: " +
                     (names.empty() ? std::string("none") : names) + ")");
  }
  int64_t range[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const char* name = i == 0 ? "start" : "end";
    const std::string text = param(name);
    const std::optional<int64_t> ns = ingest::ParseInstant(text);
    if (!ns) {
      return Error(http::status::bad_request, request.version(),
                   std::string(text.empty() ? "missing " : "bad ") + name + " '" + text +
                       "': RFC3339 (2026-11-01T00:00:00Z) or Unix seconds");
    }
    range[i] = *ns;
  }
  const auto started = std::chrono::steady_clock::now();
  BackfillResult result;
  const Status s = forwarder_->Backfill(target, range[0], range[1], &result);
  if (!s.ok()) {
    const http::status status = s.IsNotFound()          ? http::status::not_found
                                : s.IsInvalidArgument() ? http::status::bad_request
                                : s.IsBusy()            ? http::status::conflict
                                                        : http::status::service_unavailable;
    return Error(status, request.version(), "backfill: " + s.ToString());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return Json(http::status::ok, request.version(),
              {{"target", target},
               {"start", query::Rfc3339(range[0])},
               {"end", query::Rfc3339(range[1])},
               {"series", result.series},
               {"points", result.points},
               {"samples", result.samples},
               {"seconds", seconds}});
}

}  // namespace gpulse::server
