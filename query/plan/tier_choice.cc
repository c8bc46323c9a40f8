#include "query/plan/tier_choice.h"

#include <algorithm>
#include <string>

#include "query/runtime/format.h"
#include "query/runtime/result.h"
#include "storage/rollup.h"

namespace gpulse::query {

namespace {

// Why no tier can answer the query whatever its buckets; empty when one can.
std::string TierObstacle(const Plan& plan, const Input& input) {
  if (input.Tiers() == 0) return "no tiers (a subquery's answer, or Options::tiers empty)";
  if (plan.field_dims) return "GROUP BY a string field needs the rows";
  if (plan.condition && NamesField(*plan.condition, plan)) {
    return "the WHERE condition names a field";
  }
  if (!plan.has_lo || !plan.has_hi) return "the time range is not bounded on both sides";
  for (const AggSlot& slot : plan.slots) {
    if (slot.field < 0) continue;
    if (!storage::HasRollups(slot.spec.type)) return "tiers hold numeric fields only";
    switch (slot.spec.kind) {
      case AggKind::kCount:
      case AggKind::kSum:
      case AggKind::kMean:
      case AggKind::kFirst:
      case AggKind::kLast:
        break;
      case AggKind::kMin:
      case AggKind::kMax:
      case AggKind::kSpread:
      case AggKind::kMedian:
      case AggKind::kPercentile:
        // A lone selector answers its point's time, unless GROUP BY time
        // answers bucket starts.
        if (slot.spec.need_time && !plan.bucketer) {
          return "the selected point's own time needs the rows";
        }
        break;
      default:
        return "tiers keep count, sum, mean, min, max, spread, first, last and quantiles only";
    }
  }
  return {};
}

// Whether tier buckets of `width` tile the query's GROUP BY time buckets
// (the range's ends need not be on the tier's grid: the parts of the range
// before the first and after the last whole tier bucket are read raw).
bool Tiles(const Plan& plan, int64_t width) {
  if (!plan.bucketer) return true;
  if (plan.bucketer->Fixed()) {
    return plan.bucketer->Width() % width == 0 &&
           FloorMod(plan.bucketer->Start(plan.lo), width) == 0;
  }
  if (plan.dense_buckets.empty()) return false;
  for (int64_t b : plan.dense_buckets) {
    if (FloorMod(b, width) != 0) return false;
  }
  return true;
}

// Whether a slot asks for a quantile of a field (which only the sketch tier
// answers from rows).
bool AsksQuantiles(const Plan& plan) {
  for (const AggSlot& slot : plan.slots) {
    if (slot.field >= 0 &&
        (slot.spec.kind == AggKind::kMedian || slot.spec.kind == AggKind::kPercentile)) {
      return true;
    }
  }
  return false;
}

// When the range reaches before what the retention keeps of the data chosen
// (raw or plan->tier), a note says so, and what could read further back
// (`tiers`: the kept tiers' bits).
void NoteRetention(ExecContext* ctx, const Plan& plan, uint32_t tiers) {
  const int64_t since = ctx->db()->RetainedSince(plan.tier, ctx->now_ns(), ctx->options().database);
  if (since == INT64_MIN || plan.lo >= since) return;
  const std::string kind =
      plan.tier < 0 ? "raw points" : std::string(storage::kTiers[plan.tier].name) + " rows";
  std::string note = "the range reaches back before what the retention keeps of the " + kind +
                     " (from " + FormatValue(QueryValue(since), true, TimeFormat::kRfc3339) +
                     " on)";
  if (plan.tier >= 0) {
    note += "; coarser GROUP BY time buckets read a tier that may keep more";
  } else if (tiers != 0 && AsksQuantiles(plan)) {
    // A quantile sends the whole statement to raw unless the sketch tier
    // tiles it; its other aggregates alone would read a finer tier.
    if (tiers & (1u << storage::kSketchTier)) {
      note += std::string("; quantiles GROUP BY time(1d) or coarser read the ") +
              storage::kTiers[storage::kSketchTier].name + " tier's sketches, which may keep more";
    }
    note += "; the other aggregates, asked without a quantile, read the tiers";
  } else if (tiers != 0) {
    note += "; GROUP BY time(1h) or coarser reads the tiers, which may keep more";
  }
  if (std::find(ctx->notes.begin(), ctx->notes.end(), note) == ctx->notes.end()) {
    ctx->notes.push_back(note);
  }
}

// count(f) GROUP BY f (and tags, and time) of one string field f with a
// tag-only WHERE and a bounded range: what tier tallies answer. f's place
// among the dims, or -1.
int TallyDim(const Plan& plan) {
  if (!plan.field_dims || plan.slots.empty() || !plan.has_lo || !plan.has_hi) return -1;
  if (plan.condition && NamesField(*plan.condition, plan)) return -1;
  int field = -1;
  for (const AggSlot& slot : plan.slots) {
    if (slot.field < 0 || slot.spec.kind != AggKind::kCount ||
        slot.spec.type != FieldType::kString || (field >= 0 && slot.field != field)) {
      return -1;
    }
    field = slot.field;
  }
  int dim = -1;
  for (size_t d = 0; d < plan.dims.size(); ++d) {
    if (plan.dim_field[d] < 0) continue;
    if (plan.dim_field[d] != field || dim >= 0) return -1;
    dim = static_cast<int>(d);
  }
  return dim;
}

}  // namespace

// Picks the coarsest tier whose buckets tile the query's (or the one FROM
// names); plan->tier stays -1 for raw. An error only for a forced tier that
// cannot answer.
Status ChooseTier(ExecContext* ctx, const Input& input, Plan* plan) {
  const std::string& forced = plan->forced_tier;
  if (forced == "raw") {
    plan->tier_why = "FROM names it";
    return Status::Ok();
  }
  int forced_index = -1;
  if (!forced.empty() && forced != "autogen") {
    for (size_t t = 0; t < storage::kTierCount; ++t) {
      if (forced == storage::kTiers[t].name) forced_index = static_cast<int>(t);
    }
    if (forced_index < 0) {
      return Status::InvalidArgument("no tier (retention policy) named \"" + forced +
                                     "\": raw, 5m, 1h, 1d, or autogen for the automatic choice");
    }
    if (!(input.Tiers() & (1u << forced_index))) {
      return Status::InvalidArgument("tier " + forced + " is not kept (storage.tiers)");
    }
  }
  const bool quantiles = AsksQuantiles(*plan);
  // Samples per value of a string field: the tallies, when the range lies
  // on the tier's grid (no raw ends: they would need the rows).
  if (const int dim = input.Tiers() != 0 ? TallyDim(*plan) : -1; dim >= 0) {
    for (int t = static_cast<int>(storage::kTierCount) - 1; t >= 0; --t) {
      if ((forced_index >= 0 && t != forced_index) || !(input.Tiers() & (1u << t))) continue;
      const int64_t w = storage::kTiers[t].width_ns;
      if (FloorMod(plan->lo, w) != 0 || FloorMod(plan->hi, w) != 0 || !Tiles(*plan, w)) continue;
      plan->tier = t;
      plan->tally = true;
      plan->tally_dim = static_cast<size_t>(dim);
      plan->tier_why =
          "count() of a string field by its values: the coarsest tier's tallies whose buckets "
          "tile the GROUP BY time buckets, with the range on its grid";
      NoteRetention(ctx, *plan, input.Tiers());
      return Status::Ok();
    }
  }
  const std::string obstacle = TierObstacle(*plan, input);
  if (!obstacle.empty()) {
    if (forced_index >= 0) {
      return Status::InvalidArgument("tier " + forced + " cannot answer this query: " + obstacle);
    }
    plan->tier_why = obstacle;
    if (input.Tiers() != 0) NoteRetention(ctx, *plan, input.Tiers());
    return Status::Ok();
  }
  const char* sketch_tier = storage::kTiers[storage::kSketchTier].name;
  if (quantiles && forced_index >= 0 && !storage::KeepsSketches(forced_index)) {
    return Status::InvalidArgument("tier " + forced +
                                   " cannot answer this query: quantiles need sketches, which only "
                                   "the " +
                                   sketch_tier +
                                   " tier keeps (FROM \"raw\" reads them "
                                   "exactly)");
  }
  // Raw points the retention deleted: a tier answers even when the range's
  // raw ends would be large.
  const bool raw_short =
      ctx->db()->RetainedSince(-1, ctx->now_ns(), ctx->options().database) > plan->lo;
  for (int t = static_cast<int>(storage::kTierCount) - 1; t >= 0; --t) {
    if (forced_index >= 0 && t != forced_index) continue;
    if (!(input.Tiers() & (1u << t))) continue;
    if (quantiles && !storage::KeepsSketches(t)) continue;
    // The raw edges of a range off the tier's grid: a finer tier is better
    // when they are more than an eighth of the range.
    const int64_t w = storage::kTiers[t].width_ns;
    const double edges = static_cast<double>(FloorMod(w - FloorMod(plan->lo, w), w)) +
                         static_cast<double>(FloorMod(plan->hi, w));
    const double span = static_cast<double>(plan->hi) - static_cast<double>(plan->lo);
    if (forced_index < 0 && edges * 8 > span && !raw_short) continue;
    if (Tiles(*plan, w)) {
      plan->tier = t;
      plan->tier_why = forced_index >= 0 ? "FROM names it"
                                         : "the coarsest tier whose buckets tile the GROUP BY "
                                           "time buckets, with the range's ends on its grid or "
                                           "within an eighth of the range of it";
      if (FloorMod(plan->lo, w) != 0 || FloorMod(plan->hi, w) != 0) {
        plan->tier_why += "; the range's ends off the grid are read raw";
      }
      break;
    }
  }
  if (plan->tier < 0) {
    if (forced_index >= 0) {
      return Status::InvalidArgument("tier " + forced +
                                     " cannot answer this query: its buckets do not tile the "
                                     "GROUP BY time buckets");
    }
    if (!quantiles) {
      plan->tier_why =
          "no tier's buckets tile the GROUP BY time buckets with the range's ends near its grid";
    } else if (!(input.Tiers() & (1u << storage::kSketchTier))) {
      plan->tier_why = std::string("quantiles need sketches, which only the ") + sketch_tier +
                       " tier keeps, and it is not kept (storage.tiers)";
    } else {
      plan->tier_why = std::string("quantiles need sketches, which only the ") + sketch_tier +
                       " tier keeps, and its buckets do not tile the GROUP BY time buckets with "
                       "the range's ends near its grid";
    }
    NoteRetention(ctx, *plan, input.Tiers());
    return Status::Ok();
  }
  if (raw_short) plan->tier_why += "; raw points before the range's start are past retention";
  NoteRetention(ctx, *plan, input.Tiers());
  if (quantiles) {
    const std::string note = std::string("approximate: quantiles from the ") +
                             storage::kTiers[plan->tier].name +
                             " tier's sketches, within 1% of the exact value (FROM \"raw\"." +
                             plan->measurement + " for the exact one)";
    if (std::find(ctx->notes.begin(), ctx->notes.end(), note) == ctx->notes.end()) {
      ctx->notes.push_back(note);
    }
  }
  return Status::Ok();
}

// The rollup parts the slots need.
uint32_t RollupPartsFor(const Plan& plan) {
  uint32_t parts = 0;
  for (const AggSlot& slot : plan.slots) {
    switch (slot.spec.kind) {
      case AggKind::kSum:
      case AggKind::kMean:
        parts |= storage::kRollupSum;
        break;
      case AggKind::kMin:
      case AggKind::kMax:
      case AggKind::kSpread:
        parts |= storage::kRollupMinMax;
        break;
      case AggKind::kFirst:
      case AggKind::kLast:
        parts |= storage::kRollupFirstLast;
        break;
      case AggKind::kMedian:
      case AggKind::kPercentile:
        parts |= storage::kRollupSketch | storage::kRollupMinMax;
        break;
      default:
        break;
    }
  }
  return parts;
}

}  // namespace gpulse::query
