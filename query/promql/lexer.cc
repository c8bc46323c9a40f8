#include "query/promql/lexer.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace gpulse::query::promql {

namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The units of a duration, largest first.
struct Unit {
  const char* name;
  int64_t ms;
};
constexpr Unit kUnits[] = {{"y", 365LL * 24 * 3600 * 1000},
                           {"w", 7LL * 24 * 3600 * 1000},
                           {"d", 24LL * 3600 * 1000},
                           {"h", 3600LL * 1000},
                           {"m", 60LL * 1000},
                           {"s", 1000},
                           {"ms", 1}};

}  // namespace

const char* PromTokenKindName(PromTokenKind kind) {
  switch (kind) {
    case PromTokenKind::kEof:
      return "end of input";
    case PromTokenKind::kIdentifier:
      return "identifier";
    case PromTokenKind::kNumber:
      return "number";
    case PromTokenKind::kDuration:
      return "duration";
    case PromTokenKind::kString:
      return "string";
    case PromTokenKind::kPlus:
      return "'+'";
    case PromTokenKind::kMinus:
      return "'-'";
    case PromTokenKind::kStar:
      return "'*'";
    case PromTokenKind::kSlash:
      return "'/'";
    case PromTokenKind::kPercent:
      return "'%'";
    case PromTokenKind::kCaret:
      return "'^'";
    case PromTokenKind::kEqlEql:
      return "'=='";
    case PromTokenKind::kNeq:
      return "'!='";
    case PromTokenKind::kLss:
      return "'<'";
    case PromTokenKind::kLte:
      return "'<='";
    case PromTokenKind::kGtr:
      return "'>'";
    case PromTokenKind::kGte:
      return "'>='";
    case PromTokenKind::kAssign:
      return "'='";
    case PromTokenKind::kEqlRegex:
      return "'=~'";
    case PromTokenKind::kNeqRegex:
      return "'!~'";
    case PromTokenKind::kLParen:
      return "'('";
    case PromTokenKind::kRParen:
      return "')'";
    case PromTokenKind::kLBrace:
      return "'{'";
    case PromTokenKind::kRBrace:
      return "'}'";
    case PromTokenKind::kLBracket:
      return "'['";
    case PromTokenKind::kRBracket:
      return "']'";
    case PromTokenKind::kComma:
      return "','";
    case PromTokenKind::kColon:
      return "':'";
    case PromTokenKind::kAt:
      return "'@'";
  }
  return "token";
}

std::string DescribeToken(const PromToken& token) {
  if (token.kind == PromTokenKind::kEof) return "end of input";
  return "'" + std::string(token.text) + "'";
}

bool ParsePromDuration(std::string_view text, int64_t* ms) {
  if (text == "0") {
    *ms = 0;
    return true;
  }
  int64_t total = 0;
  size_t next_unit = 0;  // units must come largest first, each once
  size_t i = 0;
  if (text.empty()) return false;
  while (i < text.size()) {
    const size_t digits = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    if (i == digits || i - digits > 18) return false;
    const int64_t n =
        std::strtoll(std::string(text.substr(digits, i - digits)).c_str(), nullptr, 10);
    size_t unit = next_unit;
    for (; unit < std::size(kUnits); ++unit) {
      const std::string_view name = kUnits[unit].name;
      // "m" must not take the "m" of "ms".
      if (text.substr(i, name.size()) == name &&
          !(name == "m" && i + 1 < text.size() && text[i + 1] == 's')) {
        break;
      }
    }
    if (unit == std::size(kUnits)) return false;
    int64_t part = 0;
    if (__builtin_mul_overflow(n, kUnits[unit].ms, &part) ||
        __builtin_add_overflow(total, part, &total)) {
      return false;
    }
    i += std::string_view(kUnits[unit].name).size();
    next_unit = unit + 1;
  }
  *ms = total;
  return true;
}

std::string FormatPromDuration(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  for (const Unit& u : kUnits) {
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms) + u.name;
      ms %= u.ms;
    }
  }
  return out;
}

void Lexer::Advance(size_t n) {
  for (size_t i = 0; i < n && pos_ < text_.size(); ++i) {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }
}

void Lexer::SkipSpaceAndComments() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      Advance();
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
    } else {
      return;
    }
  }
}

