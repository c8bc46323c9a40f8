// The PromQL front end (query/promql/): what Prometheus 2.42 accepts parses to
// the tree it means and prints back canonically; what it refuses is refused
// with the position of the fault and Prometheus' reason.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "query/promql/functions.h"
#include "query/promql/lexer.h"
#include "query/promql/parser.h"

namespace gpulse::query::promql {
namespace {

std::unique_ptr<Expr> MustParse(const std::string& text) {
  auto r = ParsePromQL(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? std::move(*r) : nullptr;
}

// Parses `text`, expects `canonical` back from ToString, and that the
// canonical text parses to an equal tree.
void RoundTrip(const std::string& text, const std::string& canonical) {
  auto e = MustParse(text);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->ToString(), canonical) << text;
  auto again = MustParse(canonical);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(e->Equals(*again)) << text << " vs " << canonical;
}

std::string ErrorOf(const std::string& text) {
  auto r = ParsePromQL(text);
  EXPECT_FALSE(r.ok()) << text << " parsed as " << (r.ok() ? (*r)->ToString() : "");
  return r.ok() ? "" : std::string(r.status().message());
}

TEST(PromQLParserTest, SelectorsMatchersRangesAndModifiersPrintCanonically) {
  RoundTrip("up", "up");
  RoundTrip("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=~'node-.*'}",
            "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\", Hostname=~\"node-.*\"}");
  RoundTrip("{__name__=~\"DCGM_.+\", job!=\"x\", gpu!~`1|2`}",
            "{__name__=~\"DCGM_.+\", job!=\"x\", gpu!~\"1|2\"}");
  RoundTrip("job:up:sum{by=\"x\", offset=\"y\",}", "job:up:sum{by=\"x\", offset=\"y\"}");
  RoundTrip("rate(http_requests_total[5m] offset 1h)", "rate(http_requests_total[5m] offset 1h)");
  RoundTrip("foo offset -90m", "foo offset -1h30m");
  RoundTrip("foo[1h30m] @ 1609746000 offset 5m", "foo[1h30m] @ 1609746000.000 offset 5m");
  RoundTrip("foo @ end()", "foo @ end()");
  RoundTrip("foo OFFSET 1w @ start()", "foo @ start() offset 1w");
  RoundTrip("max_over_time(rate(foo[1m])[1h:5m])", "max_over_time(rate(foo[1m])[1h:5m])");
  RoundTrip("min_over_time((foo > 1)[30m:] offset 1d)", "min_over_time((foo > 1)[30m:] offset 1d)");
  auto e = MustParse("foo{a=\"b\"}[5m]");
  ASSERT_EQ(e->kind, Expr::Kind::kMatrixSelector);
  EXPECT_EQ(e->range_ms, 300'000);
  EXPECT_EQ(e->type(), ValueType::kMatrix);
  ASSERT_EQ(e->args[0]->matchers.size(), 2u);
  EXPECT_EQ(e->args[0]->matchers[0], (LabelMatcher{"__name__", MatchOp::kEqual, "foo"}));
}

TEST(PromQLParserTest, AggregationsCallsAndNumbers) {
  RoundTrip("sum(rate(x[5m])) by (job, instance)", "sum by (job, instance) (rate(x[5m]))");
  RoundTrip("SUM WITHOUT (gpu) (x)", "sum without (gpu) (x)");
  RoundTrip("topk(5, x)", "topk(5, x)");
  RoundTrip("count_values by () (\"v\", x)", "count_values by () (\"v\", x)");
  RoundTrip("quantile(0.9, x)", "quantile(0.9, x)");
  RoundTrip("histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))",
            "histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))");
  RoundTrip("label_replace(up, \"host\", \"$1\", \"instance\", \"(.*):.*\")",
            "label_replace(up, \"host\", \"$1\", \"instance\", \"(.*):.*\")");
  RoundTrip("label_join(up, \"a\", \",\", \"b\", \"c\", \"d\")",
            "label_join(up, \"a\", \",\", \"b\", \"c\", \"d\")");
  RoundTrip("round(x, 0.5) + round(x) + day_of_week() + time() + pi()",
            "round(x, 0.5) + round(x) + day_of_week() + time() + pi()");
  RoundTrip("0x1F + 1e3 + .5 + Inf + -inf + NaN", "31 + 1000 + 0.5 + Inf + -Inf + NaN");
  RoundTrip("\"a\\nb\" ", "\"a\\nb\"");
  RoundTrip("`raw\\n`", "\"raw\\\\n\"");
  RoundTrip("'it\\'s' # a comment", "\"it's\"");
  EXPECT_EQ(MustParse("vector(1)")->type(), ValueType::kVector);
  EXPECT_EQ(MustParse("scalar(up)")->type(), ValueType::kScalar);
  EXPECT_TRUE(std::isnan(MustParse("nan")->number));
}

TEST(PromQLParserTest, OperatorsBindByPrecedenceAndCaretGroupsRight) {
  RoundTrip("1 + 2 * 3", "1 + 2 * 3");
  auto e = MustParse("1 + 2 * 3 ^ 2 ^ 2");
  ASSERT_EQ(e->op, BinaryOp::kAdd);
  const Expr& mul = *e->args[1];
  ASSERT_EQ(mul.op, BinaryOp::kMul);
  const Expr& pow = *mul.args[1];
  ASSERT_EQ(pow.op, BinaryOp::kPow);
  EXPECT_EQ(pow.args[0]->number, 3);
  EXPECT_EQ(pow.args[1]->op, BinaryOp::kPow);  // 3 ^ (2 ^ 2)
  auto neg = MustParse("-2 ^ 2");              // -(2 ^ 2), as Prometheus reads it
  ASSERT_EQ(neg->kind, Expr::Kind::kUnary);
  EXPECT_EQ(neg->args[0]->op, BinaryOp::kPow);
  auto sub = MustParse("-a * b");  // (-a) * b
  ASSERT_EQ(sub->op, BinaryOp::kMul);
  EXPECT_EQ(sub->args[0]->kind, Expr::Kind::kUnary);
  auto sets = MustParse("a or b and c unless d");  // a or ((b and c) unless d)
  ASSERT_EQ(sets->op, BinaryOp::kOr);
  EXPECT_EQ(sets->args[1]->op, BinaryOp::kUnless);
  EXPECT_EQ(sets->args[1]->args[0]->op, BinaryOp::kAnd);
  EXPECT_EQ(sets->matching.card, Cardinality::kManyToMany);
  auto cmp = MustParse("a - b > bool 1 - c");  // (a - b) > bool (1 - c)
  ASSERT_EQ(cmp->op, BinaryOp::kGtr);
  EXPECT_TRUE(cmp->return_bool);
  RoundTrip("a / on(job) group_left(instance) b", "a / on(job) group_left(instance) b");
  RoundTrip("a * ignoring(gpu) GROUP_RIGHT b", "a * ignoring(gpu) group_right() b");
  RoundTrip("a atan2 b", "a atan2 b");
  RoundTrip("-(a + b)", "-(a + b)");
  RoundTrip("1 == bool 2", "1 == bool 2");
}

TEST(PromQLParserTest, ErrorsSayWhereAndWhy) {
  EXPECT_EQ(ErrorOf("sum("), "line 1, column 5: expected an expression, found end of input");
  EXPECT_EQ(ErrorOf("foo{a=\"b\""), "line 1, column 10: expected ',' or '}', found end of input");
  EXPECT_EQ(ErrorOf("{}"),
            "line 1, column 1: vector selector must contain at least one "
            "non-empty matcher");
  EXPECT_EQ(ErrorOf("{a=\"\", b=~\".*\"}"),
            "line 1, column 1: vector selector must contain at least one non-empty matcher");
  EXPECT_EQ(ErrorOf("rate(foo)"),
            "line 1, column 6: expected type range vector in call to "
            "function \"rate\", got instant vector");
  EXPECT_EQ(ErrorOf("1 > 2"),
            "line 1, column 3: comparisons between scalars must use BOOL "
            "modifier");
  EXPECT_EQ(ErrorOf("foo and 1"),
            "line 1, column 5: set operator \"and\" not allowed in binary scalar expression");
  EXPECT_EQ(ErrorOf("foo + on(a) 1"),
            "line 1, column 5: vector matching only allowed between instant vectors");
  EXPECT_EQ(ErrorOf("foo and on(a) group_left bar"),
            "line 1, column 5: no grouping allowed for \"and\" operation");
  EXPECT_EQ(ErrorOf("foo + bool bar"),
            "line 1, column 5: bool modifier can only be used on comparison operators");
  EXPECT_EQ(ErrorOf("(foo)[5m]"), "line 1, column 6: ranges only allowed for vector selectors");
  EXPECT_EQ(ErrorOf("foo offset 1m offset 2m"),
            "line 1, column 15: offset may not be set multiple times");
  EXPECT_EQ(ErrorOf("foo @ 1 @ 2"), "line 1, column 9: @ may not be set multiple times");
  EXPECT_EQ(ErrorOf("sum(x) + 1 offset 5m"),
            "line 1, column 12: offset modifier must be preceded by an instant vector selector "
            "or range vector selector or a subquery");
  EXPECT_EQ(ErrorOf("x[5m][1h:]"),
            "line 1, column 6: subquery is only allowed on instant vector, got range vector in "
            "\"x[5m]\"");
  EXPECT_EQ(ErrorOf("unknown_fn(x)"),
            "line 1, column 1: unknown function with name "
            "\"unknown_fn\"");
  EXPECT_EQ(ErrorOf("round(x, 1, 2)"),
            "line 1, column 1: expected 1 or 2 argument(s) in call to \"round\", got 3");
  EXPECT_EQ(ErrorOf("label_join(x, \"a\")"),
            "line 1, column 1: expected at least 3 argument(s) in call to \"label_join\", got 2");
  EXPECT_EQ(ErrorOf("sum by (a) (x) by (b)"), "line 1, column 16: by or without may be given once");
  EXPECT_EQ(ErrorOf("topk(x)"),
            "line 1, column 1: wrong number of arguments for aggregate "
            "expression provided, expected 2, got 1");
  EXPECT_EQ(ErrorOf("sum(x[5m])"),
            "line 1, column 5: expected type instant vector in "
            "aggregation expression, got range vector");
  EXPECT_EQ(ErrorOf("foo[5x]"), "line 1, column 5: bad number or duration \"5x\"");
  EXPECT_EQ(ErrorOf("foo[5m1h]"),
            "line 1, column 5: bad duration \"5m1h\": units y, w, d, h, "
            "m, s, ms, each once, largest first");
  EXPECT_EQ(ErrorOf("foo{a=~\"(\"}"),
            "line 1, column 8: invalid regular expression in label "
            "matcher: missing ): (");
  EXPECT_EQ(ErrorOf("foo{__name__=\"bar\"}"),
            "line 1, column 5: metric name must not be set twice: \"foo\" or \"bar\"");
  EXPECT_EQ(ErrorOf("sum"),
            "line 1, column 1: \"sum\" is an aggregation: sum(...), or select "
            "the metric as {__name__=\"sum\"}");
  EXPECT_EQ(ErrorOf("by"), "line 1, column 1: expected an expression, found 'by'");
  EXPECT_EQ(ErrorOf("foo 5m"),
            "line 1, column 5: expected an operator or end of input, found "
            "'5m'");
  EXPECT_EQ(ErrorOf("5m"),
            "line 1, column 1: a duration (5m) is no value: it goes in [ranges], "
            "offset and subqueries");
  EXPECT_EQ(ErrorOf("foo +\n  bar[5m]"),
            "line 1, column 5: binary expression must contain only scalar and instant vector "
            "types");
  EXPECT_EQ(ErrorOf("\"open"), "line 1, column 1: unterminated string");
  EXPECT_EQ(ErrorOf("'\\q'"), "line 1, column 2: unknown escape \\q");
  EXPECT_EQ(ErrorOf("foo $ bar"), "line 1, column 5: unexpected character '$'");
  EXPECT_EQ(ErrorOf("12abc"), "line 1, column 1: bad number or duration \"12abc\"");
  EXPECT_EQ(ErrorOf(std::string(200, '(') + "1" + std::string(200, ')')),
            "line 1, column 129: expression nested deeper than 128 levels");
}

TEST(PromQLParserTest, ASeriesSelectorIsASelectorAlone) {
  auto ok = ParseSeriesSelector("up{job=\"dcgm\"}");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)->ToString(), "up{job=\"dcgm\"}");
  auto bad = ParseSeriesSelector("rate(up[5m])");
  EXPECT_FALSE(bad.ok());
  auto extra = ParseSeriesSelector("up + 1");
  EXPECT_EQ(extra.status().message(), "line 1, column 4: expected end of input, found '+'");
}

TEST(PromQLParserTest, DurationsRoundTrip) {
  int64_t ms = 0;
  ASSERT_TRUE(ParsePromDuration("1y2w3d4h5m6s7ms", &ms));
  EXPECT_EQ(FormatPromDuration(ms), "1y2w3d4h5m6s7ms");
  EXPECT_FALSE(ParsePromDuration("", &ms));
  EXPECT_FALSE(ParsePromDuration("1h1h", &ms));
  EXPECT_FALSE(ParsePromDuration("99999999999999999y", &ms));
  ASSERT_TRUE(ParsePromDuration("90m", &ms));
  EXPECT_EQ(FormatPromDuration(ms), "1h30m");
}

TEST(PromQLParserTest, TheFunctionTableIsSortedAndComplete) {
  EXPECT_EQ(AllFunctions().size(), 67u);
  for (const char* name : {"rate", "irate", "increase", "histogram_quantile", "label_replace",
                           "predict_linear", "holt_winters", "quantile_over_time", "absent"}) {
    EXPECT_NE(FindFunction(name), nullptr) << name;
  }
  EXPECT_EQ(FindFunction("histogram_count"), nullptr);  // native histograms: not stored
}

}  // namespace
}  // namespace gpulse::query::promql
