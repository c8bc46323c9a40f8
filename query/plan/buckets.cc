#include "query/plan/buckets.h"

#include <date/tz.h>

#include <chrono>
#include <limits>

#include "query/syntax/lexer.h"

namespace gpulse::query {

namespace {

constexpr int64_t kDay = 86'400'000'000'000;
constexpr int64_t kWeek = 7 * kDay;
// 1970-01-05, the first Monday after the epoch.
constexpr int64_t kFirstMonday = 4 * kDay;

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

using Nanos = std::chrono::duration<int64_t, std::nano>;

}  // namespace

Result<Bucketer> Bucketer::Make(const std::vector<DurationPart>& interval, int64_t offset_ns,
                                const std::optional<std::string>& timezone) {
  Bucketer b;
  b.offset_ns_ = offset_ns;
  bool any_fixed = false;
  for (const DurationPart& p : interval) {
    if (p.unit == "mo") {
      b.months_ += p.amount;
      continue;
    }
    const int64_t ns = DurationPartNanos(p);
    if (ns < 0 || b.width_ns_ > std::numeric_limits<int64_t>::max() - ns) {
      return Status::InvalidArgument("time() interval is too long");
    }
    b.width_ns_ += ns;
    any_fixed = true;
    if (p.unit == "w") b.weekly_ = true;
  }
  if (b.months_ > 0 && any_fixed) {
    return Status::InvalidArgument("time() interval may not mix months with other units");
  }
  if (b.months_ == 0 && b.width_ns_ <= 0) {
    return Status::InvalidArgument("time() interval must be positive");
  }
  // Weekly alignment only for whole weeks.
  if (b.weekly_ && b.width_ns_ % kWeek != 0) b.weekly_ = false;
  if (timezone) {
    try {
      b.zone_ = date::locate_zone(*timezone);
    } catch (const std::exception&) {
      return Status::InvalidArgument("unknown time zone '" + *timezone + "'");
    }
  }
  return b;
}

int64_t Bucketer::ToLocal(int64_t t) const {
  if (!zone_) return t;
  const date::sys_time<Nanos> st{Nanos{t}};
  const auto info = zone_->get_info(std::chrono::time_point_cast<std::chrono::seconds>(st));
  return t + std::chrono::duration_cast<Nanos>(info.offset).count();
}

int64_t Bucketer::ToUtc(int64_t local) const {
  if (!zone_) return local;
  const date::local_time<Nanos> lt{Nanos{local}};
  // A local time that does not exist (the hour skipped in spring) maps to
  // the instant the clocks jumped; one that exists twice to the first.
  const auto info = zone_->get_info(std::chrono::time_point_cast<std::chrono::seconds>(lt));
  switch (info.result) {
    case date::local_info::unique:
    case date::local_info::ambiguous:
      return local - std::chrono::duration_cast<Nanos>(info.first.offset).count();
    case date::local_info::nonexistent:
      return std::chrono::duration_cast<Nanos>(info.first.end.time_since_epoch()).count();
  }
  return local;
}

int64_t Bucketer::LocalStart(int64_t local) const {
  const int64_t x = local - offset_ns_;
  if (months_ > 0) {
    const auto day = date::floor<date::days>(date::sys_time<Nanos>{Nanos{x}});
    const date::year_month_day ymd{day};
    const int64_t m = static_cast<int64_t>(static_cast<int>(ymd.year())) * 12 +
                      static_cast<int64_t>(static_cast<unsigned>(ymd.month())) - 1;
    const int64_t mb = FloorDiv(m, months_) * months_;
    const date::year_month_day first{
        date::year{static_cast<int>(FloorDiv(mb, 12))},
        date::month{static_cast<unsigned>(mb - FloorDiv(mb, 12) * 12 + 1)}, date::day{1}};
    const int64_t start_days = date::sys_days{first}.time_since_epoch().count();
    return start_days * kDay + offset_ns_;
  }
  const int64_t origin = weekly_ ? kFirstMonday : 0;
  return FloorDiv(x - origin, width_ns_) * width_ns_ + origin + offset_ns_;
}

int64_t Bucketer::Start(int64_t t) const {
  if (!zone_ && months_ == 0) {
    const int64_t origin = (weekly_ ? kFirstMonday : 0) + offset_ns_;
    return FloorDiv(t - origin, width_ns_) * width_ns_ + origin;
  }
  const int64_t start = ToUtc(LocalStart(ToLocal(t)));
  // Across a backward clock change the local start can map after t.
  return start <= t ? start : ToUtc(LocalStart(ToLocal(t) - kDay / 24));
}

int64_t Bucketer::Next(int64_t start) const {
  if (!zone_ && months_ == 0) return start + width_ns_;
  const int64_t local = LocalStart(ToLocal(start));
  int64_t next_local;
  if (months_ > 0) {
    // Any day in the next period, floored.
    next_local = LocalStart(local + (months_ * 31 + 1) * kDay);
  } else {
    next_local = local + width_ns_;
  }
  const int64_t next = ToUtc(next_local);
  return next > start ? next : start + width_ns_ + (width_ns_ == 0 ? kDay : 0);
}

int64_t Bucketer::MinWidth() const {
  if (months_ > 0) return months_ * 28 * kDay;
  // A change of the zone's offset (an hour at most in practice) shortens the
  // bucket it falls in; a bucket of an hour or less is then at least half as
  // wide (not 1 ns, which made every sub-hour GROUP BY time with tz() look
  // like trillions of buckets).
  return zone_ ? std::max<int64_t>(width_ns_ - kDay / 24, width_ns_ / 2) : width_ns_;
}

}  // namespace gpulse::query
