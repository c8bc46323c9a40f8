#include "server/webhook.h"

#include <algorithm>
#include <boost/beast/http/verb.hpp>
#include <charconv>
#include <limits>
#include <optional>

#include "server/http_client.h"

namespace gpulse::server {

namespace {

// The receiver's reply body is read only to finish the exchange; nothing in it
// is used, so a small bound is enough.
constexpr uint64_t kMaxReplyBytes = 64 << 10;

bool IsSuccess(int status) { return status >= 200 && status <= 299; }

// Answers that may change if asked again later: the receiver timed out,
// throttled us, or failed on its side. Any other non-2xx is about the request.
bool IsRetryable(int status) { return status == 408 || status == 429 || status >= 500; }

// Retry-After in whole seconds. The HTTP-date form is not understood: the
// caller's own back-off applies instead.
std::optional<uint64_t> ParseRetryAfterSeconds(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  uint64_t seconds = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, seconds);
  if (value.empty() || ptr != end) return std::nullopt;
  // Too many digits for 64 bits is still a number of seconds, only a long one.
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<uint64_t>::max();
  if (ec != std::errc()) return std::nullopt;
  return seconds;
}

}  // namespace

std::chrono::milliseconds WebhookRetryDelay(const WebhookOptions& options, int failed_attempts,
                                            int http_status, std::string_view retry_after) {
  std::chrono::milliseconds delay = options.first_backoff;
  for (int i = 1; i < failed_attempts && delay > delay.zero() && delay < options.max_backoff; ++i) {
    delay *= 2;
  }
  if (http_status == 429 || http_status == 503) {
    if (const auto asked = ParseRetryAfterSeconds(retry_after)) {
      // Compared in seconds first, so that a huge header cannot overflow the
      // conversion to milliseconds.
      const auto cap = std::chrono::ceil<std::chrono::seconds>(options.max_backoff);
      const std::chrono::milliseconds asked_delay =
          *asked >= static_cast<uint64_t>(cap.count())
              ? options.max_backoff
              : std::chrono::milliseconds(std::chrono::seconds(*asked));
      delay = std::max(delay, asked_delay);
    }
  }
  return std::min(delay, options.max_backoff);
}

WebhookSender::WebhookSender(WebhookOptions options) : options_(options) {}

WebhookSender::~WebhookSender() { Stop(); }

void WebhookSender::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void WebhookSender::Stop() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  MutexLock l(&mu_);
  by_age_.clear();
  by_due_.clear();
}

void WebhookSender::Send(std::string url, std::string json) {
  MutexLock l(&mu_);
  // Checked here rather than on the first attempt: no retry can fix it, and
  // the caller's own stats show it at once.
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    ++stats_.given_up;
    stats_.last_error = url + ": not an http:// or https:// URL";
    return;
  }
  Notification n;
  n.url = std::move(url);
  n.json = std::move(json);
  n.sequence = next_sequence_++;
  n.due = Clock::now();
  Enqueue(std::move(n));
  cv_.Signal();
}

WebhookStats WebhookSender::Stats() const {
  MutexLock l(&mu_);
  WebhookStats stats = stats_;
  stats.queued = by_age_.size();
  return stats;
}

void WebhookSender::Enqueue(Notification n) {
  by_due_.emplace(n.due, n.sequence);
  by_age_.emplace(n.sequence, std::move(n));
  if (by_age_.size() <= options_.max_queued) return;
  const auto oldest = by_age_.begin();
  by_due_.erase({oldest->second.due, oldest->first});
  by_age_.erase(oldest);
  ++stats_.dropped;
}

void WebhookSender::Loop() {
  MutexLock l(&mu_);
  while (!stopping_) {
    if (by_due_.empty()) {
      cv_.Wait(&mu_);
      continue;
    }
    const auto [due, sequence] = *by_due_.begin();
    if (Clock::now() < due) {
      // Back to the top on any wake: Stop, or a Send that is due sooner.
      cv_.WaitUntil(&mu_, due);
      continue;
    }
    by_due_.erase(by_due_.begin());
    auto node = by_age_.extract(sequence);
    l.Unlock();
    Attempt(std::move(node.mapped()));
    l.Lock();
  }
}

void WebhookSender::Attempt(Notification n) {
  HttpReply reply;
  const Status s = HttpRequest(boost::beast::http::verb::post, n.url, "application/json", n.json,
                               options_.timeout, kMaxReplyBytes, &reply);
  ++n.attempts;
  const bool delivered = s.ok() && IsSuccess(reply.status);
  const bool retryable = !s.ok() || IsRetryable(reply.status);
  const std::string error =
      !s.ok() ? s.message() : n.url + ": HTTP " + std::to_string(reply.status);

  MutexLock l(&mu_);
  if (delivered) {
    ++stats_.delivered;
  } else if (!retryable) {
    ++stats_.given_up;
    stats_.last_error = error + " (not retried)";
  } else if (n.attempts >= options_.max_attempts) {
    ++stats_.given_up;
    stats_.last_error = error + " (given up after " + std::to_string(n.attempts) + " attempts)";
  } else {
    ++stats_.retries;
    stats_.last_error = error;
    n.due = Clock::now() + WebhookRetryDelay(options_, n.attempts, reply.status, reply.retry_after);
    Enqueue(std::move(n));
  }
}

}  // namespace gpulse::server
