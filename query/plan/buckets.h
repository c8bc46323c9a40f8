// Time buckets of GROUP BY time(interval[, offset]) [tz('Zone')].
//
// Without a time zone a bucket is a fixed span aligned to the Unix epoch plus
// the offset, except that week buckets start on Monday and month buckets
// (1mo, 3mo) on the first of the month, in UTC. With tz('Europe/Paris') the
// same alignment holds in that zone's local time, so 1d buckets run from
// local midnight to local midnight (23 or 25 hours across a daylight-saving
// change) and 1h buckets follow the local clock. Zones come from the
// system's tz database (Debian's tzdata) through Howard Hinnant's date
// library.
//
// Thread safety: a Bucketer is immutable once made.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "query/syntax/token.h"
#include "storage/status.h"

namespace date {
class time_zone;
}  // namespace date

namespace gpulse::query {

class Bucketer {
 public:
  // `interval` as written (15m, 1w, 1mo; months may not be mixed with other
  // units), `offset_ns` added to every boundary, `timezone` an IANA name.
  static Result<Bucketer> Make(const std::vector<DurationPart>& interval, int64_t offset_ns,
                               const std::optional<std::string>& timezone);

  // The start of the bucket holding t, and of the bucket after the one that
  // starts at `start`.
  int64_t Start(int64_t t) const;
  int64_t Next(int64_t start) const;
  // The shortest bucket length, for estimating how many buckets a range has.
  int64_t MinWidth() const;
  // Whether every bucket has the same width (no time zone, no months): then
  // a bucket's number is (start - first start) / Width().
  bool Fixed() const { return zone_ == nullptr && months_ == 0; }
  int64_t Width() const { return width_ns_; }

 private:
  int64_t LocalStart(int64_t local) const;  // bucket start, in local nanoseconds
  int64_t ToLocal(int64_t t) const;
  int64_t ToUtc(int64_t local) const;

  int64_t width_ns_ = 0;  // fixed part; 0 when months_ is set
  int64_t months_ = 0;
  int64_t offset_ns_ = 0;
  bool weekly_ = false;  // align to Monday
  const date::time_zone* zone_ = nullptr;
};

// The bucket grid: bucket i covers [first + i * width, first + (i + 1) *
// width), i < count.
struct BucketGrid {
  int64_t first = 0;
  int64_t width = 1;
  size_t count = 0;
};

}  // namespace gpulse::query
