// `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] -l N` logs
// -> points, shaped as Telegraf's nvidia_smi input shapes them (measurement
// nvidia_smi, fields utilization_gpu, memory_used, power_draw...), so the
// dashboards built on Telegraf's data work on an imported log.
//
// The mapping, and why it is so, is in docs/import.md: column names (the
// header's, without their " [unit]", else --query-gpu's) map to Telegraf's
// tag and field names, each field's type is fixed by its name, `[N/A]` and
// the other bracketed nvidia-smi messages leave the field out, and the
// timestamp column is read as nvidia-smi prints it (local time in the
// given zone) or as ISO 8601 with an offset.
//
// State: the columns in force (from the last header, or --query-gpu) and the
// types decided for columns the table does not know, so a log may be parsed
// in slices. Thread safety: one parser per file, used by one thread.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/civil_time.h"
#include "ingest/csv_row.h"

namespace gpulse::ingest {

struct NvsmiCsvOptions {
  // The columns of a file without a header: the list given to nvidia-smi's
  // --query-gpu, comma-separated. A header in the file wins over it.
  std::string query_gpu;
  // Tags every point gets (host=NAME, --tag); a column's tag of the same
  // key wins.
  std::vector<Tag> tags;
  TimeZone zone;  // of timestamps printed without an offset
};

class NvsmiCsvParser {
 public:
  explicit NvsmiCsvParser(NvsmiCsvOptions options);

  // Parses `text` (whole lines; the first is line `first_line` of the
  // file) and appends one point per good row to *points, the row's line to
  // *lines, and one RowError per bad row to *errors.
  //
  // InvalidArgument when the file cannot be imported at all: a data row
  // comes before any header and no --query-gpu was given, or the columns
  // have no timestamp. Rows already appended stay.
  Status Parse(std::string_view text, size_t first_line, std::vector<Point>* points,
               std::vector<size_t>* lines, std::vector<RowError>* errors);

  // How a column's values are read.
  enum class Kind { kTime, kTag, kInteger, kFloat, kString, kActive, kInfer };
  struct Column {
    std::string name;  // as nvidia-smi names it: utilization.gpu
    std::string key;   // the tag or field key: utilization_gpu
    Kind kind = Kind::kInfer;
  };

  // The column that nvidia-smi's query name `name` (unit suffix removed)
  // becomes. Exposed for tests and docs.
  static Column ColumnFor(std::string_view name);

 private:
  Status SetColumns(const std::vector<std::string>& names, size_t line);
  bool ParseRow(const std::vector<CsvField>& fields, size_t line, Point* point, RowError* error);
  bool AddValue(const Column& column, const CsvField& field, Point* point, int64_t* time,
                std::string* why);

  NvsmiCsvOptions options_;
  std::vector<Column> columns_;
  std::string columns_source_;  // "the header on line N" or "--query-gpu", for errors
  // Types decided from the first value of columns the table does not know,
  // by field key, kept across headers so a field keeps one type.
  std::map<std::string, Kind> inferred_;
};

}  // namespace gpulse::ingest
