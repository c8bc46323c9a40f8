#include "ingest/csv_row.h"

#include <charconv>
#include <cmath>
#include <utility>

namespace gpulse::ingest {

std::string_view TrimSpaces(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const size_t last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

namespace {

// Reads a quoted field starting at line[at] == '"'; *at ends past it.
std::string Unquote(std::string_view line, size_t* at) {
  std::string out;
  size_t i = *at + 1;
  while (i < line.size()) {
    if (line[i] == '"') {
      if (i + 1 < line.size() && line[i + 1] == '"') {
        out += '"';
        i += 2;
        continue;
      }
      ++i;
      break;
    }
    out += line[i++];
  }
  *at = i;
  return out;
}

}  // namespace

std::vector<CsvField> SplitCsvLine(std::string_view line) {
  std::vector<CsvField> fields;
  size_t at = 0;
  while (true) {
    size_t start = at;
    while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
    CsvField f;
    f.column = start + 1;
    if (start < line.size() && line[start] == '"') {
      at = start;
      f.text = Unquote(line, &at);
      at = line.find(',', at);  // text between the closing quote and the comma is dropped
    } else {
      at = line.find(',', start);
      f.text = std::string(TrimSpaces(
          line.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start)));
    }
    fields.push_back(std::move(f));
    if (at == std::string_view::npos) break;
    ++at;
  }
  return fields;
}

void SetTag(std::vector<Tag>* tags, std::string key, std::string value) {
  for (Tag& t : *tags) {
    if (t.key == key) {
      t.value = std::move(value);
      return;
    }
  }
  tags->push_back({std::move(key), std::move(value)});
}

std::optional<int64_t> ParseWholeInt(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> ParseFiniteNumber(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

}  // namespace gpulse::ingest
