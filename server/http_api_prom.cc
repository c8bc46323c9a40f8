// The Prometheus HTTP API: PromQL's instant and range queries in
// Prometheus' envelope, build information (what Grafana's Prometheus data
// source reads to learn what it talks to), exemplars (gpulse keeps none),
// the health and readiness probes, and remote read. docs/http-api.md,
// "Prometheus API".

#include <charconv>
#include <chrono>
#include <cmath>
#include <string>

#include "query/promeval/listing.h"
#include "query/promeval/run.h"
#include "query/promql/lexer.h"
#include "query/syntax/time_literal.h"
#include "server/http_api.h"
#include "server/http_reply.h"
#include "server/prom_remote_read.h"

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

// Prometheus' error envelope: bad_data 400, execution 422, timeout 503.
Response PromError(http::status status, unsigned version, std::string_view type,
                   const std::string& message) {
  return Json(status, version, {{"status", "error"}, {"errorType", type}, {"error", message}});
}

Response BadData(unsigned version, const std::string& message) {
  return PromError(http::status::bad_request, version, "bad_data", message);
}

// A sample as Prometheus writes one, [seconds, "value"]: the seconds with
// the milliseconds as a fraction, the value as a string. Both are numbers,
// NaN or ±Inf: nothing to escape.
void AppendSample(int64_t ms, double v, std::string* out) {
  *out += '[';
  *out += query::promeval::FormatPromFloat(static_cast<double>(ms) / 1000);
  *out += ",\"";
  *out += query::promeval::FormatPromFloat(v);
  *out += "\"]";
}

nlohmann::json Metric(const query::promeval::Labels& labels) {
  nlohmann::json m = nlohmann::json::object();
  for (const auto& l : labels) m[l.name] = l.value;
  return m;
}

// One series: {"metric":{...},"value":[...]} or {"metric":{...},"values":[...]};
// samples(emit) calls emit(ms, value) for each sample.
template <typename Samples>
void AppendSeries(const query::promeval::Labels& labels, bool one, const Samples& samples,
                  std::string* out) {
  *out += "{\"metric\":";
  *out += Metric(labels).dump();
  *out += one ? ",\"value\":" : ",\"values\":[";
  bool first = true;
  samples([&](int64_t ms, double v) {
    if (!first) *out += ',';
    first = false;
    AppendSample(ms, v, out);
  });
  *out += one ? "}" : "]}";
}

// The answer's "result", as text: a fleet's matrix is hundreds of thousands
// of samples, too many to build as JSON values first.
std::string PromResult(const query::promeval::PromAnswer& a) {
  using query::promeval::ValueType;
  std::string out;
  if (!a.range_query && a.type == ValueType::kScalar) {
    AppendSample(a.steps.start, a.series[0].values[0], &out);
    return out;
  }
  if (a.type == ValueType::kString) {
    return "[" + query::promeval::FormatPromFloat(static_cast<double>(a.steps.start) / 1000) + "," +
           nlohmann::json(a.text).dump() + "]";
  }
  out += '[';
  for (const auto& r : a.raw) {
    if (out.size() > 1) out += ',';
    AppendSeries(
        r.labels, false,
        [&](const auto& emit) {
          for (size_t i = 0; i < r.times.size(); ++i) emit(r.times[i], r.values[i]);
        },
        &out);
  }
  for (const auto& s : a.series) {
    if (out.size() > 1) out += ',';
    AppendSeries(
        s.labels, !a.range_query,
        [&](const auto& emit) {
          for (size_t k = 0; k < s.has.size(); ++k) {
            if (s.has[k]) emit(a.steps.at(k), s.values[k]);
          }
        },
        &out);
  }
  out += ']';
  return out;
}

const char* ResultTypeName(query::promeval::ValueType type) {
  switch (type) {
    case query::promeval::ValueType::kScalar:
      return "scalar";
    case query::promeval::ValueType::kVector:
      return "vector";
    case query::promeval::ValueType::kMatrix:
      return "matrix";
    case query::promeval::ValueType::kString:
      return "string";
  }
  return "vector";
}

// A request's parameters, from the URL and, for a POST, a form body: every
// one in order (match[] repeats), and the last value of each by name.
struct PromParamSet {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::map<std::string, std::string> last;

  std::string operator()(const char* key) const {
    const auto it = last.find(key);
    return it == last.end() ? std::string() : it->second;
  }
};

