// The Prometheus text parser: accepted syntax case by case, errors with their
// exact line, column and message, recovery after a bad line, CRLF, metric
// types, and where the views of a sample point.

#include "ingest/prom_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace gpulse::ingest {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Parsed {
  PromTextScratch scratch;
  std::vector<PromSample> samples;
  std::vector<PromError> errors;
};

void Parse(std::string_view body, Parsed* out) {
  ParsePromText(body, &out->scratch, &out->samples, &out->errors);
}

Labels LabelsOf(const PromSample& s) {
  Labels out;
  for (const auto& [k, v] : s.labels) out.emplace_back(std::string(k), std::string(v));
  return out;
}

struct SampleCase {
  std::string text;
  std::string name;
  Labels labels;
  double value;
  std::optional<int64_t> timestamp_ms;
};

TEST(PromTextTest, AcceptedSamples) {
  const double kInf = std::numeric_limits<double>::infinity();
  const std::vector<SampleCase> cases = {
      {"foo 1", "foo", {}, 1, {}},
      {"foo{} 1", "foo", {}, 1, {}},
      {"foo{a=\"b\",} 2", "foo", {{"a", "b"}}, 2, {}},
      {"foo { a = \"b\" , c=\"d\" } 3", "foo", {{"a", "b"}, {"c", "d"}}, 3, {}},
      {"foo{a=\"x\\\\y\\\"z\\nw\"} 4", "foo", {{"a", "x\\y\"z\nw"}}, 4, {}},
      {"foo{a=\"}{,=# \"} 5", "foo", {{"a", "}{,=# "}}, 5, {}},
      {"foo{a=\"\"} 6", "foo", {{"a", ""}}, 6, {}},
      {"ns:sub_metric_2 7", "ns:sub_metric_2", {}, 7, {}},
      {"_x 8", "_x", {}, 8, {}},
      {"   foo 9", "foo", {}, 9, {}},
      {"foo\t10\t1712345678901", "foo", {}, 10, 1712345678901},
      {"foo 11 -5", "foo", {}, 11, -5},
      {"foo 12 +5", "foo", {}, 12, 5},
      {"foo 13 1712345678901   ", "foo", {}, 13, 1712345678901},
      {"foo +Inf", "foo", {}, kInf, {}},
      {"foo -Inf", "foo", {}, -kInf, {}},
      {"foo inf", "foo", {}, kInf, {}},
      {"foo Infinity", "foo", {}, kInf, {}},
      {"foo 1.5e-3", "foo", {}, 1.5e-3, {}},
      {"foo 2.189426688e+10", "foo", {}, 2.189426688e+10, {}},
      {"foo 1E3", "foo", {}, 1000, {}},
      {"foo -0.5", "foo", {}, -0.5, {}},
      {"foo +0.5", "foo", {}, 0.5, {}},
      {"foo .5", "foo", {}, 0.5, {}},
      {"foo 5.", "foo", {}, 5, {}},
      {"foo 16.365000", "foo", {}, 16.365, {}},
      {"foo 9223372036854775794", "foo", {}, 9223372036854775794.0, {}},
      {"foo 0x1p-3", "foo", {}, 0.125, {}},
      {"foo 1e-400", "foo", {}, 0, {}},
  };
  for (const SampleCase& c : cases) {
    SCOPED_TRACE(c.text);
    Parsed p;
    Parse(c.text, &p);
    ASSERT_EQ(p.errors.size(), 0u) << p.errors[0].ToString();
    ASSERT_EQ(p.samples.size(), 1u);
    const PromSample& s = p.samples[0];
    EXPECT_EQ(s.name, c.name);
    EXPECT_EQ(LabelsOf(s), c.labels);
    EXPECT_EQ(s.value, c.value);
    EXPECT_EQ(s.timestamp_ms, c.timestamp_ms);
    EXPECT_EQ(s.type, "untyped");
    EXPECT_EQ(s.line, 1u);
  }
}

