// ParseError: where the lexer or parser stopped and why. Every error carries
// the position of the fault, what was found there and, for syntax errors, what
// was expected, so the shell can print it with a caret under the fault.
#pragma once

#include <string>
#include <string_view>

#include "query/syntax/token.h"

namespace gpulse::query {

struct ParseError {
  Position pos;
  std::string found;     // "WHERE", "'abc'", "end of input"; may be empty
  std::string expected;  // "FROM", "identifier or (" for syntax errors; else empty
  std::string message;   // set for errors that are not "expected X, found Y"

  // "line 1, column 27: expected FROM, found WHERE" or
  // "line 2, column 5: unterminated string".
  std::string ToString() const;
};

// The error, then the offending line of `text`, then a caret under the column:
//   line 1, column 15: expected FROM, found WHERE
//   SELECT mean(x) WHERE a = 1
//                  ^
std::string FormatErrorWithCaret(std::string_view text, const ParseError& error);

}  // namespace gpulse::query
