#include "ingest/line_protocol.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace gpulse::ingest {

namespace {

// Character classes. Each scanner stops at the bytes whose class has its bit
// set; every other byte is plain text for it, so the hot loops are one table
// lookup per byte. Non-ASCII bytes stop the text scanners so that UTF-8 can
// be validated without slowing down ASCII.
enum : uint8_t {
  kStopMeasurement = 1 << 0,  // , space \ non-printable non-ASCII
  kStopKey = 1 << 1,          // , = space \ non-printable non-ASCII (tag and field keys)
  kStopTagValue = 1 << 2,     // , = space \r \n \ non-ASCII
  kStopString = 1 << 3,       // " \ \n non-ASCII
  kStopValue = 1 << 4,        // , space \r \n (unquoted field values)
  kNonPrintable = 1 << 5,     // 0x00-0x1f and 0x7f
};

constexpr std::array<uint8_t, 256> MakeClasses() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    uint8_t v = 0;
    const bool non_printable = c < 0x20 || c == 0x7f;
    const bool high = c >= 0x80;
    if (non_printable) v |= kNonPrintable;
    if (c == ',' || c == ' ' || c == '\\' || non_printable || high) v |= kStopMeasurement;
    if (c == ',' || c == '=' || c == ' ' || c == '\\' || non_printable || high) v |= kStopKey;
    if (c == ',' || c == '=' || c == ' ' || c == '\r' || c == '\n' || c == '\\' || high) {
      v |= kStopTagValue;
    }
    if (c == '"' || c == '\\' || c == '\n' || high) v |= kStopString;
    if (c == ',' || c == ' ' || c == '\r' || c == '\n') v |= kStopValue;
    t[c] = v;
  }
  return t;
}

constexpr std::array<uint8_t, 256> kClass = MakeClasses();

inline uint8_t ClassOf(char c) { return kClass[static_cast<unsigned char>(c)]; }
inline bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// Length of the valid UTF-8 sequence starting at p (a byte >= 0x80), or 0.
// Same rules as Go's utf8.Valid: no overlong forms, surrogates or code
// points above U+10FFFF.
int Utf8SequenceLength(const char* p, const char* end) {
  const auto b = [&](int i) { return static_cast<unsigned char>(p[i]); };
  const auto cont = [&](int i) { return p + i < end && (b(i) & 0xc0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0xc2) return 0;
  if (c < 0xe0) return cont(1) ? 2 : 0;
  if (c < 0xf0) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(1) >= 0xa0) return 0;  // surrogate
    return 3;
  }
  if (c < 0xf5) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// A byte as an error message shows it: 'c', '\t', '\xff', end of line.
std::string Describe(const char* p, const char* end) {
  if (p >= end) return "end of input";
  const char c = *p;
  if (c == '\n') return "end of line";
  if (c == '\r') return "'\\r'";
  if (c == '\t') return "'\\t'";
  if (ClassOf(c) & kNonPrintable || static_cast<unsigned char>(c) >= 0x80) {
    static const char kHex[] = "0123456789abcdef";
    const auto u = static_cast<unsigned char>(c);
    return std::string("'\\x") + kHex[u >> 4] + kHex[u & 15] + "'";
  }
  return std::string("'") + c + "'";
}

std::string Quote(std::string_view text) {
  std::string out = "\"";
  out.append(text.substr(0, 64));
  if (text.size() > 64) out += "...";
  out += '"';
  return out;
}

// Powers of ten that doubles hold exactly: the fast path of ParseFloat.
constexpr double kExactPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

enum class NumberError { kNone, kSyntax, kRange };

// Parses decimal digits [p, end) into *out. Nineteen digits always fit in 64
// bits, so only the digits after those need an overflow check.
NumberError ParseDigits(const char* p, const char* end, uint64_t* out) {
  if (p == end) return NumberError::kSyntax;
  uint64_t v = 0;
  const char* const fast_end = end - p > 19 ? p + 19 : end;
  for (; p < fast_end; ++p) {
    const auto d = static_cast<unsigned>(*p - '0');
    if (d > 9) return NumberError::kSyntax;
    v = v * 10 + d;
  }
  bool overflow = false;
  for (; p < end; ++p) {
    const auto d = static_cast<unsigned>(*p - '0');
    if (d > 9) return NumberError::kSyntax;
    overflow = overflow || __builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, d, &v);
  }
  *out = v;
  return overflow ? NumberError::kRange : NumberError::kNone;
}

