#include "ingest/pai_csv.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

namespace gpulse::ingest {

namespace {

using Kind = PaiColumn::Kind;

// Counts are written as 4 or as 4.0 in the trace's tables.
std::optional<int64_t> ToCount(std::string_view s) {
  const auto d = ParseFiniteNumber(s);
  if (!d || *d != std::floor(*d) || std::fabs(*d) > 9e18) return std::nullopt;
  return static_cast<int64_t>(*d);
}

std::string BaseName(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

const std::vector<PaiTable>& PaiTables() {
  // The column lists of cluster-trace-gpu-v2020/data/*.header, in order.
  static const std::vector<PaiTable> kTables = {
      {"pai_job_table",
       "pai_job",
       {{"job_name", Kind::kString},
        {"inst_id", Kind::kString},
        {"user", Kind::kString},
        {"status", Kind::kTag},
        {"start_time", Kind::kTime},
        {"end_time", Kind::kEndTime}}},
      {"pai_task_table",
       "pai_task",
       {{"job_name", Kind::kString},
        {"task_name", Kind::kString},
        {"inst_num", Kind::kInteger},
        {"status", Kind::kTag},
        {"start_time", Kind::kTime},
        {"end_time", Kind::kEndTime},
        {"plan_cpu", Kind::kFloat},
        {"plan_mem", Kind::kFloat},
        {"plan_gpu", Kind::kFloat},
        {"gpu_type", Kind::kTag}}},
      {"pai_instance_table",
       "pai_instance",
       {{"job_name", Kind::kString},
        {"task_name", Kind::kString},
        {"inst_name", Kind::kString},
        {"worker_name", Kind::kString},
        {"inst_id", Kind::kString},
        {"status", Kind::kTag},
        {"start_time", Kind::kTime},
        {"end_time", Kind::kEndTime},
        {"machine", Kind::kTag}}},
      {"pai_sensor_table",
       "pai_sensor",
       {{"job_name", Kind::kString},
        {"task_name", Kind::kString},
        {"worker_name", Kind::kString},
        {"inst_id", Kind::kString},
        {"machine", Kind::kTag},
        {"gpu_name", Kind::kTag},
        {"cpu_usage", Kind::kFloat},
        {"gpu_wrk_util", Kind::kFloat},
        {"avg_mem", Kind::kFloat},
        {"max_mem", Kind::kFloat},
        {"avg_gpu_wrk_mem", Kind::kFloat},
        {"max_gpu_wrk_mem", Kind::kFloat},
        {"read", Kind::kFloat},
        {"write", Kind::kFloat},
        {"read_count", Kind::kInteger},
        {"write_count", Kind::kInteger}}},
      {"pai_group_tag_table",
       "pai_group_tag",
       {{"inst_id", Kind::kString},
        {"user", Kind::kString},
        {"gpu_type_spec", Kind::kTag},
        {"group", Kind::kTag},
        {"workload", Kind::kTag}}},
      {"pai_machine_metric",
       "pai_machine_metric",
       {{"worker_name", Kind::kString},
        {"machine", Kind::kTag},
        {"start_time", Kind::kTime},
        {"end_time", Kind::kEndTime},
        {"machine_cpu_iowait", Kind::kFloat},
        {"machine_cpu_kernel", Kind::kFloat},
        {"machine_cpu_usr", Kind::kFloat},
        {"machine_gpu", Kind::kFloat},
        {"machine_load_1", Kind::kFloat},
        {"machine_net_receive", Kind::kFloat},
        {"machine_num_worker", Kind::kInteger},
        {"machine_cpu", Kind::kFloat}}},
      {"pai_machine_spec",
       "pai_machine_spec",
       {{"machine", Kind::kTag},
        {"gpu_type", Kind::kTag},
        {"cap_cpu", Kind::kInteger},
        {"cap_mem", Kind::kInteger},
        {"cap_gpu", Kind::kInteger}}},
  };
  return kTables;
}

const PaiTable* FindPaiTable(std::string_view name) {
  for (const PaiTable& t : PaiTables()) {
    const std::string_view m = t.measurement;
    if (name == t.name || name == m || name == m.substr(4)) return &t;
  }
  return nullptr;
}

const PaiTable* PaiTableForFile(std::string_view path) {
  const std::string base = BaseName(path);
  // pai_machine_metric and pai_machine_spec share no prefix past
  // "pai_machine_", and no table's name is inside another's.
  for (const PaiTable& t : PaiTables()) {
    if (base.find(t.name) != std::string::npos) return &t;
  }
  return nullptr;
}

PaiCsvParser::PaiCsvParser(PaiCsvOptions options) : options_(std::move(options)) {
  for (const PaiColumn& c : options_.table->columns) {
    if (!header_.empty()) header_ += ',';
    header_ += c.name;
    has_time_ = has_time_ || c.kind == Kind::kTime;
    has_ids_ = has_ids_ || c.kind == Kind::kString;
  }
}

void PaiCsvParser::Parse(std::string_view text, size_t first_line, std::vector<Point>* points,
                         std::vector<size_t>* lines, std::vector<RowError>* errors) {
  ForEachLine(text, first_line, [&](std::string_view line, size_t number) {
    if (TrimSpaces(line) == header_) return;  // a header line someone prepended
    Point point;
    RowError error;
    if (ParseRow(line, number, &point, &error)) {
      points->push_back(std::move(point));
      lines->push_back(number);
    } else {
      errors->push_back(std::move(error));
    }
  });
}

bool PaiCsvParser::ParseRow(std::string_view line, size_t number, Point* point,
                            RowError* error) const {
  const std::vector<PaiColumn>& columns = options_.table->columns;
  const std::vector<CsvField> fields = SplitCsvLine(line);
  error->line = number;
  if (fields.size() != columns.size()) {
    error->column =
        fields.size() > columns.size() ? fields[columns.size()].column : line.size() + 1;
    error->reason = "expected " + std::to_string(columns.size()) + " columns (" + header_ +
                    "), found " + std::to_string(fields.size());
    return false;
  }
  point->measurement = options_.table->measurement;
  point->tags = options_.tags;
  std::optional<double> start, end;
  const CsvField* start_field = nullptr;
  const CsvField* end_field = nullptr;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string& v = fields[i].text;
    const PaiColumn& c = columns[i];
    if (v.empty()) continue;  // the trace leaves unknown values empty
    if (c.kind == Kind::kTag) {
      SetTag(&point->tags, c.name, v);
    } else if (c.kind == Kind::kString) {
      point->fields.push_back({c.name, v});
    } else if (c.kind == Kind::kInteger) {
      const auto n = ToCount(v);
      if (!n) {
        *error = {number, fields[i].column,
                  std::string(c.name) + ": expected a whole number, found \"" + v + "\""};
        return false;
      }
      point->fields.push_back({c.name, *n});
    } else {
      const auto d = ParseFiniteNumber(v);
      if (!d) {
        *error = {number, fields[i].column,
                  std::string(c.name) + ": expected a number, found \"" + v + "\""};
        return false;
      }
      if (c.kind == Kind::kTime) {
        start = d;
        start_field = &fields[i];
      } else {
        if (c.kind == Kind::kEndTime) {
          end = d;
          end_field = &fields[i];
        }
        point->fields.push_back({c.name, *d});
      }
    }
  }
  // A row that never started (a waiting or failed job) is placed at its
  // end; one with neither time has no place on a time axis.
  if (has_time_ && !start && !end) {
    *error = {number, 1, "no start_time and no end_time: the row has no time"};
    return false;
  }
  if (point->fields.empty()) {
    *error = {number, 1, "no values: every field is empty"};
    return false;
  }
  int64_t t = options_.start_ns;
  if (has_time_) {
    const double seconds = start ? *start : *end;
    // The start plus the row's seconds must fit int64 nanoseconds, with room
    // for the line number added below: about 1685 to 2255.
    if (std::fabs(seconds) > 9e9 ||
        std::fabs(static_cast<double>(options_.start_ns) + seconds * 1e9) > 9e18) {
      const CsvField& f = start ? *start_field : *end_field;
      *error = {number, f.column,
                std::string(start ? "start_time" : "end_time") + ": " + f.text +
                    " seconds from the start falls outside the years a timestamp holds (about "
                    "1685 to 2255)"};
      return false;
    }
    t += static_cast<int64_t>(std::llround(seconds * 1e9));
  }
  // Rows whose ids are fields share series: two jobs of one status starting
  // in the same second would be one point, the second overwriting the
  // first. Each row moves its line number in nanoseconds past its second,
  // which keeps every row and no second-grain query sees.
  if (has_ids_) t += static_cast<int64_t>(number);
  point->timestamp_ns = t;
  return true;
}

}  // namespace gpulse::ingest
