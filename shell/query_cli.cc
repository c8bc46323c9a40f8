// `gpulse query` and `gpulse shell`. In this file, in order: Ctrl-C handling,
// running statements (on a connection, shell/connection.h) and printing
// their results, the flags, tab completion, the shell's line editor and read
// loop, and the two entry points.
//
// Ctrl-C cancels the query that is running, never the shell: the SIGINT
// handler sets a flag that the embedded executor polls
// (QueryOptions::cancelled) and the HTTP client of a remote query polls
// (HttpClient::Options::cancelled, within 50 ms), and wakes the prompt loop
// through a pipe, which then drops the line being typed, as bash does.

#include "shell/query_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/gpulse.h"
#include "query/promeval/statement.h"
#include "query/promql/parser.h"
#include "query/query.h"
#include "query/runtime/format.h"
#include "query/syntax/lexer.h"
#include "query/syntax/parser.h"
#include "server/http_api.h"
#include "shell/connection.h"
#include "shell/table.h"

namespace gpulse::shell {
namespace {

// ---------------------------------------------------------------------------
// Ctrl-C. A signal handler may touch only lock-free, process-wide state; this
// is all of it. The handler may run on any thread (the embedded Db's threads
// do not block SIGINT), hence the pipe rather than relying on EINTR.

std::atomic<bool> g_interrupted{false};
std::atomic<bool> g_resized{false};
int g_wake_pipe[2] = {-1, -1};

void WakeMainLoop() {
  if (g_wake_pipe[1] < 0) return;
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_wake_pipe[1], &byte, 1);
}

void OnInterrupt(int) {
  const int saved_errno = errno;
  g_interrupted.store(true);
  WakeMainLoop();
  errno = saved_errno;
}

void OnResize(int) {
  const int saved_errno = errno;
  g_resized.store(true);
  WakeMainLoop();
  errno = saved_errno;
}

// Without SA_RESTART, so that a read the main thread is blocked in returns.
bool InstallSignalHandlers() {
  if (::pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction action = {};
  sigemptyset(&action.sa_mask);
  action.sa_handler = OnInterrupt;
  if (::sigaction(SIGINT, &action, nullptr) != 0) return false;
  action.sa_handler = OnResize;
  return ::sigaction(SIGWINCH, &action, nullptr) == 0;
}

void DrainWakePipe() {
  char buffer[64];
  while (g_wake_pipe[0] >= 0 && ::read(g_wake_pipe[0], buffer, sizeof(buffer)) > 0) {
  }
}

// Forgets a Ctrl-C that has been acted on.
void ClearInterrupt() {
  DrainWakePipe();
  g_interrupted.store(false);
}

// A terminal turns a typed ^C into SIGINT first and flushes its output queue
// after (unless NOFLSH is set), so what this process writes in the instant
// between is lost: the "^C" and the next prompt, or the error of the
// cancelled query, would not show. Waiting a moment before answering a
// Ctrl-C on the terminal keeps the answer on the screen.
void AwaitTerminalFlush() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

// ---------------------------------------------------------------------------
// Running statements and printing what they return.

enum class OutputFormat : unsigned char { kTable, kCsv, kJson };

bool ParseFormat(std::string_view text, OutputFormat* format) {
  if (text == "table") {
    *format = OutputFormat::kTable;
  } else if (text == "csv") {
    *format = OutputFormat::kCsv;
  } else if (text == "json") {
    *format = OutputFormat::kJson;
  } else {
    return false;
  }
  return true;
}

const char* FormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      return "table";
    case OutputFormat::kCsv:
      return "csv";
    case OutputFormat::kJson:
      return "json";
  }
  return "table";
}

struct Settings {
  OutputFormat format = OutputFormat::kTable;
  query::TimeFormat time_format = query::TimeFormat::kRfc3339;
  bool timing = true;  // the shell's footers carry the time taken
};

std::string ErrorLine(const Status& status) {
  return FormatError(status.message().empty() ? status.ToString() : status.message());
}

// Parses `text` here before anything runs, so that a syntax error shows the
// offending line with a caret under the fault whether the statements would
// run in-process or on a server. Empty when it parses.
std::string SyntaxError(std::string_view text) {
  query::ParseError error;
  if (query::promeval::IsPromQLStatement(text)) {
    // "promql ...: EXPR": the expression's error, placed in the whole text.
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) return "";  // the statement says what it lacks
    if (query::promql::ParsePromQL(text.substr(colon + 1), &error).ok()) return "";
    error.pos.offset += colon + 1;
    const std::string_view before = text.substr(0, error.pos.offset);
    const size_t newline = before.rfind('\n');
    error.pos.line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
    error.pos.column =
        static_cast<int>(before.size() - (newline == std::string_view::npos ? 0 : newline + 1)) + 1;
    return FormatError(query::FormatErrorWithCaret(text, error));
  }
  if (query::ParseQuery(text, &error).ok()) return "";
  return FormatError(query::FormatErrorWithCaret(text, error));
}

