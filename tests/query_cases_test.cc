// Data-driven query tests: every tests/query_cases/*.test is one test. A file
// loads points (line protocol), runs queries and states their exact answers as
// FormatCsv writes them; `flush` and `restart` steps move the data to chunks
// and reopen the directory, and every query of the current data is run again
// after each, so each answer is checked from the head, from chunks and after
// a reopen. The format is in tests/query_cases/README.md.
//
// The expectations are written by hand from the semantics in
// docs/query-language.md: they are the independent check on the executor, so
// a disagreement is a bug to look into, not a file to regenerate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/line_protocol.h"
#include "query/query.h"
#include "query/runtime/format.h"
#include "query/syntax/time_literal.h"
#include "tests/support/scratch_dir.h"

#ifndef GPULSE_SOURCE_DIR
#define GPULSE_SOURCE_DIR "."
#endif

namespace gpulse {
namespace {

// One `query` block: the text, its options and the expected lines.
struct QueryCase {
  int line = 0;  // of the `query` line
  std::string text;
  QueryOptions options;
  std::vector<std::string> expected;
};

struct Step {
  enum class Kind { kLoad, kQuery, kFlush, kRestart };
  Kind kind = Kind::kLoad;
  int line = 0;
  std::string body;  // kLoad: line protocol
  ingest::Precision precision = ingest::Precision::kNanoseconds;
  size_t query = 0;  // kQuery: index into CaseFile::queries
};

struct CaseFile {
  std::vector<Step> steps;
  std::vector<QueryCase> queries;
};

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.emplace_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "  " + line + "\n";
  return lines.empty() ? "  (nothing)\n" : out;
}

bool ParseInt(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Splits "word[k=v,k=v] rest" into the word, its options and the rest.
struct Directive {
  std::string_view word;
  std::vector<std::pair<std::string_view, std::string_view>> options;
  std::string_view rest;
};

Status ParseDirective(std::string_view line, Directive* out) {
  size_t word_end = line.find_first_of(" [");
  out->word = line.substr(0, word_end);
  std::string_view after = word_end == std::string_view::npos ? "" : line.substr(word_end);
  if (StartsWith(after, "[")) {
    size_t close = after.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("missing ']'");
    std::string_view list = after.substr(1, close - 1);
    after.remove_prefix(close + 1);
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view item = Trim(list.substr(0, comma));
      size_t eq = item.find('=');
      if (eq == std::string_view::npos) {
        return Status::InvalidArgument("option '" + std::string(item) + "' is not key=value");
      }
      out->options.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
    }
  }
  out->rest = Trim(after);
  return Status::Ok();
}

Status ApplyQueryOption(std::string_view key, std::string_view value, QueryOptions* options) {
  int64_t n = 0;
  if (key == "now") {
    if (ParseInt(value, &n) || query::ParseTimeLiteral(value, &n)) {
      options->now_ns = n;
      return Status::Ok();
    }
    return Status::InvalidArgument("now= wants RFC3339 or integer nanoseconds");
  }
  if (key == "db") {
    options->database = std::string(value);
    return Status::Ok();
  }
  if (key != "max_series" && key != "max_points" && key != "max_rows") {
    return Status::InvalidArgument("unknown query option '" + std::string(key) + "'");
  }
  if (!ParseInt(value, &n) || n < 0) {
    return Status::InvalidArgument(std::string(key) + "= wants a count");
  }
  uint64_t* limit = key == "max_series"   ? &options->limits.max_series
                    : key == "max_points" ? &options->limits.max_points
                                          : &options->limits.max_rows;
  *limit = static_cast<uint64_t>(n);
  return Status::Ok();
}

// Reads the block after a `load` or `query` line up to its `end` line.
Status ReadBlock(const std::vector<std::string>& lines, size_t* i, std::vector<std::string>* out) {
  size_t start = *i;
  for (++*i; *i < lines.size(); ++*i) {
    if (Trim(lines[*i]) == "end") return Status::Ok();
    out->push_back(lines[*i]);
  }
  return Status::InvalidArgument("the block opened at line " + std::to_string(start + 1) +
                                 " has no 'end'");
}

// Every query must be run again after a restart before a `load` changes the
// data it was written for, or before the file ends.
Status CheckEveryQueryRestarted(const CaseFile& file) {
  std::vector<int> pending;
  auto check = [&pending](const std::string& where) {
    if (pending.empty()) return Status::Ok();
    return Status::InvalidArgument("the query at line " + std::to_string(pending.front()) +
                                   " is never run after a restart: add 'restart' " + where);
  };
  for (const Step& step : file.steps) {
    if (step.kind == Step::Kind::kQuery) pending.push_back(file.queries[step.query].line);
    if (step.kind == Step::Kind::kRestart) pending.clear();
    if (step.kind == Step::Kind::kLoad) {
      Status s = check("before the load at line " + std::to_string(step.line));
      if (!s.ok()) return s;
    }
  }
  return check("at the end of the file");
}

Status ParseStep(const std::vector<std::string>& lines, size_t* i, CaseFile* file) {
  Directive d;
  Status s = ParseDirective(Trim(lines[*i]), &d);
  if (!s.ok()) return s;
  Step step;
  step.line = static_cast<int>(*i + 1);
  if (d.word == "load") {
    step.kind = Step::Kind::kLoad;
    for (auto [key, value] : d.options) {
      if (key != "precision" || !ingest::ParsePrecision(value, &step.precision)) {
        return Status::InvalidArgument("load takes only precision=ns|us|ms|s|m|h");
      }
    }
    std::vector<std::string> body;
    s = ReadBlock(lines, i, &body);
    for (const std::string& line : body) step.body += line + "\n";
  } else if (d.word == "query") {
    step.kind = Step::Kind::kQuery;
    QueryCase q;
    q.line = step.line;
    q.text = std::string(d.rest);
    if (q.text.empty()) return Status::InvalidArgument("query without text");
    for (auto [key, value] : d.options) {
      s = ApplyQueryOption(key, value, &q.options);
      if (!s.ok()) return s;
    }
    s = ReadBlock(lines, i, &q.expected);
    step.query = file->queries.size();
    file->queries.push_back(std::move(q));
  } else if (d.word == "flush" || d.word == "restart") {
    if (!d.rest.empty() || !d.options.empty()) {
      return Status::InvalidArgument(std::string(d.word) + " takes nothing");
    }
    step.kind = d.word == "flush" ? Step::Kind::kFlush : Step::Kind::kRestart;
  } else {
    return Status::InvalidArgument("unknown step '" + std::string(d.word) +
                                   "' (expected load, query, flush or restart)");
  }
  file->steps.push_back(step);
  return s;
}

Status ParseCaseFile(const std::string& text, CaseFile* file) {
  std::vector<std::string> lines = SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = Trim(lines[i]);
    if (line.empty() || line.front() == '#') continue;
    size_t at = i;
    Status s = ParseStep(lines, &i, file);
    if (!s.ok())
      return Status::InvalidArgument("line " + std::to_string(at + 1) + ": " + s.ToString());
  }
  return CheckEveryQueryRestarted(*file);
}

