#include "query/promeval/statement.h"

#include <cctype>
#include <chrono>

#include "query/promeval/run.h"
#include "query/promql/lexer.h"

namespace gpulse::query::promeval {

namespace {

constexpr std::string_view kPrefix = "promql";

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}

// The prefix's words before ':' ("6h 5m"), and the expression after it.
Status SplitPrefix(std::string_view text, std::string_view* words, std::string_view* expr) {
  text = TrimLeft(text).substr(kPrefix.size());
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    return Status::InvalidArgument(
        "a PromQL statement is \"promql: EXPR\" or \"promql RANGE STEP: EXPR\"");
  }
  *words = text.substr(0, colon);
  *expr = text.substr(colon + 1);
  return Status::Ok();
}

// RANGE and STEP as durations (none: an instant query).
Status ParseWords(std::string_view words, int64_t* range, int64_t* step) {
  std::vector<std::string_view> parts;
  while (!(words = TrimLeft(words)).empty()) {
    size_t n = 0;
    while (n < words.size() && !std::isspace(static_cast<unsigned char>(words[n]))) ++n;
    parts.push_back(words.substr(0, n));
    words.remove_prefix(n);
  }
  if (parts.empty()) return Status::Ok();
  if (parts.size() != 2 || !promql::ParsePromDuration(parts[0], range) ||
      !promql::ParsePromDuration(parts[1], step) || *range <= 0 || *step <= 0) {
    return Status::InvalidArgument(
        "after promql, a range and a step (\"promql 6h 5m: EXPR\"), or nothing");
  }
  if (*range / *step > 11'000) {
    return Status::InvalidArgument("promql " + std::string(parts[0]) + " " + std::string(parts[1]) +
                                   ": over 11,000 steps");
  }
  return Status::Ok();
}

ResultSeries SeriesOf(Labels labels) {
  ResultSeries rs;
  rs.name = std::string(LabelValue(labels, kMetricName));
  DropLabel(&labels, kMetricName);
  for (Label& l : labels) rs.tags.push_back(Tag{std::move(l.name), std::move(l.value)});
  rs.columns = {"time", "value"};
  return rs;
}

void Convert(PromAnswer&& answer, StatementResult* out) {
  if (answer.type == ValueType::kString) {
    ResultSeries rs;
    rs.name = "string";
    rs.columns = {"time", "value"};
    rs.values.push_back({answer.steps.start * kNanosPerMilli, std::move(answer.text)});
    out->series.push_back(std::move(rs));
    return;
  }
  for (RawSeries& r : answer.raw) {
    ResultSeries rs = SeriesOf(std::move(r.labels));
    for (size_t i = 0; i < r.times.size(); ++i) {
      rs.values.push_back({r.times[i] * kNanosPerMilli, r.values[i]});
    }
    out->series.push_back(std::move(rs));
  }
  for (StepSeries& s : answer.series) {
    ResultSeries rs = SeriesOf(std::move(s.labels));
    if (answer.type == ValueType::kScalar) rs.name = "scalar";
    for (size_t k = 0; k < s.has.size(); ++k) {
      if (s.has[k]) rs.values.push_back({answer.steps.at(k) * kNanosPerMilli, s.values[k]});
    }
    out->series.push_back(std::move(rs));
  }
}

}  // namespace

bool IsPromQLStatement(std::string_view text) {
  text = TrimLeft(text);
  if (text.size() <= kPrefix.size()) return false;
  for (size_t i = 0; i < kPrefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != kPrefix[i]) return false;
  }
  const char next = text[kPrefix.size()];
  return next == ':' || std::isspace(static_cast<unsigned char>(next));
}

void RunPromQLStatement(Db* db, std::string_view text, const QueryOptions& options,
                        StatementResult* out) {
  std::string_view words, expr;
  int64_t range = 0, step = 0;
  out->status = SplitPrefix(text, &words, &expr);
  if (out->status.ok()) out->status = ParseWords(words, &range, &step);
  if (!out->status.ok()) return;
  const int64_t now_ns = options.now_ns != 0
                             ? options.now_ns
                             : std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
  PromRequest request;
  request.text = expr;
  request.end = now_ns / kNanosPerMilli;
  request.instant = range == 0;
  request.start = request.instant ? request.end : request.end - range;
  request.step = step;
  PromAnswer answer;
  PromFailure failure;
  out->status = RunPromQL(db, request, options, &answer, &failure);
  if (out->status.ok()) Convert(std::move(answer), out);
}

}  // namespace gpulse::query::promeval