// What /api/v1/metadata serves: each family's TYPE and HELP, escapes undone,
// in name order; a family with HELP alone is untyped.
TEST(PromTextTest, MetadataOfEachFamily) {
  PromTextScratch scratch;
  std::vector<PromSample> samples;
  std::vector<PromError> errors;
  std::vector<PromMetadata> metadata;
  ParsePromText(
      R"(# HELP b_total Bytes \\ sent,\nper GPU)"
      "\n# TYPE b_total counter\nb_total 1\n"
      "# HELP a_temp Temperature\na_temp 2\n# TYPE c_hist histogram\nc_hist_bucket{le=\"1\"} 3\n",
      &scratch, &samples, &errors, &metadata);
  ASSERT_TRUE(errors.empty()) << errors[0].ToString();
  ASSERT_EQ(metadata.size(), 3u);
  EXPECT_EQ(metadata[0].name, "a_temp");
  EXPECT_EQ(metadata[0].type, "untyped");
  EXPECT_EQ(metadata[0].help, "Temperature");
  EXPECT_EQ(metadata[1].name, "b_total");
  EXPECT_EQ(metadata[1].type, "counter");
  EXPECT_EQ(metadata[1].help, "Bytes \\ sent,\nper GPU");  // one backslash, a newline
  EXPECT_EQ(metadata[2].name, "c_hist");
  EXPECT_EQ(metadata[2].type, "histogram");
  EXPECT_EQ(metadata[2].help, "");
}

TEST(PromTextTest, Utf8LabelValuesPassThrough) {
  Parsed p;
  Parse("foo{model=\"Größe ✓\"} 1", &p);
  ASSERT_EQ(p.errors.size(), 0u);
  EXPECT_EQ(LabelsOf(p.samples[0]), (Labels{{"model", "Größe ✓"}}));
}

TEST(PromTextTest, NaN) {
  Parsed p;
  Parse("foo NaN\nbar nan\n", &p);
  ASSERT_EQ(p.errors.size(), 0u);
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_TRUE(std::isnan(p.samples[0].value));
  EXPECT_TRUE(std::isnan(p.samples[1].value));
}

struct ErrorCase {
  std::string text;
  size_t column;
  std::string message;
};

TEST(PromTextTest, ErrorPositionsAndMessages) {
  const std::vector<ErrorCase> cases = {
      {"foo{gpu\"0\"} 1", 8, "expected '=' after label name \"gpu\", found '\"'"},
      {"foo{gpu=0} 1", 9, "expected '\"' to open the value of label \"gpu\", found '0'"},
      {"foo{gpu=\"0\" 1", 13, "expected ',' or '}' after the value of label \"gpu\", found '1'"},
      {"foo{gpu=\"0} 1", 14, "unterminated value of label \"gpu\""},
      {"foo{gpu=\"a\\x\"} 1", 11, "invalid escape sequence '\\x' in value of label \"gpu\""},
      {"foo{gpu=\"a\\", 11, "unterminated value of label \"gpu\""},
      {"foo{,} 1", 5, "expected label name or '}', found ','"},
      {"foo{1a=\"b\"} 1", 5, "expected label name or '}', found '1'"},
      {"foo{a=\"1\",a=\"2\"} 1", 11, "duplicate label name \"a\""},
      {"foo{__name__=\"x\"} 1", 5, "label name \"__name__\" is reserved"},
      {"foo{a=\"1\"", 10, "expected ',' or '}' after the value of label \"a\", found end of line"},
      {"foo abc", 5, "invalid value \"abc\""},
      {"foo +NaN", 5, "invalid value \"+NaN\""},
      {"foo 1e400", 5, "invalid value \"1e400\""},
      {"foo 0x10", 5, "invalid value \"0x10\""},
      {"foo 1_000", 5, "invalid value \"1_000\""},
      {"foo", 4, "expected value after metric name \"foo\""},
      {"foo{a=\"b\"}", 11, "expected value after metric name \"foo\""},
      {"foo 1 12.5", 7, "invalid timestamp \"12.5\": expected integer milliseconds"},
      {"foo 1 99999999999999999999", 7,
       "invalid timestamp \"99999999999999999999\": expected integer milliseconds"},
      {"foo 1 2 3", 9, "unexpected text after timestamp"},
      {"{a=\"b\"} 1", 1, "expected metric name, found '{'"},
      {"1foo 1", 1, "expected metric name, found '1'"},
      {"foo-bar 1", 4, "expected '{' or blank after metric name \"foo\", found '-'"},
      {"# TYPE foo histo", 12, "unknown metric type \"histo\""},
      {"# TYPE foo", 11, "expected metric type after metric name \"foo\""},
      {"# TYPE foo gauge extra", 18, "unexpected text after metric type"},
      {"# TYPE 1foo gauge", 8, "invalid metric name \"1foo gauge\" in TYPE line"},
      {"# HELP foo-bar x", 8, "invalid metric name \"foo-bar x\" in HELP line"},
      {"# HELP foo bad \\t escape", 16, "invalid escape sequence '\\t' in HELP text"},
      {"# HELP foo trailing \\", 21, "escape '\\' at end of HELP text"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.text);
    Parsed p;
    Parse(c.text, &p);
    EXPECT_EQ(p.samples.size(), 0u);
    ASSERT_EQ(p.errors.size(), 1u);
    EXPECT_EQ(p.errors[0].line, 1u);
    EXPECT_EQ(p.errors[0].column, c.column);
    EXPECT_EQ(p.errors[0].message, c.message);
  }
}

