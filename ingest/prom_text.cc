// The Prometheus text parser: one pass over the body, one line at a time. A
// line is a comment (# HELP, # TYPE or anything else after '#'), blank, or a
// sample; see docs/prometheus-mapping.md for the grammar.

#include "ingest/prom_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace gpulse::ingest {

namespace {

constexpr std::string_view kTypes[] = {"counter", "gauge", "histogram", "summary", "untyped"};
constexpr std::string_view kUntyped = "untyped";

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLabelStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsLabelChar(char c) { return IsLabelStart(c) || IsDigit(c); }
bool IsMetricStart(char c) { return IsLabelStart(c) || c == ':'; }
bool IsMetricChar(char c) { return IsLabelChar(c) || c == ':'; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != b[i]) return false;
  }
  return true;
}

// Quotes a token for an error message, cut short so that a garbage line does
// not make a garbage-sized message.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out = "\"";
  out.append(s.substr(0, kMax));
  if (s.size() > kMax) out.append("...");
  out.push_back('"');
  return out;
}

// What was found at a position, for "expected X, found Y" messages.
std::string Found(std::string_view line, size_t pos) {
  if (pos >= line.size()) return "end of line";
  return std::string("'") + line[pos] + "'";
}

std::optional<double> ParseFinite(std::string_view text, std::chars_format format) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v, format);
  if (ptr != end) return std::nullopt;
  if (ec == std::errc()) return v;
  if (ec != std::errc::result_out_of_range) return std::nullopt;
  // from_chars reports both overflow and underflow as out of range. Go turns
  // underflow into zero (or a subnormal) without error; strtod does the same.
  std::string copy = format == std::chars_format::hex ? "0x" : "";
  copy.append(text);
  v = std::strtod(copy.c_str(), nullptr);
  if (std::isinf(v)) return std::nullopt;
  return v;
}

// Where the parser is within one line.
struct Cursor {
  std::string_view line;
  size_t pos = 0;

  bool AtEnd() const { return pos >= line.size(); }
  char Peek() const { return AtEnd() ? '\0' : line[pos]; }
  // Returns whether at least one blank was skipped.
  bool SkipBlanks() {
    size_t start = pos;
    while (!AtEnd() && IsBlank(line[pos])) ++pos;
    return pos != start;
  }
  std::string_view TakeWhile(bool (*pred)(char)) {
    size_t start = pos;
    while (!AtEnd() && pred(line[pos])) ++pos;
    return line.substr(start, pos - start);
  }
  std::string_view TakeToken() {
    size_t start = pos;
    while (!AtEnd() && !IsBlank(line[pos])) ++pos;
    return line.substr(start, pos - start);
  }
};

// What the body has said about one metric family so far.
struct Family {
  std::string_view type = kUntyped;
  std::string_view help;  // as written, escapes and all
  bool has_help = false;
  bool has_type = false;
};

class Parser {
 public:
  Parser(PromTextScratch* scratch, std::vector<PromSample>* samples, std::vector<PromError>* errors)
      : scratch_(scratch), samples_(samples), errors_(errors) {}

  void ParseLine(std::string_view line, size_t line_no) {
    Cursor c{line};
    c.SkipBlanks();
    bool ok = true;
    if (c.AtEnd()) return;
    if (c.Peek() == '#') {
      ok = ParseComment(&c);
    } else {
      PromSample sample;
      sample.line = line_no;
      ok = ParseSample(&c, &sample);
      if (ok) {
        sample.type = TypeOf(sample.name);
        names_seen_.insert(sample.name);
        samples_->push_back(std::move(sample));
      }
    }
    if (!ok) errors_->push_back(PromError{line_no, error_pos_ + 1, std::move(error_)});
  }

  // What # TYPE and # HELP said, a family each, in name order.
  void Metadata(std::vector<PromMetadata>* out) const {
    const size_t first = out->size();
    for (const auto& [name, family] : families_) {
      PromMetadata m{std::string(name), std::string(family.type), {}};
      for (size_t i = 0; i < family.help.size(); ++i) {
        char ch = family.help[i];
        if (ch == '\\' && i + 1 < family.help.size()) {
          ++i;
          ch = family.help[i] == 'n' ? '\n' : family.help[i];
        }
        m.help += ch;
      }
      out->push_back(std::move(m));
    }
    std::sort(out->begin() + static_cast<ptrdiff_t>(first), out->end(),
              [](const PromMetadata& a, const PromMetadata& b) { return a.name < b.name; });
  }

 private:
  bool Fail(size_t pos, std::string message) {
    error_pos_ = pos;
    error_ = std::move(message);
    return false;
  }

