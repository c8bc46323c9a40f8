// The four kinds of value a PromQL expression has, as Prometheus names them.
#pragma once

namespace gpulse::query::promql {

enum class ValueType : unsigned char { kScalar, kVector, kMatrix, kString };
const char* ValueTypeName(ValueType type);  // "scalar", "instant vector", "range vector", "string"

}  // namespace gpulse::query::promql