// The statements of `text` one by one (split at the ';' tokens, so a ';' in
// a string or comment does not split), leaving out empty ones.
std::vector<std::string> SplitStatements(std::string_view text) {
  std::vector<query::Token> tokens;
  query::ParseError error;
  if (!query::Tokenize(text, &tokens, &error)) return {std::string(text)};
  std::vector<std::string> statements;
  size_t begin = 0;
  bool any = false;
  for (const query::Token& token : tokens) {
    const bool end =
        token.kind == query::TokenKind::kSemicolon || token.kind == query::TokenKind::kEof;
    if (!end) {
      any = true;
      continue;
    }
    if (any) statements.emplace_back(text.substr(begin, token.pos.offset - begin));
    begin = token.pos.offset + 1;
    any = false;
  }
  return statements;
}

// One statement's answer in the chosen format, ending in a newline.
std::string FormatStatement(const StatementResult& statement, const Settings& settings,
                            bool pretty_json) {
  QueryResult one;
  one.statements.push_back(statement);
  switch (settings.format) {
    case OutputFormat::kTable:
      return FormatTable(statement, settings.time_format, {TerminalWidth()});
    case OutputFormat::kCsv:
      return query::FormatCsv(one, settings.time_format);
    case OutputFormat::kJson: {
      std::string json = query::FormatJson(one, settings.time_format, pretty_json);
      if (!json.ends_with('\n')) json.push_back('\n');
      return json;
    }
  }
  return "";
}

// ---------------------------------------------------------------------------
// Flags, shared by both commands.

struct Flags {
  ConnectionFlags connection;
  Settings settings;
  std::vector<std::string> positional;
  bool help = false;
};

// Empty on success, else what was wrong.
std::string ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      flags->help = true;
      continue;
    }
    if (a.size() < 2 || a.substr(0, 2) != "--") {
      flags->positional.emplace_back(a);
      continue;
    }
    if (i + 1 >= argc) return "missing value after " + std::string(a);
    const std::string value = argv[++i];
    if (a == "--data") {
      flags->connection.data = value;
    } else if (a == "--url") {
      flags->connection.url = value;
    } else if (a == "--database") {
      flags->connection.database = value;
    } else if (a == "--token") {
      flags->connection.token = value;
    } else if (a == "--format") {
      if (!ParseFormat(value, &flags->settings.format)) {
        return "--format " + value + ": expected table, csv or json";
      }
    } else if (a == "--epoch") {
      if (value == "rfc3339") {
        flags->settings.time_format = query::TimeFormat::kRfc3339;
      } else if (value.empty() || !query::ParseEpoch(value, &flags->settings.time_format)) {
        return "--epoch " + value + ": expected rfc3339, ns, us, ms, s, m or h";
      }
    } else {
      return "unknown option " + std::string(a);
    }
  }
  if (!flags->connection.data.empty() && !flags->connection.url.empty()) {
    return "--data and --url exclude each other";
  }
  if (!flags->connection.token.empty() && flags->connection.url.empty()) {
    return "--token needs --url (an embedded data directory has no tokens)";
  }
  return "";
}

constexpr const char* kConnectionFlagsHelp =
    "  --data DIR        data directory to open in-process (default ./gpulse-data).\n"
    "                    Fails while a `gpulse serve` holds it: use --url then.\n"
    "  --url URL         run on a server instead: http://HOST:PORT of `gpulse serve`\n"
    "                    (its /query endpoint)\n"
    "  --database NAME   see only the series written to database NAME (the db= of\n"
    "                    /write, the bucket of /api/v2/write)\n"
    "  --token TOKEN     with --url: the API token, when the server has auth on\n"
    "  --format FMT      table (aligned, for people; the default), csv, or json (the\n"
    "                    InfluxDB 1.x /query shape)\n"
    "  --epoch UNIT      how times are written: rfc3339 (the default), or an integer\n"
    "                    count of ns, us, ms, s, m or h since the Unix epoch\n"
    "  -h, --help        print this help\n";

constexpr const char* kQueryUsage =
    "Usage: gpulse query [--data DIR | --url URL] [options] QUERY\n"
    "\n"
    "Runs QUERY (one or more statements separated by ';'; \"-\" reads it from stdin)\n"
    "and prints the results on stdout. A statement that fails prints\n"
    "\"ERR: <message>\" on stderr, a syntax error with the offending line and a caret\n"
    "under the fault, and the exit status is 1.\n"
    "\n"
    "QUERY may be PromQL (docs/promql.md) behind the prefix \"promql:\" (an instant\n"
    "query now) or \"promql RANGE STEP:\" (the last RANGE at STEP, as 6h 5m); a\n"
    "Prometheus series answers as a series named by its metric, its labels as tags.\n"
    "\n";