NumberError ParseSigned(const char* p, const char* end, int64_t* out) {
  const bool negative = p < end && *p == '-';
  uint64_t magnitude = 0;
  const NumberError err = ParseDigits(p + negative, end, &magnitude);
  if (err != NumberError::kNone) return err;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (magnitude > limit) return NumberError::kRange;
  *out = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  return NumberError::kNone;
}

NumberError ParseUnsigned(const char* p, const char* end, uint64_t* out) {
  return ParseDigits(p, end, out);
}

// Float syntax: -?(digits[.digits*]|.digits)([eE][+-]?digits)?. Stricter than
// strtod on purpose: no '+', hex, inf, nan, or digit separators.
NumberError ParseFloat(const char* begin, const char* end, double* out) {
  const char* p = begin;
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  uint64_t mantissa = 0;
  int digits = 0;   // significant digits accumulated into mantissa
  int dropped = 0;  // integer digits that did not fit (each one is *10)
  int scale = 0;    // fraction digits accumulated (each one is /10)
  int seen = 0;     // mantissa digits in the text
  for (; p < end && IsDigit(*p); ++p, ++seen) {
    if (digits < 19) {
      mantissa = mantissa * 10 + static_cast<unsigned>(*p - '0');
      if (mantissa != 0) ++digits;
    } else {
      ++dropped;
    }
  }
  if (p < end && *p == '.') {
    for (++p; p < end && IsDigit(*p); ++p, ++seen) {
      if (digits < 19) {
        mantissa = mantissa * 10 + static_cast<unsigned>(*p - '0');
        if (mantissa != 0) ++digits;
        ++scale;
      } else {
        ++dropped;  // fraction digits past 19: only the slow path is exact
      }
    }
  }
  if (seen == 0) return NumberError::kSyntax;
  int64_t exponent = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool negative_exponent = false;
    if (p < end && (*p == '+' || *p == '-')) negative_exponent = *p++ == '-';
    if (p == end) return NumberError::kSyntax;
    for (; p < end && IsDigit(*p); ++p) {
      if (exponent < 100000) exponent = exponent * 10 + (*p - '0');
    }
    if (negative_exponent) exponent = -exponent;
  }
  if (p != end) return NumberError::kSyntax;

  // Clinger's fast path: an exact mantissa below 2^53 and an exact power of
  // ten give the correctly rounded result with one multiplication or division.
  const int64_t e = exponent - scale;
  if (dropped == 0 && mantissa <= (uint64_t{1} << 53) && e >= -22 && e <= 22) {
    double v = static_cast<double>(mantissa);
    v = e < 0 ? v / kExactPowers[-e] : v * kExactPowers[e];
    *out = negative ? -v : v;
    return NumberError::kNone;
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec == std::errc() && ptr == end) {
    *out = v;
    return NumberError::kNone;
  }
  if (ec != std::errc::result_out_of_range) return NumberError::kSyntax;
  // from_chars reports underflow as out of range too; strtod tells the two
  // apart: a tiny number is a (sub)normal or zero, not an error.
  const std::string copy(begin, end);
  v = std::strtod(copy.c_str(), nullptr);
  if (!std::isfinite(v)) return NumberError::kRange;
  *out = v;
  return NumberError::kNone;
}

bool ParseBool(std::string_view t, bool* out) {
  if (t == "t" || t == "T" || t == "true" || t == "True" || t == "TRUE") {
    *out = true;
    return true;
  }
  if (t == "f" || t == "F" || t == "false" || t == "False" || t == "FALSE") {
    *out = false;
    return true;
  }
  return false;
}