TEST(PromTextTest, ErrorToStringNamesLineAndColumn) {
  Parsed p;
  Parse("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu \"0\"} 1\n", &p);
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].ToString(),
            "line 2, column 26: expected '=' after label name \"gpu\", found '\"'");
}

TEST(PromTextTest, BadLineDoesNotStopTheLinesAfterIt) {
  Parsed p;
  Parse("a 1\nb{x 2\nc 3\n# TYPE d nonsense\nd 4\ne{y=\"\\q\"} 5\nf 6", &p);
  ASSERT_EQ(p.samples.size(), 4u);
  EXPECT_EQ(p.samples[0].name, "a");
  EXPECT_EQ(p.samples[1].name, "c");
  EXPECT_EQ(p.samples[1].line, 3u);
  EXPECT_EQ(p.samples[2].name, "d");
  EXPECT_EQ(p.samples[2].type, "untyped");
  EXPECT_EQ(p.samples[3].name, "f");
  EXPECT_EQ(p.samples[3].line, 7u);
  ASSERT_EQ(p.errors.size(), 3u);
  EXPECT_EQ(p.errors[0].line, 2u);
  EXPECT_EQ(p.errors[0].column, 5u);
  EXPECT_EQ(p.errors[1].line, 4u);
  EXPECT_EQ(p.errors[2].line, 6u);
  EXPECT_EQ(p.errors[2].column, 6u);
}

TEST(PromTextTest, CommentsAndBlankLines) {
  Parsed p;
  Parse(
      "#\n# just a comment {\n  \n\t\n# HELP\n# TYPE\n#HELP foo text\n# HELP foo\n"
      "# HELP bar a \\\\ and a \\n\nfoo 1\n",
      &p);
  ASSERT_EQ(p.errors.size(), 1u);  // the second HELP for foo
  EXPECT_EQ(p.errors[0].ToString(), "line 8, column 8: second HELP line for metric name \"foo\"");
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_EQ(p.samples[0].line, 10u);
}

TEST(PromTextTest, CrLfLineEnds) {
  Parsed p;
  Parse("# TYPE a gauge\r\na{x=\"1\"} 2\r\n\r\nb 3 1000\r\nc{x\r\n", &p);
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.samples[0].type, "gauge");
  EXPECT_EQ(LabelsOf(p.samples[0]), (Labels{{"x", "1"}}));
  EXPECT_EQ(p.samples[0].line, 2u);
  EXPECT_EQ(p.samples[1].value, 3);
  EXPECT_EQ(p.samples[1].timestamp_ms, 1000);
  EXPECT_EQ(p.samples[1].line, 4u);
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].line, 5u);
  EXPECT_EQ(p.errors[0].column, 4u);
  EXPECT_EQ(p.errors[0].message, "expected '=' after label name \"x\", found end of line");
}

