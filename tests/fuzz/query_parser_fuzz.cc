// libFuzzer target for the query front end (query/lexer, query/parser,
// query/ast): any bytes given to ParseQuery as text must parse or fail
// without a crash or a sanitizer report. Built and run by .ci/fuzz (clang
// only: -fsanitize=fuzzer,address,undefined).
//
// Invariants checked:
// - a failed parse names a position (line >= 1, column >= 1);
// - a successful parse round-trips, as tests/query_parser_test.cc checks:
//   ToString() of every statement re-parses (ParseStatement) and prints the
//   same text again, and QueryToString of the whole list re-parses to as many
//   statements and prints the same text again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "query/syntax/ast.h"
#include "query/syntax/parser.h"
#include "tests/fuzz/fuzz_checks.h"

namespace {

using gpulse::fuzz::Check;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gpulse::Result;
  using gpulse::query::ParseError;
  using gpulse::query::Statement;
  using gpulse::query::StatementList;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  ParseError error;
  Result<StatementList> first = gpulse::query::ParseQuery(text, &error);
  if (!first.ok()) {
    Check(error.pos.line >= 1 && error.pos.column >= 1);
    return 0;
  }
  for (const std::unique_ptr<Statement>& statement : *first) {
    const std::string canonical = statement->ToString();
    Result<std::unique_ptr<Statement>> again = gpulse::query::ParseStatement(canonical);
    Check(again.ok());
    Check((*again)->ToString() == canonical);
  }
  const std::string canonical = gpulse::query::QueryToString(*first);
  Result<StatementList> second = gpulse::query::ParseQuery(canonical);
  Check(second.ok());
  Check(second->size() == first->size());
  Check(gpulse::query::QueryToString(*second) == canonical);
  return 0;
}