// The text of a CSV field: "a ""b""" -> a "b"; an unquoted field as it is.
std::string UnquoteCsv(std::string_view field) {
  if (!StartsWith(field, "\"")) return std::string(field);
  std::string out;
  for (size_t i = 1; i < field.size(); ++i) {
    if (field[i] != '"') {
      out += field[i];
    } else if (i + 1 < field.size() && field[i + 1] == '"') {
      out += '"';
      ++i;
    } else {
      break;
    }
  }
  return out;
}

// An expected line "error~P" matches an error line whose message starts with
// P (the message unquoted when FormatCsv quoted it); any other expected line
// must equal the actual one.
bool LineMatches(const std::string& expected, const std::string& actual) {
  if (!StartsWith(expected, "error~")) return expected == actual;
  if (!StartsWith(actual, "error,")) return false;
  return StartsWith(UnquoteCsv(std::string_view(actual).substr(6)),
                    std::string_view(expected).substr(6));
}

bool LinesMatch(const std::vector<std::string>& expected, const std::vector<std::string>& actual) {
  if (expected.size() != actual.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (!LineMatches(expected[i], actual[i])) return false;
  }
  return true;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::filesystem::path CasesDir() {
  return std::filesystem::path(GPULSE_SOURCE_DIR) / "tests" / "query_cases";
}

std::vector<std::filesystem::path> CaseFiles() {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(CasesDir(), ec)) {
    if (entry.path().extension() == ".test") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs one file's steps against a Db in a scratch directory.
// Whether a query's statements all start with SELECT, SHOW or EXPLAIN.
bool ReadsOnly(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (std::string_view rest = upper; !rest.empty();) {
    const size_t semi = rest.find(';');
    std::string_view st = rest.substr(0, semi);
    while (!st.empty() && std::isspace(static_cast<unsigned char>(st.front()))) st.remove_prefix(1);
    if (!st.empty() && !st.starts_with("SELECT") && !st.starts_with("SHOW") &&
        !st.starts_with("EXPLAIN")) {
      return false;
    }
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
  }
  return true;
}

class CaseRunner {
 public:
  CaseRunner(std::filesystem::path path, const CaseFile& file)
      : path_(std::move(path)), file_(file) {
    options_.sync_policy = SyncPolicy::kNone;
    options_.info_log = [](std::string_view) {};
    // The files load points in any time order.
    options_.out_of_order_window = std::chrono::nanoseconds(0);
  }

  void Run() {
    ASSERT_TRUE(Open());
    std::vector<size_t> current;  // queries written for the data as it is now
    for (const Step& step : file_.steps) {
      switch (step.kind) {
        case Step::Kind::kLoad:
          current.clear();
          Load(step);
          break;
        case Step::Kind::kQuery:
          current.push_back(step.query);
          Check(file_.queries[step.query], "");
          break;
        case Step::Kind::kFlush:
          Expect(db_->Flush(), step.line, "flush");
          RunAgain(current, "after the flush at line " + std::to_string(step.line));
          break;
        case Step::Kind::kRestart:
          Expect(db_->Close(), step.line, "close");
          db_.reset();
          ASSERT_TRUE(Open()) << path_.string() << ":" << step.line;
          RunAgain(current, "after the restart at line " + std::to_string(step.line));
          break;
      }
    }
    if (db_) Expect(db_->Close(), 0, "close");
  }
  // Series that came by column in the by-column runs.
  size_t answered_by_column() const { return answered_by_column_; }

 private:
  bool Open() {
    Status s = Db::Open(options_, dir_.path(), &db_);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return s.ok();
  }

  void Expect(const Status& s, int line, std::string_view what) {
    if (!s.ok()) ADD_FAILURE_AT(path_.c_str(), line) << what << ": " << s.ToString();
  }

  void Load(const Step& step) {
    ingest::LineProtocolParser::Options options;
    options.precision = step.precision;
    std::vector<Point> points;
    std::vector<ingest::LineError> errors;
    ingest::ParseToPoints(step.body, options, &points, &errors);
    for (const ingest::LineError& e : errors) {
      ADD_FAILURE_AT(path_.c_str(), step.line + static_cast<int>(e.line))
          << "line protocol, column " << e.column << ": " << e.message;
    }
    if (points.empty()) ADD_FAILURE_AT(path_.c_str(), step.line) << "load without points";
    Expect(db_->Write(points), step.line, "write");
  }

  void RunAgain(const std::vector<size_t>& queries, const std::string& when) {
    for (size_t q : queries) Check(file_.queries[q], when);
  }

  void Check(const QueryCase& q, const std::string& when) {
    // A query that only reads runs once in rows and once by column (what the
    // server asks for): the same text either way, in CSV and in JSON.
    QueryOptions in_rows = q.options;
    if (in_rows.now_ns == 0) {
      in_rows.now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    }
    QueryOptions by_column = in_rows;
    by_column.answers_by_column = true;
    QueryResult result, columns;
    Status s = gpulse::Query(db_.get(), q.text, in_rows, &result);
    const bool reads = ReadsOnly(q.text);
    const Status sc = reads ? gpulse::Query(db_.get(), q.text, by_column, &columns) : Status::Ok();
    if (reads) {
      EXPECT_EQ(s.ToString(), sc.ToString()) << q.text;
    }
    if (reads && s.ok() && sc.ok()) {
      EXPECT_EQ(query::FormatCsv(columns, query::TimeFormat::kRfc3339),
                query::FormatCsv(result, query::TimeFormat::kRfc3339))
          << "by column: " << q.text;
      for (const query::TimeFormat f : {query::TimeFormat::kMs, query::TimeFormat::kRfc3339}) {
        EXPECT_EQ(query::FormatJson(columns, f, false), query::FormatJson(result, f, false))
            << "by column: " << q.text;
      }
      for (size_t i = 0; i < columns.statements.size(); ++i) {
        const auto& by_col = columns.statements[i].series;
        for (size_t j = 0; j < by_col.size(); ++j) {
          answered_by_column_ += !by_col[j].by_column.empty();
          // Every cell through ResultSeries::At, either way.
          const ResultSeries& rows = result.statements[i].series.at(j);
          ASSERT_EQ(by_col[j].RowCount(), rows.RowCount()) << q.text;
          for (size_t r = 0; r < rows.RowCount(); ++r) {
            for (size_t c = 0; c < rows.columns.size(); ++c) {
              EXPECT_EQ(by_col[j].At(r, c), rows.At(r, c))
                  << q.text << " row " << r << " col " << c;
            }
          }
        }
      }
    }
    std::vector<std::string> actual;
    if (!s.ok()) {
      actual.push_back("error," + s.ToString());
    } else {
      std::string csv = query::FormatCsv(result, query::TimeFormat::kRfc3339);
      while (!csv.empty() && (csv.back() == '\n' || csv.back() == '\r')) csv.pop_back();
      actual = SplitLines(csv);
    }
    if (LinesMatch(q.expected, actual)) return;
    ADD_FAILURE_AT(path_.c_str(), q.line)
        << "query " << (when.empty() ? "" : when + " ") << "gave another answer\n"
        << "query: " << q.text << "\nexpected:\n"
        << JoinLines(q.expected) << "actual:\n"
        << JoinLines(actual);
  }

  std::filesystem::path path_;
  const CaseFile& file_;
  size_t answered_by_column_ = 0;
  Options options_;
  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
};

class QueryCasesTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(QueryCasesTest, Run) {
  const std::filesystem::path& path = GetParam();
  CaseFile file;
  Status s = ParseCaseFile(ReadFile(path), &file);
  ASSERT_TRUE(s.ok()) << path.string() << ": " << s.ToString();
  CaseRunner(path, file).Run();
}

std::string CaseName(const ::testing::TestParamInfo<std::filesystem::path>& info) {
  std::string name = info.param.stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, QueryCasesTest, ::testing::ValuesIn(CaseFiles()), CaseName);

TEST(QueryCasesFormat, AGroupByTimeAnswerComesByColumnAndReadsTheSame) {
  CaseFile file;
  Status s = ParseCaseFile(
      "load[precision=s]\nm,host=a v=1i 60\nm,host=a v=3i 180\nm,host=b v=5i 60\nend\n"
      "query SELECT mean(v), max(v) FROM m WHERE time >= 0s AND time < 240s "
      "GROUP BY time(1m), host\n"
      "name,tags,time,mean,max\n"
      "m,host=a,1970-01-01T00:00:00Z,,\nm,host=a,1970-01-01T00:01:00Z,1,1\n"
      "m,host=a,1970-01-01T00:02:00Z,,\nm,host=a,1970-01-01T00:03:00Z,3,3\n"
      "m,host=b,1970-01-01T00:00:00Z,,\nm,host=b,1970-01-01T00:01:00Z,5,5\n"
      "m,host=b,1970-01-01T00:02:00Z,,\nm,host=b,1970-01-01T00:03:00Z,,\n"
      "end\nrestart\n",
      &file);
  ASSERT_TRUE(s.ok()) << s.ToString();
  CaseRunner runner("by-column", file);
  runner.Run();
  EXPECT_GT(runner.answered_by_column(), 0u);
}

TEST(QueryCasesFormat, Rfc3339TrimsFractionsAndCountsBackBefore1970) {
  EXPECT_EQ(query::Rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(query::Rfc3339(1'704'067'200'500'000'000), "2024-01-01T00:00:00.5Z");
  EXPECT_EQ(query::Rfc3339(1'709'164'799'000'000'001), "2024-02-28T23:59:59.000000001Z");
  EXPECT_EQ(query::Rfc3339(1'709'251'200'120'000'000), "2024-03-01T00:00:00.12Z");
  EXPECT_EQ(query::Rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(query::Rfc3339(-86'400'000'000'000), "1969-12-31T00:00:00Z");
  EXPECT_EQ(query::Rfc3339(INT64_MIN), "1677-09-21T00:12:43.145224192Z");
  EXPECT_EQ(query::Rfc3339(INT64_MAX), "2262-04-11T23:47:16.854775807Z");
  std::string out = "t=";
  query::AppendRfc3339(951'782'400'000'000'000, &out);  // a leap day of a year % 400
  EXPECT_EQ(out, "t=2000-02-29T00:00:00Z");
}

TEST(QueryCasesDir, HasCases) { EXPECT_GE(CaseFiles().size(), 8u) << CasesDir().string(); }

// The runner's own rules, on small texts.
TEST(QueryCasesFormat, ParsesStepsAndOptions) {
  CaseFile file;
  Status s = ParseCaseFile(
      "# c\nload[precision=s]\nm v=1i 1\nend\n"
      "query[now=2024-01-02T00:00:00Z,db=bench,max_rows=5] SELECT v FROM m\nname,tags,time,v\n"
      "end\nflush\nrestart\n",
      &file);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(file.steps.size(), 4u);
  EXPECT_EQ(file.steps[0].precision, ingest::Precision::kSeconds);
  ASSERT_EQ(file.queries.size(), 1u);
  const QueryCase& q = file.queries[0];
  EXPECT_EQ(q.line, 5);
  EXPECT_EQ(q.text, "SELECT v FROM m");
  EXPECT_EQ(q.options.now_ns, 1704153600000000000);
  EXPECT_EQ(q.options.database, "bench");
  EXPECT_EQ(q.options.limits.max_rows, 5u);
  EXPECT_EQ(q.expected, std::vector<std::string>{"name,tags,time,v"});
}

TEST(QueryCasesFormat, RejectsBadFiles) {
  const char* bad[] = {
      "query SELECT a FROM m\n",                                    // no end
      "load\nm v=1 1\nend\nquery SELECT v FROM m\nend\n",           // never restarted
      "query SELECT a FROM m\nend\nload\nm v=1 1\nend\nrestart\n",  // load before restart
      "frobnicate\n",
      "query[bogus=1] SELECT a FROM m\nend\nrestart\n",
      "restart now\n",
  };
  for (const char* text : bad) {
    CaseFile file;
    EXPECT_FALSE(ParseCaseFile(text, &file).ok()) << text;
  }
}

TEST(QueryCasesFormat, ErrorLinesMatchByPrefix) {
  EXPECT_TRUE(LineMatches("error~InvalidArgument: line 1", "error,InvalidArgument: line 1, col"));
  EXPECT_TRUE(LineMatches("error~InvalidArgument: line 1", "error,\"InvalidArgument: line 1, c\""));
  EXPECT_TRUE(LineMatches("error~a \"b\"", "error,\"a \"\"b\"\" c\""));
  EXPECT_FALSE(LineMatches("error~InvalidArgument", "error,NotFound: x"));
  EXPECT_FALSE(LineMatches("error~", "gpu,,1970-01-01T00:00:00Z,1"));
  EXPECT_TRUE(LineMatches("a,b", "a,b"));
  EXPECT_FALSE(LineMatches("a,b", "a,b "));
}

}  // namespace
}  // namespace gpulse
