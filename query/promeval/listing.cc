#include "query/promeval/listing.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "query/promeval/select.h"
#include "query/promql/parser.h"
#include "query/runtime/context.h"
#include "query/runtime/inputs.h"
#include "query/runtime/query_memory.h"

namespace gpulse::query::promeval {

namespace {

// One listing's context, inputs and series source, over a memory budget
// of its own when the caller brought none.
class Listing {
 public:
  Listing(Db* db, const QueryOptions& options)
      : options_(WithMemory(options)),
        ctx_(db, options_, 0),
        input_(DbSeriesInput(&ctx_)),
        source_(&ctx_, input_.get()) {}

  ExecContext& ctx() { return ctx_; }
  Input& input() { return *input_; }
  SeriesSource& source() { return source_; }
  const QueryOptions& options() const { return options_; }

  // The tag scopes the listing may see: its database, each database the
  // token may read, or everything.
  std::vector<std::vector<TagMatcher>> Scopes() const {
    if (!options_.database.empty()) return {{{"db", options_.database}}};
    if (!options_.readable_databases) return {{}};
    std::vector<std::vector<TagMatcher>> scopes;
    for (const std::string& name : *options_.readable_databases) scopes.push_back({{"db", name}});
    return scopes;
  }
  // The db label is hidden when the listing is of one database.
  bool Hidden(std::string_view label) const { return label == "db" && !options_.database.empty(); }

 private:
  QueryOptions WithMemory(const QueryOptions& options) {
    QueryOptions out = options;
    if (out.memory == nullptr) {
      memory_ = std::make_unique<QueryMemory>(options.limits.max_memory_bytes, nullptr);
      out.memory = memory_.get();
    }
    return out;
  }

