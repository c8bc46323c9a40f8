#include "engine/column_ops.h"

#include <gtest/gtest.h>

namespace gpulse::engine {
namespace {

Column Ints(std::vector<int64_t> ts, std::vector<int64_t> values) {
  Column c;
  c.type = FieldType::kInt;
  c.ts = std::move(ts);
  c.ints = std::move(values);
  return c;
}

TEST(ColumnOpsTest, SortAndDedupKeepsTheLastWrite) {
  Column c = Ints({5, 1, 3, 1, 3, 2}, {50, 10, 30, 11, 31, 20});
  SortAndDedup(&c);
  EXPECT_EQ(c.ts, (std::vector<int64_t>{1, 2, 3, 5}));
  EXPECT_EQ(c.ints, (std::vector<int64_t>{11, 20, 31, 50}));
}

TEST(ColumnOpsTest, MergeNewerReplacesEqualTimestamps) {
  Column base = Ints({1, 3, 5, 7}, {1, 3, 5, 7});
  MergeNewer(Ints({0, 3, 6, 7, 9}, {100, 300, 600, 700, 900}), &base);
  EXPECT_EQ(base.ts, (std::vector<int64_t>{0, 1, 3, 5, 6, 7, 9}));
  EXPECT_EQ(base.ints, (std::vector<int64_t>{100, 1, 300, 5, 600, 700, 900}));
  MergeNewer(Ints({10}, {1000}), &base);  // the append fast path
  EXPECT_EQ(base.ts.back(), 10);
  EXPECT_EQ(base.ints.back(), 1000);
}

TEST(ColumnOpsTest, AppendRangeIsHalfOpen) {
  Column out;
  out.type = FieldType::kInt;
  AppendRange(Ints({1, 2, 3, 4}, {1, 2, 3, 4}), 2, 4, &out);
  EXPECT_EQ(out.ts, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out.ints, (std::vector<int64_t>{2, 3}));
}

TEST(ColumnOpsTest, StringsMoveThroughSortAndMerge) {
  Column c;
  c.type = FieldType::kString;
  c.ts = {2, 1, 2};
  c.strings = {"a", "b", "c"};
  SortAndDedup(&c);
  EXPECT_EQ(c.strings, (std::vector<std::string>{"b", "c"}));
}

}  // namespace
}  // namespace gpulse::engine
