// libFuzzer target for the PromQL front end (query/promql/): any bytes given
// to ParsePromQL must parse or fail without a crash or a sanitizer report.
// Built and run by .ci/fuzz (clang only: -fsanitize=fuzzer,address,undefined).
//
// Invariants checked:
// - a failed parse names a position (line >= 1, column >= 1);
// - a successful parse round-trips, as tests/promql_parser_test.cc checks:
//   ToString() re-parses to an equal tree that prints the same text again.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "query/promql/parser.h"
#include "tests/fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpulse::fuzz::Check;
  using gpulse::query::ParseError;
  using gpulse::query::promql::Expr;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  ParseError error;
  gpulse::Result<std::unique_ptr<Expr>> first = gpulse::query::promql::ParsePromQL(text, &error);
  if (!first.ok()) {
    Check(error.pos.line >= 1 && error.pos.column >= 1);
    return 0;
  }
  const std::string canonical = (*first)->ToString();
  gpulse::Result<std::unique_ptr<Expr>> again = gpulse::query::promql::ParsePromQL(canonical);
  Check(again.ok());
  Check((*again)->Equals(**first));
  Check((*again)->ToString() == canonical);
  return 0;
}
