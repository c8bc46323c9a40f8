#include "query/exec/select.h"

#include <algorithm>
#include <memory>
#include <string>

#include "query/exec/aggregate_run.h"
#include "query/exec/raw.h"
#include "query/exec/rows.h"
#include "query/plan/plan.h"
#include "query/plan/plan_cache.h"
#include "query/runtime/format.h"
#include "query/runtime/inputs.h"
#include "query/runtime/result.h"
#include "query/syntax/regex.h"

namespace gpulse::query {

namespace {

// EXPLAIN's lines for a plan over measurement m and its series.
void ExplainPlan(ExecContext* ctx, const Plan& plan, const std::string& m, size_t series) {
  std::string fields;
  for (size_t f = 0; f < plan.fields.size(); ++f) {
    fields +=
        (f ? ", " : "") + plan.fields[f] + " (" + storage::FieldTypeName(plan.field_types[f]) + ")";
  }
  std::string eq;
  for (const TagMatcher& t : plan.eq) {
    eq += (eq.empty() ? "" : " AND ") + t.key + " = '" + t.value + "'";
  }
  ctx->plan_lines.push_back("measurement " + m + ": " + std::to_string(series) +
                            " series after the tag index" + (eq.empty() ? "" : " (" + eq + ")"));
  ctx->plan_lines.push_back("  fields read: " + (fields.empty() ? "none" : fields));
  ctx->plan_lines.push_back("  time range: " + RangeText(plan));
  ctx->plan_lines.push_back(std::string("  kind: ") +
                            (plan.aggregate ? "aggregate, " + std::to_string(plan.slots.size()) +
                                                  " aggregate state(s) per group and bucket"
                                            : "raw rows"));
  if (!plan.aggregate) {
    ctx->plan_lines.push_back("  tier: raw (chunks, sealed head and head merged)");
  }
}

// The series of measurement m that the plan's tag index terms match and,
// for a condition of tags alone, that pass it.
Status ListSeries(Input* input, const std::string& m, const Plan& plan,
                  std::shared_ptr<const std::vector<InSeries>>* listed) {
  auto fresh = std::make_shared<std::vector<InSeries>>();
  GPULSE_RETURN_IF_ERROR(input->ListSeries(m, plan.eq, fresh.get()));
  if (plan.tags_only) {
    std::erase_if(*fresh, [&](const InSeries& in) {
      return !TagTruth(*plan.condition, plan, in).value_or(true);
    });
  }
  *listed = std::move(fresh);
  return Status::Ok();
}

// Runs `s` over the measurements `from` names in `input`. With `plans` (the
// input is the Db's), plans are kept there and reused. The answer goes
// to `out`, or as columns to `columns` when it is not null.
Status RunOnInput(ExecContext* ctx, const SelectStatement& s, Input* input, const Measurement& from,
                  PlanCache* plans, std::vector<ResultSeries>* out,
                  std::vector<ColumnSeries>* columns) {
  std::vector<std::string> names;
  if (from.regex) {
    std::vector<std::string> all;
    GPULSE_RETURN_IF_ERROR(input->Measurements(&all));
    Result<Regex> re = CompileRegex(*from.regex);
    if (!re.ok()) return re.status();
    for (const std::string& n : all) {
      if (RegexSearch(**re, n)) names.push_back(n);
    }
  } else {
    names.push_back(from.name);
  }
  for (const std::string& m : names) {
    // A kept plan of this statement answers when the catalog is as it was
    // when the plan was made; else the plan is made, and kept.
    uint64_t version = 0;
    if (plans != nullptr) GPULSE_RETURN_IF_ERROR(ctx->db()->CatalogVersion(m, &version));
    const KeptPlan kept = plans != nullptr ? plans->Find(s, m, from.retention_policy,
                                                         ctx->options().database, version)
                                           : KeptPlan();
    Plan plan;
    if (kept.plan) {
      plan = *kept.plan;
      if (!kept.fixed_range) {  // now() moved
        TimeRange range;
        GPULSE_RETURN_IF_ERROR(ExtractTime(*s.condition, ctx->now_ns(), &range, nullptr));
        SetRange(range, &plan);
      }
    } else {
      plan.forced_tier = from.retention_policy;
      GPULSE_RETURN_IF_ERROR(BuildPlan(ctx, s, input, m, &plan));
    }
    std::shared_ptr<const std::vector<InSeries>> listed = kept.series;
    if (!listed) GPULSE_RETURN_IF_ERROR(ListSeries(input, m, plan, &listed));
    if (plans != nullptr && !kept.plan) {
      plans->Keep(s, m, ctx->options().database, version, plan, listed);
    }
    // Every listed series passes a condition of tags: the runs test none.
    if (plan.tags_only) plan.condition = nullptr;
    const std::vector<InSeries>& series = *listed;
    if (series.size() > ctx->options().limits.max_series) {
      return Status::ResourceExhausted("the query matches " + std::to_string(series.size()) +
                                       " series of " + m + ", more than " +
                                       std::to_string(ctx->options().limits.max_series) +
                                       " (limit max_series); add a tag condition");
    }
    if (ctx->explain) ExplainPlan(ctx, plan, m, series.size());
    if (plan.aggregate) {
      GPULSE_RETURN_IF_ERROR(RunAggregate(ctx, s, input, &plan, series, out, columns));
    } else if (columns != nullptr) {
      std::vector<ResultSeries> rows;
      GPULSE_RETURN_IF_ERROR(RunRaw(ctx, s, input, &plan, series, &rows));
      for (ResultSeries& rs : rows) columns->push_back(ToColumns(std::move(rs)));
    } else if (ctx->emit && !ctx->explain && !s.limit && !s.offset && !s.slimit && !s.soffset) {
      // LIMIT, OFFSET and their series forms count across the whole answer:
      // such a statement is answered whole.
      GPULSE_RETURN_IF_ERROR(StreamRaw(ctx, s, input, plan, series));
    } else {
      GPULSE_RETURN_IF_ERROR(RunRaw(ctx, s, input, &plan, series, out));
    }
  }
  return Status::Ok();
}

// SOFFSET / SLIMIT over a statement's series.
template <typename T>
void SeriesOffsetAndLimit(const SelectStatement& s, std::vector<T>* series) {
  const size_t soff = static_cast<size_t>(std::max<int64_t>(0, s.soffset.value_or(0)));
  if (soff > 0) {
    series->erase(series->begin(),
                  series->begin() + static_cast<ptrdiff_t>(std::min(soff, series->size())));
  }
  if (s.slimit && *s.slimit > 0 && series->size() > static_cast<size_t>(*s.slimit)) {
    series->resize(static_cast<size_t>(*s.slimit));
  }
}

// RunSelect, its answer as rows (`out`) or, when `columns` is not null, as
// columns (a subquery's).
Status RunSelectInto(ExecContext* ctx, const SelectStatement& s, std::vector<ResultSeries>* out,
                     std::vector<ColumnSeries>* columns, std::vector<std::string>* notes) {
  std::vector<ResultSeries> series;
  std::vector<ColumnSeries> series_columns;
  std::vector<ColumnSeries>* into = columns != nullptr ? &series_columns : nullptr;
  for (const Source& src : s.sources) {
    if (src.subquery) {
      std::vector<ColumnSeries> inner;
      GPULSE_RETURN_IF_ERROR(RunSelectInto(ctx, *src.subquery, nullptr, &inner, notes));
      const std::unique_ptr<Input> input = AnswerInput(std::move(inner));
      std::vector<std::string> names;
      GPULSE_RETURN_IF_ERROR(input->Measurements(&names));
      for (const std::string& n : names) {
        Measurement m;
        m.name = n;
        GPULSE_RETURN_IF_ERROR(RunOnInput(ctx, s, input.get(), m, nullptr, &series, into));
      }
    } else {
      const std::unique_ptr<Input> input = DbSeriesInput(ctx);
      GPULSE_RETURN_IF_ERROR(RunOnInput(ctx, s, input.get(), src.measurement,
                                        ctx->explain ? nullptr : ctx->plan_cache, &series, into));
    }
  }
  if (columns != nullptr) {
    SeriesOffsetAndLimit(s, &series_columns);
    for (ColumnSeries& cs : series_columns) columns->push_back(std::move(cs));
    return Status::Ok();
  }
  SeriesOffsetAndLimit(s, &series);
  for (ResultSeries& rs : series) out->push_back(std::move(rs));
  return Status::Ok();
}

}  // namespace

Status RunSelect(ExecContext* ctx, const SelectStatement& s, std::vector<ResultSeries>* out,
                 std::vector<std::string>* notes) {
  return RunSelectInto(ctx, s, out, nullptr, notes);
}

Status RunInnerSelect(Db* db, const QueryOptions& options, int64_t now_ns, const SelectStatement& s,
                      std::vector<ResultSeries>* out, std::vector<std::string>* notes) {
  QueryOptions in_rows = options;
  in_rows.sink = nullptr;
  in_rows.answers_by_column = false;
  ExecContext ctx(db, in_rows, now_ns);
  GPULSE_RETURN_IF_ERROR(RunSelect(&ctx, s, out, notes));
  notes->insert(notes->end(), ctx.notes.begin(), ctx.notes.end());
  const std::vector<std::string> damage = ctx.DamageNotes();
  notes->insert(notes->end(), damage.begin(), damage.end());
  return Status::Ok();
}

}  // namespace gpulse::query
