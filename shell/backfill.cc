// `gpulse backfill`: sends a node's stored history for a time range to one
// of its remote_write targets, a step at a time, through the node's
// POST /api/v1/forward/backfill (server/forwarder.h), printing each step as
// it is acknowledged. A failed step is named with the command that goes on
// from it: sending a step again is harmless (receivers keep a series'
// sample at a timestamp once).

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gpulse.h"
#include "ingest/civil_time.h"
#include "query/promql/lexer.h"
#include "query/runtime/format.h"
#include "server/http_api.h"
#include "server/http_client.h"
#include "shell/commands.h"

namespace gpulse::cli {

namespace {

constexpr const char* kBackfillUsage =
    "Usage: gpulse backfill --url URL --target NAME --from TIME [--to TIME] [options]\n"
    "\n"
    "Sends what the gpulse server at URL stores of [--from, --to) to its remote_write\n"
    "target NAME (the \"name\" of an entry of its config file's \"remote_write\"), with\n"
    "the target's names, labels and filters, as if it had been forwarded when it was\n"
    "written: the history a node held before the target was configured, moved into\n"
    "a central store. Writes that arrive meanwhile are forwarded as usual. A target\n"
    "of a tier resolution (\"resolution\": \"5m\") gets the tier's buckets that start in\n"
    "the range: the remedy for points that arrived after their bucket was sent.\n"
    "\n"
    "The range is sent a step at a time, each step acknowledged by the receiver\n"
    "before the next; each is printed with its series, samples and time. Sending a\n"
    "range twice is harmless: a receiver keeps one sample per series and time\n"
    "(victoria-metrics with -dedup.minScrapeInterval, docs/operations.md). On an\n"
    "error the command prints the step that failed and how to go on from it.\n"
    "Exit status 0 when every step was sent, 1 on an error, 2 on bad arguments.\n"
    "\n"
    "  --url URL       the gpulse server (http://HOST:PORT)\n"
    "  --target NAME   the remote_write target to send to\n"
    "  --from TIME     the range's start: RFC3339 (2026-11-01T00:00:00Z) or Unix seconds\n"
    "  --to TIME       its end (excluded); default: now\n"
    "  --step DUR      the range sent at a time (default 1h; 5m, 6h, 1d...)\n"
    "  --token TOKEN   a token with read and write access to every database, when\n"
    "                  the server requires one\n";

int Usage(const std::string& error) {
  std::fprintf(stderr, "gpulse backfill: %s\n\n%s", error.c_str(), kBackfillUsage);
  return 2;
}

}  // namespace

int RunBackfill(const std::vector<std::string>& args) {
  std::string url, target, from_text, to_text, token;
  int64_t step_ns = 3'600'000'000'000;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kBackfillUsage, stdout);
      return 0;
    }
    if (i + 1 >= args.size()) return Usage("missing value after " + a);
    const std::string& v = args[++i];
    if (a == "--url") {
      url = v;
    } else if (a == "--target") {
      target = v;
    } else if (a == "--from") {
      from_text = v;
    } else if (a == "--to") {
      to_text = v;
    } else if (a == "--token") {
      token = v;
    } else if (a == "--step") {
      int64_t ms = 0;
      if (!query::promql::ParsePromDuration(v, &ms) || ms < 1000) {
        return Usage("--step '" + v + "' is not a duration of a second or more (5m, 1h, 1d)");
      }
      step_ns = ms * 1'000'000;
    } else {
      return Usage("unknown option " + a);
    }
  }
  if (url.empty()) return Usage("--url is required");
  if (target.empty()) return Usage("--target is required");
  if (from_text.empty()) return Usage("--from is required");
  const std::optional<int64_t> from = ingest::ParseInstant(from_text);
  if (!from) return Usage("--from '" + from_text + "' is neither RFC3339 nor Unix seconds");
  int64_t to = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  if (!to_text.empty()) {
    const std::optional<int64_t> t = ingest::ParseInstant(to_text);
    if (!t) return Usage("--to '" + to_text + "' is neither RFC3339 nor Unix seconds");
    to = *t;
  }
  if (*from >= to) return Usage("--from must come before --to");

  server::HttpClient::Options options;
  if (!token.empty()) options.authorization = "Token " + token;
  std::unique_ptr<server::HttpClient> client;
  if (const Status s = server::HttpClient::Open(url, options, &client); !s.ok()) {
    return Usage(s.message());
  }
  uint64_t samples = 0;
  const auto started = std::chrono::steady_clock::now();
  for (int64_t start = *from; start < to;) {
    const int64_t end = to - start > step_ns ? start + step_ns : to;
    const std::string a = query::Rfc3339(start), b = query::Rfc3339(end);
    const std::string path = "/api/v1/forward/backfill?target=" + server::PercentEncode(target) +
                             "&start=" + server::PercentEncode(a) +
                             "&end=" + server::PercentEncode(b);
    server::HttpReply reply;
    Status s = client->Send(boost::beast::http::verb::post, path, "", "", "", &reply);
    if (s.ok() && reply.status != 200) {
      std::string message = reply.body;
      const nlohmann::json body = nlohmann::json::parse(reply.body, nullptr, false);
      if (body.is_object() && body.contains("error") && body["error"].is_string()) {
        message = body["error"].get<std::string>();
      }
      s = Status::IOError(std::to_string(reply.status) + ": " + message);
    }
    nlohmann::json answer;
    if (s.ok()) {
      answer = nlohmann::json::parse(reply.body, nullptr, false);
      if (!answer.is_object() || !answer["samples"].is_number()) {
        s = Status::IOError("the server's answer is not a backfill's: " +
                            reply.body.substr(0, 200));
      }
    }
    if (!s.ok()) {
      std::fprintf(stderr,
                   "gpulse backfill: %s .. %s: %s\n"
                   "Every step before it was sent; go on with:\n"
                   "  gpulse backfill --url %s --target %s --from %s --to %s\n",
                   a.c_str(), b.c_str(), s.ToString().c_str(), url.c_str(), target.c_str(),
                   a.c_str(), query::Rfc3339(to).c_str());
      return 1;
    }
    samples += answer["samples"].get<uint64_t>();
    std::printf("%s .. %s: %llu series, %llu samples in %.1f s\n", a.c_str(), b.c_str(),
                static_cast<unsigned long long>(answer["series"].get<uint64_t>()),
                static_cast<unsigned long long>(answer["samples"].get<uint64_t>()),
                answer["seconds"].get<double>());
    std::fflush(stdout);
    start = end;
  }
  std::printf("sent %llu samples to %s in %.1f s\n", static_cast<unsigned long long>(samples),
              target.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return 0;
}

}  // namespace gpulse::cli