PromParamSet PromParams(const Request& request) {
  PromParamSet params;
  params.pairs = ParseQueryPairs(request.target());
  if (request.method() == http::verb::post &&
      request[http::field::content_type].starts_with("application/x-www-form-urlencoded")) {
    for (auto& p : ParseQueryPairs("?" + request.body())) params.pairs.push_back(std::move(p));
  }
  for (const auto& [k, v] : params.pairs) params.last[k] = v;
  return params;
}

// What a request of `grant` may read: db= when named, a token's one
// database when it has one, else its databases as a filter.
QueryOptions ScopedOptions(const PromParamSet& param, const Grant& grant,
                           const QueryLimits& limits) {
  QueryOptions options;
  options.database = param("db");
  if (options.database.empty() && !grant.read.everything()) options.database = grant.read.Sole();
  if (!grant.read.everything()) options.readable_databases = grant.read.names();
  options.limits = limits;
  return options;
}

}  // namespace

// A time as Prometheus takes one: Unix seconds with a fraction, or RFC 3339;
// bounded where a double still holds every millisecond (past the year 5000).
bool ParsePromTime(const std::string& text, int64_t* ms) {
  double seconds;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(seconds)) {
    if (std::fabs(seconds) > 1e11) return false;
    *ms = static_cast<int64_t>(std::llround(seconds * 1000));
    return true;
  }
  int64_t ns;
  if (!query::ParseTimeLiteral(text, &ns)) return false;
  *ms = ns / 1'000'000 - (ns % 1'000'000 < 0 ? 1 : 0);
  return true;
}

// A duration as Prometheus takes one: seconds with a fraction, or 5m, 1h30m.
bool ParsePromStep(const std::string& text, int64_t* ms) {
  double seconds;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(seconds)) {
    if (std::fabs(seconds) > 9.2e15) return false;
    *ms = static_cast<int64_t>(std::llround(seconds * 1000));
    return true;
  }
  return query::promql::ParsePromDuration(text, ms);
}

Response HttpApi::PromQuery(const Request& request, const RequestContext& context, bool range) {
  const PromParamSet param = PromParams(request);
  const unsigned version = request.version();
  Response refusal;
  const std::optional<Grant> grant = Authenticate(request, param.last, &refusal);
  if (!grant) return refusal;
  const std::string text = param("query");
  if (text.empty()) return BadData(version, "invalid parameter \"query\": no query given");
  query::promeval::PromRequest req;
  req.text = text;
  req.instant = !range;
  if (range) {
    for (const char* key : {"start", "end"}) {
      int64_t* into = key[0] == 's' ? &req.start : &req.end;
      if (!ParsePromTime(param(key), into)) {
        return BadData(version, std::string("invalid parameter \"") + key + "\": cannot parse \"" +
                                    param(key) + "\" to a valid timestamp");
      }
    }
    if (!ParsePromStep(param("step"), &req.step)) {
      return BadData(version, "invalid parameter \"step\": cannot parse \"" + param("step") +
                                  "\" to a valid duration");
    }
    if (req.end < req.start) {
      return BadData(version,
                     "invalid parameter \"end\": end timestamp must not be before start time");
    }
    if (req.step <= 0) {
      return BadData(version,
                     "invalid parameter \"step\": zero or negative query resolution step widths "
                     "are not accepted. Try a positive integer");
    }
    if ((req.end - req.start) / req.step > 11'000) {
      return BadData(version,
                     "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing "
                     "the query resolution (?step=XX)");
    }
  } else if (const std::string t = param("time"); t.empty()) {
    req.start = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  } else if (!ParsePromTime(t, &req.start)) {
    return BadData(version,
                   "invalid parameter \"time\": cannot parse \"" + t + "\" to a valid timestamp");
  }
  if (req.instant) req.end = req.start;
  QueryOptions options = ScopedOptions(param, *grant, config_.query_limits);
  if (const std::string t = param("timeout"); !t.empty()) {
    int64_t ms;
    if (!ParsePromStep(t, &ms) || ms <= 0) {
      return BadData(
          version, "invalid parameter \"timeout\": cannot parse \"" + t + "\" to a valid duration");
    }
    options.limits.timeout = std::min(options.limits.timeout, std::chrono::milliseconds(ms));
  }
  options.cancelled = context.client_gone;
  QueryMemory memory(config_.query_limits.max_memory_bytes, &query_memory_);
  options.memory = &memory;
  ++metrics_->queries;
  query::promeval::PromAnswer answer;
  query::promeval::PromFailure failure;
  const Status s = query::promeval::RunPromQL(db_, req, options, &answer, &failure);
  if (!s.ok()) {
    ++metrics_->query_errors;
    if (failure == query::promeval::PromFailure::kParse) {
      return BadData(version, "invalid parameter \"query\": " + s.message());
    }
    if (s.code() == Status::Code::kPermissionDenied) {
      return Error(http::status::forbidden, version, s.message());
    }
    if (s.IsCancelled() || s.message().find("timeout") != std::string::npos) {
      return PromError(http::status::service_unavailable, version, "timeout", s.message());
    }
    return PromError(http::status::unprocessable_entity, version, "execution", s.message());
  }
  Response res{http::status::ok, version};
  res.set(http::field::content_type, "application/json");
  res.body() = std::string("{\"status\":\"success\",\"data\":{\"resultType\":\"") +
               ResultTypeName(answer.type) + "\",\"result\":" + PromResult(answer) + "}}";
  res.prepare_payload();
  return res;
}

