// The fold of an aggregate query: each group's states (GroupAcc), and the
// functions that fold a series' points or tier rows into them. Execution
// (aggregate_run.cc) decides which series go to which group and bucket;
// these do the per-point work.
//
// Thread safety: a GroupAcc belongs to one worker until the merge.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/exec/aggregate.h"
#include "query/exec/cells.h"
#include "query/plan/plan.h"
#include "query/runtime/inputs.h"
#include "query/runtime/result.h"

namespace gpulse::query {

// Series a rollup plan reads in one Input::ScanRollups call.
inline constexpr size_t kTierChunk = 16;
// Series a raw fold reads in one Input::Scan call.
inline constexpr size_t kRawChunk = 32;

// A group's values of the plan's dims (a tag's value, or a string field's).
using GroupKey = std::vector<std::string>;

// The aggregate states of one group: one per slot and bucket. With a known
// range of buckets they sit in one array indexed by bucket number (no map
// lookup per run, one free at the end); otherwise in a map by bucket start.
// With plan.use_cells they are `cells` instead, and the States methods are
// not used.
class GroupAcc {
 public:
  Cells cells;

  using States = std::unique_ptr<AggState>*;  // plan.slots.size() of them

  // The states of bucket number i of plan.dense_buckets (non-empty).
  States GetDense(const Plan& plan, size_t i) {
    const size_t ns = plan.slots.size();
    if (dense_.empty()) dense_.resize(plan.dense_buckets.size() * ns);
    States states = &dense_[i * ns];
    if (!states[0]) Fill(plan, states);
    return states;
  }

  States Get(const Plan& plan, int64_t bucket) {
    if (!plan.dense_buckets.empty()) return GetDense(plan, plan.BucketIndex(bucket));
    auto [it, inserted] = sparse_.try_emplace(bucket);
    if (inserted) {
      it->second.resize(plan.slots.size());
      Fill(plan, it->second.data());
    }
    return it->second.data();
  }

  States Find(const Plan& plan, int64_t bucket) {
    if (!plan.dense_buckets.empty()) {
      if (dense_.empty()) return nullptr;
      States states = &dense_[plan.BucketIndex(bucket) * plan.slots.size()];
      return states[0] ? states : nullptr;
    }
    auto it = sparse_.find(bucket);
    return it == sparse_.end() ? nullptr : it->second.data();
  }

  // fn(bucket start, states) for every bucket with states, in time order.
  // (With cells, states is null.)
  template <typename Fn>
  void ForEach(const Plan& plan, Fn fn) {
    const size_t ns = plan.slots.size();
    if (plan.use_cells) {
      for (size_t i = 0; i < plan.grid.count && !cells.empty(); ++i) {
        if (cells.Present(ns, i))
          fn(plan.grid.first + static_cast<int64_t>(i) * plan.grid.width, nullptr);
      }
      return;
    }
    if (!plan.dense_buckets.empty()) {
      for (size_t i = 0; i < plan.dense_buckets.size() && !dense_.empty(); ++i) {
        if (dense_[i * ns]) fn(plan.dense_buckets[i], &dense_[i * ns]);
      }
      return;
    }
    for (auto& [b, states] : sparse_) fn(b, states.data());
  }

 private:
  static void Fill(const Plan& plan, States states) {
    for (size_t k = 0; k < plan.slots.size(); ++k) states[k] = NewAggState(plan.slots[k].spec);
  }

  std::vector<std::unique_ptr<AggState>> dense_;
  std::map<int64_t, std::vector<std::unique_ptr<AggState>>> sparse_;
};

using GroupMap = std::map<GroupKey, GroupAcc>;

// The group key of a series' tags (string-field dims left empty).
GroupKey TagKeyOf(const Plan& plan, const InSeries& s);
// The tags of a group's answer.
std::vector<Tag> TagsOf(const Plan& plan, const GroupKey& key);

// The positions in [begin, end) of col's points that pass every test: on
// the column's own type for numbers (no QueryValue a point), through
// ApplyBinary for the rest.
void KeepPassing(const Column& col, size_t begin, size_t end,
                 const std::vector<Plan::FieldTestSpec>& tests, std::vector<uint32_t>* kept);

// Folds positions idx (ascending, into col) into the states of group g,
// bucket by bucket.
void FoldIndexes(const Plan& plan, GroupAcc* g, size_t slot, const Column& col,
                 const std::vector<uint32_t>& idx);

// Folds points [begin, end) of `col` into slot `slot` of g.
void FoldSlotRange(const Plan& plan, GroupAcc* g, size_t slot, const Column& col, size_t begin,
                   size_t end);

// Folds every point of `cols` (a series' fields, as Read gives them) into
// the slots that aggregate them.
void FoldColumns(const Plan& plan, GroupAcc* g, const std::vector<Column>& cols);

// Joins a series' columns on time: the sorted union of their timestamps, and
// for each field its position at each row (-1: no point there).
void Join(const std::vector<Column>& cols, std::vector<int64_t>* ts,
          std::vector<std::vector<int32_t>>* pos);

}  // namespace gpulse::query