// A cheap signature of a key for duplicate detection: equal keys always get
// the same bit, so a clear bit proves a key is new.
inline uint64_t KeyBit(std::string_view key) {
  const unsigned h = static_cast<unsigned>(key.size()) * 7u +
                     static_cast<unsigned char>(key.front()) * 31u +
                     static_cast<unsigned char>(key.back());
  return uint64_t{1} << (h & 63);
}

}  // namespace

bool ParsePrecision(std::string_view text, Precision* precision) {
  if (text.size() > 1 && text.front() == '1') text.remove_prefix(1);
  Precision p;
  if (text == "ns") {
    p = Precision::kNanoseconds;
  } else if (text == "us" || text == "u" || text == "\xc2\xb5s" || text == "\xce\xbcs") {
    p = Precision::kMicroseconds;  // micro sign U+00B5 or Greek mu U+03BC
  } else if (text == "ms") {
    p = Precision::kMilliseconds;
  } else if (text == "s") {
    p = Precision::kSeconds;
  } else if (text == "m") {
    p = Precision::kMinutes;
  } else if (text == "h") {
    p = Precision::kHours;
  } else {
    return false;
  }
  *precision = p;
  return true;
}

int64_t PrecisionNanos(Precision precision) {
  switch (precision) {
    case Precision::kNanoseconds:
      return 1;
    case Precision::kMicroseconds:
      return 1000;
    case Precision::kMilliseconds:
      return 1000000;
    case Precision::kSeconds:
      return 1000000000;
    case Precision::kMinutes:
      return int64_t{60} * 1000000000;
    case Precision::kHours:
      return int64_t{3600} * 1000000000;
  }
  return 1;
}

FieldValue FieldView::ToFieldValue() const {
  switch (type) {
    case FieldType::kFloat:
      return float_value;
    case FieldType::kInt:
      return int_value;
    case FieldType::kUint:
      return uint_value;
    case FieldType::kBool:
      return bool_value;
    case FieldType::kString:
      return std::string(string_value);
  }
  return float_value;
}

// Parses one body. Holds the cursor and the position bookkeeping (line
// number, start of the current physical line) that error columns need.
class LineProtocolParser::LineScanner {
 public:
  LineScanner(LineProtocolParser* parser, std::string_view body, const Options& options)
      : parser_(parser),
        p_(body.data()),
        end_(body.data() + body.size()),
        line_start_(body.data()),
        unit_(PrecisionNanos(options.precision)),
        default_time_(RoundDown(options.default_time_ns, unit_)) {}

  void Run(const Options& options, const std::function<void(const PointView&)>& on_point,
           std::vector<LineError>* errors, size_t* error_count);

 private:
  static int64_t RoundDown(int64_t t, int64_t unit) {
    int64_t q = t / unit;
    if (t % unit < 0) --q;
    int64_t r;
    return __builtin_mul_overflow(q, unit, &r) ? (t / unit) * unit : r;
  }

  bool Fail(const char* at, std::string message) {
    error_at_ = at;
    message_ = std::move(message);
    return false;
  }

  bool SkipComment();
  bool ParseLine();
  bool ParseTags();
  bool ParseFields();
  bool ParseFieldValue(FieldView* field, int slot);
  bool ParseString(FieldView* field, int slot);
  bool ParseTimestamp();
  bool Finish(std::string_view* measurement);

  // Scans text of one element from p_ up to its delimiter, unescaping into
  // the scratch buffer when needed. `kStop` selects the class bit; escapable
  // bytes after a backslash are ',', ' ' and, unless kMeasurement, '='.
  template <uint8_t kStop, bool kMeasurement>
  bool ScanText(const char* what, std::string_view* out, int slot);

  void AddFixup(int slot, size_t offset, size_t size) {
    parser_->fixups_.push_back(Fixup{slot, offset, size});
  }

  // The current text of the view in `slot`: `view` itself, or its place in
  // the scratch buffer when it was unescaped (the buffer may have moved since
  // the view was made). For error messages; Finish fixes all views at once.
  std::string_view Resolve(int slot, std::string_view view) const {
    for (const Fixup& f : parser_->fixups_) {
      if (f.slot == slot) return std::string_view(parser_->scratch_.data() + f.offset, f.size);
    }
    return view;
  }

