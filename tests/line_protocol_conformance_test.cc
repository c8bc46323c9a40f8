// Runs every decode case of the InfluxDB line-protocol corpus
// (../shared/data/conformance/line-protocol-corpus.json, see SOURCES.md there)
// through LineProtocolParser.
//
// How a case passes (docs/line-protocol.md, "Conformance", gives the reasons):
// - output.result: the body parses with no error and gives exactly the
//   expected points, in order: name, tags (compared as sets: the corpus lists
//   them sorted, the parser keeps input order), fields in order with type and
//   value, time. Floats must be equal as doubles, so bit-exact except that
//   -0 equals 0 (the corpus writes "-0." as 0).
// - output.error: at least one line of the body is rejected. The corpus's
//   errors are whole-input errors of a decoder that stops at the first bad
//   line; this parser goes on, so "rejected" means "some line was rejected".
// Cases listed in kDeliberateDifferences are expected to fail, and must.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ingest/line_protocol.h"

#ifndef GPULSE_SHARED_DIR
#define GPULSE_SHARED_DIR "../shared"
#endif

namespace gpulse::ingest {
namespace {

// Corpus keys where this parser deliberately differs. Each has its reason in
// docs/line-protocol.md.
const std::set<std::string> kDeliberateDifferences = {};

std::string DecodeBase64(const std::string& in) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const size_t v = kAlphabet.find(c);
    if (v == std::string::npos) continue;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

bool SameValue(const FieldValue& got, const nlohmann::json& want, std::string* why) {
  const std::string type = want.begin().key();
  const nlohmann::json& value = want.begin().value();
  bool ok = false;
  if (type == "float") {
    ok = std::holds_alternative<double>(got) && std::get<double>(got) == value.get<double>();
  } else if (type == "int") {
    ok = std::holds_alternative<int64_t>(got) && std::get<int64_t>(got) == value.get<int64_t>();
  } else if (type == "uint") {
    ok = std::holds_alternative<uint64_t>(got) && std::get<uint64_t>(got) == value.get<uint64_t>();
  } else if (type == "bool") {
    ok = std::holds_alternative<bool>(got) && std::get<bool>(got) == value.get<bool>();
  } else if (type == "string") {
    ok = std::holds_alternative<std::string>(got) &&
         std::get<std::string>(got) == value.get<std::string>();
  }
  if (!ok) *why = "field value differs, want " + want.dump();
  return ok;
}

bool SamePoint(const Point& got, const nlohmann::json& want, std::string* why) {
  if (got.measurement != want["name"].get<std::string>()) {
    *why = "name \"" + got.measurement + "\"";
    return false;
  }
  if (got.timestamp_ns != want["time"].get<int64_t>()) {
    *why = "time " + std::to_string(got.timestamp_ns);
    return false;
  }
  std::vector<Tag> want_tags;
  for (const auto& t : want["tags"]) {
    want_tags.push_back(Tag{t["key"].get<std::string>(), t["value"].get<std::string>()});
  }
  std::vector<Tag> got_tags = got.tags;
  const auto by_key = [](const Tag& a, const Tag& b) { return a.key < b.key; };
  std::sort(got_tags.begin(), got_tags.end(), by_key);
  std::sort(want_tags.begin(), want_tags.end(), by_key);
  if (got_tags != want_tags) {
    *why = "tags differ";
    return false;
  }
  const auto& want_fields = want["fields"];
  if (got.fields.size() != want_fields.size()) {
    *why = std::to_string(got.fields.size()) + " fields";
    return false;
  }
  for (size_t i = 0; i < got.fields.size(); ++i) {
    if (got.fields[i].key != want_fields[i]["key"].get<std::string>()) {
      *why = "field key \"" + got.fields[i].key + "\"";
      return false;
    }
    if (!SameValue(got.fields[i].value, want_fields[i]["value"], why)) return false;
  }
  return true;
}

// True when the parser's answer for one case matches the corpus; *why says
// what differed otherwise.
bool RunCase(const nlohmann::json& c, std::string* why) {
  const auto& input = c["input"];
  const std::string text = input["text"].is_string()
                               ? input["text"].get<std::string>()
                               : DecodeBase64(input["text"]["binary"].get<std::string>());
  LineProtocolParser::Options options;
  if (!ParsePrecision(input["precision"].get<std::string>(), &options.precision)) {
    *why = "unknown precision";
    return false;
  }
  options.default_time_ns = input["defaultTime"].get<int64_t>();
  std::vector<Point> points;
  std::vector<LineError> errors;
  ParseToPoints(text, options, &points, &errors);
  const auto& output = c["output"];
  if (output.contains("error")) {
    if (errors.empty()) *why = "accepted, want error: " + output["error"].get<std::string>();
    return !errors.empty();
  }
  if (!errors.empty()) {
    *why = "rejected at " + std::to_string(errors[0].line) + ":" +
           std::to_string(errors[0].column) + ": " + errors[0].message;
    return false;
  }
  const auto& want = output["result"];
  if (points.size() != want.size()) {
    *why = std::to_string(points.size()) + " points, want " + std::to_string(want.size());
    return false;
  }
  for (size_t i = 0; i < points.size(); ++i) {
    if (!SamePoint(points[i], want[i], why)) return false;
  }
  return true;
}

TEST(LineProtocolConformanceTest, EveryDecodeCase) {
  const std::string path =
      std::string(GPULSE_SHARED_DIR) + "/data/conformance/line-protocol-corpus.json";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no conformance corpus at " << path;
  const nlohmann::json corpus = nlohmann::json::parse(in);
  const auto& decode = corpus["decode"];
  size_t passed = 0;
  size_t unexpected = 0;
  for (const auto& [key, c] : decode.items()) {
    std::string why;
    const bool ok = RunCase(c, &why);
    passed += ok;
    const bool deliberate = kDeliberateDifferences.count(key) > 0;
    if (ok == deliberate) {
      ++unexpected;
      const auto& text = c["input"]["text"];
      ADD_FAILURE() << "case " << key << " " << (text.is_string() ? text.dump() : "(binary)")
                    << ": "
                    << (deliberate ? "passes but is listed as a deliberate difference" : why);
      if (unexpected > 50) break;  // enough to go on
    }
  }
  std::printf("conformance: %zu of %zu decode cases pass\n", passed, decode.size());
  RecordProperty("decode_cases", static_cast<int>(decode.size()));
  RecordProperty("decode_cases_passed", static_cast<int>(passed));
  EXPECT_EQ(passed + kDeliberateDifferences.size(), decode.size());
}

}  // namespace
}  // namespace gpulse::ingest
