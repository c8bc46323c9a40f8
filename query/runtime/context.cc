#include "query/runtime/context.h"

#include <string>

#include "query/runtime/query_memory.h"
#include "query/runtime/result.h"

namespace gpulse::query {

ExecContext::ExecContext(Db* db, const QueryOptions& options, int64_t now_ns)
    : db_(db),
      options_(options),
      now_ns_(now_ns),
      deadline_(std::chrono::steady_clock::now() + options.limits.timeout) {}

Status ExecContext::Poll() {
  if (stopped()) return stop_status();
  const auto now = std::chrono::steady_clock::now();
  bool cancelled = false;
  if (options_.cancelled && now >= next_cancel_check_) {
    next_cancel_check_ = now + kCancelCheckInterval;
    cancelled = options_.cancelled();
  }
  if (cancelled) {
    Stop(Status::Cancelled("query cancelled"));
  } else if (now > deadline_) {
    Stop(Status::ResourceExhausted("query ran past its time limit (timeout " +
                                   std::to_string(options_.limits.timeout.count()) + " ms)"));
  }
  return stopped() ? stop_status() : Status::Ok();
}

void ExecContext::Stop(Status why) {
  MutexLock l(&mu_);
  if (stopped_.load()) return;
  stop_status_ = std::move(why);
  stopped_.store(true);
}

Status ExecContext::stop_status() {
  MutexLock l(&mu_);
  return stop_status_;
}

void ExecContext::NoteDamage(const Status& why) {
  MutexLock l(&mu_);
  ++damage_count_;
  if (damage_.size() < 5) damage_.push_back(why.message());
}

std::vector<std::string> ExecContext::DamageNotes() {
  MutexLock l(&mu_);
  std::vector<std::string> out;
  if (damage_count_ == 0) return out;
  out.push_back("damaged stored data was left out of this answer (" +
                std::to_string(damage_count_) +
                " series read failed; `gpulse verify` lists and can drop the damaged parts)");
  for (const std::string& d : damage_) out.push_back("damaged: " + d);
  return out;
}

void ExecContext::CountPoints(uint64_t n) {
  const uint64_t total = points_read.fetch_add(n) + n;
  if (total > options_.limits.max_points) {
    Stop(Status::ResourceExhausted("query read more than " +
                                   std::to_string(options_.limits.max_points) +
                                   " stored values (limit max_points)"));
  }
}

Status ExecContext::Charge(uint64_t bytes, const char* what) {
  if (options_.memory == nullptr) return Status::Ok();
  Status st = options_.memory->Charge(bytes, what);
  if (!st.ok()) Stop(st);
  return st;
}

}  // namespace gpulse::query
