// PromQL's tokens and lexer, as Prometheus 2.42 reads them: names (metric
// names may hold ':'), numbers (decimal, hexadecimal, Inf and NaN are names
// the parser reads as numbers), durations (1h30m), strings in double quotes,
// single quotes (Go escapes) or backticks (raw), operators, and '#' comments
// to the end of the line. Every token carries its position, for errors with
// a line, a column and a caret (query/syntax/parse_error.h).
//
// Thread safety: a Lexer is used by one thread; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "query/syntax/parse_error.h"
#include "query/syntax/token.h"

namespace gpulse::query::promql {

enum class PromTokenKind : unsigned char {
  kEof,
  kIdentifier,  // a label name or metric name, keywords too (the parser tells them apart)
  kNumber,      // 42, 4.2e3, 0x1f; PromToken::number holds the value
  kDuration,    // 5m, 1h30m; PromToken::duration_ms holds it
  kString,      // PromToken::value holds the decoded text
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
  kCaret,   // ^
  kEqlEql,  // ==
  kNeq,     // !=
  kLss,
  kLte,
  kGtr,
  kGte,
  kAssign,    // = (in a label matcher)
  kEqlRegex,  // =~
  kNeqRegex,  // !~
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kLBracket,
  kRBracket,
  kComma,
  kColon,
  kAt,  // @
};

// "identifier", "'('", "end of input": for "expected X, found Y".
const char* PromTokenKindName(PromTokenKind kind);

struct PromToken {
  PromTokenKind kind = PromTokenKind::kEof;
  std::string_view text;  // the bytes as written
  Position pos;
  double number = 0;
  int64_t duration_ms = 0;
  std::string value;  // a string's decoded text
};

// "'sum'", "'['", "end of input": a token as an error names it.
std::string DescribeToken(const PromToken& token);

// Parses a duration as PromQL writes it ("1h30m", "500ms", "2w"): units y
// (365 days), w, d, h, m, s and ms, each at most once and from the largest
// down. False for anything else and for a total past the int64 range.
bool ParsePromDuration(std::string_view text, int64_t* ms);
// The canonical spelling of a duration in milliseconds ("1h30m", "0s").
std::string FormatPromDuration(int64_t ms);

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  // The next token; false with *error set for text that is no token.
  bool Next(PromToken* token, ParseError* error);

 private:
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  Position Here() const { return Position{pos_, line_, column_}; }
  void Advance(size_t n = 1);
  void SkipSpaceAndComments();
  bool LexNumberOrDuration(PromToken* token, ParseError* error);
  bool LexString(PromToken* token, ParseError* error);

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace gpulse::query::promql
