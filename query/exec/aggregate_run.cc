#include "query/exec/aggregate_run.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "query/exec/answer.h"
#include "query/exec/fold.h"
#include "query/exec/rows.h"
#include "query/plan/tier_choice.h"
#include "query/runtime/eval.h"
#include "query/runtime/parallel.h"
#include "query/runtime/query_memory.h"
#include "query/runtime/result.h"
#include "storage/key_layout.h"

namespace gpulse::query {

namespace {

// One aggregate statement's run over one measurement. Prepare readies the
// plan for its series (dense buckets, tier, cells); Fold folds every series
// into per-worker groups; Merge joins them; Answer answers each group.
class AggregateRun {
 public:
  AggregateRun(ExecContext* ctx, const SelectStatement& s, Input* input, Plan* plan,
               const std::vector<InSeries>& series)
      : ctx_(ctx),
        s_(s),
        input_(input),
        plan_(plan),
        series_(series),
        partial_(std::min<size_t>(HardwareThreads(), 8)),
        worker_points_(partial_.size(), 0),
        states_charge_(ctx->memory()) {}

  Status Run(std::vector<ResultSeries>* out, std::vector<ColumnSeries>* columns) {
    GPULSE_RETURN_IF_ERROR(Prepare());
    GPULSE_RETURN_IF_ERROR(Fold());
    GroupMap groups = Merge();
    std::vector<int64_t> all_buckets;
    GPULSE_RETURN_IF_ERROR(AllBuckets(groups, &all_buckets));
    return Answer(groups, all_buckets, out, columns);
  }

 private:
  Status Prepare();
  void MapSlots();
  void ChooseCells();
  bool AnyOrder() const;

  Status Fold();
  void FoldRollups(GroupAcc* g, size_t k, const RollupColumn& r, size_t begin, size_t end);
  Status FoldTierChunk(size_t w, size_t c);
  Status FoldTallies(size_t w, const InSeries& in);
  Status FoldFiltered(size_t w, const InSeries& in);
  Status FoldJoined(size_t w, const InSeries& in, bool tags_pass);
  Status FoldRawChunk(size_t w, size_t c, size_t chunk);
  // Runs one worker's fold and charges the groups it made and, for
  // aggregates that keep every value, the values it folded.
  template <typename Fn>
  Status Charged(size_t w, Fn fold) {
    const size_t groups_before = partial_[w].size();
    const uint64_t points_before = worker_points_[w];
    GPULSE_RETURN_IF_ERROR(fold());
    uint64_t bytes = (partial_[w].size() - groups_before) * group_bytes_;
    if (keeps_values_) bytes += (worker_points_[w] - points_before) * sizeof(double);
    return bytes == 0 ? Status::Ok() : states_charge_.Charge(bytes, "the groups' aggregate states");
  }
  void CountPoints(size_t w, uint64_t n) {
    ctx_->CountPoints(n);
    worker_points_[w] += n;
  }
  GroupAcc* GroupOf(size_t w, const InSeries& in) { return &partial_[w][TagKeyOf(*plan_, in)]; }

  GroupMap Merge();
  Status AllBuckets(GroupMap& groups, std::vector<int64_t>* out);
  Status Answer(GroupMap& groups, const std::vector<int64_t>& all_buckets,
                std::vector<ResultSeries>* out, std::vector<ColumnSeries>* columns);

  ExecContext* const ctx_;
  const SelectStatement& s_;
  Input* const input_;
  Plan* const plan_;
  const std::vector<InSeries>& series_;
  // Each worker's groups, merged in worker order at the end.
  std::vector<GroupMap> partial_;
  std::vector<uint64_t> worker_points_;
  size_t workers_ = 1;
  // The groups' states are charged as groups appear (and, for aggregates
  // that keep every value, as values fold), and given back once the answer
  // is built from them.
  ScopedCharge states_charge_;
  uint64_t group_bytes_ = 0;
  bool keeps_values_ = false;