  LineProtocolParser* const parser_;
  const char* p_;
  const char* const end_;
  const char* line_start_;  // first byte of the physical line holding p_
  size_t line_ = 1;
  const int64_t unit_;
  const int64_t default_time_;
  int64_t timestamp_ = 0;
  std::string_view measurement_;
  const char* line_begin_ = nullptr;  // first byte of the line being parsed
  const char* error_at_ = nullptr;
  std::string message_;
};

template <uint8_t kStop, bool kMeasurement>
bool LineProtocolParser::LineScanner::ScanText(const char* what, std::string_view* out, int slot) {
  const char* const start = p_;
  const char* p = p_;
  const char* copied = nullptr;  // when escaped: bytes [copied, p) still to copy
  size_t scratch_begin = 0;
  std::string& scratch = parser_->scratch_;
  for (;;) {
    while (p < end_ && !(ClassOf(*p) & kStop)) ++p;
    if (p == end_) break;
    const char c = *p;
    if (c == '\\') {
      const char n = p + 1 < end_ ? p[1] : '\0';
      if (n == ',' || n == ' ' || (!kMeasurement && n == '=')) {
        if (copied == nullptr) {
          scratch_begin = scratch.size();
          copied = start;
        }
        scratch.append(copied, p);
        scratch.push_back(n);
        p += 2;
        copied = p;
        continue;
      }
      ++p;  // a backslash before any other byte is itself
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      const int n = Utf8SequenceLength(p, end_);
      if (n == 0) return Fail(p, std::string("invalid UTF-8 in ") + what);
      p += n;
      continue;
    }
    if ((kStop != kStopTagValue) && (ClassOf(c) & kNonPrintable) && c != '\n' && c != '\r') {
      return Fail(p, std::string("invalid character ") + Describe(p, end_) + " in " + what);
    }
    break;  // a delimiter: the caller decides what it means
  }
  p_ = p;
  if (copied == nullptr) {
    *out = std::string_view(start, p - start);
  } else {
    scratch.append(copied, p);
    AddFixup(slot, scratch_begin, scratch.size() - scratch_begin);
    *out = Resolve(slot, {});
  }
  return true;
}

bool LineProtocolParser::LineScanner::SkipComment() {
  // Comment text must be printable UTF-8 (tabs allowed), like every name.
  const char* p = p_;
  while (p < end_ && *p != '\n') {
    const auto u = static_cast<unsigned char>(*p);
    if (u >= 0x80) {
      const int n = Utf8SequenceLength(p, end_);
      if (n == 0) return Fail(p, "invalid UTF-8 in comment");
      p += n;
      continue;
    }
    if ((ClassOf(*p) & kNonPrintable) && *p != '\t' && *p != '\r') {
      return Fail(p, "invalid character " + Describe(p, end_) + " in comment");
    }
    ++p;
  }
  p_ = p;
  return true;
}

bool LineProtocolParser::LineScanner::ParseLine() {
  parser_->tags_.clear();
  parser_->fields_.clear();
  parser_->fixups_.clear();
  parser_->scratch_.clear();
  measurement_ = {};
  if (!ScanText<kStopMeasurement, true>("measurement", &measurement_, -1)) return false;
  if (measurement_.empty()) {
    return Fail(p_, "expected measurement, found " + Describe(p_, end_));
  }
  if (p_ < end_ && *p_ == ',' && !ParseTags()) return false;
  if (p_ == end_ || *p_ != ' ') {
    const char* after = parser_->tags_.empty() ? "measurement" : "tag value";
    return Fail(
        p_, std::string("expected ',' or ' ' after ") + after + ", found " + Describe(p_, end_));
  }
  while (p_ < end_ && *p_ == ' ') ++p_;
  return ParseFields() && ParseTimestamp();
}

