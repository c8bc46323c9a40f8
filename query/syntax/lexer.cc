#include "query/syntax/lexer.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <utility>

namespace gpulse::query {
namespace {

enum class CharClass : unsigned char {
  kInvalid,  // control bytes, non-ASCII outside quotes, unused punctuation
  kSpace,
  kLetter,  // A-Z a-z _
  kDigit,
  kOperator,     // + - * / % = ! < > ( ) , ; . :
  kSingleQuote,  // starts a string
  kDoubleQuote,  // starts a quoted identifier
};

constexpr std::array<CharClass, 256> MakeClassTable() {
  std::array<CharClass, 256> table{};
  for (auto& c : table) c = CharClass::kInvalid;
  for (unsigned char c : std::string_view(" \t\r\n\f\v")) table[c] = CharClass::kSpace;
  for (int c = 'a'; c <= 'z'; ++c) table[c] = CharClass::kLetter;
  for (int c = 'A'; c <= 'Z'; ++c) table[c] = CharClass::kLetter;
  table['_'] = CharClass::kLetter;
  for (int c = '0'; c <= '9'; ++c) table[c] = CharClass::kDigit;
  for (unsigned char c : std::string_view("+-*/%=!<>(),;.:")) table[c] = CharClass::kOperator;
  table['\''] = CharClass::kSingleQuote;
  table['"'] = CharClass::kDoubleQuote;
  return table;
}

constexpr std::array<CharClass, 256> kClass = MakeClassTable();

CharClass ClassOf(char c) { return kClass[static_cast<unsigned char>(c)]; }
bool IsIdentChar(char c) {
  return ClassOf(c) == CharClass::kLetter || ClassOf(c) == CharClass::kDigit;
}

constexpr int64_t kNanosPerUnit[] = {1,
                                     1000,
                                     1000'000,
                                     1000'000'000,
                                     60'000'000'000,
                                     3600'000'000'000,
                                     86400'000'000'000,
                                     604800'000'000'000};
constexpr std::string_view kUnits[] = {"ns", "u", "ms", "s", "m", "h", "d", "w"};

// The canonical unit for a unit as written ("µ" -> "u"), or "" if none.
std::string_view CanonicalUnit(std::string_view unit) {
  if (unit == "\xC2\xB5") return "u";
  if (unit == "mo") return "mo";
  for (std::string_view u : kUnits) {
    if (u == unit) return u;
  }
  return "";
}

// A non-ASCII character shown whole: the lead byte and its continuation bytes.
size_t Utf8Length(std::string_view s) {
  size_t n = 1;
  while (n < s.size() && n < 4 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) ++n;
  return n;
}

}  // namespace

char Lexer::Peek(size_t ahead) const {
  return offset_ + ahead < text_.size() ? text_[offset_ + ahead] : '\0';
}

void Lexer::Advance(size_t n) {
  for (size_t i = 0; i < n && offset_ < text_.size(); ++i, ++offset_) {
    if (text_[offset_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
  }
}

bool Lexer::Fail(const Position& pos, std::string found, std::string message, ParseError* error) {
  error->pos = pos;
  error->found = std::move(found);
  error->expected.clear();
  error->message = std::move(message);
  return false;
}

void Lexer::SkipSpaceAndComments() {
  while (offset_ < text_.size()) {
    if (ClassOf(Peek()) == CharClass::kSpace) {
      Advance(1);
    } else if (Peek() == '-' && Peek(1) == '-') {
      while (offset_ < text_.size() && Peek() != '\n') Advance(1);
    } else {
      return;
    }
  }
}

bool Lexer::Next(Token* token, ParseError* error) {
  SkipSpaceAndComments();
  *token = Token();
  token->pos = Position{offset_, line_, column_};
  size_t start = offset_;
  bool ok = true;
  if (offset_ >= text_.size()) {
    token->kind = TokenKind::kEof;
  } else {
    switch (ClassOf(Peek())) {
      case CharClass::kLetter: {
        while (IsIdentChar(Peek())) Advance(1);
        std::string_view word = text_.substr(start, offset_ - start);
        token->kind = LookupKeyword(word).value_or(TokenKind::kIdent);
        token->value = std::string(word);
        break;
      }
      case CharClass::kDigit:
        ok = ScanNumber(token, error);
        break;
      case CharClass::kSingleQuote:
        ok = ScanQuoted('\'', token, error);
        break;
      case CharClass::kDoubleQuote:
        ok = ScanQuoted('"', token, error);
        break;
      case CharClass::kOperator:
        if (Peek() == '/' && RegexAllowed()) {
          ok = ScanRegex(token, error);
        } else if (Peek() == '.' && ClassOf(Peek(1)) == CharClass::kDigit) {
          ok = ScanNumber(token, error);
        } else {
          ok = ScanOperator(token, error);
        }
        break;
      default: {
        std::string_view bad = text_.substr(start, Utf8Length(text_.substr(start)));
        return Fail(token->pos, std::string(bad), "unexpected character '" + std::string(bad) + "'",
                    error);
      }
    }
  }
  if (!ok) return false;
  token->text = text_.substr(start, offset_ - start);
  prev_ = token->kind;
  TrackFromList(prev_);
  return true;
}

// A FROM list is names, dots, commas, regexes and parenthesized subqueries;
// anything else ends it. Each '(' saves the state its ')' restores.
void Lexer::TrackFromList(TokenKind kind) {
  switch (kind) {
    case TokenKind::kFrom:
      in_from_ = true;
      break;
    case TokenKind::kLParen:
      paren_from_.push_back(in_from_);
      in_from_ = false;
      break;
    case TokenKind::kRParen:
      in_from_ = !paren_from_.empty() && paren_from_.back();
      if (!paren_from_.empty()) paren_from_.pop_back();
      break;
    case TokenKind::kIdent:
    case TokenKind::kDot:
    case TokenKind::kComma:
    case TokenKind::kRegex:
      break;
    default:
      in_from_ = false;
  }
}

bool Lexer::RegexAllowed() const {
  return prev_ == TokenKind::kEqRegex || prev_ == TokenKind::kNeqRegex ||
         prev_ == TokenKind::kFrom || (in_from_ && prev_ == TokenKind::kComma);
}

bool Lexer::ScanNumber(Token* token, ParseError* error) {
  size_t start = offset_;
  while (ClassOf(Peek()) == CharClass::kDigit) Advance(1);
  bool is_float = false;
  if (Peek() == '.' && ClassOf(Peek(1)) == CharClass::kDigit) {
    is_float = true;
    Advance(1);
    while (ClassOf(Peek()) == CharClass::kDigit) Advance(1);
  }
  if ((Peek() == 'e' || Peek() == 'E') &&
      (ClassOf(Peek(1)) == CharClass::kDigit ||
       ((Peek(1) == '+' || Peek(1) == '-') && ClassOf(Peek(2)) == CharClass::kDigit))) {
    is_float = true;
    Advance(2);
    while (ClassOf(Peek()) == CharClass::kDigit) Advance(1);
  }
  std::string_view text = text_.substr(start, offset_ - start);
  bool unit_follows = ClassOf(Peek()) == CharClass::kLetter || Peek() == '\xC2';
  if (!is_float && unit_follows) {
    offset_ = start;  // rescan as a duration; no newline can lie inside
    column_ -= static_cast<int>(text.size());
    return ScanDuration(token, error);
  }
  if (unit_follows) {
    return Fail(token->pos, std::string(text),
                "a duration takes an integer amount, found '" + std::string(text) + "'", error);
  }
  if (is_float) {
    double d = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec != std::errc()) {
      return Fail(token->pos, std::string(text), "number out of range: " + std::string(text),
                  error);
    }
    token->kind = TokenKind::kFloat;
  } else {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc()) {
      return Fail(token->pos, std::string(text), "integer out of range: " + std::string(text),
                  error);
    }
    token->kind = TokenKind::kInteger;
  }
  return true;
}

bool Lexer::ScanDuration(Token* token, ParseError* error) {
  size_t start = offset_;
  int64_t total = 0;  // nanoseconds, when no calendar month is involved
  while (ClassOf(Peek()) == CharClass::kDigit) {
    size_t amount_start = offset_;
    while (ClassOf(Peek()) == CharClass::kDigit) Advance(1);
    std::string_view amount_text = text_.substr(amount_start, offset_ - amount_start);
    Position unit_pos{offset_, line_, column_};
    size_t unit_start = offset_;
    if (Peek() == '\xC2' && Peek(1) == '\xB5') {
      Advance(2);
    } else {
      while (ClassOf(Peek()) == CharClass::kLetter) Advance(1);
    }
    std::string_view unit = text_.substr(unit_start, offset_ - unit_start);
    std::string_view canonical = CanonicalUnit(unit);
    if (canonical.empty()) {
      return Fail(unit_pos, std::string(unit),
                  "invalid duration unit '" + std::string(unit) +
                      "' (expected ns, u, ms, s, m, h, d, w or mo)",
                  error);
    }
    DurationPart part;
    auto [ptr, ec] =
        std::from_chars(amount_text.data(), amount_text.data() + amount_text.size(), part.amount);
    bool overflow = ec != std::errc();
    part.unit = std::string(canonical);
    if (!overflow && canonical != "mo") {
      int64_t nanos = DurationPartNanos(part);
      overflow = nanos < 0 || total > std::numeric_limits<int64_t>::max() - nanos;
      total += overflow ? 0 : nanos;
    }
    if (overflow) {
      std::string text(text_.substr(start, offset_ - start));
      return Fail(token->pos, text, "duration out of range: " + text, error);
    }
    token->duration.push_back(std::move(part));
  }
  if (IsIdentChar(Peek()) || Peek() == '.') {
    Position pos{offset_, line_, column_};
    return Fail(pos, std::string(1, Peek()),
                "unexpected '" + std::string(1, Peek()) + "' after duration", error);
  }
  token->kind = TokenKind::kDuration;
  return true;
}

int64_t DurationPartNanos(const DurationPart& part) {
  for (size_t i = 0; i < std::size(kUnits); ++i) {
    if (kUnits[i] == part.unit) {
      if (part.amount > std::numeric_limits<int64_t>::max() / kNanosPerUnit[i]) return -1;
      return part.amount * kNanosPerUnit[i];
    }
  }
  return -1;
}

bool Lexer::ScanQuoted(char quote, Token* token, ParseError* error) {
  Advance(1);
  std::string value;
  while (true) {
    char c = Peek();
    if (offset_ >= text_.size() || c == '\n') {
      std::string what = quote == '\'' ? "unterminated string" : "unterminated quoted identifier";
      return Fail(token->pos,
                  std::string(text_.substr(token->pos.offset, offset_ - token->pos.offset)), what,
                  error);
    }
    if (c == quote) {
      Advance(1);
      break;
    }
    if (c == '\\') {
      char e = Peek(1);
      if (e == quote || e == '\\') {
        value += e;
      } else if (quote == '\'' && e == 'n') {
        value += '\n';
      } else if (quote == '\'' && e == 't') {
        value += '\t';
      } else {
        Position pos{offset_, line_, column_};
        std::string seq = std::string("\\") + (e == '\0' ? std::string() : std::string(1, e));
        return Fail(pos, seq, "bad escape " + seq, error);
      }
      Advance(2);
      continue;
    }
    value += c;
    Advance(1);
  }
  if (quote == '"' && value.empty()) {
    return Fail(token->pos, "\"\"", "empty quoted identifier", error);
  }
  token->kind = quote == '\'' ? TokenKind::kString : TokenKind::kIdent;
  token->value = std::move(value);
  return true;
}

bool Lexer::ScanRegex(Token* token, ParseError* error) {
  Advance(1);
  std::string pattern;
  while (true) {
    char c = Peek();
    if (offset_ >= text_.size() || c == '\n') {
      return Fail(token->pos,
                  std::string(text_.substr(token->pos.offset, offset_ - token->pos.offset)),
                  "unterminated regex", error);
    }
    if (c == '/') {
      Advance(1);
      break;
    }
    if (c == '\\' && Peek(1) == '/') {
      pattern += '/';
      Advance(2);
    } else if (c == '\\' && offset_ + 1 < text_.size() && Peek(1) != '\n') {
      pattern += text_.substr(offset_, 2);  // other escapes are the regex engine's
      Advance(2);
    } else {
      pattern += c;
      Advance(1);
    }
  }
  token->kind = TokenKind::kRegex;
  token->value = std::move(pattern);
  return true;
}

bool Lexer::ScanOperator(Token* token, ParseError* error) {
  struct Op {
    std::string_view text;
    TokenKind kind;
  };
  // Longest first, so "<=" wins over "<".
  static constexpr Op kOps[] = {
      {"!=", TokenKind::kNeq},         {"<>", TokenKind::kNeq},   {"!~", TokenKind::kNeqRegex},
      {"=~", TokenKind::kEqRegex},     {"<=", TokenKind::kLte},   {">=", TokenKind::kGte},
      {"::", TokenKind::kDoubleColon}, {"+", TokenKind::kPlus},   {"-", TokenKind::kMinus},
      {"*", TokenKind::kStar},         {"/", TokenKind::kSlash},  {"%", TokenKind::kPercent},
      {"=", TokenKind::kEq},           {"<", TokenKind::kLt},     {">", TokenKind::kGt},
      {"(", TokenKind::kLParen},       {")", TokenKind::kRParen}, {",", TokenKind::kComma},
      {";", TokenKind::kSemicolon},    {".", TokenKind::kDot},
  };
  std::string_view rest = text_.substr(offset_);
  for (const Op& op : kOps) {
    if (rest.starts_with(op.text)) {
      token->kind = op.kind;
      Advance(op.text.size());
      return true;
    }
  }
  std::string bad(1, Peek());
  return Fail(token->pos, bad, "unexpected character '" + bad + "'", error);
}

bool Tokenize(std::string_view text, std::vector<Token>* tokens, ParseError* error) {
  Lexer lexer(text);
  tokens->clear();
  while (true) {
    Token token;
    if (!lexer.Next(&token, error)) return false;
    tokens->push_back(std::move(token));
    if (tokens->back().kind == TokenKind::kEof) return true;
  }
}

}  // namespace gpulse::query
