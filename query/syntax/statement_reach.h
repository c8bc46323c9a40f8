// StatementReach: which databases a statement reads or changes, decided from
// its tree alone, before it runs. The server authorizes a request's token
// against it, and the executor runs each statement on the database it names,
// so that what is checked and what is read are one decision.
//
// A database is the `db` tag the write endpoints give a point. A statement
// runs on:
//   - the database its FROM names (`"db"."rp".m`, `"db"..m`; subqueries
//     included), or SHOW RETENTION POLICIES ON names; else
//   - the query's database (db= on /query, --database in the shell); else
//   - every database at once ("").
// Statements over stored definitions or the server's own state (CREATE and
// DROP ALERT or SEASON, SHOW ALERTS, SHOW SEASONS, SHOW SOURCES) reach every
// database whatever the query's database is: rules read all of them.
// SHOW DATABASES lists names; the executor shows only those the caller may
// read (QueryOptions::readable_databases).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "query/syntax/ast.h"
#include "storage/status.h"

namespace gpulse::query {

struct Reach {
  enum class Kind : unsigned char {
    kDatabase,    // `database` only ("" is every database)
    kEverything,  // every database and the server's shared state
    kNames,       // SHOW DATABASES: names only, filtered by the caller's scope
  };
  Kind kind = Kind::kDatabase;
  std::string database;
  bool changes = false;  // DELETE, DROP, CREATE: needs the right to write
};

// The reach of `statement` run with `query_database` as the query's
// database. InvalidArgument, with the position, when one statement names two
// databases.
Result<Reach> StatementReach(const Statement& statement, std::string_view query_database);

}  // namespace gpulse::query
