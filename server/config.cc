#include "server/config.h"
#include "query/query.h"
#include "storage/rollup.h"

#include <algorithm>
#include <boost/archive/iterators/base64_from_binary.hpp>
#include <boost/archive/iterators/transform_width.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

namespace gpulse::server {

namespace {

using Json = nlohmann::json;

// Reads `key` of `object` into *out when present; a wrong type is an error
// naming the key.
template <typename T>
Status Get(const Json& object, const std::string& where, const char* key, T* out) {
  const auto it = object.find(key);
  if (it == object.end()) return Status::Ok();
  try {
    *out = it->template get<T>();
  } catch (const Json::exception&) {
    return Status::InvalidArgument(where + "." + key + ": wrong type (" +
                                   std::string(it->type_name()) + ")");
  }
  return Status::Ok();
}

Status GetMillis(const Json& object, const std::string& where, const char* key,
                 std::chrono::milliseconds* out) {
  double seconds = static_cast<double>(out->count()) / 1000.0;
  GPULSE_RETURN_IF_ERROR(Get(object, where, key, &seconds));
  if (seconds <= 0) return Status::InvalidArgument(where + "." + key + ": must be positive");
  *out = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  return Status::Ok();
}

Status CheckKeys(const Json& object, const std::string& where,
                 std::initializer_list<const char*> known) {
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (const char* k : known) found = found || key == k;
    if (!found) return Status::InvalidArgument(where + ": unknown key \"" + key + "\"");
  }
  return Status::Ok();
}

Status LoadTokens(const Json& list, ServerConfig* config) {
  if (!list.is_array()) return Status::InvalidArgument("auth.tokens: must be an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "auth.tokens[" + std::to_string(i) + "]";
    const Json& t = list[i];
    if (!t.is_object()) return Status::InvalidArgument(where + ": must be an object");
    GPULSE_RETURN_IF_ERROR(CheckKeys(t, where, {"name", "token", "read", "write"}));
    TokenConfig token;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "name", &token.name));
    GPULSE_RETURN_IF_ERROR(Get(t, where, "token", &token.token));
    GPULSE_RETURN_IF_ERROR(Get(t, where, "read", &token.read));
    GPULSE_RETURN_IF_ERROR(Get(t, where, "write", &token.write));
    if (token.token.size() < 8) {
      return Status::InvalidArgument(where + ".token: at least 8 characters");
    }
    if (token.name.empty()) token.name = "token" + std::to_string(i);
    config->tokens.push_back(std::move(token));
  }
  return Status::Ok();
}

Status LoadScrape(const Json& list, ServerConfig* config) {
  if (!list.is_array()) return Status::InvalidArgument("scrape: must be an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "scrape[" + std::to_string(i) + "]";
    const Json& t = list[i];
    if (!t.is_object()) return Status::InvalidArgument(where + ": must be an object");
    GPULSE_RETURN_IF_ERROR(
        CheckKeys(t, where, {"url", "interval", "timeout", "measurement", "tags"}));
    ScrapeTarget target;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "url", &target.url));
    if (target.url.rfind("http://", 0) != 0) {
      return Status::InvalidArgument(where + ".url: must start with http://");
    }
    GPULSE_RETURN_IF_ERROR(GetMillis(t, where, "interval", &target.interval));
    GPULSE_RETURN_IF_ERROR(GetMillis(t, where, "timeout", &target.timeout));
    GPULSE_RETURN_IF_ERROR(Get(t, where, "measurement", &target.measurement));
    std::map<std::string, std::string> tags;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "tags", &tags));
    for (auto& [k, v] : tags) target.tags.push_back(Tag{k, v});
    config->scrape.push_back(std::move(target));
  }
  return Status::Ok();
}

std::string Base64(const std::string& bytes) {
  using namespace boost::archive::iterators;
  using Encode = base64_from_binary<transform_width<std::string::const_iterator, 6, 8>>;
  std::string out(Encode(bytes.begin()), Encode(bytes.end()));
  out.append((3 - bytes.size() % 3) % 3, '=');
  return out;
}

