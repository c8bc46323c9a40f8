// PromQL's syntax tree: one node type whose kind says which fields it uses,
// as the InfluxQL tree does (query/syntax/ast.h). Durations and times are
// milliseconds, as in Prometheus. ToString prints the canonical text
// Prometheus prints (`sum by (job) (rate(x{a="b"}[5m]))`), which parses back
// to an equal tree.
//
// Thread safety: plain values; a tree is read by any number of threads once
// built.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "query/promql/value_type.h"
#include "query/syntax/token.h"

namespace gpulse::query::promql {

enum class MatchOp : unsigned char { kEqual, kNotEqual, kRegex, kNotRegex };

struct LabelMatcher {
  std::string name;
  MatchOp op = MatchOp::kEqual;
  std::string value;
  friend bool operator==(const LabelMatcher&, const LabelMatcher&) = default;
};

enum class BinaryOp : unsigned char {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kAtan2,
  kEql,  // ==
  kNeq,
  kGtr,
  kLss,
  kGte,
  kLte,
  kAnd,
  kOr,
  kUnless,
};
bool IsComparison(BinaryOp op);
bool IsSetOperator(BinaryOp op);  // and, or, unless
const char* BinaryOpText(BinaryOp op);

enum class AggregateOp : unsigned char {
  kSum,
  kAvg,
  kMin,
  kMax,
  kCount,
  kGroup,
  kStddev,
  kStdvar,
  kTopk,
  kBottomk,
  kQuantile,
  kCountValues,
};
const char* AggregateOpName(AggregateOp op);

// How a binary operation between two vectors pairs their samples.
enum class Cardinality : unsigned char { kOneToOne, kManyToOne, kOneToMany, kManyToMany };
struct VectorMatching {
  Cardinality card = Cardinality::kOneToOne;
  bool on = false;                   // on(labels); false: ignoring(labels)
  std::vector<std::string> labels;   // of on or ignoring
  std::vector<std::string> include;  // group_left(labels) / group_right(labels)
  bool explicit_matching = false;    // on() or ignoring() was written
  bool explicit_group = false;       // group_left or group_right was written
  friend bool operator==(const VectorMatching&, const VectorMatching&) = default;
};

// The @ modifier: a fixed time, or the start or end of the evaluated range.
enum class AtKind : unsigned char { kNone, kTimestamp, kStart, kEnd };

struct Expr {
  enum class Kind : unsigned char {
    kNumber,
    kString,
    kVectorSelector,  // metric{matchers}
    kMatrixSelector,  // args[0] (a vector selector) [range_ms]
    kSubquery,        // args[0] [range_ms:step_ms]
    kCall,            // text(args...)
    kAggregate,       // aggregate by/without (grouping) ([args[0],] args.back())
    kBinary,          // args[0] op args[1]
    kUnary,           // -args[0] (or +)
    kParen,           // (args[0])
  };

  Kind kind = Kind::kNumber;
  Position pos;
  double number = 0;  // kNumber
  // kString: the value; kVectorSelector: the metric name as written before
  // the braces (empty when none; the matchers hold it as __name__ too);
  // kCall: the function's name.
  std::string text;
  std::vector<LabelMatcher> matchers;  // kVectorSelector, in the order written
  int64_t range_ms = 0;                // kMatrixSelector, kSubquery
  int64_t step_ms = 0;                 // kSubquery; 0: the query's default step
  // Modifiers of kVectorSelector (a matrix selector's are its vector
  // selector's) and kSubquery.
  int64_t offset_ms = 0;
  bool has_offset = false;
  AtKind at = AtKind::kNone;
  int64_t at_ms = 0;
  AggregateOp aggregate = AggregateOp::kSum;  // kAggregate
  std::vector<std::string> grouping;          // kAggregate: by or without labels
  bool without = false;
  bool has_grouping = false;     // by () / without () was written
  BinaryOp op = BinaryOp::kAdd;  // kBinary
  bool return_bool = false;      // kBinary: a comparison with `bool`
  VectorMatching matching;       // kBinary between two vectors
  bool negative = false;         // kUnary: - (false: +)
  std::vector<std::unique_ptr<Expr>> args;

  ValueType type() const;
  std::string ToString() const;
  bool Equals(const Expr& other) const;  // the same tree, positions aside
};

}  // namespace gpulse::query::promql
