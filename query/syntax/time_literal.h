// Absolute times written as strings: RFC3339 ('2026-11-01T00:00:00Z',
// '2026-11-01T02:00:00.5+02:00'), a date ('2026-11-01', midnight UTC) or a
// date and time without zone ('2026-11-01 12:30:00', UTC), as InfluxQL reads
// them. The parser checks strings compared with `time` through this.
#pragma once

#include <cstdint>
#include <string_view>

namespace gpulse::query {

// Unix nanoseconds for `text`; false when it is not one of the forms above or
// lies outside 1677-09-22..2262-04-11 (the int64 nanosecond range).
bool ParseTimeLiteral(std::string_view text, int64_t* unix_nanos);

}  // namespace gpulse::query
