// Table-driven tests of ingest/line_protocol: every syntax feature of
// docs/line-protocol.md, and every error with its line and column.
// Points are rendered as "measurement|k=v,...|key:type=value,...|time" so a
// case is one line of expected text.
#include "ingest/line_protocol.h"

#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

namespace gpulse::ingest {
namespace {

std::string Render(const PointView& p) {
  std::string out(p.measurement);
  out += '|';
  for (size_t i = 0; i < p.tags.size(); ++i) {
    if (i > 0) out += ',';
    out.append(p.tags[i].key).append("=").append(p.tags[i].value);
  }
  out += '|';
  for (size_t i = 0; i < p.fields.size(); ++i) {
    const FieldView& f = p.fields[i];
    if (i > 0) out += ',';
    out.append(f.key);
    char buf[64];
    switch (f.type) {
      case FieldType::kFloat:
        std::snprintf(buf, sizeof(buf), ":float=%.17g", f.float_value);
        break;
      case FieldType::kInt:
        std::snprintf(buf, sizeof(buf), ":int=%" PRId64, f.int_value);
        break;
      case FieldType::kUint:
        std::snprintf(buf, sizeof(buf), ":uint=%" PRIu64, f.uint_value);
        break;
      case FieldType::kBool:
        std::snprintf(buf, sizeof(buf), ":bool=%s", f.bool_value ? "true" : "false");
        break;
      case FieldType::kString:
        std::snprintf(buf, sizeof(buf), ":string=");
        break;
    }
    out += buf;
    if (f.type == FieldType::kString) out.append(f.string_value);
  }
  out += '|' + std::to_string(p.timestamp_ns);
  return out;
}

struct Parsed {
  std::vector<std::string> points;
  std::vector<size_t> lines;
  std::vector<LineError> errors;
  size_t error_count = 0;
};

Parsed ParseAll(std::string_view body, LineProtocolParser::Options options = {}) {
  Parsed out;
  LineProtocolParser parser;
  parser.Parse(
      body, options,
      [&](const PointView& p) {
        out.points.push_back(Render(p));
        out.lines.push_back(p.line);
      },
      &out.errors, &out.error_count);
  return out;
}

struct AcceptCase {
  const char* about;
  std::string input;
  std::vector<std::string> points;
};

TEST(LineProtocolTest, AcceptsEverySyntaxFeature) {
  const AcceptCase cases[] = {
      {"minimal", "m f=1", {"m||f:float=1|0"}},
      {"tags and timestamp",
       "cpu,host=a,region=eu v=1.5 17",
       {"cpu|host=a,region=eu|v:float=1.5|17"}},
      {"tags keep input order", "m,z=1,a=2 f=1", {"m|z=1,a=2|f:float=1|0"}},
      {"several fields", "m a=1,b=2i,c=3u", {"m||a:float=1,b:int=2,c:uint=3|0"}},
      // Measurement: ',' and ' ' escape; '=' is plain; other backslashes stay.
      {"measurement escapes", R"(c\,p\ u f=1)", {"c,p u||f:float=1|0"}},
      {"measurement with =", "a=b f=1", {"a=b||f:float=1|0"}},
      {"measurement backslash", R"(a\b\c f=1)", {R"(a\b\c||f:float=1|0)"}},
      // Tag keys, tag values, field keys: ',', '=' and ' ' escape.
      {"tag key escapes", R"(m,a\,b\=c\ d=v f=1)", {"m|a,b=c d=v|f:float=1|0"}},
      {"tag value escapes", R"(m,k=a\,b\=c\ d f=1)", {"m|k=a,b=c d|f:float=1|0"}},
      {"field key escapes", R"(m a\,b\=c\ d=1)", {"m||a,b=c d:float=1|0"}},
      {"lone backslashes stay", R"(m,k=a\b\\ c f\x=1)", {R"(m|k=a\b\ c|f\x:float=1|0)"}},
      {"tag value control byte", "m,k=x\x01y f=1", {"m|k=x\x01y|f:float=1|0"}},
      {"utf-8 names",
       "m\xc3\xa9,k\xe2\x82\xac=\xf0\x9f\x98\x80 f=1",
       {"m\xc3\xa9|k\xe2\x82\xac=\xf0\x9f\x98\x80|f:float=1|0"}},
      // Strings: \" and \\ escape; any other backslash stays; newlines allowed.
      {"string", R"(m s="a b,c=d")", {"m||s:string=a b,c=d|0"}},
      {"string escapes", R"(m s="q\"b\\n\t")", {R"(m||s:string=q"b\n\t|0)"}},
      {"empty string", R"(m s="")", {"m||s:string=|0"}},
      {"string with newline", "m s=\"a\nb\" 5", {"m||s:string=a\nb|5"}},
      // Floats.
      {"float forms",
       "m a=1,b=-1.5,c=.5,d=5.,e=1e-4,f=-1.5E+3,g=1E3,h=-0",
       {"m||a:float=1,b:float=-1.5,c:float=0.5,d:float=5,e:float=0.0001,f:float=-1500,"
        "g:float=1000,h:float=-0|0"}},
      {"float max", "m a=1.7976931348623157e308", {"m||a:float=1.7976931348623157e+308|0"}},
      {"float long mantissa",
       "m a=0.1000000000000000055511151231257827",
       {"m||a:float=0.10000000000000001|0"}},
      {"float underflows to zero", "m a=1e-400", {"m||a:float=0|0"}},
      // Integers.
      {"integers",
       "m a=0i,b=-12i,c=0009223372036854775807i,d=-9223372036854775808i",
       {"m||a:int=0,b:int=-12,c:int=9223372036854775807,d:int=-9223372036854775808|0"}},
      {"unsigned", "m a=0u,b=18446744073709551615u", {"m||a:uint=0,b:uint=18446744073709551615|0"}},
      // Booleans.
      {"booleans",
       "m a=t,b=T,c=true,d=True,e=TRUE,f=f,g=F,h=false,i=False,j=FALSE",
       {"m||a:bool=true,b:bool=true,c:bool=true,d:bool=true,e:bool=true,f:bool=false,"
        "g:bool=false,h:bool=false,i:bool=false,j:bool=false|0"}},
      // Timestamps and whitespace.
      {"negative timestamp", "m f=1 -5", {"m||f:float=1|-5"}},
      {"extreme timestamps",
       "m f=1 9223372036854775807\nm f=1 -9223372036854775808",
       {"m||f:float=1|9223372036854775807", "m||f:float=1|-9223372036854775808"}},
      {"spaces around timestamp", "m  f=1   7   ", {"m||f:float=1|7"}},
      {"crlf", "m f=1 1\r\nm f=2 2\r\n", {"m||f:float=1|1", "m||f:float=2|2"}},
      {"blank lines and comments", "\n# comment\n\n  \r\nm f=1\n#\n", {"m||f:float=1|0"}},
      {"leading spaces", "   m f=1", {"m||f:float=1|0"}},
      {"no final newline", "m f=1\nm f=2", {"m||f:float=1|0", "m||f:float=2|0"}},
      // Repeated field keys: the last value wins, at the first key's place.
      {"repeated field", "m a=1,b=2,a=3i", {"m||a:int=3,b:float=2|0"}},
  };
  for (const AcceptCase& c : cases) {
    SCOPED_TRACE(c.about);
    const Parsed got = ParseAll(c.input);
    EXPECT_EQ(got.points, c.points);
    EXPECT_EQ(got.error_count, 0u);
    for (const LineError& e : got.errors)
      ADD_FAILURE() << e.line << ":" << e.column << " " << e.message;
  }
}

struct ErrorCase {
  std::string input;
  size_t line;
  size_t column;
  std::string message;  // the whole message
};

TEST(LineProtocolTest, RejectsWithLineAndColumn) {
  const ErrorCase cases[] = {
      {"m", 1, 2, "expected ',' or ' ' after measurement, found end of input"},
      {"m\n", 1, 2, "expected ',' or ' ' after measurement, found end of line"},
      {",k=v f=1", 1, 1, "expected measurement, found ','"},
      {"\tm f=1", 1, 1, "invalid character '\\t' in measurement"},
      {"m\x01 f=1", 1, 2, "invalid character '\\x01' in measurement"},
      {"b\xff f=1", 1, 2, "invalid UTF-8 in measurement"},
      {"m, f=1", 1, 3, "expected tag key, found ' '"},
      {"m,region f=1", 1, 9, "expected '=' after tag key \"region\", found ' '"},
      {"m,k= f=1", 1, 5, "expected tag value after tag key \"k\", found ' '"},
      {"m,k=a=b f=1", 1, 6, "expected tag value after tag key \"k\", found '='"},
      {"m,k=v", 1, 6, "expected ',' or ' ' after tag value, found end of input"},
      {"m,k\x01=v f=1", 1, 4, "invalid character '\\x01' in tag key"},
      {"m,k=\xc3 f=1", 1, 5, "invalid UTF-8 in tag value"},
      {"m,k=1,k=2 f=1", 1, 1, "repeated tag key \"k\""},
      {"m ", 1, 3, "expected field key, found end of input"},
      {"m f", 1, 4, "expected '=' after field key \"f\", found end of input"},
      {"m f=", 1, 5, "expected field value after field key \"f\", found end of input"},
      {"m f=1,", 1, 7, "expected field key, found end of input"},
      {"m f=1,,g=2", 1, 7, "expected field key, found ','"},
      {"m f\x7f=1", 1, 4, "invalid character '\\x7f' in field key"},
      {"m f=NaN", 1, 5,
       "invalid field value \"NaN\" for field key \"f\": expected a number, a quoted string, or a "
       "boolean"},
      {"m f=tru", 1, 5,
       "invalid field value \"tru\" for field key \"f\": expected a number, a quoted string, or a "
       "boolean"},
      {"m f=1.2.3", 1, 5, "invalid float value \"1.2.3\" for field key \"f\""},
      {"m f=1e", 1, 5, "invalid float value \"1e\" for field key \"f\""},
      {"m f=-", 1, 5, "invalid float value \"-\" for field key \"f\""},
      {"m f=1e400", 1, 5, "out of range float value \"1e400\" for field key \"f\""},
      {"m f=1.5i", 1, 5, "invalid integer value \"1.5i\" for field key \"f\""},
      {"m f=9223372036854775808i", 1, 5,
       "out of range integer value \"9223372036854775808i\" for field key \"f\""},
      {"m f=-9223372036854775809i", 1, 5,
       "out of range integer value \"-9223372036854775809i\" for field key \"f\""},
      {"m f=-1u", 1, 5, "invalid unsigned integer value \"-1u\" for field key \"f\""},
      {"m f=18446744073709551616u", 1, 5,
       "out of range unsigned integer value \"18446744073709551616u\" for field key \"f\""},
      {"m f=\"abc", 1, 9,
       "expected closing '\"' of the string value of field key \"f\" opened at 1:5, found "
       "end of input"},
      {"m f=\"a\nb", 2, 2,
       "expected closing '\"' of the string value of field key \"f\" opened at 1:5, found "
       "end of input"},
      {"m f=\"a\"b", 1, 8,
       "expected ',' or ' ' after the string value of field key \"f\", found 'b'"},
      {"m f=\"\xff\"", 1, 6, "invalid UTF-8 in the string value of field key \"f\""},
      {"m f=1 12a", 1, 7, "expected timestamp (an integer) or end of line, found \"12a\""},
      {"m f=1 1 2", 1, 9, "expected end of line, found '2'"},
      {"m f=1\r2", 1, 7, "expected end of line, found '2'"},
      {"m f=1 9223372036854775808", 1, 7, "timestamp \"9223372036854775808\" is out of range"},
      {"# \x01", 1, 3, "invalid character '\\x01' in comment"},
      {"ok f=1\n\nm,k f=1", 3, 4, "expected '=' after tag key \"k\", found ' '"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.input);
    const Parsed got = ParseAll(c.input);
    ASSERT_EQ(got.error_count, 1u);
    ASSERT_EQ(got.errors.size(), 1u);
    EXPECT_EQ(got.errors[0].line, c.line);
    EXPECT_EQ(got.errors[0].column, c.column);
    EXPECT_EQ(got.errors[0].message, c.message);
  }
}

TEST(LineProtocolTest, EscapedKeysInErrorMessages) {
  const Parsed got = ParseAll(R"(m,a\ b\,c d=1)");
  ASSERT_EQ(got.errors.size(), 1u);
  EXPECT_EQ(got.errors[0].message, "expected '=' after tag key \"a b,c\", found ' '");
}

TEST(LineProtocolTest, PrecisionScalesTimestamps) {
  struct Case {
    Precision precision;
    std::string input;
    std::string point;  // empty: an error
  } cases[] = {
      {Precision::kNanoseconds, "m f=1 5", "m||f:float=1|5"},
      {Precision::kMicroseconds, "m f=1 5", "m||f:float=1|5000"},
      {Precision::kMilliseconds, "m f=1 5", "m||f:float=1|5000000"},
      {Precision::kSeconds, "m f=1 -5", "m||f:float=1|-5000000000"},
      {Precision::kMinutes, "m f=1 5", "m||f:float=1|300000000000"},
      {Precision::kHours, "m f=1 5", "m||f:float=1|18000000000000"},
      {Precision::kSeconds, "m f=1 9223372036", "m||f:float=1|9223372036000000000"},
      {Precision::kSeconds, "m f=1 9223372037", ""},
      {Precision::kHours, "m f=1 -2562048", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    LineProtocolParser::Options options;
    options.precision = c.precision;
    const Parsed got = ParseAll(c.input, options);
    if (c.point.empty()) {
      ASSERT_EQ(got.errors.size(), 1u);
      EXPECT_EQ(got.errors[0].column, 7u);
      EXPECT_NE(got.errors[0].message.find("out of range"), std::string::npos);
    } else {
      EXPECT_EQ(got.points, std::vector<std::string>{c.point});
    }
  }
}

TEST(LineProtocolTest, DefaultTimeRoundsDownToPrecision) {
  LineProtocolParser::Options options;
  options.default_time_ns = 1'500'000'123;
  EXPECT_EQ(ParseAll("m f=1", options).points[0], "m||f:float=1|1500000123");
  options.precision = Precision::kSeconds;
  EXPECT_EQ(ParseAll("m f=1", options).points[0], "m||f:float=1|1000000000");
  options.default_time_ns = -1'500'000'000;
  EXPECT_EQ(ParseAll("m f=1", options).points[0], "m||f:float=1|-2000000000");
  options.default_time_ns = INT64_MIN;
  EXPECT_EQ(ParseAll("m f=1", options).points[0], "m||f:float=1|-9223372036000000000");
}

TEST(LineProtocolTest, ParsePrecisionSpellings) {
  const std::pair<const char*, Precision> good[] = {
      {"ns", Precision::kNanoseconds},
      {"1ns", Precision::kNanoseconds},
      {"us", Precision::kMicroseconds},
      {"u", Precision::kMicroseconds},
      {"\xc2\xb5s", Precision::kMicroseconds},
      {"1\xc2\xb5s", Precision::kMicroseconds},
      {"ms", Precision::kMilliseconds},
      {"1ms", Precision::kMilliseconds},
      {"s", Precision::kSeconds},
      {"1s", Precision::kSeconds},
      {"m", Precision::kMinutes},
      {"1m", Precision::kMinutes},
      {"h", Precision::kHours},
      {"1h", Precision::kHours},
  };
  for (const auto& [text, want] : good) {
    Precision p = Precision::kNanoseconds;
    EXPECT_TRUE(ParsePrecision(text, &p)) << text;
    EXPECT_EQ(p, want) << text;
  }
  for (const char* bad : {"", "1", "n", "2s", "sec", "NS", "11s"}) {
    Precision p = Precision::kHours;
    EXPECT_FALSE(ParsePrecision(bad, &p)) << bad;
    EXPECT_EQ(p, Precision::kHours);
  }
}

TEST(LineProtocolTest, BadLineDoesNotStopLaterLines) {
  const Parsed got = ParseAll("a f=1\nb f=\nc s=\"x\ny\" 3\nd,k f=1\ne f=2\n");
  EXPECT_EQ(got.points,
            (std::vector<std::string>{"a||f:float=1|0", "c||s:string=x\ny|3", "e||f:float=2|0"}));
  EXPECT_EQ(got.lines, (std::vector<size_t>{1, 3, 6}));
  ASSERT_EQ(got.errors.size(), 2u);
  EXPECT_EQ(got.errors[0].line, 2u);
  EXPECT_EQ(got.errors[0].column, 5u);
  EXPECT_EQ(got.errors[1].line, 5u);
  EXPECT_EQ(got.errors[1].column, 4u);
}

TEST(LineProtocolTest, MaxErrorsCapsTheListNotTheCount) {
  LineProtocolParser::Options options;
  options.max_errors = 2;
  const Parsed got = ParseAll("x\ny\nm f=1\nz\n", options);
  EXPECT_EQ(got.points.size(), 1u);
  EXPECT_EQ(got.errors.size(), 2u);
  EXPECT_EQ(got.error_count, 3u);
}

TEST(LineProtocolTest, ScratchIsReusedAcrossLines) {
  // Escaped text of one line must not leak into the next.
  const Parsed got = ParseAll("m\\ 1,k\\ 1=v\\ 1 s=\"a\\\"\"\nm2,k=v s=\"b\\\\\"");
  EXPECT_EQ(got.points,
            (std::vector<std::string>{"m 1|k 1=v 1|s:string=a\"|0", "m2|k=v|s:string=b\\|0"}));
}

TEST(LineProtocolTest, ParseToPointsCopiesEverything) {
  std::vector<Point> points;
  std::vector<LineError> errors;
  LineProtocolParser::Options options;
  options.precision = Precision::kSeconds;
  ParseToPoints("gpu,node=n\\ 1 util=5i,s=\"x\\\"y\",ok=t,t=1.5,u=2u 10\nbad\n", options, &points,
                &errors);
  ASSERT_EQ(points.size(), 1u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 2u);
  const Point& p = points[0];
  EXPECT_EQ(p.measurement, "gpu");
  EXPECT_EQ(p.tags, (std::vector<Tag>{{"node", "n 1"}}));
  ASSERT_EQ(p.fields.size(), 5u);
  EXPECT_EQ(std::get<int64_t>(p.fields[0].value), 5);
  EXPECT_EQ(std::get<std::string>(p.fields[1].value), "x\"y");
  EXPECT_EQ(std::get<bool>(p.fields[2].value), true);
  EXPECT_EQ(std::get<double>(p.fields[3].value), 1.5);
  EXPECT_EQ(std::get<uint64_t>(p.fields[4].value), 2u);
  EXPECT_EQ(p.timestamp_ns, 10'000'000'000);
}

// A wide line finds repeated keys through a hash map, not the 64-bit filter
// of a narrow one: the same answers (last value wins, at the first place;
// a repeated tag key is an error), also with escaped keys.
TEST(LineProtocolTest, WideLinesFindRepeatedKeysLikeNarrowOnes) {
  for (const int width : {3, 64, 65, 500}) {
    SCOPED_TRACE(width);
    std::string fields, tags;
    for (int i = 0; i < width; ++i) {
      fields += (i ? ",f\\ " : "f\\ ") + std::to_string(i) + "=" + std::to_string(i);
      tags += ",t" + std::to_string(i) + "=v";
    }
    std::vector<Point> points;
    std::vector<LineError> errors;
    ParseToPoints("m" + tags + " " + fields + ",f\\ 1=7i,f\\ 0=8i 5\nm" + tags + ",t1=w f=1 5\n",
                  LineProtocolParser::Options(), &points, &errors);
    ASSERT_EQ(points.size(), 1u);
    ASSERT_EQ(points[0].fields.size(), static_cast<size_t>(width));
    EXPECT_EQ(points[0].fields[0].key, "f 0");  // unescaped
    EXPECT_EQ(std::get<int64_t>(points[0].fields[0].value), 8);
    EXPECT_EQ(std::get<int64_t>(points[0].fields[1].value), 7);
    EXPECT_EQ(std::get<double>(points[0].fields[2].value), 2);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].line, 2u);
    EXPECT_EQ(errors[0].message, "repeated tag key \"t1\"");
  }
}

}  // namespace
}  // namespace gpulse::ingest
