#include "query/syntax/token.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace gpulse::query {
namespace {

struct KeywordEntry {
  std::string_view word;  // upper case, as ToString prints it
  TokenKind kind;
};

// Sorted by word so lookups can binary-search.
constexpr std::array kKeywords = {
    KeywordEntry{"AND", TokenKind::kAnd},
    KeywordEntry{"AS", TokenKind::kAs},
    KeywordEntry{"ASC", TokenKind::kAsc},
    KeywordEntry{"BETWEEN", TokenKind::kBetween},
    KeywordEntry{"BY", TokenKind::kBy},
    KeywordEntry{"CARDINALITY", TokenKind::kCardinality},
    KeywordEntry{"DATABASES", TokenKind::kDatabases},
    KeywordEntry{"DECOMPOSE", TokenKind::kDecompose},
    KeywordEntry{"DELETE", TokenKind::kDelete},
    KeywordEntry{"DESC", TokenKind::kDesc},
    KeywordEntry{"DROP", TokenKind::kDrop},
    KeywordEntry{"EVERY", TokenKind::kEvery},
    KeywordEntry{"EXPLAIN", TokenKind::kExplain},
    KeywordEntry{"FALSE", TokenKind::kFalse},
    KeywordEntry{"FIELD", TokenKind::kField},
    KeywordEntry{"FILL", TokenKind::kFill},
    KeywordEntry{"FROM", TokenKind::kFrom},
    KeywordEntry{"GROUP", TokenKind::kGroup},
    KeywordEntry{"IN", TokenKind::kIn},
    KeywordEntry{"KEY", TokenKind::kKey},
    KeywordEntry{"KEYS", TokenKind::kKeys},
    KeywordEntry{"KPIS", TokenKind::kKpis},
    KeywordEntry{"LIMIT", TokenKind::kLimit},
    KeywordEntry{"MEASUREMENT", TokenKind::kMeasurement},
    KeywordEntry{"MEASUREMENTS", TokenKind::kMeasurements},
    KeywordEntry{"NORTHSTAR", TokenKind::kNorthstar},
    KeywordEntry{"NOT", TokenKind::kNot},
    KeywordEntry{"OFFSET", TokenKind::kOffset},
    KeywordEntry{"ON", TokenKind::kOn},
    KeywordEntry{"OR", TokenKind::kOr},
    KeywordEntry{"ORDER", TokenKind::kOrder},
    KeywordEntry{"OVER", TokenKind::kOver},
    KeywordEntry{"POLICIES", TokenKind::kPolicies},
    KeywordEntry{"RETENTION", TokenKind::kRetention},
    KeywordEntry{"SELECT", TokenKind::kSelect},
    KeywordEntry{"SERIES", TokenKind::kSeries},
    KeywordEntry{"SHOW", TokenKind::kShow},
    KeywordEntry{"SLIMIT", TokenKind::kSlimit},
    KeywordEntry{"SOFFSET", TokenKind::kSoffset},
    KeywordEntry{"SOURCES", TokenKind::kSources},
    KeywordEntry{"STALE", TokenKind::kStale},
    KeywordEntry{"TAG", TokenKind::kTag},
    KeywordEntry{"TRUE", TokenKind::kTrue},
    KeywordEntry{"VALUES", TokenKind::kValues},
    KeywordEntry{"VERSUS", TokenKind::kVersus},
    KeywordEntry{"WHERE", TokenKind::kWhere},
    KeywordEntry{"WITH", TokenKind::kWith},
};

constexpr std::pair<TokenKind, std::string_view> kOtherNames[] = {
    {TokenKind::kEof, "end of input"},
    {TokenKind::kIdent, "identifier"},
    {TokenKind::kInteger, "integer"},
    {TokenKind::kFloat, "number"},
    {TokenKind::kString, "string"},
    {TokenKind::kDuration, "duration"},
    {TokenKind::kRegex, "regex"},
    {TokenKind::kPlus, "+"},
    {TokenKind::kMinus, "-"},
    {TokenKind::kStar, "*"},
    {TokenKind::kSlash, "/"},
    {TokenKind::kPercent, "%"},
    {TokenKind::kEq, "="},
    {TokenKind::kNeq, "!="},
    {TokenKind::kLt, "<"},
    {TokenKind::kLte, "<="},
    {TokenKind::kGt, ">"},
    {TokenKind::kGte, ">="},
    {TokenKind::kEqRegex, "=~"},
    {TokenKind::kNeqRegex, "!~"},
    {TokenKind::kLParen, "("},
    {TokenKind::kRParen, ")"},
    {TokenKind::kComma, ","},
    {TokenKind::kSemicolon, ";"},
    {TokenKind::kDot, "."},
    {TokenKind::kDoubleColon, "::"},
};

}  // namespace

std::optional<TokenKind> LookupKeyword(std::string_view word) {
  if (word.size() > 16) return std::nullopt;
  std::string upper(word);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto it =
      std::lower_bound(kKeywords.begin(), kKeywords.end(), upper,
                       [](const KeywordEntry& e, const std::string& w) { return e.word < w; });
  if (it == kKeywords.end() || it->word != upper) return std::nullopt;
  return it->kind;
}

bool IsKeyword(TokenKind kind) { return kind >= TokenKind::kAnd; }

std::string_view TokenKindName(TokenKind kind) {
  for (const auto& e : kKeywords) {
    if (e.kind == kind) return e.word;
  }
  for (const auto& [k, name] : kOtherNames) {
    if (k == kind) return name;
  }
  return "token";
}

std::string DescribeToken(const Token& token) {
  if (token.kind == TokenKind::kEof) return "end of input";
  if (IsKeyword(token.kind)) return std::string(TokenKindName(token.kind));
  return std::string(token.text);
}

}  // namespace gpulse::query
