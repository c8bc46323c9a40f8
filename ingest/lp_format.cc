#include "ingest/lp_format.h"

#include <charconv>
#include <cmath>

namespace gpulse::ingest {

namespace {

// Escapes with a backslash the characters of `specials`: those that would
// end a measurement (comma, space), a key or tag value (also '='), or a
// string field (quote, backslash).
void AppendEscaped(std::string_view text, std::string_view specials, std::string* out) {
  for (char c : text) {
    if (specials.find(c) != std::string_view::npos) out->push_back('\\');
    out->push_back(c);
  }
}

template <typename T>
void AppendNumber(T value, std::string* out) {
  char buffer[32];
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, value);
  out->append(buffer, r.ptr);
}

void AppendValue(const FieldValueRef& value, std::string* out) {
  switch (value.index()) {
    case 0: {
      const double d = std::get<double>(value);
      // Line protocol has no NaN or infinity; the parser would refuse them.
      AppendNumber(std::isfinite(d) ? d : 0.0, out);
      break;
    }
    case 1:
      AppendNumber(std::get<int64_t>(value), out);
      out->push_back('i');
      break;
    case 2:
      AppendNumber(std::get<uint64_t>(value), out);
      out->push_back('u');
      break;
    case 3:
      out->push_back(std::get<bool>(value) ? 't' : 'f');
      break;
    default:
      out->push_back('"');
      AppendEscaped(std::get<std::string_view>(value), "\"\\", out);
      out->push_back('"');
      break;
  }
}

}  // namespace

void AppendLineProtocol(const PointRef& point, std::string* out) {
  AppendEscaped(point.measurement, ", ", out);
  for (const TagRef& tag : point.tags) {
    out->push_back(',');
    AppendEscaped(tag.key, ",= ", out);
    out->push_back('=');
    AppendEscaped(tag.value, ",= ", out);
  }
  char separator = ' ';
  for (const FieldRef& field : point.fields) {
    out->push_back(separator);
    separator = ',';
    AppendEscaped(field.key, ",= ", out);
    out->push_back('=');
    AppendValue(field.value, out);
  }
  out->push_back(' ');
  AppendNumber(point.timestamp_ns, out);
  out->push_back('\n');
}

}  // namespace gpulse::ingest