bool LineProtocolParser::LineScanner::ParseTags() {
  auto& tags = parser_->tags_;
  while (p_ < end_ && *p_ == ',') {
    ++p_;
    const int slot = static_cast<int>(tags.size()) * 4;
    TagView& tag = tags.emplace_back();
    if (!ScanText<kStopKey, false>("tag key", &tag.key, slot)) return false;
    if (tag.key.empty()) return Fail(p_, "expected tag key, found " + Describe(p_, end_));
    if (p_ == end_ || *p_ != '=') {
      return Fail(p_, "expected '=' after tag key " + Quote(Resolve(slot, tag.key)) + ", found " +
                          Describe(p_, end_));
    }
    ++p_;
    if (!ScanText<kStopTagValue, false>("tag value", &tag.value, slot + 1)) return false;
    if (tag.value.empty() || (p_ < end_ && *p_ == '=')) {
      return Fail(p_, "expected tag value after tag key " + Quote(Resolve(slot, tag.key)) +
                          ", found " + Describe(p_, end_));
    }
  }
  return true;
}

bool LineProtocolParser::LineScanner::ParseFields() {
  auto& fields = parser_->fields_;
  for (;;) {
    const int slot = static_cast<int>(fields.size()) * 4 + 2;
    FieldView& field = fields.emplace_back();
    if (!ScanText<kStopKey, false>("field key", &field.key, slot)) return false;
    if (field.key.empty()) return Fail(p_, "expected field key, found " + Describe(p_, end_));
    if (p_ == end_ || *p_ != '=') {
      return Fail(p_, "expected '=' after field key " + Quote(Resolve(slot, field.key)) +
                          ", found " + Describe(p_, end_));
    }
    ++p_;
    if (!ParseFieldValue(&field, slot + 1)) return false;
    if (p_ == end_ || *p_ != ',') return true;
    ++p_;
  }
}

bool LineProtocolParser::LineScanner::ParseFieldValue(FieldView* field, int slot) {
  if (p_ < end_ && *p_ == '"') return ParseString(field, slot);
  const char* const start = p_;
  while (p_ < end_ && !(ClassOf(*p_) & kStopValue)) ++p_;
  const char* const end = p_;
  if (start == end) {
    return Fail(start, "expected field value after field key " +
                           Quote(Resolve(slot - 1, field->key)) + ", found " +
                           Describe(start, end_));
  }
  const std::string_view token(start, end - start);
  const char first = *start;
  if (IsDigit(first) || first == '-' || first == '.') {
    NumberError err;
    const char* kind;
    switch (end[-1]) {
      case 'i':
        field->type = FieldType::kInt;
        err = ParseSigned(start, end - 1, &field->int_value);
        kind = "integer";
        break;
      case 'u':
        field->type = FieldType::kUint;
        err = ParseUnsigned(start, end - 1, &field->uint_value);
        kind = "unsigned integer";
        break;
      default:
        field->type = FieldType::kFloat;
        err = ParseFloat(start, end, &field->float_value);
        kind = "float";
        break;
    }
    if (err == NumberError::kNone) return true;
    return Fail(start, std::string(err == NumberError::kRange ? "out of range " : "invalid ") +
                           kind + " value " + Quote(token) + " for field key " +
                           Quote(Resolve(slot - 1, field->key)));
  }
  field->type = FieldType::kBool;
  if (ParseBool(token, &field->bool_value)) return true;
  return Fail(start, "invalid field value " + Quote(token) + " for field key " +
                         Quote(Resolve(slot - 1, field->key)) +
                         ": expected a number, a quoted string, or a boolean");
}

