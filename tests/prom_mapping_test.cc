// The sample-to-point mapping, rule by rule, on small hand-written bodies:
// grouping, timestamps, attribution fields, extra tags and their collisions,
// empty labels, non-finite values.

#include "ingest/prom_mapping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace gpulse::ingest {
namespace {

constexpr int64_t kScrapeNs = 1'700'000'000'000'000'000;

struct Mapped {
  std::string body;
  PromTextScratch scratch;
  std::vector<PromSample> samples;
  std::vector<Point> points;
  PromMappingStats stats;
};

void Map(std::string body, const PromMappingOptions& options, Mapped* out) {
  out->body = std::move(body);
  std::vector<PromError> errors;
  ParsePromText(out->body, &out->scratch, &out->samples, &errors);
  ASSERT_TRUE(errors.empty()) << errors[0].ToString();
  MapSamples(out->samples, kScrapeNs, options, &out->points, &out->stats);
}

// "key=value" per field, in point order, values as %g or the string.
std::vector<std::string> FieldsOf(const Point& p) {
  std::vector<std::string> out;
  for (const Field& f : p.fields) {
    if (const double* d = std::get_if<double>(&f.value)) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%g", *d);
      out.push_back(f.key + "=" + buf);
    } else {
      out.push_back(f.key + "=\"" + std::get<std::string>(f.value) + "\"");
    }
  }
  return out;
}