  std::unique_ptr<QueryMemory> memory_;
  QueryOptions options_;
  ExecContext ctx_;
  std::unique_ptr<Input> input_;
  SeriesSource source_;
};

// The label sets of the series any match[] selects, distinct.
Status MatchedSets(Listing* listing, const ListingRequest& request, std::vector<Labels>* out,
                   PromFailure* failure) {
  std::vector<std::unique_ptr<promql::Expr>> selectors;
  for (const std::string& m : request.matches) {
    auto parsed = promql::ParseSeriesSelector(m);
    if (!parsed.ok()) {
      *failure = PromFailure::kParse;
      return Status::InvalidArgument("invalid parameter \"match[]\": " + parsed.status().message());
    }
    selectors.push_back(std::move(parsed).value());
  }
  *failure = PromFailure::kEval;
  std::vector<Labels> sets;
  for (const auto& s : selectors) {
    GPULSE_RETURN_IF_ERROR(
        listing->source().LabelSets(s->matchers, request.start, request.end, &sets));
  }
  std::unordered_set<std::string> seen;
  for (Labels& l : sets) {
    if (seen.insert(LabelsKey(l)).second) out->push_back(std::move(l));
  }
  return Status::Ok();
}

// Whether `measurement` has a series in one of the scopes.
Status InScope(Listing* listing, const std::string& measurement, bool* any) {
  *any = false;
  for (const auto& scope : listing->Scopes()) {
    uint64_t count = 0;
    GPULSE_RETURN_IF_ERROR(listing->ctx().db()->CountSeries(measurement, scope, &count));
    if (count > 0) *any = true;
  }
  return Status::Ok();
}

template <typename T>
void Limit(size_t limit, std::vector<T>* out) {
  if (limit > 0 && out->size() > limit) out->resize(limit);
}

}  // namespace

Status ListLabelSets(Db* db, const ListingRequest& request, const QueryOptions& options,
                     std::vector<Labels>* out, PromFailure* failure) {
  *failure = PromFailure::kEval;
  GPULSE_RETURN_IF_ERROR(CheckReach(options));
  Listing listing(db, options);
  GPULSE_RETURN_IF_ERROR(MatchedSets(&listing, request, out, failure));
  std::sort(out->begin(), out->end());
  Limit(request.limit, out);
  *failure = PromFailure::kNone;
  return Status::Ok();
}

Status ListLabelNames(Db* db, const ListingRequest& request, const QueryOptions& options,
                      std::vector<std::string>* out, PromFailure* failure) {
  *failure = PromFailure::kEval;
  GPULSE_RETURN_IF_ERROR(CheckReach(options));
  Listing listing(db, options);
  std::set<std::string> names;
  if (!request.matches.empty()) {
    std::vector<Labels> sets;
    GPULSE_RETURN_IF_ERROR(MatchedSets(&listing, request, &sets, failure));
    for (const Labels& l : sets) {
      for (const Label& label : l) names.insert(label.name);
    }
  } else {
    std::vector<std::string> measurements;
    GPULSE_RETURN_IF_ERROR(db->ListMeasurements(&measurements));
    for (const std::string& m : measurements) {
      bool any;
      GPULSE_RETURN_IF_ERROR(InScope(&listing, m, &any));
      std::vector<FieldInfo> fields;
      GPULSE_RETURN_IF_ERROR(listing.input().Fields(m, &fields));
      const bool numeric = std::any_of(fields.begin(), fields.end(), [](const FieldInfo& f) {
        return f.type != FieldType::kString;
      });
      if (!any || !numeric) continue;
      names.insert(std::string(kMetricName));
      for (const FieldInfo& f : fields) {
        if (f.type == FieldType::kString) names.insert(f.name);
      }
      for (const auto& scope : listing.Scopes()) {
        std::vector<std::string> keys;
        GPULSE_RETURN_IF_ERROR(db->ListTagKeys(m, scope, &keys));
        for (std::string& k : keys) {
          if (!listing.Hidden(k)) names.insert(std::move(k));
        }
      }
    }
  }
  out->assign(names.begin(), names.end());
  Limit(request.limit, out);
  *failure = PromFailure::kNone;
  return Status::Ok();
}

Status ListLabelValues(Db* db, const ListingRequest& request, const std::string& name,
                       const QueryOptions& options, std::vector<std::string>* out,
                       PromFailure* failure) {
  *failure = PromFailure::kEval;
  GPULSE_RETURN_IF_ERROR(CheckReach(options));
  Listing listing(db, options);
  std::set<std::string> values;
  if (!request.matches.empty()) {
    std::vector<Labels> sets;
    GPULSE_RETURN_IF_ERROR(MatchedSets(&listing, request, &sets, failure));
    for (const Labels& l : sets) {
      const std::string_view v = LabelValue(l, name);
      if (!v.empty()) values.emplace(v);
    }
  } else if (name == kMetricName) {
    std::vector<StoredMetric> metrics;
    GPULSE_RETURN_IF_ERROR(listing.source().Metrics({}, &metrics));
    std::set<std::string> checked, in_scope;
    for (const StoredMetric& m : metrics) {
      if (checked.insert(m.measurement).second) {
        bool any;
        GPULSE_RETURN_IF_ERROR(InScope(&listing, m.measurement, &any));
        if (any) in_scope.insert(m.measurement);
      }
      if (in_scope.count(m.measurement) != 0) values.insert(m.name);
    }
  } else if (!listing.Hidden(name)) {
    std::vector<std::string> measurements;
    GPULSE_RETURN_IF_ERROR(db->ListMeasurements(&measurements));
    for (const std::string& m : measurements) {
      std::vector<FieldInfo> fields;
      GPULSE_RETURN_IF_ERROR(listing.input().Fields(m, &fields));
      const bool label_field = std::any_of(fields.begin(), fields.end(), [&](const FieldInfo& f) {
        return f.type == FieldType::kString && f.name == name;
      });
      if (label_field) {
        GPULSE_RETURN_IF_ERROR(
            listing.source().LabelFieldValues(m, name, request.start, request.end, &values));
      }
      for (const auto& scope : listing.Scopes()) {
        std::vector<std::string> tag_values;
        GPULSE_RETURN_IF_ERROR(db->ListTagValues(m, name, scope, &tag_values));
        values.insert(tag_values.begin(), tag_values.end());
      }
    }
  }
  out->assign(values.begin(), values.end());
  Limit(request.limit, out);
  *failure = PromFailure::kNone;
  return Status::Ok();
}

Status ReadSamples(Db* db, const std::vector<promql::LabelMatcher>& matchers, int64_t start,
                   int64_t end, const QueryOptions& options, std::vector<RawSeries>* out) {
  GPULSE_RETURN_IF_ERROR(CheckReach(options));
  bool selective = false;
  for (const promql::LabelMatcher& m : matchers) {
    auto compiled = Matcher::Compile(m);
    if (!compiled.ok()) {
      return Status::InvalidArgument("matcher " + m.name + ": " + compiled.status().message());
    }
    if (!compiled->Matches("")) selective = true;
  }
  if (!selective) {
    return Status::InvalidArgument(
        "a query must contain at least one matcher that does not match the empty value");
  }
  Listing listing(db, options);
  GPULSE_RETURN_IF_ERROR(listing.source().Select(matchers, start, end, out));
  std::sort(out->begin(), out->end(),
            [](const RawSeries& a, const RawSeries& b) { return a.labels < b.labels; });
  return Status::Ok();
}

}  // namespace gpulse::query::promeval
