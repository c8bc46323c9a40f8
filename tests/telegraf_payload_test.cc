// What a real Telegraf agent sends, end to end: each real `nvidia-smi -q -x`
// capture in the shared data folder is turned into Telegraf's nvidia_smi line
// protocol by tests/tools/telegraf_nvidia_smi.py, posted to the in-process
// server as outputs.influxdb_v2 would, and every field of every line is read
// back with the type and the exact value its literal has. The README example
// output of the plugin is posted and checked the same way.

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "tests/support/http_client.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_server.h"

namespace gpulse {
namespace {

const std::string kCaptures = std::string(GPULSE_SHARED_DIR) + "/data/real/telegraf_nvidia_smi";
const std::string kScript = std::string(GPULSE_SOURCE_DIR) + "/tests/tools/telegraf_nvidia_smi.py";

// One field of a line as written: its key and the literal of its value.
struct LiteralField {
  std::string key;
  std::string literal;
};

// One line of line protocol, split by this test's own reader (not ingest/'s
// parser, which is what is under test).
struct Line {
  std::string measurement;
  std::vector<TagMatcher> tags;
  std::vector<LiteralField> fields;
  int64_t timestamp_ns = 0;
};

// Splits at each `sep` that is neither escaped by a backslash nor inside a
// double-quoted string. Pieces keep their escapes.
std::vector<std::string> Split(std::string_view s, char sep, size_t max_pieces = SIZE_MAX) {
  std::vector<std::string> pieces(1);
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size()) {
      pieces.back() += s.substr(i, 2);
      ++i;
      continue;
    }
    if (c == '"') quoted = !quoted;
    if (c == sep && !quoted && pieces.size() < max_pieces) {
      pieces.emplace_back();
    } else {
      pieces.back() += c;
    }
  }
  return pieces;
}

// Tag keys, tag values, field keys and measurements escape `,`, `=`, space.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == ',' || s[i + 1] == '=' || s[i + 1] == ' '))
      ++i;
    out += s[i];
  }
  return out;
}

Line ParseLine(const std::string& text) {
  Line line;
  const std::vector<std::string> parts = Split(text, ' ');
  EXPECT_EQ(parts.size(), 3u) << text;
  if (parts.size() != 3) return line;
  const std::vector<std::string> series = Split(parts[0], ',');
  line.measurement = Unescape(series[0]);
  for (size_t i = 1; i < series.size(); ++i) {
    const std::vector<std::string> kv = Split(series[i], '=', 2);
    line.tags.push_back({Unescape(kv[0]), Unescape(kv.size() > 1 ? kv[1] : "")});
  }
  for (const std::string& field : Split(parts[1], ',')) {
    const std::vector<std::string> kv = Split(field, '=', 2);
    line.fields.push_back({Unescape(kv[0]), kv.size() > 1 ? kv[1] : ""});
  }
  line.timestamp_ns = std::stoll(parts[2]);
  return line;
}

// The type a field literal has in line protocol.
FieldType TypeOf(const std::string& literal) {
  if (literal.front() == '"') return FieldType::kString;
  if (literal.back() == 'i') return FieldType::kInt;
  if (literal.back() == 'u') return FieldType::kUint;
  if (literal == "true" || literal == "false") return FieldType::kBool;
  return FieldType::kFloat;
}

std::string StringValue(const std::string& literal) {
  std::string out;
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    if (literal[i] == '\\' && (literal[i + 1] == '"' || literal[i + 1] == '\\')) ++i;
    out += literal[i];
  }
  return out;
}

// Expects `column` to hold exactly one value, the one `literal` writes.
void ExpectValue(const Column& column, const std::string& literal, const std::string& what) {
  ASSERT_EQ(column.ts.size(), 1u) << what;
  switch (TypeOf(literal)) {
    case FieldType::kString:
      ASSERT_EQ(column.strings.size(), 1u) << what;
      EXPECT_EQ(column.strings[0], StringValue(literal)) << what;
      break;
    case FieldType::kInt:
      ASSERT_EQ(column.ints.size(), 1u) << what;
      EXPECT_EQ(column.ints[0], std::stoll(literal.substr(0, literal.size() - 1))) << what;
      break;
    case FieldType::kUint:
      ASSERT_EQ(column.uints.size(), 1u) << what;
      EXPECT_EQ(column.uints[0], std::stoull(literal.substr(0, literal.size() - 1))) << what;
      break;
    case FieldType::kBool:
      ASSERT_EQ(column.bools.size(), 1u) << what;
      EXPECT_EQ(column.bools[0], literal == "true" ? 1 : 0) << what;
      break;
    case FieldType::kFloat:
      ASSERT_EQ(column.floats.size(), 1u) << what;
      EXPECT_EQ(column.floats[0], std::stod(literal)) << what;
      break;
  }
}

