#include "shell/table.h"
#include "query/query.h"

#include <algorithm>
#include <cstdio>
#include <variant>
#include <vector>

namespace gpulse::shell {
namespace {

// Terminal columns a cell takes: one per UTF-8 code point. Wide (CJK) and
// combining characters are rare in tag values and not worth a width table.
size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;
  }
  return width;
}

bool IsNumber(const QueryValue& value) {
  return std::holds_alternative<double>(value) || std::holds_alternative<int64_t>(value) ||
         std::holds_alternative<uint64_t>(value);
}

// A column is right-aligned when every value in it is a number; nulls do not
// count either way. The time column is text however it is written, so that
// RFC3339 stamps and epoch integers line up the same way.
std::vector<bool> NumericColumns(const ResultSeries& series) {
  std::vector<bool> numeric(series.columns.size(), false);
  for (size_t c = 0; c < series.columns.size(); ++c) {
    if (series.columns[c] == "time") continue;
    bool any = false, all = true;
    for (const auto& row : series.values) {
      if (c >= row.size() || std::holds_alternative<std::monostate>(row[c])) continue;
      any = true;
      all = all && IsNumber(row[c]);
    }
    numeric[c] = any && all;
  }
  return numeric;
}

void AppendPadded(std::string_view text, size_t width, bool right, bool last, std::string* out) {
  const size_t pad = width - DisplayWidth(text);
  if (right) out->append(pad, ' ');
  out->append(text);
  // No trailing blanks after the last column: they only confuse copy-paste.
  if (!right && !last) out->append(pad, ' ');
}

void AppendRow(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
               const std::vector<bool>& numeric, std::string* out) {
  for (size_t c = 0; c < cells.size(); ++c) {
    if (c > 0) out->append("  ");
    AppendPadded(cells[c], widths[c], numeric[c], c + 1 == cells.size(), out);
  }
  out->push_back('\n');
}

std::string SeriesHeader(const ResultSeries& series) {
  std::string header = "name: " + series.name;
  for (size_t i = 0; i < series.tags.size(); ++i) {
    header += i == 0 ? "  tags: " : ", ";
    header += series.tags[i].key + "=" + series.tags[i].value;
  }
  return header + "\n";
}

void AppendSeries(const ResultSeries& series, query::TimeFormat time_format, std::string* out) {
  out->append(SeriesHeader(series));
  const size_t n = series.columns.size();
  std::vector<std::vector<std::string>> cells;
  cells.reserve(series.values.size());
  std::vector<size_t> widths(n);
  for (size_t c = 0; c < n; ++c) widths[c] = DisplayWidth(series.columns[c]);
  for (const auto& row : series.values) {
    std::vector<std::string>& line = cells.emplace_back(n);
    for (size_t c = 0; c < n && c < row.size(); ++c) {
      line[c] = query::FormatValue(row[c], series.columns[c] == "time", time_format);
      widths[c] = std::max(widths[c], DisplayWidth(line[c]));
    }
  }
  const std::vector<bool> numeric = NumericColumns(series);
  std::vector<std::string> separator(n);
  for (size_t c = 0; c < n; ++c) separator[c].assign(DisplayWidth(series.columns[c]), '-');
  AppendRow(series.columns, widths, numeric, out);
  AppendRow(separator, widths, numeric, out);
  for (const auto& line : cells) AppendRow(line, widths, numeric, out);
}

}  // namespace

std::string FormatTable(const StatementResult& statement, query::TimeFormat time_format) {
  std::string out;
  for (size_t i = 0; i < statement.series.size(); ++i) {
    if (i > 0) out.push_back('\n');
    AppendSeries(statement.series[i], time_format, &out);
  }
  for (const std::string& note : statement.notes) out += "note: " + note + "\n";
  return out;
}

size_t CountRows(const StatementResult& statement) {
  size_t rows = 0;
  for (const ResultSeries& series : statement.series) rows += series.values.size();
  return rows;
}

std::string FormatFooter(size_t rows, std::optional<double> elapsed_ms) {
  std::string footer = "(" + std::to_string(rows) + (rows == 1 ? " row" : " rows");
  if (elapsed_ms) {
    char time[32];
    std::snprintf(time, sizeof(time), ", %.1f ms", *elapsed_ms);
    footer += time;
  }
  return footer + ")";
}

std::string FormatError(std::string_view message) { return "ERR: " + std::string(message); }

}  // namespace gpulse::shell
