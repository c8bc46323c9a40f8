#include "query/syntax/functions.h"

namespace gpulse::query {
namespace {

using K = FunctionKind;

constexpr FunctionInfo kFunctions[] = {
    {"count", K::kAggregate, 1, 1},
    {"distinct", K::kAggregate, 1, 1},
    {"integral", K::kAggregate, 1, 2},
    {"mean", K::kAggregate, 1, 1},
    {"median", K::kAggregate, 1, 1},
    {"mode", K::kAggregate, 1, 1},
    {"spread", K::kAggregate, 1, 1},
    {"stddev", K::kAggregate, 1, 1},
    {"sum", K::kAggregate, 1, 1},
    {"percentile", K::kAggregate, 2, 2},
    {"p50", K::kAggregate, 1, 1},
    {"p90", K::kAggregate, 1, 1},
    {"p95", K::kAggregate, 1, 1},
    {"p99", K::kAggregate, 1, 1},
    {"first", K::kSelector, 1, 1},
    {"last", K::kSelector, 1, 1},
    {"max", K::kSelector, 1, 1},
    {"min", K::kSelector, 1, 1},
    {"sample", K::kSelector, 2, 2},
    {"top", K::kSelector, 2, -1},
    {"bottom", K::kSelector, 2, -1},
    {"cumulative_sum", K::kTransformation, 1, 1},
    {"derivative", K::kTransformation, 1, 2},
    {"difference", K::kTransformation, 1, 1},
    {"elapsed", K::kTransformation, 1, 2},
    {"increase", K::kTransformation, 1, 2},
    {"moving_average", K::kTransformation, 2, 2},
    {"non_negative_derivative", K::kTransformation, 1, 2},
    {"non_negative_difference", K::kTransformation, 1, 1},
    {"rate", K::kTransformation, 1, 2},
    {"abs", K::kMath, 1, 1},
    {"ceil", K::kMath, 1, 1},
    {"exp", K::kMath, 1, 1},
    {"floor", K::kMath, 1, 1},
    {"ln", K::kMath, 1, 1},
    {"log", K::kMath, 2, 2},
    {"log10", K::kMath, 1, 1},
    {"log2", K::kMath, 1, 1},
    {"pow", K::kMath, 2, 2},
    {"round", K::kMath, 1, 1},
    {"sqrt", K::kMath, 1, 1},
    {"now", K::kTime, 0, 0},
    {"baseline", K::kDomain, 2, 3},
};

}  // namespace

const FunctionInfo* LookupFunction(std::string_view name) {
  for (const FunctionInfo& f : kFunctions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace gpulse::query