TEST(PromTextTest, TypesOfFamiliesAndTheirSeries) {
  Parsed p;
  Parse(
      "# TYPE h histogram\n"
      "h_bucket{le=\"0.5\"} 1\n"
      "h_bucket{le=\"+Inf\"} 2\n"
      "h_sum 3\n"
      "h_count 2\n"
      "# TYPE s summary\n"
      "s{quantile=\"0.5\"} NaN\n"
      "s_sum 0\n"
      "s_count 0\n"
      "s_bucket 1\n"
      "# TYPE c counter\n"
      "c 5\n"
      "c_total 5\n"
      "# TYPE g gauge\n"
      "g 1\n"
      "# TYPE u untyped\n"
      "u 1\n"
      "other 1\n",
      &p);
  ASSERT_EQ(p.errors.size(), 0u);
  std::vector<std::pair<std::string, std::string>> got;
  for (const PromSample& s : p.samples) got.emplace_back(s.name, s.type);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"h_bucket", "histogram"},
      {"h_bucket", "histogram"},
      {"h_sum", "histogram"},
      {"h_count", "histogram"},
      {"s", "summary"},
      {"s_sum", "summary"},
      {"s_count", "summary"},
      {"s_bucket", "untyped"},
      {"c", "counter"},
      {"c_total", "untyped"},
      {"g", "gauge"},
      {"u", "untyped"},
      {"other", "untyped"},
  };
  EXPECT_EQ(got, want);
  EXPECT_EQ(LabelsOf(p.samples[1]), (Labels{{"le", "+Inf"}}));
}

TEST(PromTextTest, SecondTypeOrTypeAfterSamplesIsAnError) {
  Parsed p;
  Parse("# TYPE a gauge\n# TYPE a counter\nb 1\n# TYPE b gauge\na 2\nb 3\n", &p);
  ASSERT_EQ(p.errors.size(), 2u);
  EXPECT_EQ(p.errors[0].ToString(),
            "line 2, column 8: second TYPE line for metric name \"a\", or TYPE after its samples");
  EXPECT_EQ(p.errors[1].line, 4u);
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ(p.samples[1].type, "gauge");    // a keeps its first TYPE
  EXPECT_EQ(p.samples[2].type, "untyped");  // b's late TYPE was refused
}

TEST(PromTextTest, ViewsPointIntoTheBodyUnlessUnescaped) {
  const std::string body = "foo{plain=\"abc\",esc=\"C:\\\\Windows\"} 1\n";
  Parsed p;
  Parse(body, &p);
  ASSERT_EQ(p.samples.size(), 1u);
  const PromSample& s = p.samples[0];
  const auto inside = [&](std::string_view v) {
    return v.data() >= body.data() && v.data() + v.size() <= body.data() + body.size();
  };
  EXPECT_TRUE(inside(s.name));
  EXPECT_TRUE(inside(s.labels[0].first));
  EXPECT_TRUE(inside(s.labels[0].second));
  EXPECT_TRUE(inside(s.labels[1].first));
  EXPECT_FALSE(inside(s.labels[1].second));
  EXPECT_EQ(s.labels[1].second, "C:\\Windows");
  ASSERT_EQ(p.scratch.unescaped.size(), 1u);
  EXPECT_EQ(s.labels[1].second.data(), p.scratch.unescaped[0].data());

  // Moving the scratch keeps the views valid.
  PromTextScratch moved = std::move(p.scratch);
  EXPECT_EQ(s.labels[1].second.data(), moved.unescaped[0].data());
}

TEST(PromTextTest, LineNumbersCountEveryLine) {
  Parsed p;
  Parse("\n\n# c\nfoo 1\n\nbar 2", &p);
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.samples[0].line, 4u);
  EXPECT_EQ(p.samples[1].line, 6u);
}

TEST(PromTextTest, EmptyBody) {
  Parsed p;
  Parse("", &p);
  EXPECT_TRUE(p.samples.empty());
  EXPECT_TRUE(p.errors.empty());
}

}  // namespace
}  // namespace gpulse::ingest
