// ParseCache: a text parsed once is answered from the kept tree after, the
// tree a later run gets answers as a fresh parse does (now() included), and
// the bounds hold.
#include "query/syntax/parse_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/gpulse.h"
#include "query/executor.h"
#include "query/query.h"
#include "tests/support/quiet_db.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::query {
namespace {

TEST(ParseCacheTest, TheSameTextGivesTheKeptTree) {
  ParseCache cache;
  bool hit = true;
  auto a = cache.Parse("SELECT mean(util) FROM gpu WHERE time > now() - 1h", nullptr, &hit);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(hit);
  auto b = cache.Parse("SELECT mean(util) FROM gpu WHERE time > now() - 1h", nullptr, &hit);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(a->get(), b->get());
  auto c = cache.Parse("SELECT mean(util) FROM gpu WHERE time > now() - 2h", nullptr, &hit);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(hit);
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ((*c)->size(), 1u);
  const ParseCache::Stats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.entries, 2u);
}

TEST(ParseCacheTest, ErrorsAreReportedEveryTimeAndNotKept) {
  ParseCache cache;
  for (int i = 0; i < 2; ++i) {
    ParseError error;
    bool hit = true;
    auto r = cache.Parse("SELECT mean(util) FRM gpu", &error, &hit);
    ASSERT_FALSE(r.ok());
    EXPECT_FALSE(hit);
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_NE(r.status().message().find("FRM"), std::string::npos) << r.status().ToString();
    EXPECT_EQ(error.pos.column, 19) << r.status().ToString();
  }
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(ParseCacheTest, TheLeastRecentlyUsedTextGoesFirstAndLongTextsAreNotKept) {
  ParseCache cache(2);
  bool hit = false;
  ASSERT_TRUE(cache.Parse("SELECT a FROM m").ok());
  ASSERT_TRUE(cache.Parse("SELECT b FROM m").ok());
  ASSERT_TRUE(cache.Parse("SELECT a FROM m", nullptr, &hit).ok());  // a is now the newest
  EXPECT_TRUE(hit);
  ASSERT_TRUE(cache.Parse("SELECT c FROM m").ok());  // b goes
  ASSERT_TRUE(cache.Parse("SELECT a FROM m", nullptr, &hit).ok());
  EXPECT_TRUE(hit);
  ASSERT_TRUE(cache.Parse("SELECT b FROM m", nullptr, &hit).ok());
  EXPECT_FALSE(hit);
  EXPECT_EQ(cache.stats().entries, 2u);

  const std::string long_text =
      "SELECT a FROM m WHERE x = '" + std::string(ParseCache::kMaxTextBytes, 'y') + "'";
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(cache.Parse(long_text, nullptr, &hit).ok());
    EXPECT_FALSE(hit);
  }
}

// now() is read when a statement runs: a kept tree run later answers for
// that later moment.
TEST(ParseCacheTest, AKeptTreeReadsNowWhenItRuns) {
  storage::ScratchDir dir;
  const std::unique_ptr<Db> db = test::OpenQuietDb(dir.path());
  ASSERT_NE(db, nullptr);
  constexpr int64_t kHour = 3'600'000'000'000;
  constexpr int64_t kT0 = 1'704'067'200'000'000'000;
  for (int64_t h = 0; h < 4; ++h) {
    Point p;
    p.measurement = "gpu";
    p.tags = {{"node", "n1"}};
    p.fields = {{"util", h}};
    p.timestamp_ns = kT0 + h * kHour;
    ASSERT_TRUE(db->Write({p}).ok());
  }
  ParseCache cache;
  const std::string text = "SELECT count(util) FROM gpu WHERE time > now() - 90m AND time <= now()";
  for (int64_t h = 0; h < 4; ++h) {
    auto tree = cache.Parse(text);
    ASSERT_TRUE(tree.ok());
    QueryOptions q;
    q.now_ns = kT0 + h * kHour + 1;
    QueryResult r;
    Execute(db.get(), **tree, q, &r);
    ASSERT_EQ(r.statements.size(), 1u);
    ASSERT_TRUE(r.statements[0].status.ok()) << r.statements[0].status.ToString();
    ASSERT_EQ(r.statements[0].series.size(), 1u) << "now at hour " << h;
    // Points at hours h - 1 and h are in (now - 90m, now].
    EXPECT_EQ(r.statements[0].series[0].values[0][1], QueryValue(int64_t{h == 0 ? 1 : 2}));
  }
  EXPECT_EQ(cache.stats().hits, 3u);
}

}  // namespace
}  // namespace gpulse::query