Status LoadRemoteWrite(const Json& list, ServerConfig* config) {
  if (!list.is_array()) return Status::InvalidArgument("remote_write: must be an array");
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "remote_write[" + std::to_string(i) + "]";
    const Json& t = list[i];
    if (!t.is_object()) return Status::InvalidArgument(where + ": must be an object");
    GPULSE_RETURN_IF_ERROR(CheckKeys(
        t, where,
        {"name", "url", "protocol", "authorization", "basic_auth", "tls", "resolution",
         "lag_minutes", "backfill_hours", "measurements", "fields", "labels", "rename_labels",
         "shards", "max_samples_per_send", "max_mb_per_second", "timeout"}));
    RemoteWriteTarget target;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "url", &target.url));
    const bool https = target.url.starts_with("https://");
    if (!https && !target.url.starts_with("http://")) {
      return Status::InvalidArgument(where + ".url: must start with http:// or https://");
    }
    if (t.contains("tls")) {
      std::map<std::string, std::string> files;
      GPULSE_RETURN_IF_ERROR(Get(t, where, "tls", &files));
      for (const auto& [key, file] : files) {
        std::string* to = key == "ca_file"     ? &target.tls_ca_file
                          : key == "cert_file" ? &target.tls_cert_file
                          : key == "key_file"  ? &target.tls_key_file
                                               : nullptr;
        if (to == nullptr) {
          return Status::InvalidArgument(where + ".tls: unknown key \"" + key +
                                         "\" (ca_file, cert_file, key_file)");
        }
        if (std::ifstream(file).fail()) {
          return Status::InvalidArgument(where + ".tls." + key + ": cannot read " + file);
        }
        *to = file;
      }
      if (!https) {
        return Status::InvalidArgument(where + ".tls: given for a url that is not https://");
      }
      if (target.tls_cert_file.empty() != target.tls_key_file.empty()) {
        return Status::InvalidArgument(where + ".tls: cert_file and key_file go together");
      }
    }
    std::string protocol = "prometheus";
    GPULSE_RETURN_IF_ERROR(Get(t, where, "protocol", &protocol));
    if (protocol == "influx") {
      target.protocol = RemoteWriteTarget::Protocol::kInflux;
    } else if (protocol != "prometheus") {
      return Status::InvalidArgument(where + ".protocol: \"" + protocol +
                                     "\" is not prometheus or influx");
    }
    target.name = target.url;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "name", &target.name));
    if (target.name.empty() ||
        target.name.find_first_of(std::string("\"\\\n\0", 4)) != std::string::npos) {
      return Status::InvalidArgument(where +
                                     ".name: must be non-empty, without quotes, "
                                     "backslashes or line breaks");
    }
    if (!names.insert(target.name).second) {
      return Status::InvalidArgument(where + ".name: \"" + target.name +
                                     "\" names another target too (give each a name)");
    }
    GPULSE_RETURN_IF_ERROR(Get(t, where, "authorization", &target.authorization));
    if (const auto basic = t.find("basic_auth"); basic != t.end()) {
      if (!target.authorization.empty()) {
        return Status::InvalidArgument(where + ": authorization and basic_auth both given");
      }
      std::map<std::string, std::string> user;
      GPULSE_RETURN_IF_ERROR(Get(t, where, "basic_auth", &user));
      if (user.size() != 2 || user.count("username") == 0 || user.count("password") == 0) {
        return Status::InvalidArgument(where +
                                       ".basic_auth: must be "
                                       "{\"username\": ..., \"password\": ...}");
      }
      target.authorization = "Basic " + Base64(user["username"] + ":" + user["password"]);
    }
    std::string resolution = "raw";
    GPULSE_RETURN_IF_ERROR(Get(t, where, "resolution", &resolution));
    for (size_t tier = 0; tier < storage::kTierCount; ++tier) {
      if (resolution == storage::kTiers[tier].name) target.tier = static_cast<int>(tier);
    }
    if (target.tier < 0 && resolution != "raw") {
      return Status::InvalidArgument(where + ".resolution: \"" + resolution +
                                     "\" is not raw, 5m, 1h or 1d");
    }
    if (target.tier < 0 && (t.contains("lag_minutes") || t.contains("backfill_hours"))) {
      return Status::InvalidArgument(where +
                                     ": lag_minutes and backfill_hours are for a tier "
                                     "resolution (5m, 1h, 1d)");
    }
    int64_t lag_minutes = 5, backfill_hours = 0;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "lag_minutes", &lag_minutes));
    GPULSE_RETURN_IF_ERROR(Get(t, where, "backfill_hours", &backfill_hours));
    if (lag_minutes < 0 || lag_minutes > 1440) {
      return Status::InvalidArgument(where + ".lag_minutes: must be 0 to 1440");
    }
    if (backfill_hours < 0 || backfill_hours > 8784) {
      return Status::InvalidArgument(where + ".backfill_hours: must be 0 to 8784");
    }
    target.tier_lag_ns = lag_minutes * 60'000'000'000;
    target.tier_backfill_ns = backfill_hours * 3'600'000'000'000;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "measurements", &target.measurements));
    GPULSE_RETURN_IF_ERROR(Get(t, where, "fields", &target.fields));
    for (const std::string& field : target.fields) {
      if (field.empty() || IsStaleField(field)) {
        return Status::InvalidArgument(
            where + ".fields: \"" + field +
            "\" is not a field name (a stale marker goes with its field)");
      }
    }
    std::map<std::string, std::string> labels, renames;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "labels", &labels));
    GPULSE_RETURN_IF_ERROR(Get(t, where, "rename_labels", &renames));
    target.labels.assign(labels.begin(), labels.end());
    target.rename_labels.assign(renames.begin(), renames.end());
    GPULSE_RETURN_IF_ERROR(Get(t, where, "shards", &target.shards));
    if (target.shards < 1 || target.shards > 64) {
      return Status::InvalidArgument(where + ".shards: must be 1 to 64");
    }
    GPULSE_RETURN_IF_ERROR(Get(t, where, "max_samples_per_send", &target.max_samples_per_send));
    if (target.max_samples_per_send < 1 || target.max_samples_per_send > 1'000'000) {
      return Status::InvalidArgument(where + ".max_samples_per_send: must be 1 to 1000000");
    }
    double mb = 0;
    GPULSE_RETURN_IF_ERROR(Get(t, where, "max_mb_per_second", &mb));
    if (mb < 0) return Status::InvalidArgument(where + ".max_mb_per_second: must be >= 0");
    target.max_bytes_per_second = static_cast<uint64_t>(mb * (1 << 20));
    GPULSE_RETURN_IF_ERROR(GetMillis(t, where, "timeout", &target.timeout));
    config->remote_write.push_back(std::move(target));
  }
  return Status::Ok();
}

