// Parser: recursive descent over the lexer's tokens, with precedence climbing
// for expressions (OR < AND < NOT < comparisons and IN < + - < * / % < unary
// minus). It checks every call against the function table (query/syntax/functions.h)
// and every string compared with `time` against the time formats
// (query/syntax/time_literal.h). The grammar is in docs/query-language.md.
//
// Bounds: text up to kMaxQueryBytes, nesting (parentheses, calls, subqueries,
// unary operators) up to kMaxNesting, expression trees up to kMaxExprHeight
// levels; each bound stops the parse with an error that names it.
//
// Thread safety: the functions are pure; call them from any thread.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "query/syntax/ast.h"
#include "query/syntax/parse_error.h"
#include "storage/status.h"

namespace gpulse::query {

inline constexpr size_t kMaxQueryBytes = 1 << 20;
inline constexpr int kMaxNesting = 128;
inline constexpr int kMaxExprHeight = 1000;

using StatementList = std::vector<std::unique_ptr<Statement>>;

// One or more statements separated by ';' (a trailing ';' is allowed). On
// failure the Status is InvalidArgument with ParseError::ToString() as its
// message, and *error (when given) holds the details.
Result<StatementList> ParseQuery(std::string_view text, ParseError* error = nullptr);

// Exactly one statement (a trailing ';' is allowed).
Result<std::unique_ptr<Statement>> ParseStatement(std::string_view text,
                                                  ParseError* error = nullptr);

// One expression, as after WHERE.
Result<std::unique_ptr<Expr>> ParseExpression(std::string_view text, ParseError* error = nullptr);

}  // namespace gpulse::query
