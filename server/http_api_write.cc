// The write endpoints: InfluxDB's /write and /api/v2/write (line protocol)
// and Prometheus remote write (/api/v1/write). docs/http-api.md.

#include <algorithm>
#include <string>
#include <vector>

#include "ingest/line_protocol.h"
#include "ingest/lp_batch.h"
#include "ingest/remote_write.h"
#include "server/gzip.h"
#include "server/http_api.h"
#include "server/http_reply.h"

namespace gpulse::server {

namespace {

// Line errors listed in one 400 response; the rest are counted.
constexpr size_t kMaxListedErrors = 100;

// Maps the `precision` parameter of either API to the parser's.
bool ToPrecision(const std::string& text, bool v2, ingest::Precision* precision) {
  if (text.empty()) {
    *precision = ingest::Precision::kNanoseconds;
    return true;
  }
  if (!v2 && text == "n") {  // 1.x's spelling of nanoseconds
    *precision = ingest::Precision::kNanoseconds;
    return true;
  }
  if (v2 && (text == "m" || text == "h" || text == "u")) return false;
  return ingest::ParsePrecision(text, precision);
}

}  // namespace

std::optional<Response> HttpApi::AuthorizeWrite(const Request& request,
                                                const std::map<std::string, std::string>& params,
                                                std::string_view hint, std::string* database,
                                                std::optional<Grant>* grant) {
  Response refusal;
  *grant = Authenticate(request, params, &refusal);
  if (!*grant) return refusal;
  // A token scoped to one database writes there when the request names none;
  // with no database the points would land untagged, which only "*" may
  // write.
  if (database->empty() && !(*grant)->write.everything()) *database = (*grant)->write.Sole();
  return Forbid(request, **grant, database->empty() ? "*" : *database, Access::kWrite, hint);
}

std::optional<Response> HttpApi::WriteRefused(const Status& s, const WriteResult& result,
                                              unsigned version) {
  if (result.series_rate_limited) {
    // Nothing was written: the whole request may come again.
    Response res = Error(http::status::too_many_requests, version, s.message());
    res.set(http::field::retry_after,
            std::to_string(std::max<uint64_t>(1, result.retry_after_seconds)));
    return res;
  }
  if (s.IsResourceExhausted()) {
    ++metrics_->writes_refused_busy;
    Response res = Error(http::status::service_unavailable, version, s.message());
    res.set(http::field::retry_after, "1");
    return res;
  }
  if (s.IsNoSpace()) {
    // Nothing of the request was acknowledged; the server resumes by itself
    // once space returns.
    Response res = Error(http::status::insufficient_storage, version,
                         "the disk is full; nothing was written, retry later: " + s.message());
    res.set(http::field::retry_after, "10");
    return res;
  }
  if (!s.ok() && !s.IsInvalidArgument()) {
    return Error(http::status::internal_server_error, version, "write failed: " + s.ToString());
  }
  return std::nullopt;
}

Response HttpApi::Write(const Request& request, const RequestContext& context, bool v2) {
  const auto params = ParseQueryString(request.target());
  const auto param = [&](const char* key) {
    const auto it = params.find(key);
    return it == params.end() ? std::string() : it->second;
  };
  std::string database = v2 ? param("bucket") : param("db");
  if (v2 && database.empty()) {
    return Error(http::status::bad_request, request.version(), "bucket is required");
  }
  std::optional<Grant> grant;
  if (auto refused = AuthorizeWrite(request, params, v2 ? "bucket=" : "?db=", &database, &grant)) {
    return *refused;
  }

  ingest::LineProtocolParser::Options parse_options;
  if (!ToPrecision(param("precision"), v2, &parse_options.precision)) {
    return Error(http::status::bad_request, request.version(),
                 "precision \"" + param("precision") + "\" is not one of " +
                     (v2 ? "ns, us, ms, s" : "n, ns, u, us, ms, s, m, h"));
  }
  parse_options.default_time_ns = WallClockNanos();
  parse_options.max_errors = kMaxListedErrors;

  std::string inflated;
  std::string_view body = request.body();
  const std::string encoding(request[http::field::content_encoding]);
  if (encoding == "gzip") {
    const Status s = Gunzip(body, config_.max_body_bytes, &inflated);
    if (s.IsResourceExhausted()) {
      return Error(http::status::payload_too_large, request.version(), s.message());
    }
    if (!s.ok()) return Error(http::status::bad_request, request.version(), s.message());
    body = inflated;
  } else if (!encoding.empty() && encoding != "identity") {
    return Error(http::status::unsupported_media_type, request.version(),
                 "Content-Encoding \"" + encoding + "\" is not supported (use gzip or none)");
  }
  metrics_->bytes_received += body.size();

  ingest::LineProtocolBatch batch;
  batch.Parse(body, parse_options, database);
  if (!grant->write.everything()) {
    // A line's own `db` tag decides where it lands: each must be in scope.
    const size_t before = batch.error_count();
    batch.RejectWhere([&](const PointRef& p) {
      for (const TagRef& t : p.tags) {
        if (t.key != "db" || grant->write.Covers(t.value)) continue;
        return "its db tag names database " + std::string(t.value) +
               ", which this token may not write (it may write " + grant->write.Describe() + ")";
      }
      return std::string();
    });
    metrics_->auth_forbidden += batch.error_count() - before;
  }
  std::vector<ingest::LineError> errors = batch.errors();
  size_t error_count = batch.error_count();
  const std::span<const PointRef> points = batch.points();

  WriteResult result;
  const Status s = points.empty() ? Status::Ok() : db_->Write(points, &result);
  if (auto refused = WriteRefused(s, result, request.version())) return *refused;
  for (const WriteResult::Rejected& r : result.rejected) {
    ++error_count;
    if (errors.size() < kMaxListedErrors) errors.push_back({batch.line_of(r.index), 1, r.reason});
  }
  metrics_->points_received += result.points_written;
  metrics_->values_received += result.values_written;
  metrics_->lines_rejected += error_count;
  sources_->RecordPush(context.remote_address, std::string(request[http::field::user_agent]),
                       result.points_written, WallClockNanos());
  if (error_count == 0) return NoContent(request.version());

  std::sort(errors.begin(), errors.end(),
            [](const auto& a, const auto& b) { return a.line < b.line; });
  nlohmann::json listed = nlohmann::json::array();
  for (const ingest::LineError& e : errors) {
    listed.push_back({{"line", e.line}, {"column", e.column}, {"error", e.message}});
  }
  const ingest::LineError& first = errors.front();
  const std::string summary = "partial write: " + std::to_string(error_count) + " of " +
                              std::to_string(error_count + result.points_written) +
                              " lines rejected, " + std::to_string(result.points_written) +
                              " written; first: line " + std::to_string(first.line) + ", column " +
                              std::to_string(first.column) + ": " + first.message;
  return Json(http::status::bad_request, request.version(),
              {{"error", summary},
               {"rejected", error_count},
               {"written", result.points_written},
               {"lines", listed}});
}

Response HttpApi::RemoteWrite(const Request& request, const RequestContext& context) {
  const auto params = ParseQueryString(request.target());
  const auto param = [&](const char* key) {
    const auto it = params.find(key);
    return it == params.end() ? std::string() : it->second;
  };
  std::string database = param("db");
  std::optional<Grant> grant;
  if (auto refused = AuthorizeWrite(request, params, "?db=", &database, &grant)) return *refused;
  const std::string encoding(request[http::field::content_encoding]);
  if (encoding != "snappy") {
    return Error(http::status::unsupported_media_type, request.version(),
                 "a remote write body is snappy-compressed protobuf (Content-Encoding: snappy), "
                 "not " +
                     (encoding.empty() ? std::string("uncompressed") : "\"" + encoding + "\""));
  }
  ingest::PromMappingOptions mapping;
  if (const std::string m = param("measurement"); !m.empty()) mapping.measurement = m;
  // The request's database wins over a series' own `db` label (kept as
  // exported_db), so that a token scoped to one database writes only there.
  if (!database.empty()) mapping.extra_tags.push_back({"db", database});
  ingest::RemoteWriteBatch batch;
  const Status decoded = batch.Parse(request.body(), config_.max_body_bytes, mapping);
  const ingest::RemoteWriteStats& stats = batch.stats();
  const std::span<const PointRef> points = batch.points();
  if (decoded.IsResourceExhausted()) {
    return Error(http::status::payload_too_large, request.version(), decoded.message());
  }
  if (!decoded.ok()) return Error(http::status::bad_request, request.version(), decoded.message());
  metrics_->bytes_received += request.body().size();
  metrics_->remote_write_samples += stats.samples;
  metrics_->remote_write_stale_markers += stats.stale_markers;

  WriteResult result;
  Status s = points.empty() ? Status::Ok() : prom_measurements_.Note(mapping.measurement);
  if (s.ok()) s = prom_metadata_.Note(batch.metadata());
  if (s.ok() && !points.empty()) s = db_->Write(points, &result);
  if (auto refused = WriteRefused(s, result, request.version())) return *refused;
  metrics_->points_received += result.points_written;
  metrics_->values_received += result.values_written;
  sources_->RecordPush(context.remote_address, std::string(request[http::field::user_agent]),
                       result.points_written, WallClockNanos());
  // What was left out and would be again on a retry: 400, the rest stored.
  std::vector<std::string> why;
  if (!stats.first_error.empty()) {
    why.push_back(std::to_string(stats.nameless) + " samples of series without a metric name (" +
                  stats.first_error + ")");
  }
  if (stats.mapping.dropped_timestamp > 0) {
    why.push_back(std::to_string(stats.mapping.dropped_timestamp) +
                  " samples with a timestamp outside the years 1677-2262");
  }
  if (!result.rejected.empty()) {
    const PointRef& p = points[result.rejected.front().index];
    why.push_back(std::to_string(result.rejected.size()) +
                  " points refused; first: " + std::string(p.measurement) + " at " +
                  std::to_string(p.timestamp_ns) + " ns: " + result.rejected.front().reason);
  }
  metrics_->lines_rejected += result.rejected.size();
  if (why.empty()) return NoContent(request.version());
  std::string summary =
      "partial write: " + std::to_string(result.points_written) + " points written";
  for (const std::string& w : why) summary += "; " + w;
  return Json(http::status::bad_request, request.version(),
              {{"error", summary}, {"written", result.points_written}});
}

}  // namespace gpulse::server
