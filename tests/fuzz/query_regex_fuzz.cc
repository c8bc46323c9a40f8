// libFuzzer target for the regexes of queries (query/syntax/regex.h): any pattern
// over long values must compile or fail with a message, and match in bounded
// time, without a crash, a stack overflow or a sanitizer report. The probe
// that found std::regex's recursion used a 30,000-byte tag value, so every
// input is matched against values at least that long. Built and run by
// .ci/fuzz.
//
// Input: the pattern, then (after the first newline, if any) a seed that is
// repeated into the values.
//
// Invariants checked:
// - a pattern that fails to compile says why ("bad regular expression /p/: ...");
// - a pattern that compiles matches the empty string the same way through
//   RegexSearch as through RE2's own unanchored match (no state kept between
//   calls), and a match never depends on how often it was asked.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "query/syntax/regex.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using gpulse::fuzz::Check;

std::string Repeat(std::string_view seed, size_t at_least) {
  if (seed.empty()) seed = "a";
  std::string out;
  out.reserve(at_least + seed.size());
  while (out.size() < at_least) out += seed;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view pattern = input.substr(0, newline);
  const std::string_view seed =
      newline == std::string_view::npos ? std::string_view("a") : input.substr(newline + 1);

  gpulse::Result<gpulse::query::Regex> re = gpulse::query::CompileRegex(pattern);
  if (!re.ok()) {
    Check(re.status().message().starts_with("bad regular expression /"));
    return 0;
  }
  const re2::RE2& compiled = **re;
  for (const std::string& value : {std::string(), Repeat(seed, 30'000), Repeat(seed, 70'000)}) {
    const bool once = gpulse::query::RegexSearch(compiled, value);
    Check(once == gpulse::query::RegexSearch(compiled, value));
    Check(once == re2::RE2::PartialMatch(value, compiled));
  }
  return 0;
}
