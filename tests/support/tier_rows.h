// Tier rows for tests that check tiers against their raw points: every row
// of a numeric field's tier as the Db answers it, and the rows the raw
// points give, to compare with ExpectSameRollups.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "storage/rollup.h"

namespace gpulse::test {

// Every row of tier `tier` (an index into storage::kTiers) of integer field
// `field` of `series`, by bucket (ScanRollups hands runs over in any order).
inline storage::RollupColumn AllRollups(Db* db, const Series& series, const std::string& field,
                                        size_t tier) {
  storage::RollupColumn got;
  got.Reset(FieldType::kInt);
  const std::vector<std::string> fields{field};
  EXPECT_TRUE(db->ScanRollups(series, fields, tier, INT64_MIN, INT64_MAX, storage::kRollupAll,
                              [&](size_t, const storage::RollupColumn& rows, size_t b, size_t e) {
                                for (size_t i = b; i < e; ++i) {
                                  storage::AppendRollupRow(rows, i, &got);
                                }
                              })
                  .ok());
  std::vector<size_t> order(got.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return got.bucket[a] < got.bucket[b]; });
  storage::RollupColumn sorted;
  sorted.Reset(FieldType::kInt);
  for (size_t i : order) storage::AppendRollupRow(got, i, &sorted);
  return sorted;
}

// The rows of tier `tier` that the integer points `raw` give.
inline storage::RollupColumn RollupsOf(const Column& raw, size_t tier) {
  storage::RollupColumn want;
  want.Reset(FieldType::kInt);
  storage::BuildRollups(raw, 0, raw.size(), storage::kTiers[tier].width_ns, &want);
  return want;
}

// Every exact part of two integer fields' rows is equal.
inline void ExpectSameRollups(const storage::RollupColumn& got, const storage::RollupColumn& want,
                              const std::string& where) {
  ASSERT_EQ(got.bucket, want.bucket) << where;
  EXPECT_EQ(got.count, want.count) << where;
  EXPECT_EQ(got.sum.ints, want.sum.ints) << where;
  EXPECT_EQ(got.min.ints, want.min.ints) << where;
  EXPECT_EQ(got.max.ints, want.max.ints) << where;
  EXPECT_EQ(got.first.ts, want.first.ts) << where;
  EXPECT_EQ(got.first.ints, want.first.ints) << where;
  EXPECT_EQ(got.last.ts, want.last.ts) << where;
  EXPECT_EQ(got.last.ints, want.last.ints) << where;
}

}  // namespace gpulse::test
