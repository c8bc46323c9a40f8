#include "query/syntax/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpulse::query {
namespace {

// One word per token: id:name, int:42, float:1.5, str:text, re:pattern,
// dur:1h+30m; keywords and operators as TokenKindName prints them.
std::string Render(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) {
    if (t.kind == TokenKind::kEof) break;
    if (!out.empty()) out += ' ';
    switch (t.kind) {
      case TokenKind::kIdent:
        out += "id:" + t.value;
        break;
      case TokenKind::kInteger:
        out += "int:" + std::string(t.text);
        break;
      case TokenKind::kFloat:
        out += "float:" + std::string(t.text);
        break;
      case TokenKind::kString:
        out += "str:" + t.value;
        break;
      case TokenKind::kRegex:
        out += "re:" + t.value;
        break;
      case TokenKind::kDuration: {
        out += "dur:";
        for (size_t i = 0; i < t.duration.size(); ++i) {
          if (i > 0) out += '+';
          out += std::to_string(t.duration[i].amount) + t.duration[i].unit;
        }
        break;
      }
      default:
        out += TokenKindName(t.kind);
    }
  }
  return out;
}

struct TokenCase {
  std::string input;
  std::string tokens;
};

TEST(QueryLexerTest, TokenTable) {
  const TokenCase kCases[] = {
      {"", ""},
      {"   \n\t ", ""},
      {"SELECT select SeLeCt", "SELECT SELECT SELECT"},
      {"util _x a1_b2", "id:util id:_x id:a1_b2"},
      {"\"gpu util\" \"a\\\"b\" \"select\"", "id:gpu util id:a\"b id:select"},
      {"'n1' 'it\\'s' 'a\\\\b' 'x\\ny' ''", "str:n1 str:it's str:a\\b str:x\ny str:"},
      {"42 0 4.5 1e3 2.5E-2 .5", "int:42 int:0 float:4.5 float:1e3 float:2.5E-2 float:.5"},
      {"15m 1h30m 7d 1w 1mo 10s 100ms 5u 7ns 3\xC2\xB5",
       "dur:15m dur:1h+30m dur:7d dur:1w dur:1mo dur:10s dur:100ms dur:5u dur:7ns dur:3u"},
      {"1704067200s 1704067200000ms", "dur:1704067200s dur:1704067200000ms"},
      {"+ - * / % = != <> < <= > >= =~ !~ ( ) , ; . ::",
       "+ - * / % = != != < <= > >= =~ !~ ( ) , ; . ::"},
      // A slash after =~ or !~ (or FROM) starts a regex; elsewhere it divides.
      {"a =~ /^n[0-9]+$/", "id:a =~ re:^n[0-9]+$"},
      {"a !~ /x\\/y/", "id:a !~ re:x/y"},
      {"a =~ /\\d+\\.\\d/", "id:a =~ re:\\d+\\.\\d"},
      {"a / b / 2", "id:a / id:b / int:2"},
      {"sum(x) / 60", "id:sum ( id:x ) / int:60"},
      {"FROM /^gpu/", "FROM re:^gpu"},
      {"FROM a, /b/ WHERE c / d", "FROM id:a , re:b WHERE id:c / id:d"},
      {"FROM (SELECT a / b FROM m), /x/", "FROM ( SELECT id:a / id:b FROM id:m ) , re:x"},
      {"SELECT (a) / 2, count(b) / 3", "SELECT ( id:a ) / int:2 , id:count ( id:b ) / int:3"},
      {"a=~/x/", "id:a =~ re:x"},
      {"a -- comment = 'x\nb", "id:a id:b"},
      {"now()-24h", "id:now ( ) - dur:24h"},
      {"db.rp.m db..m", "id:db . id:rp . id:m id:db . . id:m"},
      {"\"util\"::field host::tag", "id:util :: FIELD id:host :: TAG"},
      {"WITH KEY IN (a, b)", "WITH KEY IN ( id:a , id:b )"},
      {"tz('Europe/Paris')", "id:tz ( str:Europe/Paris )"},
      {"NORTHSTAR OVER every", "NORTHSTAR OVER EVERY"},
  };
  for (const TokenCase& c : kCases) {
    std::vector<Token> tokens;
    ParseError error;
    ASSERT_TRUE(Tokenize(c.input, &tokens, &error)) << c.input << ": " << error.ToString();
    EXPECT_EQ(Render(tokens), c.tokens) << c.input;
    EXPECT_EQ(tokens.back().kind, TokenKind::kEof);
  }
}

