// The PromQL parser: recursive descent over query/promql/lexer.h's tokens,
// with precedence climbing for the binary operators (or < and, unless <
// comparisons < + - < * / % atan2 < ^, which groups to the right; a unary
// minus binds as * does, so -2^2 is -4), and the checks Prometheus 2.42 makes
// of a parsed expression: the types of each operand and argument, vector
// matching only between vectors, `bool` only on comparisons, a selector with
// at least one matcher that does not match the empty string, ranges only on
// selectors, offset and @ once each. Keywords are case-insensitive. The
// grammar and its errors are in docs/promql.md.
//
// Bounds: text up to kMaxPromQLBytes and nesting up to kMaxPromQLNesting;
// each stops the parse with an error that names it.
//
// Thread safety: pure functions; call them from any thread.
#pragma once

#include <memory>
#include <string_view>

#include "query/promql/ast.h"
#include "query/syntax/parse_error.h"
#include "storage/status.h"

namespace gpulse::query::promql {

inline constexpr size_t kMaxPromQLBytes = 1 << 20;
inline constexpr int kMaxPromQLNesting = 128;

// One expression. On failure the Status is InvalidArgument with
// ParseError::ToString() as its message ("line 1, column 6: ..."), and
// *error (when given) holds the position for a caret.
Result<std::unique_ptr<Expr>> ParsePromQL(std::string_view text, ParseError* error = nullptr);

// A series selector alone, as /api/v1/series' match[] takes it: a vector
// selector without modifiers.
Result<std::unique_ptr<Expr>> ParseSeriesSelector(std::string_view text,
                                                  ParseError* error = nullptr);

}  // namespace gpulse::query::promql
