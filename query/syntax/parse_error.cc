#include "query/syntax/parse_error.h"

namespace gpulse::query {

std::string ParseError::ToString() const {
  std::string out =
      "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": ";
  if (!message.empty()) return out + message;
  return out + "expected " + expected + ", found " + found;
}

std::string FormatErrorWithCaret(std::string_view text, const ParseError& error) {
  size_t offset = error.pos.offset < text.size() ? error.pos.offset : text.size();
  size_t begin = offset;
  while (begin > 0 && text[begin - 1] != '\n') --begin;
  size_t end = text.find('\n', begin);
  if (end == std::string_view::npos) end = text.size();
  std::string line(text.substr(begin, end - begin));
  // Tabs stay tabs in the caret line so the caret lines up in a terminal.
  std::string caret;
  for (size_t i = begin; i < offset && i < end; ++i) caret += text[i] == '\t' ? '\t' : ' ';
  return error.ToString() + "\n" + line + "\n" + caret + "^";
}

}  // namespace gpulse::query
