// Tokens of the gpulse query language: their kinds, the keyword table and the
// position every token carries (byte offset plus 1-based line and column).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpulse::query {

enum class TokenKind : unsigned char {
  kEof,
  // Literals and names.
  kIdent,     // bare or "quoted"; Token::value holds the decoded name
  kInteger,   // 42
  kFloat,     // 4.2, 1e3
  kString,    // 'text'; Token::value holds the decoded text
  kDuration,  // 15m, 1h30m, 1mo; Token::duration holds the parts
  kRegex,     // /re/; Token::value holds the pattern with \/ unescaped
  // Operators and punctuation.
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
  kEq,
  kNeq,  // != or <>
  kLt,
  kLte,
  kGt,
  kGte,
  kEqRegex,   // =~
  kNeqRegex,  // !~
  kLParen,
  kRParen,
  kComma,
  kSemicolon,
  kDot,
  kDoubleColon,
  // Keywords (case-insensitive); keep in step with the table in token.cc.
  kAnd,
  kAs,
  kAsc,
  kBetween,
  kBy,
  kCardinality,
  kDatabases,
  kDecompose,
  kDelete,
  kDesc,
  kDrop,
  kEvery,
  kExplain,
  kFalse,
  kField,
  kFill,
  kFrom,
  kGroup,
  kIn,
  kKey,
  kKeys,
  kKpis,
  kLimit,
  kMeasurement,
  kMeasurements,
  kNorthstar,
  kNot,
  kOffset,
  kOn,
  kOr,
  kOrder,
  kOver,
  kPolicies,
  kRetention,
  kSelect,
  kSeries,
  kShow,
  kSlimit,
  kSoffset,
  kSources,
  kStale,
  kTag,
  kTrue,
  kValues,
  kVersus,
  kWhere,
  kWith,
};

// One term of a duration literal: 1h30m is {1, "h"}, {30, "m"}. Units are
// ns, u, ms, s, m, h, d, w and mo (calendar month); µ is read as u.
struct DurationPart {
  int64_t amount = 0;
  std::string unit;
  bool operator==(const DurationPart&) const = default;
};

struct Position {
  size_t offset = 0;  // bytes from the start of the text
  int line = 1;       // 1-based
  int column = 1;     // 1-based, in bytes
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string_view text;  // the bytes as written
  std::string value;      // decoded identifier, string or regex pattern
  std::vector<DurationPart> duration;
  Position pos;
};

// The keyword a word names (any case), or nullopt for a plain identifier.
std::optional<TokenKind> LookupKeyword(std::string_view word);
bool IsKeyword(TokenKind kind);

// "FROM", "identifier", "=~", "end of input": how errors name a kind.
std::string_view TokenKindName(TokenKind kind);

// How an error names a token it found: a keyword or operator as written, a
// literal with its text ("'abc'"), or "end of input".
std::string DescribeToken(const Token& token);

}  // namespace gpulse::query
