// PromQL's functions over float samples, as Prometheus 2.42 declares them:
// argument types, how many may be left out, the type returned. The parser
// checks every call against this table. (The native-histogram functions are
// not here: gpulse stores no native histograms.)
//
// Thread safety: the table is constant.
#pragma once

#include <string_view>
#include <vector>

#include "query/promql/value_type.h"

namespace gpulse::query::promql {

struct Function {
  std::string_view name;
  std::vector<ValueType> args;
  // 0: exactly args; n > 0: the last n args may be left out; -1: the last
  // arg may be left out or repeated (label_join's source labels).
  int variadic = 0;
  ValueType returns = ValueType::kVector;
};

// nullptr for a name that is no function.
const Function* FindFunction(std::string_view name);
// Every function, sorted by name (for docs and completion).
const std::vector<Function>& AllFunctions();

}  // namespace gpulse::query::promql
