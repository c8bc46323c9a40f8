#include "shell/table.h"
#include "query/query.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

// The columns of each block of a table folded to `width` (one block of all
// when it fits): greedily, each block led by column 0.
std::vector<std::vector<size_t>> Blocks(const std::vector<size_t>& widths, size_t width) {
  if (widths.empty()) return {{}};
  std::vector<std::vector<size_t>> blocks = {{0}};
  size_t used = widths[0];
  for (size_t c = 1; c < widths.size(); ++c) {
    if (width > 0 && blocks.back().size() > 1 && used + 2 + widths[c] > width) {
      blocks.push_back({0});
      used = widths[0];
    }
    blocks.back().push_back(c);
    used += 2 + widths[c];
  }
  return blocks;
}

void AppendSeries(const ResultSeries& series, query::TimeFormat time_format,
                  const TableOptions& options, std::string* out) {
  out->append(SeriesHeader(series));
  const size_t n = series.columns.size();
  std::vector<std::vector<std::string>> cells;
  cells.reserve(series.values.size());
  std::vector<size_t> widths(n);
  for (size_t c = 0; c < n; ++c) widths[c] = DisplayWidth(series.columns[c]);
  for (const auto& row : series.values) {
    std::vector<std::string>& line = cells.emplace_back(n);
    for (size_t c = 0; c < n && c < row.size(); ++c) {
      const bool is_time = series.columns[c] == "time";
      if (!is_time && std::holds_alternative<double>(row[c])) {
        line[c] = ReadableNumber(std::get<double>(row[c]));
      } else {
        line[c] = query::FormatValue(row[c], is_time, time_format);
      }
      widths[c] = std::max(widths[c], DisplayWidth(line[c]));
    }
  }
  const std::vector<bool> numeric = NumericColumns(series);
  const auto blocks = Blocks(widths, options.width);
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (b > 0) out->push_back('\n');
    auto pick = [&]<typename T>(const std::vector<T>& all) {
      std::vector<T> some;
      for (const size_t c : blocks[b]) some.push_back(all[c]);
      return some;
    };
    std::vector<std::string> separator;
    for (const size_t c : blocks[b]) separator.emplace_back(DisplayWidth(series.columns[c]), '-');
    const std::vector<size_t> block_widths = pick(widths);
    const std::vector<bool> block_numeric = pick(numeric);
    AppendRow(pick(series.columns), block_widths, block_numeric, out);
    AppendRow(separator, block_widths, block_numeric, out);
    for (const auto& line : cells) AppendRow(pick(line), block_widths, block_numeric, out);
  }
}

}  // namespace

std::string ReadableNumber(double value) {
  if (!std::isfinite(value)) return query::FormatValue(value, false, query::TimeFormat::kRfc3339);
  char text[64];
  const double magnitude = std::fabs(value);
  if (magnitude < 1000 || magnitude >= 1e15) {
    std::snprintf(text, sizeof(text), "%.4g", value);
  } else {
    // Every integer digit, and a tenth where there is a fraction.
    std::snprintf(text, sizeof(text), value == std::trunc(value) ? "%.0f" : "%.1f", value);
  }
  return text;
}

size_t TerminalWidth() {
  if (isatty(STDOUT_FILENO) == 0) return 0;
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) return std::strtoul(columns, nullptr, 10);
  return 0;
}

std::string FormatTable(const StatementResult& statement, query::TimeFormat time_format,
                        const TableOptions& options) {
  std::string out;
  for (size_t i = 0; i < statement.series.size(); ++i) {
    if (i > 0) out.push_back('\n');
    AppendSeries(statement.series[i], time_format, options, &out);
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