  // With a tier: the fields its slots read, sorted, and for each of them
  // the slots that aggregate it.
  std::vector<std::string> slot_fields_;
  std::vector<std::vector<size_t>> slots_of_field_;
  // For each of the plan's fields, the slots that fold it (a run of field f
  // visits those, not every slot: count(*) over 100,000 fields has as many).
  std::vector<std::vector<size_t>> slots_of_plan_field_;
  uint32_t rollup_parts_ = 0;
  // Fixed buckets over a known range (dense_buckets from a bucket start):
  // a tier row's bucket number is one division.
  bool fixed_dense_ = false;
  // A rollup plan: whole tier buckets [lo_t_, hi_t_) fold rollup rows; the
  // range's ends (edges_) fold raw points.
  bool rollups_ = false;
  int64_t lo_t_ = 0, hi_t_ = 0;
  std::array<std::pair<int64_t, int64_t>, 2> edges_{};
  std::atomic<uint64_t> untallied_{0};  // tally counts of values past a bucket's top
};

Status AggregateRun::Prepare() {
  Plan& plan = *plan_;
  if (plan.bucketer && plan.has_lo && plan.has_hi && plan.lo < plan.hi) {
    const int64_t first = plan.bucketer->Start(plan.lo);
    const int64_t last = plan.bucketer->Start(plan.hi - 1);
    const double estimate = (static_cast<double>(last) - static_cast<double>(first)) /
                                static_cast<double>(plan.bucketer->MinWidth()) +
                            1;
    if (estimate <= static_cast<double>(ctx_->options().limits.max_rows)) {
      AppendBucketStarts(*plan.bucketer, first, last, &plan.dense_buckets);
    }
  }
  GPULSE_RETURN_IF_ERROR(ChooseTier(ctx_, *input_, plan_));
  if (ctx_->explain) {
    ctx_->plan_lines.push_back(std::string("  tier: ") +
                               (plan.tier < 0
                                    ? "raw (chunks, sealed head and head merged)"
                                    : storage::kTiers[plan.tier].name +
                                          std::string(plan.tally ? " tallies" : " rollups")) +
                               ": " + plan.tier_why);
  }
  MapSlots();
  rollup_parts_ = RollupPartsFor(plan);
  fixed_dense_ = plan.bucketer && plan.bucketer->Fixed() && !plan.dense_buckets.empty();
  ChooseCells();
  rollups_ = plan.tier >= 0 && !plan.tally;
  if (rollups_) {
    // The whole tier buckets [lo_t, hi_t); raw points before and after
    // them, or all of them when no bucket is whole.
    const int64_t tw = storage::kTiers[plan.tier].width_ns;
    lo_t_ = FloorMod(plan.lo, tw) == 0
                ? plan.lo
                : storage::NextWindowStart(storage::WindowStart(plan.lo, tw), tw);
    hi_t_ = storage::WindowStart(plan.hi, tw);
    edges_ = lo_t_ < hi_t_
                 ? std::array<std::pair<int64_t, int64_t>, 2>{{{plan.lo, lo_t_}, {hi_t_, plan.hi}}}
                 : std::array<std::pair<int64_t, int64_t>, 2>{{{plan.lo, plan.hi}, {0, 0}}};
  }
  // What a group's states hold, and whether the states keep every value
  // folded (a percentile sorts them at the end).
  const size_t buckets_a_group = std::max<size_t>(plan.dense_buckets.size(), 1);
  group_bytes_ = sizeof(GroupAcc) + 64 +
                 buckets_a_group * plan.slots.size() * (plan.use_cells ? 16 : sizeof(void*) + 64);
  keeps_values_ = std::any_of(plan.slots.begin(), plan.slots.end(), [](const AggSlot& slot) {
    switch (slot.spec.kind) {
      case AggKind::kMedian:
      case AggKind::kMode:
      case AggKind::kPercentile:
      case AggKind::kDistinct:
      case AggKind::kCountDistinct:
      case AggKind::kTop:
      case AggKind::kBottom:
        return true;
      default:
        return false;
    }
  });
  return Status::Ok();
}

void AggregateRun::MapSlots() {
  const Plan& plan = *plan_;
  const std::vector<std::string>& fields = plan.fields;
  if (plan.tier >= 0) {
    for (const AggSlot& slot : plan.slots) {
      if (slot.field >= 0) slot_fields_.push_back(fields[static_cast<size_t>(slot.field)]);
    }
    std::sort(slot_fields_.begin(), slot_fields_.end());
    slot_fields_.erase(std::unique(slot_fields_.begin(), slot_fields_.end()), slot_fields_.end());
  }
  slots_of_plan_field_.resize(fields.size());
  slots_of_field_.resize(slot_fields_.size());
  for (size_t slot = 0; slot < plan.slots.size(); ++slot) {
    const int f = plan.slots[slot].field;
    if (f < 0) continue;
    slots_of_plan_field_[static_cast<size_t>(f)].push_back(slot);
    if (plan.tier < 0) continue;
    const auto k =
        std::lower_bound(slot_fields_.begin(), slot_fields_.end(), fields[static_cast<size_t>(f)]) -
        slot_fields_.begin();
    slots_of_field_[static_cast<size_t>(k)].push_back(slot);
  }
}

// Cells (cells.h) when every aggregate folds into one and the buckets are
// fixed over a known range (or there is no GROUP BY time).
void AggregateRun::ChooseCells() {
  Plan& plan = *plan_;
  plan.use_cells = !plan.tally && !plan.multirow && (fixed_dense_ || !plan.bucketer) &&
                   std::all_of(plan.slots.begin(), plan.slots.end(),
                               [](const AggSlot& slot) { return IsCellAggregate(slot.spec); });
  if (!plan.use_cells) return;
  if (plan.bucketer) {
    plan.grid = {plan.dense_buckets.front(), plan.bucketer->Width(), plan.dense_buckets.size()};
  } else {
    plan.grid = {INT64_MIN, INT64_MAX, 1};  // one bucket holding all time
  }
  for (const AggSlot& slot : plan.slots) plan.specs.push_back(slot.spec);
}

// Counts, integer extremes and integer sums come out the same whatever the
// order the series fold in: then threads take series as they come free
// (Split::kDynamic); else each takes a block, merged in order.
bool AggregateRun::AnyOrder() const {
  return std::all_of(plan_->slots.begin(), plan_->slots.end(), [](const AggSlot& slot) {
    const AggSpec& spec = slot.spec;
    if (spec.kind == AggKind::kCount) return true;
    const bool integer = spec.type == FieldType::kInt || spec.type == FieldType::kUint;
    const bool exact = spec.kind == AggKind::kMin || spec.kind == AggKind::kMax ||
                       spec.kind == AggKind::kSpread || spec.kind == AggKind::kSum;
    return integer && exact && !spec.need_time;
  });
}

Status AggregateRun::Fold() {
  const Split split = AnyOrder() ? Split::kDynamic : Split::kBlocks;
  Status st;
  if (rollups_) {
    st = ParallelFor(
        ctx_, (series_.size() + kTierChunk - 1) / kTierChunk, &workers_,
        [&](size_t w, size_t c) { return Charged(w, [&] { return FoldTierChunk(w, c); }); },
        /*min_per_worker=*/1, split);
  } else {
    // Chunks as large as kRawChunk on a wide fold, of single series on a
    // narrow one (where a worker's share is a few series, each maybe long).
    const size_t chunk = std::clamp<size_t>(series_.size() / 64, 1, kRawChunk);
    st = ParallelFor(
        ctx_, (series_.size() + chunk - 1) / chunk, &workers_,
        [&](size_t w, size_t c) { return Charged(w, [&] { return FoldRawChunk(w, c, chunk); }); },
        /*min_per_worker=*/(8 + chunk - 1) / chunk, split);
  }
  GPULSE_RETURN_IF_ERROR(st);
  if (untallied_ > 0) {
    ctx_->notes.push_back(std::to_string(untallied_.load()) + " samples of values beyond the " +
                          std::to_string(storage::kTallyTop) +
                          " most frequent of their tier bucket are in no group (FROM \"raw\"." +
                          plan_->measurement + " counts them)");
  }
  return Status::Ok();
}

// Folds tier rows [begin, end) of slot_fields_[k] into g.
void AggregateRun::FoldRollups(GroupAcc* g, size_t k, const RollupColumn& r, size_t begin,
                               size_t end) {
  const Plan& plan = *plan_;
  if (plan.use_cells) {
    for (size_t slot : slots_of_field_[k]) {
      g->cells.AddRollups(plan.specs, plan.grid, slot, r, begin, end,
                          storage::kTiers[plan.tier].width_ns);
    }
    return;
  }
  if (fixed_dense_) {
    // Bucket numbers by one division, no Start/Next per row (tier rows are
    // often one a bucket).
    const int64_t first = plan.dense_buckets.front();
    const int64_t width = plan.bucketer->Width();
    size_t i0 = begin;
    while (i0 < end) {
      const int64_t d = r.bucket[i0] - first;
      const int64_t idx = d >= 0 ? d / width : -1;
      const int64_t next = first + (idx + 1) * width;
      size_t i1 = i0 + 1;
      while (i1 < end && r.bucket[i1] < next) ++i1;
      if (idx >= 0 && static_cast<size_t>(idx) < plan.dense_buckets.size()) {
        GroupAcc::States states = g->GetDense(plan, static_cast<size_t>(idx));
        for (size_t slot : slots_of_field_[k]) states[slot]->AddRollups(r, i0, i1);
      }
      i0 = i1;
    }
    return;
  }
  for (size_t slot : slots_of_field_[k]) {
    size_t i0 = begin;
    while (i0 < end) {
      int64_t b = INT64_MIN;
      size_t i1 = end;
      if (plan.bucketer) {
        b = plan.bucketer->Start(r.bucket[i0]);
        const int64_t next = plan.bucketer->Next(b);
        i1 = i0 + 1;
        while (i1 < end && r.bucket[i1] < next) ++i1;
      }
      g->Get(plan, b)[slot]->AddRollups(r, i0, i1);
      i0 = i1;
    }
  }
}

// A rollup plan's chunk of series: rollup rows read for the chunk at once
// (one pass over the catalog and the window cache a chunk, where one a
// series costs each series a lookup by key); the range's ends before the
// first and after the last whole tier bucket fold raw points, a series at a
// time.
Status AggregateRun::FoldTierChunk(size_t w, size_t c) {
  const Plan& plan = *plan_;
  std::array<const InSeries*, kTierChunk> chosen{};
  std::array<GroupAcc*, kTierChunk> group{};
  std::array<uint64_t, kTierChunk> points{};
  size_t n = 0;
  for (size_t i = c * kTierChunk; i < std::min(series_.size(), (c + 1) * kTierChunk); ++i) {
    const InSeries& in = series_[i];
    if (plan.condition) {
      const std::optional<bool> truth = TagTruth(*plan.condition, plan, in);
      if (truth && !*truth) continue;
    }
    for (const auto& [a, z] : edges_) {
      if (a >= z) continue;
      std::vector<Column> edge;
      GPULSE_RETURN_IF_ERROR(input_->Read(in, plan.fields, a, z, &edge));
      for (const Column& col : edge) points[n] += col.size();
      if (!group[n]) group[n] = GroupOf(w, in);
      FoldColumns(plan, group[n], edge);
    }
    chosen[n++] = &in;
  }
  if (lo_t_ < hi_t_ && n > 0) {
    GPULSE_RETURN_IF_ERROR(input_->ScanRollups(
        std::span<const InSeries* const>(chosen.data(), n), slot_fields_,
        static_cast<size_t>(plan.tier), lo_t_, hi_t_, rollup_parts_,
        [&](size_t s, size_t k, const RollupColumn& r, size_t begin, size_t end) {
          if (!group[s]) group[s] = GroupOf(w, *chosen[s]);
          points[s] += end - begin;
          FoldRollups(group[s], k, r, begin, end);
        }));
  }
  uint64_t read = 0, total = 0;
  for (size_t s = 0; s < n; ++s) {
    read += points[s] > 0;
    total += points[s];
  }
  if (total > 0) {
    ctx_->series_read.fetch_add(read);
    CountPoints(w, total);
  }
  return Status::Ok();
}

// A series' tally rows: each value's count in each tier bucket goes to the
// group of that value; counts past a bucket's top values (`other`) go to
// none.
Status AggregateRun::FoldTallies(size_t w, const InSeries& in) {
  const Plan& plan = *plan_;
  const std::string& field = plan.fields[static_cast<size_t>(plan.slots[0].field)];
  const GroupKey base = TagKeyOf(plan, in);
  uint64_t rows = 0;
  GPULSE_RETURN_IF_ERROR(input_->ScanTallies(
      in, std::span<const std::string>(&field, 1), static_cast<size_t>(plan.tier), plan.lo, plan.hi,
      [&](size_t, const storage::TallyColumn& r, size_t begin, size_t end) {
        rows += end - begin;
        for (size_t i = begin; i < end; ++i) {
          const int64_t b = plan.bucketer ? plan.bucketer->Start(r.bucket[i]) : INT64_MIN;
          for (uint32_t v = r.begin[i]; v < r.begin[i + 1]; ++v) {
            GroupKey key = base;
            key[plan.tally_dim] = r.values[v];
            GroupAcc::States states = partial_[w][key].Get(plan, b);
            for (size_t slot = 0; slot < plan.slots.size(); ++slot) {
              states[slot]->AddCount(r.value_count[v]);
            }
          }
          untallied_.fetch_add(r.other[i], std::memory_order_relaxed);
        }
      }));
  if (rows > 0) {
    ctx_->series_read.fetch_add(1);
    CountPoints(w, rows);
  }
  return Status::Ok();
}

// A series whose tags pass, of a plan with field tests: the points of the
// one field that pass its comparisons fold, read in place.
Status AggregateRun::FoldFiltered(size_t w, const InSeries& in) {
  const Plan& plan = *plan_;
  uint64_t points = 0;
  GroupAcc* g = nullptr;
  thread_local std::vector<uint32_t> kept;
  GPULSE_RETURN_IF_ERROR(input_->Scan(
      in, plan.fields, plan.lo, plan.hi,
      [&](size_t f, const Column& col, size_t begin, size_t end) {
        points += end - begin;
        if (static_cast<int>(f) != plan.filter_field) return;
        kept.clear();
        KeepPassing(col, begin, end, plan.field_tests, &kept);
        if (kept.empty()) return;
        if (g == nullptr) g = GroupOf(w, in);
        for (size_t slot = 0; slot < plan.slots.size(); ++slot) {
          FoldIndexes(plan, g, slot, col, kept);
        }
      },
      nullptr));
  if (points > 0) {
    ctx_->series_read.fetch_add(1);
    CountPoints(w, points);
  }
  return Status::Ok();
}

// A series read as rows joined across its fields: the condition on fields
// (unless its tags pass whatever the fields), and string-field groups, per
// row.
Status AggregateRun::FoldJoined(size_t w, const InSeries& in, bool tags_pass) {
  const Plan& plan = *plan_;
  std::vector<Column> cols;
  GPULSE_RETURN_IF_ERROR(input_->Read(in, plan.fields, plan.lo, plan.hi, &cols));
  uint64_t points = 0;
  for (const Column& c : cols) points += c.size();
  if (points == 0) return Status::Ok();
  ctx_->series_read.fetch_add(1);
  CountPoints(w, points);

  std::vector<int64_t> ts;
  std::vector<std::vector<int32_t>> pos;
  Join(cols, &ts, &pos);
  const GroupKey base = TagKeyOf(plan, in);
  std::map<GroupKey, std::vector<std::vector<uint32_t>>> picked;  // group -> slot -> positions
  for (size_t r = 0; r < ts.size(); ++r) {
    RowRef row{&in, &cols, &pos, r};
    if (!tags_pass && !IsTrue(EvalRow(*plan.condition, plan, row, ctx_->now_ns()))) continue;
    GroupKey key = base;
    for (size_t d = 0; d < plan.dims.size(); ++d) {
      const int f = plan.dim_field[d];
      if (f < 0) continue;
      const int32_t p = pos[static_cast<size_t>(f)][r];
      key[d] = p < 0 ? std::string() : cols[static_cast<size_t>(f)].strings[static_cast<size_t>(p)];
    }
    auto& lists = picked[key];
    lists.resize(plan.slots.size());
    for (size_t slot = 0; slot < plan.slots.size(); ++slot) {
      const int f = plan.slots[slot].field;
      if (f < 0) continue;
      const int32_t p = pos[static_cast<size_t>(f)][r];
      if (p >= 0) lists[slot].push_back(static_cast<uint32_t>(p));
    }
  }
  GroupMap& groups = partial_[w];
  for (auto& [key, lists] : picked) {
    GroupAcc& g = groups[key];
    for (size_t slot = 0; slot < lists.size(); ++slot) {
      const int f = plan.slots[slot].field;
      if (f >= 0 && !lists[slot].empty()) {
        FoldIndexes(plan, &g, slot, cols[static_cast<size_t>(f)], lists[slot]);
      }
    }
  }
  return Status::Ok();
}

// A chunk of series in order. Those whose every point counts (their tags
// pass, no field is grouped by) fold their runs in place, read together: one
// store iterator for the lot, where one a series cost a fleet-wide fold at
// 100,000 series more than the fold itself (docs/performance.md, session
// 19). The others go one by one between them, so that each worker still
// folds its series in order.
Status AggregateRun::FoldRawChunk(size_t w, size_t c, size_t chunk) {
  const Plan& plan = *plan_;
  // The visitors capture one pointer, which std::function keeps inline: no
  // allocation per chunk.
  struct Batch {
    const Plan* plan;
    const std::vector<std::vector<size_t>>* slots_of;
    GroupMap* groups;
    std::array<const InSeries*, kRawChunk> in{};
    std::array<GroupAcc*, kRawChunk> g{};
    std::array<uint64_t, kRawChunk> points{};
    size_t n = 0;
    GroupAcc* Group(size_t s) {
      if (g[s] == nullptr) g[s] = &(*groups)[TagKeyOf(*plan, *in[s])];
      return g[s];
    }
  } batch{plan_, &slots_of_plan_field_, &partial_[w]};
  // Cells fold the read cache's packed windows as they are.
  const Db::SeriesPackedVisitor packed =
      [b = &batch](size_t s, size_t f, const storage::PackedRun& run, size_t begin, size_t end) {
        b->points[s] += end - begin;
        GroupAcc* g = b->Group(s);
        for (size_t slot : (*b->slots_of)[f]) {
          g->cells.AddPacked(b->plan->specs, b->plan->grid, slot, run, begin, end);
        }
      };
  const Db::SeriesRunVisitor runs = [b = &batch](size_t s, size_t f, const Column& col,
                                                 size_t begin, size_t end) {
    b->points[s] += end - begin;
    GroupAcc* g = b->Group(s);
    for (size_t slot : (*b->slots_of)[f]) FoldSlotRange(*b->plan, g, slot, col, begin, end);
  };
  const auto scan_batch = [&]() -> Status {
    if (batch.n == 0) return Status::Ok();
    GPULSE_RETURN_IF_ERROR(input_->Scan(std::span<const InSeries* const>(batch.in.data(), batch.n),
                                        plan.fields, plan.lo, plan.hi, runs,
                                        plan.use_cells ? &packed : nullptr));
    for (size_t s = 0; s < batch.n; ++s) {
      if (batch.points[s] > 0) {
        ctx_->series_read.fetch_add(1);
        CountPoints(w, batch.points[s]);
      }
      batch.g[s] = nullptr;
      batch.points[s] = 0;
    }
    batch.n = 0;
    return Status::Ok();
  };
  for (size_t i = c * chunk; i < std::min(series_.size(), (c + 1) * chunk); ++i) {
    std::optional<bool> truth = true;
    if (plan.condition) truth = TagTruth(*plan.condition, plan, series_[i]);
    if (truth && !*truth) continue;
    if (truth && !plan.tally && !plan.field_dims) {
      batch.in[batch.n++] = &series_[i];
      continue;
    }
    GPULSE_RETURN_IF_ERROR(scan_batch());
    if (plan.tally) {
      GPULSE_RETURN_IF_ERROR(FoldTallies(w, series_[i]));
    } else if (!truth && plan.filter_field >= 0) {
      GPULSE_RETURN_IF_ERROR(FoldFiltered(w, series_[i]));
    } else {
      GPULSE_RETURN_IF_ERROR(FoldJoined(w, series_[i], truth.has_value()));
    }
  }
  return scan_batch();
}

// Merges the workers' groups in worker order: series order under
// Split::kBlocks; under kDynamic the order does not change the answer. A
// group only this worker saw moves over whole, its map node spliced (with
// per-series groups that is all of them); the groups both saw stay behind in
// partial_[w] and merge state by state.
GroupMap AggregateRun::Merge() {
  const Plan& plan = *plan_;
  GroupMap groups = std::move(partial_[0]);
  for (size_t w = 1; w < partial_.size(); ++w) {
    groups.merge(partial_[w]);
    for (auto& [key, acc] : partial_[w]) {
      GroupAcc& into = groups.at(key);
      if (plan.use_cells) {
        into.cells.Merge(plan.specs, plan.grid, &acc.cells);
        continue;
      }
      acc.ForEach(plan, [&](int64_t b, GroupAcc::States states) {
        GroupAcc::States mine = into.Get(plan, b);
        for (size_t k = 0; k < plan.slots.size(); ++k) mine[k]->Merge(states[k].get());
      });
    }
  }
  return groups;
}

// The buckets every group answers for: those of the range (of the data,
// where the range leaves a side open), or with FILL(none) those any group
// has points in.
Status AggregateRun::AllBuckets(GroupMap& groups, std::vector<int64_t>* out) {
  const Plan& plan = *plan_;
  if (plan.bucketer && !groups.empty()) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (auto it = groups.begin(); it != groups.end() && !(plan.has_lo && plan.has_hi); ++it) {
      it->second.ForEach(plan, [&](int64_t b, GroupAcc::States) {
        first = std::min(first, b);
        last = std::max(last, b);
      });
    }
    if (plan.has_lo) first = plan.bucketer->Start(plan.lo);
    if (plan.has_hi) last = plan.bucketer->Start(plan.hi - 1);
    if (first <= last && plan.fill != FillKind::kNone) {
      const double estimate = (static_cast<double>(last) - static_cast<double>(first)) /
                                  static_cast<double>(plan.bucketer->MinWidth()) +
                              1;
      const uint64_t max_rows = ctx_->options().limits.max_rows;
      if (estimate * static_cast<double>(groups.size()) > static_cast<double>(max_rows)) {
        return Status::ResourceExhausted(
            "GROUP BY time(" + plan.interval_text + ") over " + RangeText(plan) + " makes about " +
            std::to_string(static_cast<uint64_t>(estimate)) + " buckets for each of " +
            std::to_string(groups.size()) + " groups, more than " + std::to_string(max_rows) +
            " rows (limit max_rows); narrow the time range or widen the interval");
      }
      AppendBucketStarts(*plan.bucketer, first, last, out);
    } else if (first <= last) {
      for (auto& [key, acc] : groups) {
        acc.ForEach(plan, [&](int64_t b, GroupAcc::States) {
          if (b >= first && b <= last) out->push_back(b);
        });
      }
      std::sort(out->begin(), out->end());
      out->erase(std::unique(out->begin(), out->end()), out->end());
    }
  }
  if (ctx_->explain) {
    ctx_->plan_lines.push_back("  groups: " + std::to_string(groups.size()) +
                               (plan.bucketer
                                    ? ", buckets per group: " + std::to_string(out->size()) +
                                          " of time(" + plan.interval_text + ")"
                                    : ""));
  }
  return Status::Ok();
}

// Each group's rows, then in group order. On the worker threads when the
// answers are costly (a percentile selects among many values), else on this
// thread: cheap answers are mostly allocation, and threads that allocate
// wait on each other in the server's one malloc arena (measured: max per
// node at 5-minute grain over a fleet-day 3.1-3.5 ms serial, 4.2-5.1 ms on
// two threads).
Status AggregateRun::Answer(GroupMap& groups, const std::vector<int64_t>& all_buckets,
                            std::vector<ResultSeries>* out, std::vector<ColumnSeries>* columns) {
  const Plan& plan = *plan_;
  const bool costly = std::any_of(plan.slots.begin(), plan.slots.end(), [](const auto& slot) {
    const AggKind k = slot.spec.kind;
    return k == AggKind::kMedian || k == AggKind::kMode || k == AggKind::kPercentile;
  });
  const AnswerShape shape = AnswerShapeOf(s_, plan, columns != nullptr, ctx_->answers_by_column);
  std::vector<std::pair<const GroupKey*, GroupAcc*>> order;
  order.reserve(groups.size());
  for (auto& [key, acc] : groups) order.emplace_back(&key, &acc);
  // Appends a group's answer; past max_rows the statement fails there (on
  // this thread, before the groups after it are answered).
  uint64_t rows_out = 0;
  auto take = [&](GroupAnswer& a) -> Status {
    if (a.rows == 0) return Status::Ok();
    rows_out += a.rows;
    if (rows_out > ctx_->options().limits.max_rows) {
      return Status::ResourceExhausted("the answer has more than " +
                                       std::to_string(ctx_->options().limits.max_rows) +
                                       " rows (limit max_rows)");
    }
    uint64_t bytes = 0;
    if (columns != nullptr) {
      for (const Column& c : a.columns.values) bytes += ColumnBytes(c);
    } else {
      bytes = SeriesBytes(a.series);
    }
    GPULSE_RETURN_IF_ERROR(ctx_->Charge(bytes, "the answer's rows"));
    if (columns != nullptr) {
      columns->push_back(std::move(a.columns));
    } else {
      out->push_back(std::move(a.series));
    }
    return Status::Ok();
  };
  if (!costly) {
    for (const auto& [key, acc] : order) {
      GroupAnswer a;
      GPULSE_RETURN_IF_ERROR(AnswerGroup(s_, plan, *key, *acc, all_buckets, shape, &a));
      GPULSE_RETURN_IF_ERROR(take(a));
    }
    return Status::Ok();
  }
  std::vector<GroupAnswer> answers(order.size());
  GPULSE_RETURN_IF_ERROR(ParallelFor(
      ctx_, order.size(), &workers_,
      [&](size_t, size_t i) -> Status {
        return AnswerGroup(s_, plan, *order[i].first, *order[i].second, all_buckets, shape,
                           &answers[i]);
      },
      /*min_per_worker=*/1, Split::kDynamic));
  for (GroupAnswer& a : answers) GPULSE_RETURN_IF_ERROR(take(a));
  return Status::Ok();
}

}  // namespace

Status RunAggregate(ExecContext* ctx, const SelectStatement& s, Input* input, Plan* plan,
                    const std::vector<InSeries>& series, std::vector<ResultSeries>* out,
                    std::vector<ColumnSeries>* columns) {
  AggregateRun run(ctx, s, input, plan, series);
  return run.Run(out, columns);
}

}  // namespace gpulse::query
