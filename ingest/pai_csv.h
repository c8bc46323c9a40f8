// The Alibaba PAI GPU cluster trace 2020 (cluster-trace-gpu-v2020) -> points.
// Its seven tables are header-less CSVs; their column lists are built in
// (from the trace's *.header files) and each table maps to a measurement
// pai_<table> (pai_job, pai_task, pai_instance, pai_sensor, pai_group_tag,
// pai_machine_metric, pai_machine_spec).
//
// Low-cardinality columns (status, gpu_type, machine, workload...) are
// tags; ids (job_name, inst_id, worker_name, task_name, user) are string
// fields, so 35,000 jobs a day add values, not series. Times are the
// trace's seconds since its shifted epoch, plus a chosen start.
// docs/import.md gives each table's mapping and the reasons.
//
// State: whether the parser is inside a file (to skip a header line).
// Thread safety: one parser per file, used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/csv_row.h"

namespace gpulse::ingest {

struct PaiColumn {
  enum class Kind {
    kTag,
    kString,   // a string field
    kFloat,    // a float field
    kInteger,  // an integer field (counts)
    kTime,     // start_time: the point's time
    kEndTime,  // end_time: a float field, and the time where start_time is empty
  };
  const char* name;
  Kind kind;
};

struct PaiTable {
  const char* name;         // pai_job_table, as the trace names the file
  const char* measurement;  // pai_job
  std::vector<PaiColumn> columns;
};

// The seven tables of the trace.
const std::vector<PaiTable>& PaiTables();
// By the trace's name (pai_job_table), the measurement (pai_job) or the
// short name (job); null when none.
const PaiTable* FindPaiTable(std::string_view name);
// The table a file holds, from its name: pai_job_table.csv,
// /x/pai_machine_metric.csv.gz, pai_sensor_table-part3.csv; null when the
// name contains none of the tables' names.
const PaiTable* PaiTableForFile(std::string_view path);

struct PaiCsvOptions {
  const PaiTable* table = nullptr;
  std::vector<Tag> tags;  // --tag; a column's tag of the same key wins
  // Unix nanoseconds of the trace's second 0 (--start); pai_machine_spec's
  // rows, which have no time, are written at it.
  int64_t start_ns = 0;
};

class PaiCsvParser {
 public:
  explicit PaiCsvParser(PaiCsvOptions options);

  // Parses `text` (whole lines; the first is line `first_line` of the
  // file), appending a point and its line per good row and a RowError per
  // bad one. A line equal to the table's header is skipped.
  void Parse(std::string_view text, size_t first_line, std::vector<Point>* points,
             std::vector<size_t>* lines, std::vector<RowError>* errors);

 private:
  bool ParseRow(std::string_view line, size_t number, Point* point, RowError* error) const;

  PaiCsvOptions options_;
  std::string header_;  // the columns joined by ','
  bool has_time_ = false;
  bool has_ids_ = false;  // ids stored as string fields: rows share series
};

}  // namespace gpulse::ingest