Status LoadLedgerExport(const Json& e, LedgerExportConfig* out) {
  if (!e.is_object()) return Status::InvalidArgument("ledger_export: must be an object");
  GPULSE_RETURN_IF_ERROR(
      CheckKeys(e, "ledger_export",
                {"every_minutes", "lag_minutes", "backfill_hours", "measurement", "database"}));
  out->enabled = true;
  int every = 5, lag = 5;
  double backfill = 24;
  GPULSE_RETURN_IF_ERROR(Get(e, "ledger_export", "every_minutes", &every));
  GPULSE_RETURN_IF_ERROR(Get(e, "ledger_export", "lag_minutes", &lag));
  GPULSE_RETURN_IF_ERROR(Get(e, "ledger_export", "backfill_hours", &backfill));
  GPULSE_RETURN_IF_ERROR(Get(e, "ledger_export", "measurement", &out->measurement));
  GPULSE_RETURN_IF_ERROR(Get(e, "ledger_export", "database", &out->database));
  if (every < 1 || 1440 % every != 0) {
    return Status::InvalidArgument(
        "ledger_export.every_minutes: must divide a day (1, 2, 5, 10, 15, 30, 60...)");
  }
  if (lag < 0 || lag > 1440) {
    return Status::InvalidArgument("ledger_export.lag_minutes: must be 0 to 1440");
  }
  if (backfill < 0 || backfill > 24 * 366) {
    return Status::InvalidArgument("ledger_export.backfill_hours: must be 0 to 8784");
  }
  if (out->measurement.empty()) {
    return Status::InvalidArgument("ledger_export.measurement: must not be empty");
  }
  constexpr int64_t kMinute = 60'000'000'000;
  out->every_ns = every * kMinute;
  out->lag_ns = lag * kMinute;
  out->backfill_ns = static_cast<int64_t>(backfill * 60) * kMinute;
  return Status::Ok();
}