  // "# HELP name text", "# TYPE name type", or a comment.
  bool ParseComment(Cursor* c) {
    ++c->pos;  // '#'
    c->SkipBlanks();
    std::string_view keyword = c->TakeToken();
    if (keyword != "HELP" && keyword != "TYPE") return true;
    c->SkipBlanks();
    if (c->AtEnd()) return true;  // "# HELP" alone: a comment, as Go's parser has it
    size_t name_pos = c->pos;
    std::string_view name = c->TakeWhile(IsMetricChar);
    if (name.empty() || !IsMetricStart(name[0]) || (!c->AtEnd() && !IsBlank(c->Peek()))) {
      return Fail(name_pos, "invalid metric name " + Quote(c->line.substr(name_pos)) + " in " +
                                std::string(keyword) + " line");
    }
    c->SkipBlanks();
    Family& family = families_[name];
    if (keyword == "HELP") {
      if (family.has_help) return Fail(name_pos, "second HELP line for metric name " + Quote(name));
      family.has_help = true;
      family.help = c->line.substr(c->pos);
      return CheckHelpText(c);
    }
    if (family.has_type || names_seen_.count(name) != 0) {
      return Fail(name_pos, "second TYPE line for metric name " + Quote(name) +
                                ", or TYPE after its samples");
    }
    size_t type_pos = c->pos;
    std::string_view type = c->TakeToken();
    std::string_view known;
    for (std::string_view t : kTypes) {
      if (type == t) known = t;
    }
    if (known.empty()) {
      return Fail(type_pos, type.empty() ? "expected metric type after metric name " + Quote(name)
                                         : "unknown metric type " + Quote(type));
    }
    c->SkipBlanks();
    if (!c->AtEnd()) return Fail(c->pos, "unexpected text after metric type");
    family.type = known;
    family.has_type = true;
    return true;
  }

  // HELP text's escapes, checked as Prometheus does: only \\ and \n.
  bool CheckHelpText(Cursor* c) {
    for (; !c->AtEnd(); ++c->pos) {
      if (c->Peek() != '\\') continue;
      size_t at = c->pos++;
      if (c->AtEnd()) return Fail(at, "escape '\\' at end of HELP text");
      if (c->Peek() != '\\' && c->Peek() != 'n') {
        return Fail(at, std::string("invalid escape sequence '\\") + c->Peek() + "' in HELP text");
      }
    }
    return true;
  }

