// Lexer: turns query text into tokens. It classifies bytes through a table of
// character classes, reads keywords in any case, skips `--` comments to the
// end of the line, and decodes quoted identifiers, strings, regexes and
// durations. A `/` starts a regex, not a division, where an operand is
// expected after =~ or !~, or where a measurement is expected after FROM or
// after a comma in the FROM list (subqueries included); everywhere else it
// divides. InfluxQL draws
// the same line, there by the parser asking its scanner for a regex.
//
// Thread safety: a Lexer is used by one thread; the text must outlive it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "query/syntax/parse_error.h"
#include "query/syntax/token.h"

namespace gpulse::query {

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  // Reads the next token into *token (kEof at the end, again and again).
  // Returns false with *error filled when the text holds no valid token here.
  bool Next(Token* token, ParseError* error);

 private:
  char Peek(size_t ahead = 0) const;
  void Advance(size_t n);
  bool Fail(const Position& pos, std::string found, std::string message, ParseError* error);
  bool ScanNumber(Token* token, ParseError* error);
  bool ScanDuration(Token* token, ParseError* error);
  bool ScanQuoted(char quote, Token* token, ParseError* error);
  bool ScanRegex(Token* token, ParseError* error);
  bool ScanOperator(Token* token, ParseError* error);
  void SkipSpaceAndComments();
  bool RegexAllowed() const;
  void TrackFromList(TokenKind kind);

  std::string_view text_;
  size_t offset_ = 0;
  int line_ = 1;
  int column_ = 1;
  TokenKind prev_ = TokenKind::kEof;
  bool in_from_ = false;          // inside the list of sources after FROM
  std::vector<bool> paren_from_;  // in_from_ at each open '('
};

// Nanoseconds in one duration term; -1 for "mo" (calendar months have no
// fixed length) or when the product overflows int64.
int64_t DurationPartNanos(const DurationPart& part);

// Every token of `text`, the last one kEof. On failure *error says why.
bool Tokenize(std::string_view text, std::vector<Token>* tokens, ParseError* error);

}  // namespace gpulse::query