std::string RunScript(const std::string& xml) {
  const std::string command = "python3 '" + kScript + "' '" + xml + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return "";
  std::string out;
  char buffer[65536];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command;
  return out;
}

// A fresh server per payload, so that each payload's checks see only it.
class TelegrafPayloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(kCaptures)) {
      GTEST_SKIP() << kCaptures << " is missing (the shared data folder is not checked out)";
    }
  }

  // Posts `body` as Telegraf's outputs.influxdb_v2 does (precision ns) to a
  // fresh server, then checks that every field of every line is stored with
  // its literal's type and value. Leaves the server running for more checks.
  void PostAndVerify(const std::string& body) {
    server_ = std::make_unique<test::TestServer>();
    dir_ = std::make_unique<storage::ScratchDir>();
    server::ServerConfig config;
    test::UseQuietTestDb(&config.db);
    const Status s = server_->Start(dir_->path(), config, &metrics_, &sources_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    test::HttpClient client(server_->port());
    const test::HttpReply r =
        client.Post("/api/v2/write?org=gpu&bucket=telegraf&precision=ns", body,
                    {{"User-Agent", "Telegraf/1.34"}, {"Content-Type", "text/plain"}});
    ASSERT_EQ(r.status, 204) << r.body;

    // A later line with the same series and time replaces an earlier one.
    std::map<std::string, std::map<std::string, FieldType>> types;  // measurement -> field
    std::map<std::string, std::pair<Line, LiteralField>> last;      // series + field -> value
    std::istringstream lines(body);
    size_t count = 0;
    for (std::string text; std::getline(lines, text);) {
      if (text.empty()) continue;
      ++count;
      const Line line = ParseLine(text);
      for (const LiteralField& f : line.fields) {
        const auto [it, inserted] = types[line.measurement].emplace(f.key, TypeOf(f.literal));
        EXPECT_TRUE(inserted || it->second == TypeOf(f.literal)) << f.key << " changes type";
        std::string key = line.measurement + "|" + f.key + "|" + std::to_string(line.timestamp_ns);
        for (const TagMatcher& t : line.tags) key += "|" + t.key + "=" + t.value;
        last[key] = {line, f};
      }
    }
    ASSERT_GT(count, 0u);
    for (const auto& [measurement, want] : types) {
      std::vector<FieldInfo> fields;
      ASSERT_TRUE(server_->db()->ListFields(measurement, &fields).ok());
      std::map<std::string, FieldType> got;
      for (const FieldInfo& f : fields) got[f.name] = f.type;
      EXPECT_EQ(got, want) << measurement;
    }
    for (const auto& [key, entry] : last) {
      const auto& [line, field] = entry;
      std::vector<SeriesColumn> out;
      ASSERT_TRUE(server_->db()
                      ->Read({line.measurement, line.tags, field.key, line.timestamp_ns,
                              line.timestamp_ns + 1},
                             &out)
                      .ok());
      ASSERT_EQ(out.size(), 1u) << key;
      ExpectValue(out[0].column, field.literal, key);
    }
  }

  // The one value of `field` of the series of `measurement` matching `tags`.
  Column ReadOne(const std::string& measurement, const std::vector<TagMatcher>& tags,
                 const std::string& field) {
    std::vector<SeriesColumn> out;
    EXPECT_TRUE(server_->db()->Read({measurement, tags, field}, &out).ok());
    EXPECT_EQ(out.size(), 1u) << measurement << " " << field;
    return out.empty() ? Column{} : out[0].column;
  }

  server::ServerMetrics metrics_;
  server::SourceRegistry sources_;
  std::unique_ptr<storage::ScratchDir> dir_;
  std::unique_ptr<test::TestServer> server_;  // declared last: stopped before dir_ goes
};

