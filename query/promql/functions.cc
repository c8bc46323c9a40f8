#include "query/promql/functions.h"

#include <algorithm>

namespace gpulse::query::promql {

namespace {

constexpr ValueType S = ValueType::kScalar;
constexpr ValueType V = ValueType::kVector;
constexpr ValueType M = ValueType::kMatrix;
constexpr ValueType T = ValueType::kString;

std::vector<Function> MakeTable() {
  std::vector<Function> f = {
      {"abs", {V}},
      {"absent", {V}},
      {"absent_over_time", {M}},
      {"acos", {V}},
      {"acosh", {V}},
      {"asin", {V}},
      {"asinh", {V}},
      {"atan", {V}},
      {"atanh", {V}},
      {"avg_over_time", {M}},
      {"ceil", {V}},
      {"changes", {M}},
      {"clamp", {V, S, S}},
      {"clamp_max", {V, S}},
      {"clamp_min", {V, S}},
      {"cos", {V}},
      {"cosh", {V}},
      {"count_over_time", {M}},
      {"day_of_month", {V}, 1},
      {"day_of_week", {V}, 1},
      {"day_of_year", {V}, 1},
      {"days_in_month", {V}, 1},
      {"deg", {V}},
      {"delta", {M}},
      {"deriv", {M}},
      {"exp", {V}},
      {"floor", {V}},
      {"histogram_quantile", {S, V}},
      {"holt_winters", {M, S, S}},
      {"hour", {V}, 1},
      {"idelta", {M}},
      {"increase", {M}},
      {"irate", {M}},
      {"label_join", {V, T, T, T}, -1},
      {"label_replace", {V, T, T, T, T}},
      {"last_over_time", {M}},
      {"ln", {V}},
      {"log10", {V}},
      {"log2", {V}},
      {"max_over_time", {M}},
      {"min_over_time", {M}},
      {"minute", {V}, 1},
      {"month", {V}, 1},
      {"pi", {}, 0, S},
      {"predict_linear", {M, S}},
      {"present_over_time", {M}},
      {"quantile_over_time", {S, M}},
      {"rad", {V}},
      {"rate", {M}},
      {"resets", {M}},
      {"round", {V, S}, 1},
      {"scalar", {V}, 0, S},
      {"sgn", {V}},
      {"sin", {V}},
      {"sinh", {V}},
      {"sort", {V}},
      {"sort_desc", {V}},
      {"sqrt", {V}},
      {"stddev_over_time", {M}},
      {"stdvar_over_time", {M}},
      {"sum_over_time", {M}},
      {"tan", {V}},
      {"tanh", {V}},
      {"time", {}, 0, S},
      {"timestamp", {V}},
      {"vector", {S}},
      {"year", {V}, 1},
  };
  std::sort(f.begin(), f.end(),
            [](const Function& a, const Function& b) { return a.name < b.name; });
  return f;
}

}  // namespace

const std::vector<Function>& AllFunctions() {
  static const std::vector<Function> table = MakeTable();
  return table;
}

const Function* FindFunction(std::string_view name) {
  const std::vector<Function>& table = AllFunctions();
  const auto it =
      std::lower_bound(table.begin(), table.end(), name,
                       [](const Function& f, std::string_view n) { return f.name < n; });
  return it != table.end() && it->name == name ? &*it : nullptr;
}

}  // namespace gpulse::query::promql
