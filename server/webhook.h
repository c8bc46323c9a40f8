// WebhookSender: delivers alert notifications as JSON POSTs to the URLs the
// alert rules name, from one background thread, so that whoever raises an
// alert never waits on a slow or dead receiver.
//
// A notification is delivered by a 2xx answer. Connection errors, timeouts,
// 408, 429 and 5xx are retried with exponential back-off (WebhookRetryDelay);
// any other answer is given up at once, since resending the same payload to
// the same URL will get the same answer. The queue is bounded: when it is
// full the oldest notification is dropped, on the view that the newest state
// of an alert matters most.
//
// Thread safety: Send and Stats from any thread; Start and Stop from one.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "storage/mutex.h"

namespace gpulse::server {

struct WebhookOptions {
  std::chrono::milliseconds timeout{5000};        // per attempt
  std::chrono::milliseconds first_backoff{1000};  // wait before the 2nd attempt; doubles each time
  std::chrono::milliseconds max_backoff{300000};
  int max_attempts = 10;      // then the notification is given up (counted)
  size_t max_queued = 10000;  // beyond it the oldest waiting notification is dropped (counted)
};

struct WebhookStats {
  uint64_t delivered = 0;
  uint64_t retries = 0;    // failed attempts that were scheduled again
  uint64_t given_up = 0;   // after max_attempts, on a final answer, or a URL that is not http://
  uint64_t dropped = 0;    // pushed out of a full queue
  size_t queued = 0;       // waiting, not counting one in flight
  std::string last_error;  // the latest failed attempt, naming its URL
};

// How long to wait after `failed_attempts` (>= 1) failures before the next
// attempt: first_backoff doubled per failure after the first, capped at
// max_backoff. A reply's Retry-After in whole seconds (`retry_after`, as sent
// with a 429 or 503) wins when it asks for longer, still capped at
// max_backoff so that a notification is never held past the operator's bound.
std::chrono::milliseconds WebhookRetryDelay(const WebhookOptions& options, int failed_attempts,
                                            int http_status, std::string_view retry_after);

class WebhookSender {
 public:
  explicit WebhookSender(WebhookOptions options = {});
  ~WebhookSender();  // Stop()
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;

  // Starts the background thread. Notifications sent before Start wait for
  // it. A stopped sender does not start again.
  void Start();

  // Returns without waiting out back-offs: at most one attempt in flight is
  // finished (bounded by options.timeout). Notifications not yet delivered
  // are discarded.
  void Stop();

  // Queues a POST of `json` (Content-Type: application/json) to `url`. Never
  // blocks on the network or on a full queue. A URL that is not http:// is
  // given up here, with last_error saying why.
  void Send(std::string url, std::string json);

  WebhookStats Stats() const;

 private:
  using Clock = std::chrono::steady_clock;

  struct Notification {
    std::string url;
    std::string json;
    uint64_t sequence = 0;  // order of Send; kept across retries, so age is age since Send
    int attempts = 0;       // made so far
    Clock::time_point due;
  };

  // Two views of the waiting notifications, keyed by a sequence number given
  // at Send: by_age_ finds the oldest to drop, by_due_ the next to attempt,
  // so that one waiting out a long back-off never holds up the others.
  using DueKey = std::pair<Clock::time_point, uint64_t>;

  void Loop();
  // Makes one attempt at `n` and records what became of it: delivered,
  // queued again, or given up. Called without mu_ (it takes it to record).
  void Attempt(Notification n);
  // Adds `n` to both views, dropping the oldest if that overfills the queue.
  void Enqueue(Notification n) GPULSE_REQUIRES(mu_);

  const WebhookOptions options_;

  mutable Mutex mu_;
  CondVar cv_;
  std::map<uint64_t, Notification> by_age_ GPULSE_GUARDED_BY(mu_);
  std::set<DueKey> by_due_ GPULSE_GUARDED_BY(mu_);
  uint64_t next_sequence_ GPULSE_GUARDED_BY(mu_) = 0;
  WebhookStats stats_ GPULSE_GUARDED_BY(mu_);  // queued is filled in by Stats()
  bool stopping_ GPULSE_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gpulse::server