TEST_F(TelegrafPayloadTest, EveryCaptureIsStoredFieldByFieldWithItsType) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kCaptures)) {
    if (entry.path().extension() == ".xml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 12u);
  for (const std::string& xml : files) {
    SCOPED_TRACE(xml);
    const std::string body = RunScript(xml);
    ASSERT_NO_FATAL_FAILURE(PostAndVerify(body));
    ASSERT_TRUE(server_->Stop().ok());
  }
}

TEST_F(TelegrafPayloadTest, A100ValuesAreThoseSourcesMdGives) {
  ASSERT_NO_FATAL_FAILURE(PostAndVerify(RunScript(kCaptures + "/a100-sxm4-v12.xml")));
  const std::vector<TagMatcher> gpu = {{"host", "test-host"},
                                       {"index", "0"},
                                       {"name", "NVIDIA A100-SXM4-80GB"},
                                       {"arch", "Ampere"},
                                       {"pstate", "P0"},
                                       {"compute_mode", "Default"},
                                       {"uuid", "GPU-513536b6-7d19-9063-b049-1e69664bb298"}};
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "memory_total").ints, std::vector<int64_t>{81920});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "memory_used").ints, std::vector<int64_t>{50});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "memory_free").ints, std::vector<int64_t>{80999});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "memory_reserved").ints, std::vector<int64_t>{869});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "temperature_gpu").ints, std::vector<int64_t>{27});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "temperature_memory").ints, std::vector<int64_t>{44});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "pcie_tx_util").ints, std::vector<int64_t>{4000});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "clocks_current_sm").ints, std::vector<int64_t>{1275});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "power_draw").floats, std::vector<double>{67.03});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "power_limit").floats, std::vector<double>{500});
  EXPECT_EQ(ReadOne("nvidia_smi", gpu, "driver_version").strings,
            std::vector<std::string>{"535.54.03"});
  const Column cuda = ReadOne("nvidia_smi", gpu, "cuda_version");
  EXPECT_EQ(cuda.strings, std::vector<std::string>{"12.2"});
  // Fri Aug  4 11:44:30 2023, read as UTC.
  EXPECT_EQ(cuda.ts, std::vector<int64_t>{1691149470'000'000'000});
  // Four MIG devices, GPU instances 3 to 6, 19968 MiB of frame buffer each.
  std::vector<Series> migs;
  ASSERT_TRUE(server_->db()->ListSeries("nvidia_smi_mig", {}, &migs).ok());
  ASSERT_EQ(migs.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const Column total = ReadOne("nvidia_smi_mig",
                                 {{"index", std::to_string(i)},
                                  {"gpu_index", std::to_string(i + 3)},
                                  {"compute_index", "0"},
                                  {"uuid", "GPU-513536b6-7d19-9063-b049-1e69664bb298"}},
                                 "memory_fb_total");
    EXPECT_EQ(total.ints, std::vector<int64_t>{19968});
  }
}

TEST_F(TelegrafPayloadTest, ProcessesKeepTheirCommandLinesAsTags) {
  ASSERT_NO_FATAL_FAILURE(PostAndVerify(RunScript(kCaptures + "/rtx-4000-sff-ada-v13.xml")));
  std::vector<std::string> names;
  ASSERT_TRUE(server_->db()->ListTagValues("nvidia_smi_process", "name", &names).ok());
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(ReadOne("nvidia_smi_process", {{"name", "python"}, {"type", "C"}}, "pid").ints,
            std::vector<int64_t>{4937});
  EXPECT_EQ(ReadOne("nvidia_smi_process", {{"type", "C+G"}}, "used_memory").ints,
            std::vector<int64_t>{183});
}

TEST_F(TelegrafPayloadTest, TheReadmeExampleOutputIsStoredAsWritten) {
  const std::string path = kCaptures + "/README_example_output.lp";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream body;
  body << in.rdbuf();
  ASSERT_NO_FATAL_FAILURE(PostAndVerify(body.str()));
  std::vector<std::string> names;
  ASSERT_TRUE(server_->db()->ListTagValues("nvidia_smi", "name", &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"GeForce GTX 1070", "GeForce GTX 1080"}));
  const Column used = ReadOne("nvidia_smi", {{"index", "0"}, {"host", "8218cf"}}, "memory_used");
  EXPECT_EQ(used.ints, std::vector<int64_t>{549});
  EXPECT_EQ(used.ts, std::vector<int64_t>{1523991122'000'000'000});
  EXPECT_EQ(ReadOne("nvidia_smi", {{"index", "1"}}, "memory_total").ints,
            std::vector<int64_t>{8114});
  EXPECT_EQ(ReadOne("nvidia_smi", {{"index", "2"}}, "temperature_gpu").ints,
            std::vector<int64_t>{58});
  EXPECT_EQ(ReadOne("nvidia_smi", {{"index", "2"}}, "utilization_memory").ints,
            std::vector<int64_t>{86});
  std::vector<FieldInfo> fields;
  ASSERT_TRUE(server_->db()->ListFields("nvidia_smi", &fields).ok());
  EXPECT_EQ(fields.size(), 7u);
}

}  // namespace
}  // namespace gpulse
