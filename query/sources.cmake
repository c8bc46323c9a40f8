# Sources of the query front end (lexer, parser, AST). Knows nothing of storage
# beyond Status; the planner and executor will join it here.
set(GPULSE_QUERY_SOURCES
  query/token.cc
  query/lexer.cc
  query/parse_error.cc
  query/ast.cc
  query/functions.cc
  query/time_literal.cc
  query/parser.cc
)
