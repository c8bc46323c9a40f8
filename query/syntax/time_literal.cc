#include "query/syntax/time_literal.h"

namespace gpulse::query {
namespace {

// Reads exactly `n` digits at *i.
bool Digits(std::string_view s, size_t* i, int n, int64_t* out) {
  if (*i + n > s.size()) return false;
  int64_t v = 0;
  for (int k = 0; k < n; ++k) {
    char c = s[*i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *i += n;
  *out = v;
  return true;
}

bool Expect(std::string_view s, size_t* i, char c) {
  if (*i >= s.size() || s[*i] != c) return false;
  ++*i;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int64_t y, int64_t m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

}  // namespace

bool ParseTimeLiteral(std::string_view s, int64_t* unix_nanos) {
  size_t i = 0;
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, offset_min = 0;
  if (!Digits(s, &i, 4, &y) || !Expect(s, &i, '-') || !Digits(s, &i, 2, &mo) ||
      !Expect(s, &i, '-') || !Digits(s, &i, 2, &d)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo)) return false;
  bool has_time = i < s.size() && (s[i] == 'T' || s[i] == ' ');
  if (has_time) {
    bool zone_required = s[i] == 'T';
    ++i;
    if (!Digits(s, &i, 2, &h) || !Expect(s, &i, ':') || !Digits(s, &i, 2, &mi) ||
        !Expect(s, &i, ':') || !Digits(s, &i, 2, &sec)) {
      return false;
    }
    if (h > 23 || mi > 59 || sec > 59) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      int n = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9' && n < 9) {
        frac = frac * 10 + (s[i++] - '0');
        ++n;
      }
      if (n == 0) return false;
      for (; n < 9; ++n) frac *= 10;
    }
    if (i < s.size() && s[i] == 'Z') {
      ++i;
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      int sign = s[i++] == '-' ? -1 : 1;
      int64_t oh, om;
      if (!Digits(s, &i, 2, &oh) || !Expect(s, &i, ':') || !Digits(s, &i, 2, &om)) return false;
      if (oh > 23 || om > 59) return false;
      offset_min = sign * (oh * 60 + om);
    } else if (zone_required) {
      return false;
    }
  }
  if (i != s.size()) return false;
  int64_t seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_min * 60;
  constexpr int64_t kMinSeconds = -9223372036;  // int64 nanoseconds, whole seconds inside
  constexpr int64_t kMaxSeconds = 9223372035;
  if (seconds < kMinSeconds || seconds > kMaxSeconds) return false;
  *unix_nanos = seconds * 1000'000'000 + frac;
  return true;
}

}  // namespace gpulse::query