// {"raw": 30, "1h": 730}: days of each kind of data, into *out.
Status LoadRetention(const Json& r, const std::string& where,
                     std::map<std::string, std::chrono::nanoseconds>* out) {
  if (!r.is_object()) {
    return Status::InvalidArgument(where +
                                   ": must be an object such as {\"raw\": 30, \"1h\": 730}");
  }
  for (const auto& [name, days] : r.items()) {
    if (name != "raw" && name != "5m" && name != "1h" && name != "1d") {
      return Status::InvalidArgument(where + ": \"" + name + "\" is not raw, 5m, 1h or 1d");
    }
    if (!days.is_number() || days.get<double>() < 0) {
      return Status::InvalidArgument(where + "." + name +
                                     ": must be a number of days, 0 for forever");
    }
    (*out)[name] = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double, std::ratio<86400>>(days.get<double>()));
  }
  return Status::Ok();
}

Status LoadStorage(const Json& s, ServerConfig* config) {
  GPULSE_RETURN_IF_ERROR(
      CheckKeys(s, "storage",
                {"sync", "sync_interval", "head_memory_mb", "chunk_window_hours",
                 "out_of_order_window_hours", "window_cache_mb", "tiers", "retention_days",
                 "retention_days_by_database", "merge_mb_per_second"}));
  std::string sync;
  GPULSE_RETURN_IF_ERROR(Get(s, "storage", "sync", &sync));
  if (sync == "every-batch") {
    config->db.sync_policy = SyncPolicy::kEveryBatch;
  } else if (sync == "interval") {
    config->db.sync_policy = SyncPolicy::kInterval;
  } else if (sync == "none") {
    config->db.sync_policy = SyncPolicy::kNone;
  } else if (!sync.empty()) {
    return Status::InvalidArgument("storage.sync: \"" + sync +
                                   "\" is not one of every-batch, interval, none");
  }
  GPULSE_RETURN_IF_ERROR(GetMillis(s, "storage", "sync_interval", &config->db.sync_interval));
  double mb = static_cast<double>(config->db.head_memory_bytes) / (1 << 20);
  GPULSE_RETURN_IF_ERROR(Get(s, "storage", "head_memory_mb", &mb));
  config->db.head_memory_bytes = static_cast<uint64_t>(mb * (1 << 20));
  mb = static_cast<double>(config->db.window_cache_bytes) / (1 << 20);
  GPULSE_RETURN_IF_ERROR(Get(s, "storage", "window_cache_mb", &mb));
  if (mb < 0) return Status::InvalidArgument("storage.window_cache_mb: must not be negative");
  config->db.window_cache_bytes = static_cast<uint64_t>(mb * (1 << 20));
  if (s.contains("tiers")) {
    const Json& tiers = s["tiers"];
    if (!tiers.is_array()) {
      return Status::InvalidArgument(
          "storage.tiers: must be a list of tier names (\"5m\", \"1h\", \"1d\")");
    }
    config->db.tiers.clear();
    for (const Json& t : tiers) {
      if (!t.is_string() || (t != "5m" && t != "1h" && t != "1d")) {
        return Status::InvalidArgument("storage.tiers: " + t.dump() +
                                       " is not a tier (\"5m\", \"1h\", \"1d\")");
      }
      config->db.tiers.push_back(t.get<std::string>());
    }
  }
  mb = static_cast<double>(config->db.merge_bytes_per_second) / (1 << 20);
  GPULSE_RETURN_IF_ERROR(Get(s, "storage", "merge_mb_per_second", &mb));
  if (mb < 0) return Status::InvalidArgument("storage.merge_mb_per_second: must not be negative");
  config->db.merge_bytes_per_second = static_cast<uint64_t>(mb * (1 << 20));
  if (s.contains("retention_days")) {
    GPULSE_RETURN_IF_ERROR(
        LoadRetention(s["retention_days"], "storage.retention_days", &config->db.retention));
  }
  if (s.contains("retention_days_by_database")) {
    const Json& by = s["retention_days_by_database"];
    if (!by.is_object()) {
      return Status::InvalidArgument(
          "storage.retention_days_by_database: must be an object such as {\"fleet\": {\"raw\": "
          "7}}");
    }
    for (const auto& [database, r] : by.items()) {
      GPULSE_RETURN_IF_ERROR(LoadRetention(r, "storage.retention_days_by_database." + database,
                                           &config->db.retention_by_database[database]));
    }
  }
  double hours = std::chrono::duration<double, std::ratio<3600>>(config->db.chunk_window).count();
  GPULSE_RETURN_IF_ERROR(Get(s, "storage", "chunk_window_hours", &hours));
  config->db.chunk_window = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::ratio<3600>>(hours));
  hours = std::chrono::duration<double, std::ratio<3600>>(config->db.out_of_order_window).count();
  GPULSE_RETURN_IF_ERROR(Get(s, "storage", "out_of_order_window_hours", &hours));
  config->db.out_of_order_window = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::ratio<3600>>(hours));
  return Status::Ok();
}

}  // namespace