bool LineProtocolParser::LineScanner::ParseString(FieldView* field, int slot) {
  field->type = FieldType::kString;
  const size_t open_line = line_;
  const auto open_column = static_cast<size_t>(p_ - line_start_ + 1);
  const char* const start = p_ + 1;
  const char* p = start;
  const char* copied = nullptr;
  size_t scratch_begin = 0;
  std::string& scratch = parser_->scratch_;
  for (;;) {
    while (p < end_ && !(ClassOf(*p) & kStopString)) ++p;
    if (p == end_) {
      p_ = p;
      return Fail(p, "expected closing '\"' of the string value of field key " +
                         Quote(Resolve(slot - 1, field->key)) + " opened at " +
                         std::to_string(open_line) + ":" + std::to_string(open_column) +
                         ", found end of input");
    }
    const char c = *p;
    if (c == '"') break;
    if (c == '\n') {
      ++line_;
      line_start_ = ++p;
      continue;
    }
    if (c == '\\') {
      if (p + 1 < end_ && (p[1] == '"' || p[1] == '\\')) {
        if (copied == nullptr) {
          scratch_begin = scratch.size();
          copied = start;
        }
        scratch.append(copied, p);
        scratch.push_back(p[1]);
        p += 2;
        copied = p;
        continue;
      }
      ++p;
      continue;
    }
    const int n = Utf8SequenceLength(p, end_);
    if (n == 0) {
      p_ = p;
      return Fail(p, "invalid UTF-8 in the string value of field key " +
                         Quote(Resolve(slot - 1, field->key)));
    }
    p += n;
  }
  if (copied == nullptr) {
    field->string_value = std::string_view(start, p - start);
  } else {
    scratch.append(copied, p);
    AddFixup(slot, scratch_begin, scratch.size() - scratch_begin);
    field->string_value = Resolve(slot, {});
  }
  p_ = p + 1;
  if (p_ < end_ && !(ClassOf(*p_) & kStopValue)) {
    return Fail(p_, "expected ',' or ' ' after the string value of field key " +
                        Quote(Resolve(slot - 1, field->key)) + ", found " + Describe(p_, end_));
  }
  return true;
}

bool LineProtocolParser::LineScanner::ParseTimestamp() {
  const char* p = p_;
  while (p < end_ && *p == ' ') ++p;
  timestamp_ = default_time_;
  if (p < end_ && *p != '\n' && *p != '\r') {
    if (p == p_) {
      return Fail(p, "expected ',' or ' ' after field value, found " + Describe(p, end_));
    }
    const char* const start = p;
    while (p < end_ && *p != ' ' && *p != '\r' && *p != '\n') ++p;
    int64_t t = 0;
    const NumberError err = ParseSigned(start, p, &t);
    const std::string_view token(start, p - start);
    if (err == NumberError::kSyntax) {
      return Fail(start, "expected timestamp (an integer) or end of line, found " + Quote(token));
    }
    if (err == NumberError::kRange || __builtin_mul_overflow(t, unit_, &timestamp_)) {
      return Fail(start, "timestamp " + Quote(token) + " is out of range");
    }
  }
  while (p < end_ && (*p == ' ' || *p == '\r')) ++p;
  if (p < end_ && *p != '\n') {
    return Fail(p, "expected end of line, found " + Describe(p, end_));
  }
  p_ = p;
  return true;
}

bool LineProtocolParser::LineScanner::Finish(std::string_view* measurement) {
  auto& tags = parser_->tags_;
  auto& fields = parser_->fields_;
  const char* base = parser_->scratch_.data();
  for (const Fixup& f : parser_->fixups_) {
    const std::string_view text(base + f.offset, f.size);
    if (f.slot < 0) {
      *measurement = text;
      continue;
    }
    const size_t index = static_cast<size_t>(f.slot) / 4;
    switch (f.slot % 4) {
      case 0:
        tags[index].key = text;
        break;
      case 1:
        tags[index].value = text;
        break;
      case 2:
        fields[index].key = text;
        break;
      case 3:
        fields[index].string_value = text;
        break;
    }
  }
  // Repeated tag keys make the series ambiguous: an error. A repeated field
  // key keeps its last value, as InfluxDB does, at its first position. A
  // clear KeyBit proves a key new; past a few dozen keys the 64 bits fill,
  // so a wide line looks its keys up in a hash map instead.
  constexpr size_t kPairwiseUpTo = 64;
  auto& positions = parser_->positions_;
  const bool wide = tags.size() > kPairwiseUpTo || fields.size() > kPairwiseUpTo;
  const auto earlier = [&](std::string_view key, size_t at, const auto& views) -> size_t {
    if (wide) {
      const auto [it, added] = positions.try_emplace(key, at);
      return added ? at : it->second;
    }
    for (size_t j = 0; j < at; ++j) {
      if (views[j].key == key) return j;
    }
    return at;
  };
  if (wide) positions.clear();  // only wide lines fill it: a narrow one costs nothing here
  uint64_t seen = 0;
  for (size_t i = 0; i < tags.size(); ++i) {
    const uint64_t bit = KeyBit(tags[i].key);
    if ((wide || (seen & bit)) && earlier(tags[i].key, i, tags) != i) {
      message_ = "repeated tag key " + Quote(tags[i].key);
      return false;
    }
    seen |= bit;
  }
  if (wide) positions.clear();
  seen = 0;
  size_t kept = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    const uint64_t bit = KeyBit(fields[i].key);
    const size_t first = wide || (seen & bit) ? earlier(fields[i].key, kept, fields) : kept;
    seen |= bit;
    if (first != kept) {
      fields[first] = fields[i];
      continue;
    }
    if (kept != i) fields[kept] = fields[i];
    ++kept;
  }
  fields.resize(kept);
  return true;
}