bool Lexer::Next(PromToken* token, ParseError* error) {
  SkipSpaceAndComments();
  *token = PromToken();
  token->pos = Here();
  const size_t start = pos_;
  const auto done = [&](PromTokenKind kind, size_t n) {
    Advance(n);
    token->kind = kind;
    token->text = text_.substr(start, pos_ - start);
    return true;
  };
  if (pos_ >= text_.size()) return done(PromTokenKind::kEof, 0);
  const char c = Peek();
  if (IsNameStart(c)) {
    size_t n = 0;
    while (IsNameChar(Peek(n))) ++n;
    return done(PromTokenKind::kIdentifier, n);
  }
  if (IsDigit(c) || (c == '.' && IsDigit(Peek(1)))) return LexNumberOrDuration(token, error);
  if (c == '"' || c == '\'' || c == '`') return LexString(token, error);
  switch (c) {
    case '+':
      return done(PromTokenKind::kPlus, 1);
    case '-':
      return done(PromTokenKind::kMinus, 1);
    case '*':
      return done(PromTokenKind::kStar, 1);
    case '/':
      return done(PromTokenKind::kSlash, 1);
    case '%':
      return done(PromTokenKind::kPercent, 1);
    case '^':
      return done(PromTokenKind::kCaret, 1);
    case '(':
      return done(PromTokenKind::kLParen, 1);
    case ')':
      return done(PromTokenKind::kRParen, 1);
    case '{':
      return done(PromTokenKind::kLBrace, 1);
    case '}':
      return done(PromTokenKind::kRBrace, 1);
    case '[':
      return done(PromTokenKind::kLBracket, 1);
    case ']':
      return done(PromTokenKind::kRBracket, 1);
    case ',':
      return done(PromTokenKind::kComma, 1);
    case ':':
      return done(PromTokenKind::kColon, 1);
    case '@':
      return done(PromTokenKind::kAt, 1);
    case '=':
      if (Peek(1) == '=') return done(PromTokenKind::kEqlEql, 2);
      if (Peek(1) == '~') return done(PromTokenKind::kEqlRegex, 2);
      return done(PromTokenKind::kAssign, 1);
    case '!':
      if (Peek(1) == '=') return done(PromTokenKind::kNeq, 2);
      if (Peek(1) == '~') return done(PromTokenKind::kNeqRegex, 2);
      break;
    case '<':
      return Peek(1) == '=' ? done(PromTokenKind::kLte, 2) : done(PromTokenKind::kLss, 1);
    case '>':
      return Peek(1) == '=' ? done(PromTokenKind::kGte, 2) : done(PromTokenKind::kGtr, 1);
    default:
      break;
  }
  error->pos = token->pos;
  const auto u = static_cast<unsigned char>(c);
  error->message = u >= 0x20 && u < 0x7f
                       ? "unexpected character '" + std::string(1, c) + "'"
                       : "unexpected byte 0x" + std::string(1, "0123456789abcdef"[u >> 4]) +
                             std::string(1, "0123456789abcdef"[u & 15]);
  return false;
}

bool Lexer::LexNumberOrDuration(PromToken* token, ParseError* error) {
  const size_t start = pos_;
  size_t n = 0;
  bool hex = false;
  if (Peek() == '0' && (Peek(1) == 'x' || Peek(1) == 'X') && HexDigit(Peek(2)) >= 0) {
    hex = true;
    n = 2;
    while (HexDigit(Peek(n)) >= 0) ++n;
  } else {
    while (IsDigit(Peek(n))) ++n;
    const size_t integer_digits = n;
    // A duration: digits and then a unit ("5m", "1h30m", "500ms").
    if (integer_digits > 0 && std::string_view("ywdhms").find(Peek(n)) != std::string_view::npos &&
        Peek(n) != '\0') {
      while (std::isalnum(static_cast<unsigned char>(Peek(n)))) ++n;
      const std::string_view text = text_.substr(start, n);
      int64_t ms = 0;
      if (!ParsePromDuration(text, &ms)) {
        error->pos = Here();
        error->message = "bad duration \"" + std::string(text) +
                         "\": units y, w, d, h, m, s, ms, each once, largest first";
        return false;
      }
      if (ms == 0) {
        error->pos = Here();
        error->message = "duration must be greater than 0";
        return false;
      }
      Advance(n);
      token->kind = PromTokenKind::kDuration;
      token->text = text;
      token->duration_ms = ms;
      return true;
    }
    if (Peek(n) == '.') {
      ++n;
      while (IsDigit(Peek(n))) ++n;
    }
    if ((Peek(n) == 'e' || Peek(n) == 'E') &&
        (IsDigit(Peek(n + 1)) ||
         ((Peek(n + 1) == '+' || Peek(n + 1) == '-') && IsDigit(Peek(n + 2))))) {
      n += 2;
      while (IsDigit(Peek(n))) ++n;
    }
  }
  if (IsNameChar(Peek(n)) || Peek(n) == '.') {
    size_t end = n;
    while (IsNameChar(Peek(end)) || Peek(end) == '.') ++end;
    error->pos = Here();
    error->message = "bad number or duration \"" + std::string(text_.substr(start, end)) + "\"";
    return false;
  }
  const std::string text(text_.substr(start, n));
  // A leading 0 makes an integer octal, as Go's strconv.ParseInt with base 0
  // reads it (0755 is 493); digits 8 and 9 make it decimal again (08 is 8).
  const bool octal =
      text.size() > 1 && text[0] == '0' && text.find_first_not_of("01234567") == std::string::npos;
  token->number = hex     ? static_cast<double>(std::strtoull(text.c_str() + 2, nullptr, 16))
                  : octal ? static_cast<double>(std::strtoull(text.c_str(), nullptr, 8))
                          : std::strtod(text.c_str(), nullptr);
  Advance(n);
  token->kind = PromTokenKind::kNumber;
  token->text = text_.substr(start, n);
  return true;
}