TEST(PromMappingTest, SameTagsAndTimeMakeOnePoint) {
  Mapped m;
  Map("a{gpu=\"0\"} 1\nb{gpu=\"0\"} 2\na{gpu=\"1\"} 3\nc{gpu=\"0\"} 4 1000\nd{gpu=\"0\"} 5 1000\n",
      PromMappingOptions(), &m);
  ASSERT_EQ(m.points.size(), 3u);
  EXPECT_EQ(m.points[0].measurement, "prometheus");
  EXPECT_EQ(m.points[0].tags, (std::vector<Tag>{{"gpu", "0"}}));
  EXPECT_EQ(m.points[0].timestamp_ns, kScrapeNs);
  EXPECT_EQ(FieldsOf(m.points[0]), (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_EQ(m.points[1].tags, (std::vector<Tag>{{"gpu", "1"}}));
  EXPECT_EQ(m.points[2].timestamp_ns, 1'000'000'000);  // the sample's own ms, in ns
  EXPECT_EQ(FieldsOf(m.points[2]), (std::vector<std::string>{"c=4", "d=5"}));
  EXPECT_EQ(m.stats.points, 3u);
  EXPECT_EQ(m.stats.fields, 5u);
}

TEST(PromMappingTest, LabelOrderDoesNotSplitAPoint) {
  Mapped m;
  Map("a{x=\"1\",y=\"2\"} 1\nb{y=\"2\",x=\"1\"} 2\n", PromMappingOptions(), &m);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(m.points[0].tags, (std::vector<Tag>{{"x", "1"}, {"y", "2"}}));
}

TEST(PromMappingTest, AttributionBecomesStringFieldsAndJobStaysATag) {
  Mapped m;
  PromMappingOptions options;
  options.measurement = "dcgm";
  Map("u{gpu=\"0\",job=\"dcgm\",instance=\"n1:9400\",pod=\"p1\",namespace=\"ns\",container=\"c\"} "
      "7\n"
      "t{gpu=\"0\",job=\"dcgm\",instance=\"n1:9400\"} 40\n",
      options, &m);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(m.points[0].measurement, "dcgm");
  EXPECT_EQ(m.points[0].tags,
            (std::vector<Tag>{{"gpu", "0"}, {"instance", "n1:9400"}, {"job", "dcgm"}}));
  EXPECT_EQ(FieldsOf(m.points[0]),
            (std::vector<std::string>{"u=7", "t=40", "pod=\"p1\"", "namespace=\"ns\"",
                                      "container=\"c\""}));
}

TEST(PromMappingTest, SharedGpuListsItsPodsAndKeepsTheFirstValue) {
  Mapped m;
  Map("u{gpu=\"0\",pod=\"p1\",namespace=\"ns\"} 7\n"
      "u{gpu=\"0\",pod=\"p2\",namespace=\"ns\"} 7\n"
      "u{gpu=\"0\",pod=\"p1\",namespace=\"ns\"} 8\n",
      PromMappingOptions(), &m);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(FieldsOf(m.points[0]),
            (std::vector<std::string>{"u=7", "pod=\"p1,p2\"", "namespace=\"ns\""}));
  EXPECT_EQ(m.stats.duplicate_fields, 2u);
}

TEST(PromMappingTest, AttributionNamedLikeAMetricIsLeftOut) {
  Mapped m;
  Map("pod{gpu=\"0\"} 1\nu{gpu=\"0\",pod=\"p1\"} 2\n", PromMappingOptions(), &m);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(FieldsOf(m.points[0]), (std::vector<std::string>{"pod=1", "u=2"}));
  EXPECT_EQ(m.stats.dropped_attribution, 1u);
}

TEST(PromMappingTest, ExtraTagsWinAndTheLabelIsKeptAsExported) {
  Mapped m;
  PromMappingOptions options;
  options.extra_tags = {{"cluster", "use1-a"}};
  Map("u{cluster=\"from-exporter\",exported_cluster=\"x\",gpu=\"0\"} 1\n", options, &m);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(m.points[0].tags, (std::vector<Tag>{{"cluster", "use1-a"},
                                                {"exported_cluster", "from-exporter"},
                                                {"exported_exported_cluster", "x"},
                                                {"gpu", "0"}}));
  EXPECT_EQ(m.stats.renamed_labels, 2u);
}

TEST(PromMappingTest, HostnameInEitherCaseIsKeptAsWritten) {
  Mapped m;
  Map("u{gpu=\"0\",Hostname=\"h1\"} 1\nu{gpu=\"0\",hostname=\"h1\"} 2\n", PromMappingOptions(), &m);
  ASSERT_EQ(m.points.size(), 2u);
  EXPECT_EQ(m.points[0].tags, (std::vector<Tag>{{"Hostname", "h1"}, {"gpu", "0"}}));
  EXPECT_EQ(m.points[1].tags, (std::vector<Tag>{{"gpu", "0"}, {"hostname", "h1"}}));
}

TEST(PromMappingTest, EmptyLabelsAreNoLabels) {
  Mapped m;
  Map("u{gpu=\"0\",pod_uid=\"\",vgpu=\"\",extra=\"\"} 1\nv{gpu=\"0\"} 2\n", PromMappingOptions(),
      &m);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(m.points[0].tags, (std::vector<Tag>{{"gpu", "0"}}));
  EXPECT_EQ(FieldsOf(m.points[0]), (std::vector<std::string>{"u=1", "v=2"}));
}

TEST(PromMappingTest, NonFiniteValuesAreKeptUnlessAskedOtherwise) {
  const std::string body = "a NaN\nb +Inf\nc -Inf\nd 1\n";
  Mapped kept;
  Map(body, PromMappingOptions(), &kept);
  ASSERT_EQ(kept.points.size(), 1u);
  ASSERT_EQ(kept.points[0].fields.size(), 4u);
  EXPECT_TRUE(std::isnan(std::get<double>(kept.points[0].fields[0].value)));
  EXPECT_EQ(std::get<double>(kept.points[0].fields[1].value), INFINITY);
  EXPECT_EQ(std::get<double>(kept.points[0].fields[2].value), -INFINITY);

  Mapped dropped;
  PromMappingOptions options;
  options.keep_non_finite = false;
  Map(body, options, &dropped);
  ASSERT_EQ(dropped.points.size(), 1u);
  EXPECT_EQ(FieldsOf(dropped.points[0]), (std::vector<std::string>{"d=1"}));
  EXPECT_EQ(dropped.stats.dropped_non_finite, 3u);
}

TEST(PromMappingTest, TimestampsBeyondTheNanosecondRangeAreDropped) {
  Mapped m;
  Map("a 1 9223372036854775\nb 2 9223372036854\nc 3 -9223372036855\n", PromMappingOptions(), &m);
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(m.points[0].timestamp_ns, 9'223'372'036'854'000'000);
  EXPECT_EQ(m.stats.dropped_timestamp, 2u);
}

TEST(PromMappingTest, PointsAreAppended) {
  Mapped m;
  m.points.push_back(Point{"earlier", {}, {{"x", 1.0}}, 1});
  Map("a 1\n", PromMappingOptions(), &m);
  ASSERT_EQ(m.points.size(), 2u);
  EXPECT_EQ(m.points[0].measurement, "earlier");
  EXPECT_EQ(FieldsOf(m.points[1]), (std::vector<std::string>{"a=1"}));
}

}  // namespace
}  // namespace gpulse::ingest