  // name [{labels}] value [timestamp_ms]
  bool ParseSample(Cursor* c, PromSample* s) {
    if (!IsMetricStart(c->Peek())) {
      return Fail(c->pos, "expected metric name, found " + Found(c->line, c->pos));
    }
    s->name = c->TakeWhile(IsMetricChar);
    bool blank = c->SkipBlanks();
    if (c->Peek() == '{') {
      if (!ParseLabels(c, s)) return false;
      c->SkipBlanks();
    } else if (!blank && !c->AtEnd()) {
      return Fail(c->pos, "expected '{' or blank after metric name " + Quote(s->name) + ", found " +
                              Found(c->line, c->pos));
    }
    size_t value_pos = c->pos;
    std::string_view value = c->TakeToken();
    if (value.empty()) return Fail(value_pos, "expected value after metric name " + Quote(s->name));
    std::optional<double> v = ParsePromFloat(value);
    if (!v) return Fail(value_pos, "invalid value " + Quote(value));
    s->value = *v;
    c->SkipBlanks();
    if (c->AtEnd()) return true;
    size_t ts_pos = c->pos;
    std::string_view ts = c->TakeToken();
    std::string_view digits = ts.size() > 1 && ts[0] == '+' ? ts.substr(1) : ts;
    int64_t ms = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), ms);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) {
      return Fail(ts_pos, "invalid timestamp " + Quote(ts) + ": expected integer milliseconds");
    }
    s->timestamp_ms = ms;
    c->SkipBlanks();
    if (!c->AtEnd()) return Fail(c->pos, "unexpected text after timestamp");
    return true;
  }

  // {name="value",...} with an optional trailing comma; c is at '{'.
  bool ParseLabels(Cursor* c, PromSample* s) {
    ++c->pos;
    for (;;) {
      c->SkipBlanks();
      if (c->Peek() == '}') break;
      size_t name_pos = c->pos;
      if (!IsLabelStart(c->Peek())) {
        return Fail(name_pos, "expected label name or '}', found " + Found(c->line, name_pos));
      }
      std::string_view name = c->TakeWhile(IsLabelChar);
      if (name == "__name__") return Fail(name_pos, "label name \"__name__\" is reserved");
      for (const auto& [seen, unused] : s->labels) {
        if (seen == name) return Fail(name_pos, "duplicate label name " + Quote(name));
      }
      c->SkipBlanks();
      if (c->Peek() != '=') {
        return Fail(c->pos, "expected '=' after label name " + Quote(name) + ", found " +
                                Found(c->line, c->pos));
      }
      ++c->pos;
      c->SkipBlanks();
      if (c->Peek() != '"') {
        return Fail(c->pos, "expected '\"' to open the value of label " + Quote(name) + ", found " +
                                Found(c->line, c->pos));
      }
      std::string_view value;
      if (!ParseLabelValue(c, name, &value)) return false;
      s->labels.emplace_back(name, value);
      c->SkipBlanks();
      if (c->Peek() == ',') {
        ++c->pos;
        continue;
      }
      if (c->Peek() != '}') {
        return Fail(c->pos, "expected ',' or '}' after the value of label " + Quote(name) +
                                ", found " + Found(c->line, c->pos));
      }
      break;
    }
    ++c->pos;  // '}'
    return true;
  }

  // A quoted value; c is at the opening quote. The value is a view into the
  // line unless it holds escapes, in which case it views an unescaped copy.
  bool ParseLabelValue(Cursor* c, std::string_view name, std::string_view* value) {
    ++c->pos;  // opening quote
    size_t start = c->pos;
    std::string* copy = nullptr;
    for (;;) {
      if (c->AtEnd()) return Fail(c->pos, "unterminated value of label " + Quote(name));
      char ch = c->line[c->pos];
      if (ch == '"') break;
      if (ch != '\\') {
        if (copy != nullptr) copy->push_back(ch);
        ++c->pos;
        continue;
      }
      if (copy == nullptr) {
        copy = &scratch_->unescaped.emplace_back(c->line.substr(start, c->pos - start));
      }
      size_t at = c->pos++;
      char e = c->Peek();
      if (e == '\\' || e == '"') {
        copy->push_back(e);
      } else if (e == 'n') {
        copy->push_back('\n');
      } else {
        if (c->AtEnd()) return Fail(at, "unterminated value of label " + Quote(name));
        return Fail(at, std::string("invalid escape sequence '\\") + e + "' in value of label " +
                            Quote(name));
      }
      ++c->pos;
    }
    *value = copy != nullptr ? std::string_view(*copy) : c->line.substr(start, c->pos - start);
    ++c->pos;  // closing quote
    return true;
  }

  // The type of the family a sample belongs to: its own name, or for the
  // series a histogram or summary adds, the name without the suffix.
  std::string_view TypeOf(std::string_view name) const {
    auto it = families_.find(name);
    if (it != families_.end() && it->second.has_type) return it->second.type;
    struct Suffix {
      std::string_view text;
      bool summary_too;
    };
    for (Suffix suffix : {Suffix{"_bucket", false}, Suffix{"_sum", true}, Suffix{"_count", true}}) {
      if (name.size() <= suffix.text.size() || !name.ends_with(suffix.text)) continue;
      auto base = families_.find(name.substr(0, name.size() - suffix.text.size()));
      if (base == families_.end()) continue;
      std::string_view t = base->second.type;
      if (t == "histogram" || (suffix.summary_too && t == "summary")) return t;
    }
    return kUntyped;
  }

  PromTextScratch* scratch_;
  std::vector<PromSample>* samples_;
  std::vector<PromError>* errors_;
  // Keys view the body, which outlives the parser.
  std::unordered_map<std::string_view, Family> families_;

  std::unordered_set<std::string_view> names_seen_;
  size_t error_pos_ = 0;
  std::string error_;
};

}  // namespace

std::string PromError::ToString() const {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

std::optional<double> ParsePromFloat(std::string_view text) {
  bool negative = false;
  bool signed_ = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    signed_ = true;
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  double v = 0;
  if (EqualsIgnoreCase(text, "inf") || EqualsIgnoreCase(text, "infinity")) {
    v = std::numeric_limits<double>::infinity();
  } else if (EqualsIgnoreCase(text, "nan")) {
    if (signed_) return std::nullopt;  // Go accepts a sign only before Inf
    return std::numeric_limits<double>::quiet_NaN();
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    // Go requires the binary exponent of a hexadecimal float.
    std::string_view digits = text.substr(2);
    if (digits.find_first_of("pP") == std::string_view::npos) return std::nullopt;
    if (digits[0] == '-' || digits[0] == '+') return std::nullopt;
    std::optional<double> parsed = ParseFinite(digits, std::chars_format::hex);
    if (!parsed) return std::nullopt;
    v = *parsed;
  } else {
    if (!IsDigit(text[0]) && text[0] != '.') return std::nullopt;
    std::optional<double> parsed = ParseFinite(text, std::chars_format::general);
    if (!parsed) return std::nullopt;
    v = *parsed;
  }
  return negative ? -v : v;
}

void ParsePromText(std::string_view body, PromTextScratch* scratch,
                   std::vector<PromSample>* samples, std::vector<PromError>* errors,
                   std::vector<PromMetadata>* metadata) {
  Parser parser(scratch, samples, errors);
  size_t line_no = 0;
  while (!body.empty()) {
    size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body.remove_prefix(nl == std::string_view::npos ? body.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    parser.ParseLine(line, ++line_no);
  }
  if (metadata != nullptr) parser.Metadata(metadata);
}

}  // namespace gpulse::ingest