int HttpIoThreads(const ServerConfig& config) {
  if (config.threads > 0) return config.threads;
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 2, 64);
}

Status LoadConfigFile(const std::string& path, ServerConfig* config) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("config file " + path + " cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  Json root;
  try {
    root = Json::parse(text.str());
  } catch (const Json::parse_error& e) {
    return Status::InvalidArgument("config file " + path + ": " + e.what());
  }
  const auto load = [&]() -> Status {
    if (!root.is_object()) return Status::InvalidArgument("the top level must be an object");
    GPULSE_RETURN_IF_ERROR(CheckKeys(
        root, "config",
        {"data", "listen", "threads", "max_body_mb", "read_timeout", "max_connections", "auth",
         "scrape", "remote_write", "ledger_export", "storage", "query", "alerts", "limits"}));
    GPULSE_RETURN_IF_ERROR(Get(root, "config", "data", &config->data_dir));
    GPULSE_RETURN_IF_ERROR(Get(root, "config", "listen", &config->listen));
    GPULSE_RETURN_IF_ERROR(Get(root, "config", "threads", &config->threads));
    if (config->threads < 0 || config->threads > 64) {
      return Status::InvalidArgument("config.threads: must be 0 (one a core) to 64");
    }
    double mb = static_cast<double>(config->max_body_bytes) / (1 << 20);
    GPULSE_RETURN_IF_ERROR(Get(root, "config", "max_body_mb", &mb));
    config->max_body_bytes = static_cast<uint64_t>(mb * (1 << 20));
    GPULSE_RETURN_IF_ERROR(GetMillis(root, "config", "read_timeout", &config->read_timeout));
    GPULSE_RETURN_IF_ERROR(Get(root, "config", "max_connections", &config->max_connections));
    if (const auto auth = root.find("auth"); auth != root.end()) {
      if (!auth->is_object()) return Status::InvalidArgument("auth: must be an object");
      GPULSE_RETURN_IF_ERROR(CheckKeys(*auth, "auth", {"tokens"}));
      if (auth->contains("tokens")) GPULSE_RETURN_IF_ERROR(LoadTokens((*auth)["tokens"], config));
    }
    if (root.contains("scrape")) GPULSE_RETURN_IF_ERROR(LoadScrape(root["scrape"], config));
    if (root.contains("remote_write")) {
      GPULSE_RETURN_IF_ERROR(LoadRemoteWrite(root["remote_write"], config));
    }
    if (root.contains("ledger_export")) {
      GPULSE_RETURN_IF_ERROR(LoadLedgerExport(root["ledger_export"], &config->ledger_export));
    }
    if (const auto q = root.find("query"); q != root.end()) {
      if (!q->is_object()) return Status::InvalidArgument("query: must be an object");
      GPULSE_RETURN_IF_ERROR(
          CheckKeys(*q, "query",
                    {"max_series", "max_points", "max_rows", "timeout", "max_memory_mb",
                     "server_memory_mb", "threads", "max_waiting"}));
      QueryLimits& l = config->query_limits;
      GPULSE_RETURN_IF_ERROR(Get(*q, "query", "max_series", &l.max_series));
      GPULSE_RETURN_IF_ERROR(Get(*q, "query", "max_points", &l.max_points));
      GPULSE_RETURN_IF_ERROR(Get(*q, "query", "max_rows", &l.max_rows));
      GPULSE_RETURN_IF_ERROR(GetMillis(*q, "query", "timeout", &l.timeout));
      uint64_t mb = l.max_memory_bytes >> 20;
      GPULSE_RETURN_IF_ERROR(Get(*q, "query", "max_memory_mb", &mb));
      l.max_memory_bytes = mb << 20;
      mb = config->server_query_memory_bytes >> 20;
      GPULSE_RETURN_IF_ERROR(Get(*q, "query", "server_memory_mb", &mb));
      config->server_query_memory_bytes = mb << 20;
      GPULSE_RETURN_IF_ERROR(Get(*q, "query", "threads", &config->query_threads));
      if (config->query_threads < 0 || config->query_threads > 256) {
        return Status::InvalidArgument("query.threads: must be 0 (one a core) to 256");
      }
      GPULSE_RETURN_IF_ERROR(Get(*q, "query", "max_waiting", &config->max_waiting_queries));
    }
    if (const auto l = root.find("limits"); l != root.end()) {
      if (!l->is_object()) return Status::InvalidArgument("limits: must be an object");
      GPULSE_RETURN_IF_ERROR(
          CheckKeys(*l, "limits",
                    {"max_fields", "max_tags", "max_name_bytes", "max_tag_value_bytes",
                     "max_series_per_database", "max_new_series_per_minute"}));
      Options::PointLimits& p = config->db.point_limits;
      GPULSE_RETURN_IF_ERROR(Get(*l, "limits", "max_fields", &p.max_fields));
      GPULSE_RETURN_IF_ERROR(Get(*l, "limits", "max_tags", &p.max_tags));
      GPULSE_RETURN_IF_ERROR(Get(*l, "limits", "max_name_bytes", &p.max_name_bytes));
      GPULSE_RETURN_IF_ERROR(Get(*l, "limits", "max_tag_value_bytes", &p.max_tag_value_bytes));
      Options::CardinalityLimits& c = config->db.cardinality;
      GPULSE_RETURN_IF_ERROR(
          Get(*l, "limits", "max_series_per_database", &c.max_series_per_database));
      GPULSE_RETURN_IF_ERROR(
          Get(*l, "limits", "max_new_series_per_minute", &c.max_new_series_per_minute));
      if (p.max_fields == 0 || p.max_name_bytes == 0 || p.max_tag_value_bytes == 0) {
        return Status::InvalidArgument(
            "limits: max_fields, max_name_bytes and max_tag_value_bytes must be at least 1");
      }
    }
    if (const auto a = root.find("alerts"); a != root.end()) {
      if (!a->is_object()) return Status::InvalidArgument("alerts: must be an object");
      GPULSE_RETURN_IF_ERROR(
          CheckKeys(*a, "alerts", {"evaluate", "lag_seconds", "freshness_rule"}));
      AlertConfig& c = config->alerts;
      GPULSE_RETURN_IF_ERROR(Get(*a, "alerts", "evaluate", &c.evaluate));
      GPULSE_RETURN_IF_ERROR(Get(*a, "alerts", "lag_seconds", &c.lag_seconds));
      GPULSE_RETURN_IF_ERROR(Get(*a, "alerts", "freshness_rule", &c.freshness_rule));
      if (c.lag_seconds < 0 || c.lag_seconds > 3600) {
        return Status::InvalidArgument("alerts.lag_seconds: must be 0 to 3600");
      }
    }
    if (const auto s = root.find("storage"); s != root.end()) {
      if (!s->is_object()) return Status::InvalidArgument("storage: must be an object");
      GPULSE_RETURN_IF_ERROR(LoadStorage(*s, config));
    }
    std::string host;
    uint16_t port = 0;
    return SplitHostPort(config->listen, &host, &port);
  };
  return load().WithContext("config file " + path);
}

Status SplitHostPort(const std::string& listen, std::string* host, uint16_t* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) {
    return Status::InvalidArgument("listen address \"" + listen + "\" is not HOST:PORT");
  }
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  const std::string digits = listen.substr(colon + 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 5 ||
      std::stoul(digits) > 65535) {
    return Status::InvalidArgument("listen address \"" + listen + "\": bad port");
  }
  *port = static_cast<uint16_t>(std::stoul(digits));
  if (host->empty()) *host = "0.0.0.0";
  return Status::Ok();
}

}  // namespace gpulse::server