void LineProtocolParser::LineScanner::Run(const Options& options,
                                          const std::function<void(const PointView&)>& on_point,
                                          std::vector<LineError>* errors, size_t* error_count) {
  size_t bad = 0;
  while (p_ < end_) {
    // Blank lines, and blanks before a line, are skipped.
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\r')) ++p_;
    if (p_ == end_) break;
    if (*p_ == '\n') {
      ++line_;
      line_start_ = ++p_;
      continue;
    }
    line_begin_ = p_;
    const size_t first_line = line_;
    const size_t first_column = static_cast<size_t>(p_ - line_start_ + 1);
    const bool ok = *p_ == '#' ? SkipComment() : ParseLine();
    std::string_view measurement = measurement_;
    if (!ok) {
      ++bad;
      if (errors != nullptr && errors->size() < options.max_errors) {
        errors->push_back(LineError{line_, static_cast<size_t>(error_at_ - line_start_ + 1),
                                    std::move(message_)});
      }
      // Resume at the next line after the error: a bad line never takes
      // the good ones after it down with it.
      const char* nl = static_cast<const char*>(
          std::memchr(error_at_, '\n', static_cast<size_t>(end_ - error_at_)));
      p_ = nl == nullptr ? end_ : nl;
      message_.clear();
    } else if (*line_begin_ == '#') {
      // A comment: nothing to emit.
    } else if (!Finish(&measurement)) {
      // Finish's errors are about the line as a whole: point at its start.
      ++bad;
      if (errors != nullptr && errors->size() < options.max_errors) {
        errors->push_back(LineError{first_line, first_column, std::move(message_)});
      }
      message_.clear();
    } else {
      PointView view;
      view.measurement = measurement;
      view.tags = parser_->tags_;
      view.fields = parser_->fields_;
      view.timestamp_ns = timestamp_;
      view.line = first_line;
      on_point(view);
    }
    if (p_ < end_) {  // at the '\n' that ends the line
      ++line_;
      line_start_ = ++p_;
    }
  }
  if (error_count != nullptr) *error_count = bad;
}

void LineProtocolParser::Parse(std::string_view body, const Options& options,
                               const std::function<void(const PointView&)>& on_point,
                               std::vector<LineError>* errors, size_t* error_count) {
  LineScanner scanner(this, body, options);
  scanner.Run(options, on_point, errors, error_count);
}

void ParseToPoints(std::string_view body, const LineProtocolParser::Options& options,
                   std::vector<Point>* points, std::vector<LineError>* errors) {
  LineProtocolParser parser;
  parser.Parse(
      body, options,
      [points](const PointView& view) {
        Point& point = points->emplace_back();
        point.measurement.assign(view.measurement);
        point.tags.reserve(view.tags.size());
        for (const TagView& tag : view.tags) {
          point.tags.push_back(Tag{std::string(tag.key), std::string(tag.value)});
        }
        point.fields.reserve(view.fields.size());
        for (const FieldView& field : view.fields) {
          point.fields.push_back(Field{std::string(field.key), field.ToFieldValue()});
        }
        point.timestamp_ns = view.timestamp_ns;
      },
      errors, nullptr);
}

}  // namespace gpulse::ingest