Response HttpApi::PromListing(const Request& request, std::string_view path) {
  const PromParamSet param = PromParams(request);
  const unsigned version = request.version();
  Response refusal;
  const std::optional<Grant> grant = Authenticate(request, param.last, &refusal);
  if (!grant) return refusal;
  query::promeval::ListingRequest req;
  for (const auto& [k, v] : param.pairs) {
    if (k == "match[]") req.matches.push_back(v);
  }
  for (const char* key : {"start", "end"}) {
    const std::string t = param(key);
    int64_t* into = key[0] == 's' ? &req.start : &req.end;
    if (!t.empty() && !ParsePromTime(t, into)) {
      return BadData(version, std::string("invalid parameter \"") + key + "\": cannot parse \"" +
                                  t + "\" to a valid timestamp");
    }
  }
  if (const std::string l = param("limit"); !l.empty()) {
    const auto [end, ec] = std::from_chars(l.data(), l.data() + l.size(), req.limit);
    if (ec != std::errc() || end != l.data() + l.size()) {
      return BadData(version, "invalid parameter \"limit\": cannot parse \"" + l + "\"");
    }
  }
  QueryOptions options = ScopedOptions(param, *grant, config_.query_limits);
  QueryMemory memory(config_.query_limits.max_memory_bytes, &query_memory_);
  options.memory = &memory;
  query::promeval::PromFailure failure;
  Status s;
  nlohmann::json data = nlohmann::json::array();
  if (path == "/api/v1/series") {
    if (req.matches.empty()) return BadData(version, "no match[] parameter provided");
    std::vector<query::promeval::Labels> sets;
    s = query::promeval::ListLabelSets(db_, req, options, &sets, &failure);
    for (const auto& l : sets) data.push_back(Metric(l));
  } else {
    std::vector<std::string> names;
    if (path == "/api/v1/labels") {
      s = query::promeval::ListLabelNames(db_, req, options, &names, &failure);
    } else {
      constexpr std::string_view kPrefix = "/api/v1/label/", kSuffix = "/values";
      const std::string name(
          path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size()));
      s = query::promeval::ListLabelValues(db_, req, name, options, &names, &failure);
    }
    data = names;
  }
  if (!s.ok()) {
    if (failure == query::promeval::PromFailure::kParse) return BadData(version, s.message());
    if (s.code() == Status::Code::kPermissionDenied) {
      return Error(http::status::forbidden, version, s.message());
    }
    return PromError(http::status::unprocessable_entity, version, "execution", s.message());
  }
  return Json(http::status::ok, version, {{"status", "success"}, {"data", std::move(data)}});
}