constexpr const char* kQueryExamples =
    "\n"
    "Examples:\n"
    "  gpulse query --data /var/lib/gpulse \"SHOW MEASUREMENTS\"\n"
    "  gpulse query --url http://127.0.0.1:8086 --database fleet --format csv \\\n"
    "      \"SELECT mean(util) FROM gpu WHERE time > now() - 1h GROUP BY time(5m), node\"\n"
    "  gpulse query --data /var/lib/gpulse \\\n"
    "      \"promql 6h 5m: avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)\"\n"
    "\n"
    "Exit status: 0 on success, 1 when a statement or the connection failed, 2 for\n"
    "bad flags, 130 when Ctrl-C cancelled the query.\n";

constexpr const char* kShellUsage =
    "Usage: gpulse shell [--data DIR | --url URL] [options]\n"
    "\n"
    "The interactive query shell: line editing and history (~/.gpulse_history, or\n"
    "$GPULSE_HISTORY), tab completion of keywords, measurements, tag keys and\n"
    "values and field names, statements over several lines ending with ';',\n"
    "aligned tables with the row count and the time taken. Ctrl-C cancels the\n"
    "running query (or drops the line being typed); Ctrl-D or \\q quits. \\help in\n"
    "the shell lists its commands. Without a terminal on stdin it reads statements\n"
    "from stdin without prompts, and exits with status 1 if any failed.\n"
    "A statement that starts with \"promql:\" or \"promql RANGE STEP:\" is PromQL\n"
    "(see gpulse query --help).\n"
    "\n";

constexpr const char* kShellExamples =
    "\n"
    "Examples:\n"
    "  gpulse shell --data /var/lib/gpulse\n"
    "  gpulse shell --url http://127.0.0.1:8086 --database fleet\n"
    "  echo 'SHOW MEASUREMENTS;' | gpulse shell --data ./gpulse-data --format csv\n";

int Usage(const char* command, const std::string& error, const char* usage) {
  std::fprintf(stderr, "gpulse %s: %s\n\n%s%s", command, error.c_str(), usage,
               kConnectionFlagsHelp);
  return 2;
}