bool Lexer::LexString(PromToken* token, ParseError* error) {
  const Position opened = Here();
  const size_t start = pos_;
  const char quote = Peek();
  Advance();
  std::string value;
  while (true) {
    if (pos_ >= text_.size()) {
      error->pos = opened;
      error->message = "unterminated string";
      return false;
    }
    const char c = Peek();
    if (c == quote) {
      Advance();
      break;
    }
    if (quote == '`') {  // raw: no escapes
      value.push_back(c);
      Advance();
      continue;
    }
    if (c == '\n') {
      error->pos = opened;
      error->message = "unterminated string (a quoted string cannot hold a newline)";
      return false;
    }
    if (c != '\\') {
      value.push_back(c);
      Advance();
      continue;
    }
    const Position escape = Here();
    const char e = Peek(1);
    const auto bad = [&](const std::string& what) {
      error->pos = escape;
      error->message = what;
      return false;
    };
    switch (e) {
      case 'a':
        value.push_back('\a');
        break;
      case 'b':
        value.push_back('\b');
        break;
      case 'f':
        value.push_back('\f');
        break;
      case 'n':
        value.push_back('\n');
        break;
      case 'r':
        value.push_back('\r');
        break;
      case 't':
        value.push_back('\t');
        break;
      case 'v':
        value.push_back('\v');
        break;
      case '\\':
      case '\'':
      case '"':
        value.push_back(e);
        break;
      case 'x': {
        const int hi = HexDigit(Peek(2)), lo = HexDigit(Peek(3));
        if (hi < 0 || lo < 0) return bad("bad \\x escape: two hexadecimal digits expected");
        value.push_back(static_cast<char>(hi * 16 + lo));
        Advance(2);
        break;
      }
      case 'u':
      case 'U': {
        const size_t digits = e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 0; k < digits; ++k) {
          const int d = HexDigit(Peek(2 + k));
          if (d < 0) {
            return bad(std::string("bad \\") + e + " escape: " + std::to_string(digits) +
                       " hexadecimal digits expected");
          }
          cp = cp * 16 + static_cast<uint32_t>(d);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return bad("escape names no Unicode character");
        }
        AppendUtf8(cp, &value);
        Advance(digits);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = 0;
          for (size_t k = 0; k < 3; ++k) {
            const char d = Peek(1 + k);
            if (d < '0' || d > '7') return bad("bad octal escape: three octal digits expected");
            v = v * 8 + static_cast<uint32_t>(d - '0');
          }
          if (v > 255) return bad("octal escape past 255");
          value.push_back(static_cast<char>(v));
          Advance(2);
          break;
        }
        return bad(e == '\0' ? "unterminated string" : "unknown escape \\" + std::string(1, e));
    }
    Advance(2);
  }
  token->kind = PromTokenKind::kString;
  token->text = text_.substr(start, pos_ - start);
  token->value = std::move(value);
  return true;
}

}  // namespace gpulse::query::promql
