// Regular expressions of the query language (=~ and !~, FROM /re/, SELECT
// /re/, GROUP BY /re/, WITH KEY =~ /re/): RE2. Its syntax is that of Go's
// regexp package, which InfluxQL and PromQL both define, so a pattern means
// here what it means to InfluxDB and Prometheus. RE2 matches in time linear
// in the text and never recurses, so no pattern over no value can take the
// server's stack or time: /(a+)+b/ over 30,000 a's answers in microseconds
// (tests/regex_test.cc).
//
// Thread safety: a compiled Regex is immutable; any number of threads may
// match with one at once.
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string_view>

#include "storage/status.h"

namespace gpulse::query {

using Regex = std::shared_ptr<const re2::RE2>;

// Compiles `pattern`. InvalidArgument names the pattern and what is wrong
// with it, as "bad regular expression /(a/: missing ): (a".
Result<Regex> CompileRegex(std::string_view pattern);

// Whether `re` matches anywhere in `text` (unanchored, as InfluxQL's =~).
inline bool RegexSearch(const re2::RE2& re, std::string_view text) {
  return re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re);
}

}  // namespace gpulse::query
