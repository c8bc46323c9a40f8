#include "ingest/civil_time.h"

#include <date/date.h>
#include <date/tz.h>

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <exception>

namespace gpulse::ingest {

namespace {

using Nanos = std::chrono::nanoseconds;
constexpr int64_t kSecond = 1'000'000'000;

// Reads exactly `digits` decimal digits at *at into *out.
bool Digits(std::string_view s, size_t* at, int digits, int* out) {
  if (*at + static_cast<size_t>(digits) > s.size()) return false;
  int v = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = s[*at + static_cast<size_t>(i)];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *at += static_cast<size_t>(digits);
  *out = v;
  return true;
}

bool Expect(std::string_view s, size_t* at, char c) {
  if (*at >= s.size() || s[*at] != c) return false;
  ++*at;
  return true;
}

// Nanoseconds since 1970-01-01 00:00 of a civil date and time (no zone);
// nothing for a date that does not exist (Feb 30) or that int64 nanoseconds
// cannot hold (before 1678 or after 2261, with a margin for a zone offset).
std::optional<int64_t> CivilNanos(int year, int month, int day, int hour, int minute, int second,
                                  int64_t fraction_ns) {
  const date::year_month_day ymd{date::year{year}, date::month{static_cast<unsigned>(month)},
                                 date::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  if (year < 1678 || year > 2261) return std::nullopt;
  const int64_t days = date::sys_days{ymd}.time_since_epoch().count();
  return ((days * 24 + hour) * 60 + minute) * 60 * kSecond + int64_t{second} * kSecond +
         fraction_ns;
}

// `.fff...` (any number of digits, nanoseconds kept), or nothing.
bool Fraction(std::string_view s, size_t* at, int64_t* ns) {
  *ns = 0;
  if (*at >= s.size() || (s[*at] != '.' && s[*at] != ',')) return true;
  ++*at;
  int64_t scale = kSecond / 10;
  const size_t first = *at;
  while (*at < s.size() && s[*at] >= '0' && s[*at] <= '9') {
    *ns += (s[*at] - '0') * scale;
    scale /= 10;
    ++*at;
  }
  return *at > first;
}

// `Z`, `+HH:MM`, `+HHMM`, `+HH` at *at into *offset_ns; false when the text
// there is none of them.
bool Offset(std::string_view s, size_t* at, int64_t* offset_ns) {
  if (s[*at] == 'Z' || s[*at] == 'z') {
    ++*at;
    *offset_ns = 0;
    return true;
  }
  if (s[*at] != '+' && s[*at] != '-') return false;
  const int sign = s[*at] == '-' ? -1 : 1;
  ++*at;
  int hours = 0, minutes = 0;
  if (!Digits(s, at, 2, &hours)) return false;
  if (*at < s.size()) {
    Expect(s, at, ':');
    if (!Digits(s, at, 2, &minutes)) return false;
  }
  *offset_ns = sign * (int64_t{hours} * 3600 + minutes * 60) * kSecond;
  return true;
}

}  // namespace

Result<TimeZone> TimeZone::Find(const std::string& name) {
  TimeZone z;
  if (name.empty() || name == "UTC") return z;
  // The date library reports an unknown zone (and a missing tz database) by
  // throwing; it stops here.
  try {
    z.zone_ = date::locate_zone(name);
  } catch (const std::exception& e) {
    return Status::InvalidArgument("unknown time zone '" + name + "' (" + e.what() + ")");
  }
  return z;
}

int64_t TimeZone::ToUnix(int64_t local_ns) const {
  if (zone_ == nullptr) return local_ns;
  const date::local_time<Nanos> lt{Nanos{local_ns}};
  const auto info = zone_->get_info(std::chrono::time_point_cast<std::chrono::seconds>(lt));
  if (info.result == date::local_info::nonexistent) {
    return std::chrono::duration_cast<Nanos>(info.first.end.time_since_epoch()).count();
  }
  return local_ns - std::chrono::duration_cast<Nanos>(info.first.offset).count();
}

std::optional<int64_t> ParseNvsmiTime(std::string_view s, const TimeZone& zone) {
  size_t at = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!Digits(s, &at, 4, &year) || at >= s.size()) return std::nullopt;
  const char sep = s[at];  // '/' for nvidia-smi, '-' for ISO 8601
  if ((sep != '/' && sep != '-') || !Expect(s, &at, sep) || !Digits(s, &at, 2, &month) ||
      !Expect(s, &at, sep) || !Digits(s, &at, 2, &day)) {
    return std::nullopt;
  }
  if (at >= s.size() || (s[at] != ' ' && s[at] != 'T' && s[at] != 't')) return std::nullopt;
  ++at;
  int64_t fraction = 0;
  if (!Digits(s, &at, 2, &hour) || !Expect(s, &at, ':') || !Digits(s, &at, 2, &minute) ||
      !Expect(s, &at, ':') || !Digits(s, &at, 2, &second) || !Fraction(s, &at, &fraction)) {
    return std::nullopt;
  }
  const auto local = CivilNanos(year, month, day, hour, minute, second, fraction);
  if (!local) return std::nullopt;
  if (at == s.size()) return zone.ToUnix(*local);
  int64_t offset = 0;
  if (!Offset(s, &at, &offset) || at != s.size()) return std::nullopt;
  return *local - offset;
}

std::optional<int64_t> ParseAsctime(std::string_view s, const TimeZone& zone) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  // "Fri Aug  4 11:44:30 2023": the weekday is not checked, the day may be
  // padded with a space (asctime) or not (some drivers).
  if (s.size() < 20 || s[3] != ' ' || s[7] != ' ') return std::nullopt;
  int month = 0;
  for (size_t m = 0; m < kMonths.size(); ++m) {
    if (s.substr(4, 3) == kMonths[m]) month = static_cast<int>(m) + 1;
  }
  if (month == 0) return std::nullopt;
  size_t at = 8;
  while (at < s.size() && s[at] == ' ') ++at;
  int day = 0, hour = 0, minute = 0, second = 0, year = 0;
  if (!Digits(s, &at, 2, &day) && !Digits(s, &at, 1, &day)) return std::nullopt;
  if (!Expect(s, &at, ' ') || !Digits(s, &at, 2, &hour) || !Expect(s, &at, ':') ||
      !Digits(s, &at, 2, &minute) || !Expect(s, &at, ':') || !Digits(s, &at, 2, &second) ||
      !Expect(s, &at, ' ') || !Digits(s, &at, 4, &year) || at != s.size()) {
    return std::nullopt;
  }
  const auto local = CivilNanos(year, month, day, hour, minute, second, 0);
  if (!local) return std::nullopt;
  return zone.ToUnix(*local);
}

std::optional<int64_t> ParseInstant(std::string_view s) {
  double seconds = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seconds);
  if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) {
    if (!std::isfinite(seconds) || std::fabs(seconds) > 9.2e9) return std::nullopt;
    return static_cast<int64_t>(std::llround(seconds * 1e9));
  }
  return ParseNvsmiTime(s, TimeZone());
}

}  // namespace gpulse::ingest
