// The connections of `gpulse query` and `gpulse shell` (connection.h): a
// data directory opened in-process, or a client of `gpulse serve` over the
// one HTTP client.

#include "shell/connection.h"

#include <memory>
#include <string>
#include <utility>

#include "query/query.h"
#include "query/runtime/format.h"
#include "server/http_api.h"
#include "server/http_client.h"

namespace gpulse::shell {

Status CancelledByUser() { return Status::Cancelled("query cancelled (Ctrl-C)"); }

Status ParseUrl(std::string_view url, std::string* host, std::string* port) {
  const Status bad =
      Status::InvalidArgument("--url " + std::string(url) + ": expected http://HOST:PORT");
  std::string_view trimmed = url;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.remove_suffix(1);
  server::HttpUrl where;
  // gpulse serve speaks plain HTTP (a TLS proxy in front of it is for
  // other clients).
  if (!trimmed.starts_with("http://")) return bad;
  if (!server::ParseHttpUrl(trimmed, &where, "8086").ok() || where.target != "/") return bad;
  *host = where.host;
  *port = where.port;
  return Status::Ok();
}

namespace {

class EmbeddedConnection final : public Connection {
 public:
  EmbeddedConnection(std::unique_ptr<Db> db, std::string path, std::string database,
                     std::function<bool()> cancelled)
      : db_(std::move(db)),
        path_(std::move(path)),
        database_(std::move(database)),
        cancelled_(std::move(cancelled)) {}

  Status Query(std::string_view text, QueryResult* out) override {
    QueryOptions options;
    options.database = database_;
    options.cancelled = cancelled_;
    return gpulse::Query(db_.get(), text, options, out);
  }
  Status Close() override { return db_->Close(); }
  std::string Describe() const override { return path_ + " (embedded)"; }

 private:
  std::unique_ptr<Db> db_;
  std::string path_;
  std::string database_;
  std::function<bool()> cancelled_;
};

// A client of `gpulse serve`: GET /query?q=...&db=...&epoch=ns over the one
// HTTP client (server/http_client.h), its connection kept between queries.
// Ctrl-C drops the request in flight.
class RemoteConnection final : public Connection {
 public:
  RemoteConnection(std::unique_ptr<server::HttpClient> client, std::string database,
                   std::function<bool()> cancelled)
      : client_(std::move(client)),
        database_(std::move(database)),
        cancelled_(std::move(cancelled)) {}

  Status Query(std::string_view text, QueryResult* out) override {
    std::string target = "/query?epoch=ns&q=" + server::PercentEncode(text);
    if (!database_.empty()) target += "&db=" + server::PercentEncode(database_);
    server::HttpReply reply;
    const Status sent =
        client_->Send(boost::beast::http::verb::get, target, "", "application/json", "", &reply);
    if (sent.IsCancelled() || cancelled_()) return CancelledByUser();
    GPULSE_RETURN_IF_ERROR(sent);
    const Status parsed = query::ParseJsonResult(reply.body, query::TimeFormat::kNs, out);
    if (reply.status != 200) {
      const std::string context = client_->url() + " answered HTTP " + std::to_string(reply.status);
      return parsed.ok() ? Status::IOError(context) : parsed.WithContext(context);
    }
    return parsed.WithContext(client_->url());
  }
  std::string Describe() const override { return client_->url(); }

  // Replies larger than this are refused rather than exhausting memory.
  static constexpr uint64_t kMaxReplyBytes = 4ull << 30;

 private:
  std::unique_ptr<server::HttpClient> client_;
  std::string database_;
  std::function<bool()> cancelled_;
};

}  // namespace

Status OpenConnection(const ConnectionFlags& flags, std::function<bool()> cancelled,
                      std::unique_ptr<Connection>* out) {
  if (!flags.url.empty()) {
    std::string host, port;
    GPULSE_RETURN_IF_ERROR(ParseUrl(flags.url, &host, &port));
    server::HttpClient::Options options;
    options.user_agent = std::string("gpulse-shell/") + Version();
    options.max_reply_bytes = RemoteConnection::kMaxReplyBytes;
    if (!flags.token.empty()) options.authorization = "Token " + flags.token;
    options.cancelled = cancelled;
    std::unique_ptr<server::HttpClient> client;
    const bool v6 = host.find(':') != std::string::npos;
    GPULSE_RETURN_IF_ERROR(server::HttpClient::Open(
        "http://" + (v6 ? "[" + host + "]" : host) + ":" + port, options, &client));
    *out =
        std::make_unique<RemoteConnection>(std::move(client), flags.database, std::move(cancelled));
    return Status::Ok();
  }
  const std::string path = flags.data.empty() ? "./gpulse-data" : flags.data;
  Options options;
  options.create_if_missing = false;  // a mistyped --data is an error, not a new database
  options.keep_stored_tiers = true;   // the server's tiers, not the defaults
  std::unique_ptr<Db> db;
  const Status s = Db::Open(options, path, &db);
  if (s.IsBusy()) {
    return Status::Busy(s.message() +
                        "; if a `gpulse serve` has it, pass --url http://HOST:PORT instead");
  }
  if (!s.ok()) return s.WithContext(path);
  *out = std::make_unique<EmbeddedConnection>(std::move(db), path, flags.database,
                                              std::move(cancelled));
  return Status::Ok();
}

}  // namespace gpulse::shell
