// Wall-clock times as GPU tools print them -> Unix nanoseconds. Owns no
// state besides the zone a TimeZone points to (the tz database's, which
// lives as long as the process).
//
// nvidia-smi prints local wall-clock time without a zone (`2024/06/01
// 11:27:05.177` in --query-gpu logs, `Fri Aug  4 11:44:30 2023` in -q -x
// snapshots), so the importer needs the zone of the machine that wrote the
// file; TimeZone carries it. A time with an explicit offset needs none.
//
// Thread safety: every function here is pure; a TimeZone may be shared by
// any number of threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace date {
class time_zone;
}  // namespace date

namespace gpulse::ingest {

// An IANA zone, or UTC (the default, which needs no tz database).
class TimeZone {
 public:
  TimeZone() = default;
  // "UTC" and "" give UTC; any other name is looked up in the tz database.
  // InvalidArgument when the zone is unknown.
  static Result<TimeZone> Find(const std::string& name);

  // A local wall-clock reading (nanoseconds since 1970-01-01 00:00 local)
  // -> Unix nanoseconds. A reading the zone skipped (spring forward) maps to
  // the instant the clocks jumped; one it repeated (fall back) to the first.
  int64_t ToUnix(int64_t local_ns) const;

 private:
  const date::time_zone* zone_ = nullptr;  // null: UTC
};

// `YYYY/MM/DD HH:MM:SS[.fff]` (nvidia-smi's timestamp column, local time in
// `zone`) or ISO 8601 `YYYY-MM-DD[T ]HH:MM:SS[.fff][Z|+HH:MM|+HHMM]` (local
// in `zone` when it has no offset). Nothing when the text is neither, or
// when its year is outside 1678 to 2261 (what int64 nanoseconds hold).
std::optional<int64_t> ParseNvsmiTime(std::string_view text, const TimeZone& zone);

// C asctime, `Fri Aug  4 11:44:30 2023` (the <timestamp> of nvidia-smi -q
// -x), local time in `zone`. Nothing when the text is not one, or when its
// year is outside 1678 to 2261.
std::optional<int64_t> ParseAsctime(std::string_view text, const TimeZone& zone);

// RFC 3339 (`2020-07-01T00:00:00Z`; without an offset it is read as UTC) or
// Unix seconds (`1593561600`, `1593561600.5`). Nothing when neither.
std::optional<int64_t> ParseInstant(std::string_view text);

}  // namespace gpulse::ingest
