// The table of functions a query may call: name, kind and arity. The parser
// reads any identifier(args) as a call and checks it against this table.
#pragma once

#include <string_view>

namespace gpulse::query {

enum class FunctionKind : unsigned char {
  kAggregate,       // count, mean, percentile, p95...
  kSelector,        // min, max, first, last, top, bottom
  kTransformation,  // derivative, moving_average, cumulative_sum...
  kMath,            // abs, round, pow...
  kTime,            // now()
  kDomain,          // baseline(aggregate, window)
};

struct FunctionInfo {
  std::string_view name;  // lower case
  FunctionKind kind;
  int min_args;
  int max_args;  // -1: no upper bound
};

// The entry for a lower-case name, or nullptr.
const FunctionInfo* LookupFunction(std::string_view name);

}  // namespace gpulse::query
