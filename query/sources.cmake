# Sources of the query layer: the front end (lexer, parser, AST), which knows
# nothing of storage, and the executor above the engine's Db.
set(GPULSE_QUERY_SOURCES
  query/token.cc
  query/lexer.cc
  query/parse_error.cc
  query/ast.cc
  query/functions.cc
  query/time_literal.cc
  query/parser.cc
  query/aggregate.cc
  query/alert_rule.cc
  query/baseline.cc
  query/buckets.cc
  query/calendar.cc
  query/cells.cc
  query/condition.cc
  query/decompose.cc
  query/delete.cc
  query/eval.cc
  query/executor.cc
  query/fleet_ledger.cc
  query/format.cc
  query/kpis.cc
  query/northstar.cc
  query/select.cc
  query/stale.cc
)
