// What the CSV importers (nvsmi_csv, pai_csv) share: the error they report
// for a row, a line split into fields with their columns, and a walk over
// the lines of a text. Owns nothing: fields view the line they came from.
//
// The CSVs these tools write are simple: nvidia-smi separates fields with
// ", " and quotes nothing; the PAI trace separates with "," and quotes
// nothing either. A field that starts with '"' is still read as RFC 4180
// quotes it (doubled quotes inside), so a spreadsheet's re-save reads back.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::ingest {

// A row (or a file, line 0) that was not imported, and why.
struct RowError {
  size_t line = 0;    // 1-based
  size_t column = 0;  // 1-based byte offset within the line
  std::string reason;
};

struct CsvField {
  std::string text;   // spaces around it trimmed, quotes removed
  size_t column = 0;  // 1-based byte offset of the field's first byte
};

// Splits one line (without its line end) at commas outside quotes.
std::vector<CsvField> SplitCsvLine(std::string_view line);

// Calls fn(line, number) for every line of `text` that is not blank, the
// first numbered `first_line`; a trailing '\r' is cut off.
template <typename Fn>
void ForEachLine(std::string_view text, size_t first_line, Fn&& fn) {
  size_t number = first_line;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) fn(line, number);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
    ++number;
  }
}

std::string_view TrimSpaces(std::string_view s);

// Sets `tag` on `tags`, replacing a tag of the same key (a column's tag wins
// over a --tag of the same name; a point may not repeat a key).
void SetTag(std::vector<Tag>* tags, std::string key, std::string value);

// The whole of `s` as a decimal integer, or as a finite number; nullopt
// for anything else (empty, trailing text, out of range, nan, inf).
std::optional<int64_t> ParseWholeInt(std::string_view s);
std::optional<double> ParseFiniteNumber(std::string_view s);

}  // namespace gpulse::ingest