TEST(QueryLexerTest, Positions) {
  std::vector<Token> tokens;
  ParseError error;
  ASSERT_TRUE(Tokenize("SELECT a\n  FROM \"m\" -- x\n\tWHERE", &tokens, &error));
  ASSERT_EQ(tokens.size(), 6u);
  struct Want {
    size_t offset;
    int line, column;
    std::string text;
  };
  const Want kWant[] = {{0, 1, 1, "SELECT"}, {7, 1, 8, "a"},      {11, 2, 3, "FROM"},
                        {16, 2, 8, "\"m\""}, {26, 3, 2, "WHERE"}, {31, 3, 7, ""}};
  for (size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_EQ(tokens[i].pos.offset, kWant[i].offset) << i;
    EXPECT_EQ(tokens[i].pos.line, kWant[i].line) << i;
    EXPECT_EQ(tokens[i].pos.column, kWant[i].column) << i;
    EXPECT_EQ(tokens[i].text, kWant[i].text) << i;
  }
}

TEST(QueryLexerTest, KeywordsAreCaseInsensitiveAndKeepTheirText) {
  std::vector<Token> tokens;
  ParseError error;
  ASSERT_TRUE(Tokenize("fRoM", &tokens, &error));
  EXPECT_EQ(tokens[0].kind, TokenKind::kFrom);
  EXPECT_EQ(tokens[0].text, "fRoM");
  EXPECT_EQ(LookupKeyword("measurements"), TokenKind::kMeasurements);
  EXPECT_EQ(LookupKeyword("time"), std::nullopt);
  EXPECT_EQ(LookupKeyword("util"), std::nullopt);
}

TEST(QueryLexerTest, DurationNanos) {
  EXPECT_EQ(DurationPartNanos({15, "m"}), 900'000'000'000);
  EXPECT_EQ(DurationPartNanos({1, "w"}), 604'800'000'000'000);
  EXPECT_EQ(DurationPartNanos({1704067200000, "ms"}), 1'704'067'200'000'000'000);
  EXPECT_EQ(DurationPartNanos({1, "mo"}), -1);
  EXPECT_EQ(DurationPartNanos({9'223'372'037, "s"}), -1);
}

struct ErrorCase {
  std::string input;
  int line;
  int column;
  std::string message;  // the whole ParseError::ToString()
};

TEST(QueryLexerTest, ErrorTable) {
  const ErrorCase kCases[] = {
      {"SELECT 'abc", 1, 8, "line 1, column 8: unterminated string"},
      {"a = 'x\ny'", 1, 5, "line 1, column 5: unterminated string"},
      {"SELECT \"abc", 1, 8, "line 1, column 8: unterminated quoted identifier"},
      {"SELECT \"\"", 1, 8, "line 1, column 8: empty quoted identifier"},
      {"a =~ /abc", 1, 6, "line 1, column 6: unterminated regex"},
      {"a =~ /ab\\/", 1, 6, "line 1, column 6: unterminated regex"},
      {"a = 1 #", 1, 7, "line 1, column 7: unexpected character '#'"},
      {"\n  a ? b", 2, 5, "line 2, column 5: unexpected character '?'"},
      {"a \xC3\xA9", 1, 3, "line 1, column 3: unexpected character '\xC3\xA9'"},
      {"a ! b", 1, 3, "line 1, column 3: unexpected character '!'"},
      {"a : b", 1, 3, "line 1, column 3: unexpected character ':'"},
      {"'a\\qb'", 1, 3, "line 1, column 3: bad escape \\q"},
      {"time > 5x", 1, 9,
       "line 1, column 9: invalid duration unit 'x' (expected ns, u, ms, s, m, h, d, w or mo)"},
      {"1H", 1, 2,
       "line 1, column 2: invalid duration unit 'H' (expected ns, u, ms, s, m, h, d, w or mo)"},
      {"1.5h", 1, 1, "line 1, column 1: a duration takes an integer amount, found '1.5'"},
      {"5m.", 1, 3, "line 1, column 3: unexpected '.' after duration"},
      {"99999999999999999999", 1, 1,
       "line 1, column 1: integer out of range: 99999999999999999999"},
      {"1e999", 1, 1, "line 1, column 1: number out of range: 1e999"},
      {"9999999999999999h", 1, 1, "line 1, column 1: duration out of range: 9999999999999999h"},
      {"106751d23h48m", 1, 1, "line 1, column 1: duration out of range: 106751d23h48m"},
  };
  for (const ErrorCase& c : kCases) {
    std::vector<Token> tokens;
    ParseError error;
    ASSERT_FALSE(Tokenize(c.input, &tokens, &error)) << c.input;
    EXPECT_EQ(error.pos.line, c.line) << c.input;
    EXPECT_EQ(error.pos.column, c.column) << c.input;
    EXPECT_EQ(error.ToString(), c.message) << c.input;
  }
}

TEST(QueryLexerTest, CaretUnderTheFault) {
  ParseError error;
  error.pos = Position{17, 2, 9};
  error.expected = "FROM";
  error.found = "WHERE";
  EXPECT_EQ(FormatErrorWithCaret("SELECT a\nb, c, d WHERE x", error),
            "line 2, column 9: expected FROM, found WHERE\n"
            "b, c, d WHERE x\n"
            "        ^");
}

}  // namespace
}  // namespace gpulse::query
