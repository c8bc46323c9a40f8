// DELETE, DROP SERIES and DROP MEASUREMENT: which series a statement names
// (measurements, the database scope, tag conditions) and the time range it
// deletes, handed to Db::Delete or Db::DropSeries. Internal to query/; the
// entry point is Execute (query/executor.h).
#pragma once

#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "query/runtime/result.h"
#include "query/syntax/ast.h"

namespace gpulse::query {

// Runs `s`; *notes gets a line saying how many series it reached.
Status RunDelete(Db* db, const DeleteStatement& s, const QueryOptions& options, int64_t now_ns,
                 std::vector<std::string>* notes);

}  // namespace gpulse::query