std::string ReadAll(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// ---------------------------------------------------------------------------
// Tab completion. The words come from the catalog once at start and on
// \refresh; which of them fit depends on the token before the cursor.

struct CompletionWords {
  std::vector<std::string> measurements;
  std::vector<std::string> tag_keys;
  std::vector<std::string> fields;
  std::map<std::string, std::vector<std::string>> tag_values;  // by tag key
};

// Completion lists every value of every tag key; past this many it stops
// collecting (a fleet's hostnames fit, a high-cardinality id would not help).
constexpr size_t kMaxCompletionValues = 20000;

// The cells of `column` in every series of the first statement.
std::vector<std::string> ColumnValues(const QueryResult& result, std::string_view column) {
  std::set<std::string> values;
  if (result.statements.empty()) return {};
  for (const ResultSeries& series : result.statements[0].series) {
    const auto it = std::find(series.columns.begin(), series.columns.end(), column);
    if (it == series.columns.end()) continue;
    const size_t c = it - series.columns.begin();
    for (const auto& row : series.values) {
      if (c < row.size() && std::holds_alternative<std::string>(row[c])) {
        values.insert(std::get<std::string>(row[c]));
      }
    }
  }
  return {values.begin(), values.end()};
}

// Asked with SHOW statements in both modes, so that --database scopes the
// words as it scopes the results. A failure leaves a list empty: completion
// is a convenience, never a reason to refuse to start. Ctrl-C stops the
// loading (the caller clears it).
CompletionWords LoadCompletionWords(Connection* connection) {
  CompletionWords words;
  QueryResult result;
  if (connection->Query("SHOW MEASUREMENTS", &result).ok()) {
    words.measurements = ColumnValues(result, "name");
  }
  result = {};
  if (connection->Query("SHOW TAG KEYS", &result).ok()) {
    words.tag_keys = ColumnValues(result, "tagKey");
  }
  result = {};
  if (connection->Query("SHOW FIELD KEYS", &result).ok()) {
    words.fields = ColumnValues(result, "fieldKey");
  }
  result = {};
  if (connection->Query("SHOW TAG VALUES WITH KEY =~ /./", &result).ok() &&
      !result.statements.empty()) {
    size_t collected = 0;
    for (const ResultSeries& series : result.statements[0].series) {
      if (series.columns.size() != 2 || series.columns[0] != "key") continue;
      for (const auto& row : series.values) {
        if (collected >= kMaxCompletionValues) break;
        if (row.size() != 2 || !std::holds_alternative<std::string>(row[0]) ||
            !std::holds_alternative<std::string>(row[1])) {
          continue;
        }
        words.tag_values[std::get<std::string>(row[0])].push_back(std::get<std::string>(row[1]));
        ++collected;
      }
    }
    for (auto& [key, values] : words.tag_values) {
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
    }
  }
  return words;
}

using query::TokenKind;

// Every keyword, from the lexer's own table (TokenKindName names each kind
// from kAnd on, and "token" past the last).
std::vector<TokenKind> AllKeywords() {
  std::vector<TokenKind> kinds;
  for (int k = static_cast<int>(TokenKind::kAnd); k < 256; ++k) {
    const auto kind = static_cast<TokenKind>(k);
    if (!query::IsKeyword(kind) || query::TokenKindName(kind) == "token") break;
    kinds.push_back(kind);
  }
  return kinds;
}

// Where the grammar allows only a few keywords after one, completion offers
// only those: SHOW MEAS<TAB> completes to MEASUREMENTS, not MEASUREMENT.
const std::map<TokenKind, std::vector<TokenKind>>& KeywordFollowers() {
  static const auto* const followers = new std::map<TokenKind, std::vector<TokenKind>>{
      {TokenKind::kShow,
       {TokenKind::kMeasurements, TokenKind::kTag, TokenKind::kField, TokenKind::kSeries,
        TokenKind::kSources, TokenKind::kStale, TokenKind::kDatabases, TokenKind::kRetention,
        TokenKind::kKpis}},
      {TokenKind::kTag, {TokenKind::kKeys, TokenKind::kValues}},
      {TokenKind::kField, {TokenKind::kKeys}},
      {TokenKind::kRetention, {TokenKind::kPolicies}},
      {TokenKind::kGroup, {TokenKind::kBy}},
      {TokenKind::kOrder, {TokenKind::kBy}},
      {TokenKind::kWith, {TokenKind::kKey, TokenKind::kMeasurement}},
      {TokenKind::kExplain, {TokenKind::kSelect}},
      {TokenKind::kDecompose, {TokenKind::kNorthstar}},
  };
  return *followers;
}

constexpr TokenKind kStatementStarts[] = {TokenKind::kSelect, TokenKind::kShow, TokenKind::kExplain,
                                          TokenKind::kNorthstar, TokenKind::kDecompose};

constexpr std::string_view kShellCommands[] = {"\\format", "\\help", "\\q", "\\refresh",
                                               "\\timing"};

bool StartsWithNoCase(std::string_view word, std::string_view prefix) {
  if (prefix.size() > word.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(word[i])) !=
        std::toupper(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// A keyword in the case the user is typing in: lower case after "sel",
// upper case otherwise.
std::string MatchCase(std::string_view keyword, std::string_view typed) {
  const auto is_lower = [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; };
  const auto is_upper = [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; };
  const bool lower = std::any_of(typed.begin(), typed.end(), is_lower) &&
                     std::none_of(typed.begin(), typed.end(), is_upper);
  std::string out(keyword);
  if (lower) {
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string Quote(std::string_view text, char quote) {
  std::string out(1, quote);
  for (const char c : text) {
    if (c == quote || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back(quote);
  return out;
}

// A name as it must be written in a query: bare when it can be, else in
// double quotes (a keyword, a dash, a space...).
std::string IdentifierText(const std::string& name) {
  bool bare = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (const char c : name) {
    bare = bare && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  }
  if (bare && !query::LookupKeyword(name)) return name;
  return Quote(name, '"');
}

// What may complete `word`, given the statement text before it
// (`before`, without an opening quote) and the quote the word opened with
// (0, ' or ").
std::vector<std::string> CompletionCandidates(std::string_view before, std::string_view word,
                                              char quote, const CompletionWords& words) {
  std::vector<std::string> out;
  const auto add_keywords = [&](std::span<const TokenKind> kinds) {
    if (quote != 0) return;
    for (const TokenKind kind : kinds) {
      const std::string_view name = query::TokenKindName(kind);
      if (StartsWithNoCase(name, word)) out.push_back(MatchCase(name, word));
    }
  };
  const auto add_names = [&](const std::vector<std::string>& names) {
    if (quote == '\'') return;
    for (const std::string& name : names) {
      if (name.starts_with(word)) out.push_back(quote == '"' ? name : IdentifierText(name));
    }
  };
  const auto add_values = [&](const std::vector<std::string>& values) {
    if (quote == '"') return;
    for (const std::string& value : values) {
      if (value.starts_with(word)) out.push_back(quote == '\'' ? value : Quote(value, '\''));
    }
  };

  std::vector<query::Token> tokens;
  query::ParseError error;
  const bool lexed = query::Tokenize(before, &tokens, &error);
  if (lexed) {
    tokens.pop_back();  // kEof
    const auto last_semicolon =
        std::find_if(tokens.rbegin(), tokens.rend(),
                     [](const query::Token& t) { return t.kind == TokenKind::kSemicolon; });
    tokens.erase(tokens.begin(), last_semicolon.base());
  }
  const TokenKind last = lexed && !tokens.empty() ? tokens.back().kind : TokenKind::kEof;
  const TokenKind second_last =
      lexed && tokens.size() >= 2 ? tokens[tokens.size() - 2].kind : TokenKind::kEof;
  const auto followers = KeywordFollowers().find(last);

  if (lexed && tokens.empty()) {
    add_keywords(kStatementStarts);
  } else if ((last == TokenKind::kEq || last == TokenKind::kNeq) &&
             second_last == TokenKind::kKey) {
    add_names(words.tag_keys);  // WITH KEY = ...
  } else if (last == TokenKind::kEq || last == TokenKind::kNeq) {
    // tag = '...': the values of that tag, or of every tag for a name that is
    // no tag key (a field, or a word completion does not know yet).
    const auto it = second_last == TokenKind::kIdent
                        ? words.tag_values.find(tokens[tokens.size() - 2].value)
                        : words.tag_values.end();
    if (it != words.tag_values.end()) {
      add_values(it->second);
    } else {
      for (const auto& [key, values] : words.tag_values) add_values(values);
    }
  } else if (last == TokenKind::kFrom) {
    add_names(words.measurements);
  } else if (followers != KeywordFollowers().end()) {
    add_keywords(followers->second);
  } else {
    add_keywords(AllKeywords());
    add_names(words.fields);
    add_names(words.tag_keys);
    add_names(words.measurements);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// ---------------------------------------------------------------------------
// The shell's line editor: readline through its callback interface rather
// than readline() itself, so that the loop can also watch the Ctrl-C pipe and
// drop the line being typed (readline() would resume it after the signal).
// Readline is a C library with global state; so is this part.

struct EditorState {
  const CompletionWords* words = nullptr;
  const std::string* pending = nullptr;  // earlier lines of the statement being typed
  std::vector<std::string> matches;      // of the completion in progress
  bool done = false;
  bool eof = false;
  std::string line;
};
EditorState g_editor;

void OnLine(char* line) {
  g_editor.done = true;
  g_editor.eof = line == nullptr;
  if (line != nullptr) g_editor.line = line;
  std::free(line);
  rl_callback_handler_remove();
}

char* NextMatch(const char*, int state) {
  static size_t next = 0;
  if (state == 0) next = 0;
  if (next >= g_editor.matches.size()) return nullptr;
  return strdup(g_editor.matches[next++].c_str());
}

char** Complete(const char* text, int start, int) {
  rl_attempted_completion_over = 1;  // never fall back to file names
  const std::string_view line(rl_line_buffer, start);
  const char quote = static_cast<char>(rl_completion_quote_character);
  std::string_view before_word = line;
  if (quote != 0 && !before_word.empty() && before_word.back() == quote) {
    before_word.remove_suffix(1);
  }
  g_editor.matches.clear();
  const std::string_view word = text;
  const bool first_word =
      g_editor.pending->empty() && before_word.find_first_not_of(" \t") == std::string_view::npos;
  if (first_word && word.starts_with("\\")) {
    for (const std::string_view c : kShellCommands) {
      if (c.starts_with(word)) g_editor.matches.emplace_back(c);
    }
  } else if (g_editor.pending->empty() && line.starts_with("\\format ")) {
    for (const char* f : {"csv", "json", "table"}) {
      if (std::string_view(f).starts_with(word)) g_editor.matches.emplace_back(f);
    }
  } else {
    const std::string before = *g_editor.pending + std::string(before_word);
    g_editor.matches = CompletionCandidates(before, word, quote, *g_editor.words);
  }
  if (g_editor.matches.empty()) return nullptr;
  return rl_completion_matches(text, NextMatch);
}

void SetUpReadline(const CompletionWords* words, const std::string* pending) {
  g_editor.words = words;
  g_editor.pending = pending;
  rl_readline_name = "gpulse";  // for $if gpulse in ~/.inputrc
  rl_catch_signals = 0;         // SIGINT and SIGWINCH are ours (OnInterrupt, OnResize)
  rl_catch_sigwinch = 0;
  rl_attempted_completion_function = Complete;
  // Not the arithmetic operators: a '-' is more often inside a host name
  // than a subtraction next to a word being completed.
  static char word_breaks[] = " \t\n,;()=<>!";
  static char quotes[] = "'\"";
  rl_basic_word_break_characters = word_breaks;
  rl_completer_quote_characters = quotes;
}

enum class ReadEvent { kLine, kInterrupt, kEnd };

ReadEvent ReadLine(const std::string& prompt, std::string* line) {
  g_editor.done = false;
  rl_callback_handler_install(prompt.c_str(), OnLine);
  while (!g_editor.done) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_wake_pipe[0], POLLIN, 0}};
    const int n = ::poll(fds, 2, -1);
    // The handler sets its flag before it writes the pipe, so a wake-up
    // drained here has its flag set by now.
    if (n > 0 && (fds[1].revents & POLLIN)) DrainWakePipe();
    if (g_interrupted.load()) {
      AwaitTerminalFlush();
      ClearInterrupt();
      rl_callback_sigcleanup();  // leaves an incremental search or half a key sequence
      rl_replace_line("", 1);
      rl_callback_handler_remove();
      std::fputs("^C\n", stdout);
      return ReadEvent::kInterrupt;
    }
    if (g_resized.exchange(false)) rl_resize_terminal();
    if (n < 0 && errno != EINTR) {
      rl_callback_handler_remove();
      return ReadEvent::kEnd;
    }
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) rl_callback_read_char();
  }
  if (g_editor.eof) {
    std::fputc('\n', stdout);  // leave the terminal's prompt on a line of its own
    return ReadEvent::kEnd;
  }
  *line = std::move(g_editor.line);
  return ReadEvent::kLine;
}

// ~/.gpulse_history, or $GPULSE_HISTORY; empty (no history file) when
// neither can be found.
std::string HistoryPath() {
  if (const char* path = std::getenv("GPULSE_HISTORY"); path != nullptr && *path != '\0') {
    return path;
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.gpulse_history";
  }
  return "";
}

constexpr int kHistoryLines = 2000;

// ---------------------------------------------------------------------------
// The shell.

constexpr const char* kShellHelp =
    "Statements end with ';' and may run over several lines; Tab completes\n"
    "keywords, measurements, tag keys, tag values (after tag =) and field names.\n"
    "\n"
    "  \\format table|csv|json   how results print (now: %s)\n"
    "  \\timing [on|off]         show the time each statement took (now: %s)\n"
    "  \\refresh                 reload the completion words from the database\n"
    "  \\help                    this help\n"
    "  \\q                       quit (also Ctrl-D, exit, quit)\n"
    "\n"
    "Ctrl-C cancels the running query, or drops the line being typed.\n"
    "\n"
    "Examples:\n"
    "  SHOW MEASUREMENTS;\n"
    "  SHOW TAG VALUES FROM gpu WITH KEY = node;\n"
    "  SELECT mean(util) FROM gpu\n"
    "    WHERE time > now() - 1h GROUP BY time(5m), node;\n";

class Shell {
 public:
  Shell(Connection* connection, const Settings& settings, bool interactive)
      : connection_(connection), settings_(settings), interactive_(interactive) {}

  // Returns the exit status: 1 when input came from a pipe and a statement
  // failed, else 0.
  int Run();

 private:
  // A line outside a statement that starts with '\'; false to quit.
  bool RunCommand(std::string_view line);
  void RunStatements(const std::string& text);
  void Print(const StatementResult& statement, double elapsed_ms);
  void AddHistory(const std::string& entry);
  void LoadWords();
  bool NextLine(std::string* line, bool* interrupted);

  Connection* connection_;
  Settings settings_;
  const bool interactive_;
  CompletionWords words_;
  std::string pending_;  // the lines of a statement not yet ended with ';'
  std::string history_path_;
  bool failed_ = false;
};

// True when `text` ends a statement: its last token is ';'. Text that does
// not lex ends here too (strings and regexes cannot span lines), so that the
// error shows at once instead of after more lines.
bool EndsStatement(std::string_view text) {
  std::vector<query::Token> tokens;
  query::ParseError error;
  if (!query::Tokenize(text, &tokens, &error)) return true;
  return tokens.size() >= 2 && tokens[tokens.size() - 2].kind == TokenKind::kSemicolon;
}

// False for text of nothing but blanks and comments.
bool HasTokens(std::string_view text) {
  std::vector<query::Token> tokens;
  query::ParseError error;
  return !query::Tokenize(text, &tokens, &error) || tokens.size() > 1;
}

std::string Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

bool Shell::NextLine(std::string* line, bool* interrupted) {
  *interrupted = false;
  if (!interactive_) return static_cast<bool>(std::getline(std::cin, *line));
  std::fflush(stdout);
  const ReadEvent event = ReadLine(pending_.empty() ? "gpulse> " : "     -> ", line);
  *interrupted = event == ReadEvent::kInterrupt;
  return event != ReadEvent::kEnd;
}

int Shell::Run() {
  if (interactive_) {
    std::printf("gpulse %s shell on %s. Statements end with ';'. \\help for help, \\q to quit.\n",
                Version(), connection_->Describe().c_str());
    LoadWords();
    SetUpReadline(&words_, &pending_);
    history_path_ = HistoryPath();
    if (!history_path_.empty()) read_history(history_path_.c_str());
  }
  std::string line;
  bool interrupted = false;
  while (NextLine(&line, &interrupted)) {
    if (interrupted) {
      pending_.clear();
      continue;
    }
    const std::string trimmed = Trim(line);
    if (pending_.empty()) {
      if (trimmed.empty()) continue;
      if (trimmed.starts_with("\\") || trimmed == "exit" || trimmed == "quit") {
        AddHistory(trimmed);
        if (!RunCommand(trimmed)) break;
        continue;
      }
    }
    pending_ += line + "\n";
    if (!HasTokens(pending_)) {
      pending_.clear();  // a comment before any statement
      continue;
    }
    if (!EndsStatement(pending_)) continue;
    AddHistory(Trim(pending_));
    const std::string text = std::move(pending_);
    pending_.clear();
    RunStatements(text);
  }
  if (!history_path_.empty()) history_truncate_file(history_path_.c_str(), kHistoryLines);
  return failed_ && !interactive_ ? 1 : 0;
}

bool Shell::RunCommand(std::string_view line) {
  const size_t space = line.find_first_of(" \t");
  const std::string_view command = line.substr(0, space);
  const std::string argument = space == std::string_view::npos ? "" : Trim(line.substr(space));
  if (command == "\\q" || command == "\\quit" || command == "exit" || command == "quit") {
    return false;
  }
  if (command == "\\help" || command == "\\h" || command == "\\?") {
    std::printf(kShellHelp, FormatName(settings_.format), settings_.timing ? "on" : "off");
  } else if (command == "\\format") {
    if (!argument.empty() && !ParseFormat(argument, &settings_.format)) {
      std::printf("%s\n",
                  FormatError("\\format " + argument + ": expected table, csv or json").c_str());
    } else {
      std::printf("Output format is %s.\n", FormatName(settings_.format));
    }
  } else if (command == "\\timing") {
    if (argument == "on" || argument == "off") {
      settings_.timing = argument == "on";
    } else if (argument.empty()) {
      settings_.timing = !settings_.timing;
    } else {
      std::printf("%s\n", FormatError("\\timing " + argument + ": expected on or off").c_str());
      return true;
    }
    std::printf("Timing is %s.\n", settings_.timing ? "on" : "off");
  } else if (command == "\\refresh") {
    LoadWords();
    std::printf("%zu measurements, %zu tag keys, %zu fields.\n", words_.measurements.size(),
                words_.tag_keys.size(), words_.fields.size());
  } else {
    std::printf("%s\n", FormatError("unknown command " + std::string(command) +
                                    "; \\help lists the commands")
                            .c_str());
  }
  return true;
}

void Shell::RunStatements(const std::string& text) {
  const std::string syntax_error = SyntaxError(text);
  if (!syntax_error.empty()) {
    std::printf("%s\n", syntax_error.c_str());
    failed_ = true;
    return;
  }
  // One statement at a time, so that each gets its own time and a Ctrl-C
  // stops the rest.
  ClearInterrupt();
  for (const std::string& statement : SplitStatements(text)) {
    const auto start = std::chrono::steady_clock::now();
    QueryResult result;
    const Status s = connection_->Query(statement, &result);
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // The terminal echoed "^C" where the cursor was; the answer starts below.
    if (interactive_ && g_interrupted.load()) {
      AwaitTerminalFlush();
      std::fputc('\n', stdout);
    }
    if (!s.ok()) {
      std::printf("%s\n", ErrorLine(s).c_str());
      failed_ = true;
    }
    for (const StatementResult& r : result.statements) Print(r, elapsed_ms);
    std::fflush(stdout);
    if (g_interrupted.load()) break;
  }
  ClearInterrupt();
}

void Shell::Print(const StatementResult& statement, double elapsed_ms) {
  if (!statement.status.ok()) {
    std::printf("%s\n", ErrorLine(statement.status).c_str());
    failed_ = true;
    return;
  }
  const std::string body = FormatStatement(statement, settings_, /*pretty_json=*/true);
  const std::string footer = FormatFooter(
      CountRows(statement), settings_.timing ? std::optional<double>(elapsed_ms) : std::nullopt);
  std::printf("%s%s\n", body.c_str(), footer.c_str());
}

// A slow server makes the shell wait for its words; Ctrl-C gives up on them.
void Shell::LoadWords() {
  words_ = LoadCompletionWords(connection_);
  if (!g_interrupted.load()) return;
  AwaitTerminalFlush();
  ClearInterrupt();
  std::printf("\nCompletion words not loaded (Ctrl-C); \\refresh loads them.\n");
}

// One entry per statement, its lines joined so that Up brings back all of it
// (unless a `--` comment would then swallow the rest), appended to the file
// at once so that a crash keeps it.
void Shell::AddHistory(const std::string& entry) {
  if (!interactive_) return;
  std::string joined = entry;
  if (joined.find("--") == std::string::npos) std::replace(joined.begin(), joined.end(), '\n', ' ');
  add_history(joined.c_str());
  if (history_path_.empty()) return;
  if (append_history(1, history_path_.c_str()) != 0) write_history(history_path_.c_str());
}

}  // namespace

// "http://HOST[:PORT][/]", HOST possibly "[v6]"; the port defaults to 8086.
// No https: the server speaks plain HTTP (put a proxy in front for TLS).
int RunQuery(int argc, char** argv) {
  Flags flags;
  const std::string error = ParseFlags(argc, argv, &flags);
  if (flags.help) {
    std::printf("%s%s%s", kQueryUsage, kConnectionFlagsHelp, kQueryExamples);
    return 0;
  }
  if (!error.empty()) return Usage("query", error, kQueryUsage);
  if (flags.positional.size() != 1) {
    return Usage("query", flags.positional.empty() ? "no query given" : "more than one query given",
                 kQueryUsage);
  }
  const std::string text = flags.positional[0] == "-" ? ReadAll(std::cin) : flags.positional[0];
  const std::string syntax_error = SyntaxError(text);
  if (!syntax_error.empty()) {
    std::fprintf(stderr, "%s\n", syntax_error.c_str());
    return 1;
  }
  std::unique_ptr<Connection> connection;
  Status s = OpenConnection(
      flags.connection, [] { return g_interrupted.load(); }, &connection);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", ErrorLine(s).c_str());
    return 1;
  }
  InstallSignalHandlers();
  QueryResult result;
  s = connection->Query(text, &result);
  const Status closed = connection->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", ErrorLine(s).c_str());
    return s.IsCancelled() ? 130 : 1;
  }
  const Settings& settings = flags.settings;
  if (settings.format == OutputFormat::kCsv) {
    std::fputs(query::FormatCsv(result, settings.time_format).c_str(), stdout);
  } else if (settings.format == OutputFormat::kJson) {
    std::string json = query::FormatJson(result, settings.time_format, /*pretty=*/false);
    if (!json.ends_with('\n')) json.push_back('\n');
    std::fputs(json.c_str(), stdout);
  }
  int status = 0;
  bool first_table = true;
  for (const StatementResult& statement : result.statements) {
    if (!statement.status.ok()) {
      std::fprintf(stderr, "%s\n", ErrorLine(statement.status).c_str());
      status = statement.status.IsCancelled() ? 130 : std::max(status, 1);
    } else if (settings.format == OutputFormat::kTable) {
      if (!first_table) std::fputc('\n', stdout);
      first_table = false;
      std::printf("%s%s\n", FormatTable(statement, settings.time_format, {TerminalWidth()}).c_str(),
                  FormatFooter(CountRows(statement), std::nullopt).c_str());
    }
  }
  if (!closed.ok()) std::fprintf(stderr, "%s\n", ErrorLine(closed).c_str());
  return status;
}

int RunShell(int argc, char** argv) {
  Flags flags;
  const std::string error = ParseFlags(argc, argv, &flags);
  if (flags.help) {
    std::printf("%s%s%s", kShellUsage, kConnectionFlagsHelp, kShellExamples);
    return 0;
  }
  if (!error.empty()) return Usage("shell", error, kShellUsage);
  if (!flags.positional.empty()) {
    return Usage("shell", "unexpected argument " + flags.positional[0], kShellUsage);
  }
  std::unique_ptr<Connection> connection;
  Status s = OpenConnection(
      flags.connection, [] { return g_interrupted.load(); }, &connection);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", ErrorLine(s).c_str());
    return 1;
  }
  if (!InstallSignalHandlers()) {
    std::fprintf(stderr, "gpulse shell: cannot install the Ctrl-C handler\n");
    return 1;
  }
  Shell shell(connection.get(), flags.settings, ::isatty(STDIN_FILENO) == 1);
  const int status = shell.Run();
  s = connection->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", ErrorLine(s).c_str());
    return 1;
  }
  return status;
}

}  // namespace gpulse::shell
