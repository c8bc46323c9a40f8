// Query results as aligned text tables, for people at a terminal (the shell
// and `gpulse query --format table`). Scripts should read CSV or JSON
// (query/runtime/format.h): a table's widths depend on the data, so its layout is not
// a format to parse.
//
// One statement prints as, per series:
//
//   name: gpu  tags: node=a
//   time                  util
//   ----                  ----
//   2024-01-01T00:00:00Z    11
//
// with series separated by a blank line, numbers right-aligned and text
// left-aligned, then the statement's notes, then a footer "(2 rows, 1.3 ms)"
// that the caller prints (it knows the time taken).
//
// Tables are for reading: a float shows 4 significant digits, and never
// fewer than its integer digits (0.8769627417421564 as 0.877, 87.69627 as
// 87.7, 72014.25 as 72014.3); CSV and JSON keep every digit. A table wider
// than the terminal folds: its columns go in blocks that fit, each block
// led by the first column (the time, or the row's key), one after another.
//
// Thread safety: the functions are pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "engine/gpulse.h"
#include "query/query.h"
#include "query/runtime/format.h"

namespace gpulse::shell {

struct TableOptions {
  // Terminal columns to fold within; 0: never fold (output that is not a
  // terminal).
  size_t width = 0;
};

// The series of one successful statement as tables, then one line
// "note: ..." per note. Empty when it has neither series nor notes.
std::string FormatTable(const StatementResult& statement, query::TimeFormat time_format,
                        const TableOptions& options = {});

// A float as a table shows it (above).
std::string ReadableNumber(double value);

// The terminal's width when standard output is one (its window size, or
// COLUMNS), else 0.
size_t TerminalWidth();

// Rows over all series of the statement.
size_t CountRows(const StatementResult& statement);

// "(1 row)", "(3 rows, 12.3 ms)": the time only when given.
std::string FormatFooter(size_t rows, std::optional<double> elapsed_ms);

// "ERR: <message>", how the shell and `gpulse query` show every error.
std::string FormatError(std::string_view message);

}  // namespace gpulse::shell