Response HttpApi::PromRemoteRead(const Request& request, const RequestContext& context) {
  const PromParamSet param = PromParams(request);
  const unsigned version = request.version();
  Response refusal;
  const std::optional<Grant> grant = Authenticate(request, param.last, &refusal);
  if (!grant) return refusal;
  if (const std::string encoding(request[http::field::content_encoding]); encoding != "snappy") {
    return Error(http::status::unsupported_media_type, version,
                 "a remote read body is snappy-compressed protobuf (Content-Encoding: snappy), "
                 "not " +
                     (encoding.empty() ? std::string("uncompressed") : "\"" + encoding + "\""));
  }
  RemoteReadRequest req;
  if (const Status s = ParseRemoteRead(request.body(), config_.max_body_bytes, &req); !s.ok()) {
    return Error(
        s.IsResourceExhausted() ? http::status::payload_too_large : http::status::bad_request,
        version, s.message());
  }
  QueryOptions options = ScopedOptions(param, *grant, config_.query_limits);
  options.cancelled = context.client_gone;
  // One budget for the whole request: its queries' samples are all held
  // until the answer is sent.
  QueryMemory memory(config_.query_limits.max_memory_bytes, &query_memory_);
  options.memory = &memory;
  ++metrics_->queries;
  RemoteReadWriter writer(req.streamed);
  for (size_t i = 0; i < req.queries.size(); ++i) {
    const RemoteReadQuery& q = req.queries[i];
    std::vector<query::promeval::RawSeries> series;
    const Status s =
        query::promeval::ReadSamples(db_, q.matchers, q.start, q.end, options, &series);
    if (!s.ok()) {
      ++metrics_->query_errors;
      const std::string message = "remote read query " + std::to_string(i) + ": " + s.message();
      if (s.code() == Status::Code::kPermissionDenied) {
        return Error(http::status::forbidden, version, s.message());
      }
      if (s.code() == Status::Code::kInvalidArgument) {
        return Error(http::status::bad_request, version, message);
      }
      if (s.IsCancelled() || s.message().find("timeout") != std::string::npos) {
        return Error(http::status::service_unavailable, version, message);
      }
      return Error(http::status::unprocessable_entity, version, message);
    }
    writer.Add(i, series);
  }
  Response res{http::status::ok, version};
  res.set(http::field::content_type, writer.content_type());
  if (*writer.content_encoding() != '\0') {
    res.set(http::field::content_encoding, writer.content_encoding());
  }
  res.body() = writer.Finish();
  res.prepare_payload();
  return res;
}

Response HttpApi::PromMetadata(const Request& request) {
  const PromParamSet param = PromParams(request);
  Response refusal;
  if (!Authenticate(request, param.last, &refusal)) return refusal;
  size_t limit = 0;
  if (const std::string l = param("limit"); !l.empty()) {
    const auto [end, ec] = std::from_chars(l.data(), l.data() + l.size(), limit);
    if (ec != std::errc() || end != l.data() + l.size()) {
      return BadData(request.version(), "invalid parameter \"limit\": cannot parse \"" + l + "\"");
    }
  }
  std::vector<std::pair<std::string, std::string>> defs;
  const Status s = db_->ListDefinitions(kPrometheusMetadataKind, &defs);
  if (!s.ok()) return Error(http::status::internal_server_error, request.version(), s.ToString());
  const std::string metric = param("metric");
  nlohmann::json data = nlohmann::json::object();
  for (const auto& [name, text] : defs) {
    if ((!metric.empty() && name != metric) || (limit > 0 && data.size() >= limit)) continue;
    // TYPE \n UNIT \n HELP (the help may hold newlines of its own).
    const size_t a = std::min(text.find('\n'), text.size());
    const size_t b = std::min(text.find('\n', a + 1), text.size());
    data[name] =
        nlohmann::json::array({{{"type", text.substr(0, a)},
                                {"help", b < text.size() ? text.substr(b + 1) : ""},
                                {"unit", a < text.size() ? text.substr(a + 1, b - a - 1) : ""}}});
  }
  return Json(http::status::ok, request.version(), {{"status", "success"}, {"data", data}});
}

Response HttpApi::PromRules(const Request& request) {
  // As /api/v1/alerts: rules span every database.
  if (auto denied = Authorize(request, ParseQueryString(request.target()), "*", Access::kRead)) {
    return *denied;
  }
  Response res{http::status::ok, request.version()};
  res.set(http::field::content_type, "application/json");
  // Only alerting rules exist: type=record lists none.
  const bool record = ParseQueryString(request.target())["type"] == "record";
  res.body() = alerts_ == nullptr || record
                   ? R"({"status":"success","data":{"groups":[]}})"
                   : PromRulesToJson(alerts_->Instances(false), alerts_->Rules());
  res.prepare_payload();
  return res;
}

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
