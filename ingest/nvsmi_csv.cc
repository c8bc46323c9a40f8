#include "ingest/nvsmi_csv.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

namespace gpulse::ingest {

namespace {

using Kind = NvsmiCsvParser::Kind;

struct KnownColumn {
  std::string_view name;  // nvidia-smi's query name (and its header alias)
  std::string_view key;   // Telegraf's name for it
  Kind kind;
};

// nvidia-smi --query-gpu names -> Telegraf inputs.nvidia_smi names and types
// (docs/import.md). Where nvidia-smi has two names for one property (clocks.sm
// and clocks.current.sm; the header prints the second) both are listed.
constexpr KnownColumn kKnownColumns[] = {
    {"timestamp", "", Kind::kTime},
    // Tags: what Telegraf tags, plus pci_bus_id, which identifies a GPU
    // across reboots where index does not.
    {"index", "index", Kind::kTag},
    {"uuid", "uuid", Kind::kTag},
    {"gpu_uuid", "uuid", Kind::kTag},
    {"name", "name", Kind::kTag},
    {"gpu_name", "name", Kind::kTag},
    {"pci.bus_id", "pci_bus_id", Kind::kTag},
    {"gpu_bus_id", "pci_bus_id", Kind::kTag},
    {"pstate", "pstate", Kind::kTag},
    {"compute_mode", "compute_mode", Kind::kTag},
    // Not an nvidia-smi name: the GPU index as dmon, pmon and dcgm-exporter
    // call it, which hand-written logging scripts copy.
    {"gpu", "gpu", Kind::kTag},
    {"driver_version", "driver_version", Kind::kString},
    {"vbios_version", "vbios_version", Kind::kString},
    {"serial", "serial", Kind::kString},
    {"gpu_serial", "serial", Kind::kString},
    {"display_active", "display_active", Kind::kString},
    {"display_mode", "display_mode", Kind::kString},
    {"ecc.mode.current", "current_ecc", Kind::kString},
    {"retired_pages.pending", "retired_pages_pending", Kind::kString},
    {"clocks_throttle_reasons.active", "clocks_event_reasons_active", Kind::kString},
    {"clocks_throttle_reasons.supported", "clocks_event_reasons_supported", Kind::kString},
    {"clocks_event_reasons.active", "clocks_event_reasons_active", Kind::kString},
    {"clocks_event_reasons.supported", "clocks_event_reasons_supported", Kind::kString},
    {"count", "count", Kind::kInteger},
    {"fan.speed", "fan_speed", Kind::kInteger},
    {"utilization.gpu", "utilization_gpu", Kind::kInteger},
    {"utilization.memory", "utilization_memory", Kind::kInteger},
    {"utilization.encoder", "utilization_encoder", Kind::kInteger},
    {"utilization.decoder", "utilization_decoder", Kind::kInteger},
    {"utilization.jpeg", "utilization_jpeg", Kind::kInteger},
    {"utilization.ofa", "utilization_ofa", Kind::kInteger},
    {"memory.total", "memory_total", Kind::kInteger},
    {"memory.used", "memory_used", Kind::kInteger},
    {"memory.free", "memory_free", Kind::kInteger},
    {"memory.reserved", "memory_reserved", Kind::kInteger},
    {"temperature.gpu", "temperature_gpu", Kind::kInteger},
    {"temperature.gpu.tlimit", "temperature_gpu_tlimit", Kind::kInteger},
    {"temperature.memory", "temperature_memory", Kind::kInteger},
    {"clocks.gr", "clocks_current_graphics", Kind::kInteger},
    {"clocks.current.graphics", "clocks_current_graphics", Kind::kInteger},
    {"clocks.sm", "clocks_current_sm", Kind::kInteger},
    {"clocks.current.sm", "clocks_current_sm", Kind::kInteger},
    {"clocks.mem", "clocks_current_memory", Kind::kInteger},
    {"clocks.current.memory", "clocks_current_memory", Kind::kInteger},
    {"clocks.video", "clocks_current_video", Kind::kInteger},
    {"clocks.current.video", "clocks_current_video", Kind::kInteger},
    {"clocks.max.gr", "clocks_max_graphics", Kind::kInteger},
    {"clocks.max.graphics", "clocks_max_graphics", Kind::kInteger},
    {"clocks.max.sm", "clocks_max_sm", Kind::kInteger},
    {"clocks.max.mem", "clocks_max_memory", Kind::kInteger},
    {"clocks.max.memory", "clocks_max_memory", Kind::kInteger},
    {"pcie.link.gen.current", "pcie_link_gen_current", Kind::kInteger},
    {"pcie.link.gen.gpucurrent", "pcie_link_gen_current", Kind::kInteger},
    {"pcie.link.gen.max", "pcie_link_gen_max", Kind::kInteger},
    {"pcie.link.gen.gpumax", "pcie_link_gen_gpumax", Kind::kInteger},
    {"pcie.link.gen.hostmax", "pcie_link_gen_hostmax", Kind::kInteger},
    {"pcie.link.width.current", "pcie_link_width_current", Kind::kInteger},
    {"pcie.link.width.max", "pcie_link_width_max", Kind::kInteger},
    {"encoder.stats.sessionCount", "encoder_stats_session_count", Kind::kInteger},
    {"encoder.stats.averageFps", "encoder_stats_average_fps", Kind::kInteger},
    {"encoder.stats.averageLatency", "encoder_stats_average_latency", Kind::kInteger},
    {"retired_pages.sbe", "retired_pages_multiple_single_bit", Kind::kInteger},
    {"retired_pages.single_bit_ecc.count", "retired_pages_multiple_single_bit", Kind::kInteger},
    {"retired_pages.dbe", "retired_pages_double_bit", Kind::kInteger},
    {"retired_pages.double_bit.count", "retired_pages_double_bit", Kind::kInteger},
    {"power.draw", "power_draw", Kind::kFloat},
    {"power.draw.average", "power_draw_average", Kind::kFloat},
    {"power.draw.instant", "power_draw_instant", Kind::kFloat},
    {"power.limit", "power_limit", Kind::kFloat},
    {"power.default_limit", "power_limit_default", Kind::kFloat},
    {"power.min_limit", "power_limit_min", Kind::kFloat},
    {"power.max_limit", "power_limit_max", Kind::kFloat},
    {"enforced.power.limit", "power_limit_enforced", Kind::kFloat},
    {"module.power.draw", "module_power_draw", Kind::kFloat},
};

const KnownColumn* FindKnown(std::string_view name) {
  for (const KnownColumn& c : kKnownColumns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string DotsToUnderscores(std::string_view name) {
  std::string key(name);
  for (char& c : key) {
    if (c == '.') c = '_';
  }
  return key;
}

// "utilization.gpu [%]" -> "utilization.gpu": the header names a column with
// its unit unless nounits was given.
std::string_view HeaderName(std::string_view field) {
  const size_t bracket = field.find(" [");
  if (bracket != std::string_view::npos && field.back() == ']') field = field.substr(0, bracket);
  return TrimSpaces(field);
}

bool IsName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  }
  return true;
}

// A header line: every field a column name, at least one that nvidia-smi
// knows (a data row of string columns, "P0", is not one).
bool IsHeader(const std::vector<CsvField>& fields) {
  bool known = false;
  for (const CsvField& f : fields) {
    const std::string_view name = HeaderName(f.text);
    if (!IsName(name)) return false;
    known = known || FindKnown(name) != nullptr;
  }
  return known;
}

// nvidia-smi writes `[N/A]`, `[Not Supported]`, `[Insufficient
// Permissions]`, `[Unknown Error]`... where it has no value; `N/A` in some
// fields of some drivers.
bool IsMissing(std::string_view v) {
  return v.empty() || v == "N/A" || (v.front() == '[' && v.back() == ']');
}

// "1129 MiB" -> "1129", "MiB"; "45" -> "45", "".
void SplitUnit(std::string_view v, std::string_view* number, std::string_view* unit) {
  const size_t space = v.find(' ');
  *number = v.substr(0, space);
  *unit = space == std::string_view::npos ? std::string_view() : TrimSpaces(v.substr(space));
}

// A unit nvidia-smi prints only after whole numbers.
bool IsIntegerUnit(std::string_view unit) {
  return unit == "%" || unit == "MiB" || unit == "MHz" || unit == "KB/s" || unit == "C" ||
         unit == "us";
}

// The type of a column the table does not know, from its first value: a
// whole number with an integer unit is an integer, any other number a float
// (a later 0.5 still fits), anything else a string.
Kind InferKind(std::string_view value) {
  std::string_view number, unit;
  SplitUnit(value, &number, &unit);
  if (ParseWholeInt(number) && IsIntegerUnit(unit)) return Kind::kInteger;
  if (ParseFiniteNumber(number)) return Kind::kFloat;
  return Kind::kString;
}

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

NvsmiCsvParser::NvsmiCsvParser(NvsmiCsvOptions options) : options_(std::move(options)) {}

NvsmiCsvParser::Column NvsmiCsvParser::ColumnFor(std::string_view name) {
  if (const KnownColumn* known = FindKnown(name)) {
    return {std::string(name), std::string(known->key), known->kind};
  }
  // Throttle reasons, old name and new: 1 while active, as Telegraf counts.
  for (std::string_view prefix : {"clocks_throttle_reasons.", "clocks_event_reasons."}) {
    if (name.substr(0, prefix.size()) == prefix) {
      return {std::string(name), "clocks_event_reason_" + std::string(name.substr(prefix.size())),
              Kind::kActive};
    }
  }
  // A name whose key is one of the keys above (utilization_gpu,
  // clocks_event_reason_gpu_idle) takes that key's kind: a field keeps one
  // type whichever name a header gives it.
  std::string key = DotsToUnderscores(name);
  for (const KnownColumn& c : kKnownColumns) {
    if (c.key == key) return {std::string(name), std::move(key), c.kind};
  }
  if (key.rfind("clocks_event_reason_", 0) == 0) return {std::string(name), key, Kind::kActive};
  return {std::string(name), std::move(key), Kind::kInfer};
}

Status NvsmiCsvParser::SetColumns(const std::vector<std::string>& names, size_t line) {
  std::vector<Column> columns;
  bool has_time = false;
  for (const std::string& name : names) {
    Column c = ColumnFor(name);
    has_time = has_time || c.kind == Kind::kTime;
    for (const Column& other : columns) {
      if (!c.key.empty() && other.key == c.key) {
        return Status::InvalidArgument("line " + std::to_string(line) + ": columns " + other.name +
                                       " and " + c.name + " are both " + c.key);
      }
    }
    columns.push_back(std::move(c));
  }
  // Without a time every row of a -l log would land on one instant and
  // overwrite the one before: refuse rather than keep the last sample.
  if (!has_time) {
    return Status::InvalidArgument(
        "line " + std::to_string(line) +
        ": the columns have no timestamp; log with nvidia-smi --query-gpu=timestamp,... (or add "
        "timestamp to --query-gpu where the file has it)");
  }
  columns_ = std::move(columns);
  return Status::Ok();
}

Status NvsmiCsvParser::Parse(std::string_view text, size_t first_line, std::vector<Point>* points,
                             std::vector<size_t>* lines, std::vector<RowError>* errors) {
  Status status;
  ForEachLine(text, first_line, [&](std::string_view line, size_t number) {
    if (!status.ok()) return;
    const std::vector<CsvField> fields = SplitCsvLine(line);
    if (IsHeader(fields)) {
      // A header, first or repeated (concatenated logs): it names the
      // columns of the rows below it.
      std::vector<std::string> names;
      for (const CsvField& f : fields) names.emplace_back(HeaderName(f.text));
      status = SetColumns(names, number);
      columns_source_ = "the header on line " + std::to_string(number);
      return;
    }
    if (columns_.empty()) {
      if (options_.query_gpu.empty()) {
        status = Status::InvalidArgument(
            "line " + std::to_string(number) +
            ": no header line; pass the columns given to nvidia-smi with --query-gpu (e.g. "
            "--query-gpu timestamp,index,utilization.gpu,memory.used,power.draw)");
        return;
      }
      std::vector<std::string> names;
      for (const CsvField& f : SplitCsvLine(options_.query_gpu)) names.push_back(f.text);
      status = SetColumns(names, number);
      columns_source_ = "--query-gpu";
      if (!status.ok()) return;
    }
    Point point;
    RowError error;
    if (ParseRow(fields, number, &point, &error)) {
      points->push_back(std::move(point));
      lines->push_back(number);
    } else {
      errors->push_back(std::move(error));
    }
  });
  return status;
}

bool NvsmiCsvParser::ParseRow(const std::vector<CsvField>& fields, size_t line, Point* point,
                              RowError* error) {
  error->line = line;
  if (fields.size() != columns_.size()) {
    error->column =
        fields.size() > columns_.size() ? fields[columns_.size()].column : fields.back().column;
    error->reason = "expected " + std::to_string(columns_.size()) + " columns as " +
                    columns_source_ + " lists, found " + std::to_string(fields.size());
    return false;
  }
  point->measurement = "nvidia_smi";
  point->tags = options_.tags;
  int64_t time = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string why;
    if (!AddValue(columns_[i], fields[i], point, &time, &why)) {
      error->column = fields[i].column;
      error->reason = columns_[i].name + ": " + why;
      return false;
    }
  }
  if (point->fields.empty()) {
    error->column = 1;
    error->reason = "no values: every field is [N/A] or empty";
    return false;
  }
  point->timestamp_ns = time;
  return true;
}

bool NvsmiCsvParser::AddValue(const Column& column, const CsvField& field, Point* point,
                              int64_t* time, std::string* why) {
  const std::string_view v = field.text;
  if (column.kind == Kind::kTime) {
    const auto t = ParseNvsmiTime(v, options_.zone);
    if (!t) {
      *why = "expected a time like 2024/06/01 11:27:05.177 or 2025-09-08T17:26:50+08:00, found " +
             Quoted(v);
      return false;
    }
    *time = *t;
    return true;
  }
  if (IsMissing(v)) return true;  // the field is left out, as Telegraf does
  if (column.kind == Kind::kTag) {
    SetTag(&point->tags, column.key, std::string(v));
    return true;
  }
  Kind kind = column.kind;
  if (kind == Kind::kInfer) {
    // The first value decides, for the rest of the import.
    kind = inferred_.try_emplace(column.key, InferKind(v)).first->second;
  }
  std::string_view number, unit;
  SplitUnit(v, &number, &unit);
  switch (kind) {
    case Kind::kInteger:
      if (const auto i = ParseWholeInt(number)) {
        point->fields.push_back({column.key, *i});
        return true;
      }
      *why = "expected an integer, found " + Quoted(v);
      return false;
    case Kind::kFloat:
      if (const auto d = ParseFiniteNumber(number)) {
        point->fields.push_back({column.key, *d});
        return true;
      }
      *why = "expected a number, found " + Quoted(v);
      return false;
    case Kind::kActive:
      if (v == "Active" || v == "Not Active") {
        point->fields.push_back({column.key, int64_t{v == "Active" ? 1 : 0}});
        return true;
      }
      *why = "expected Active or Not Active, found " + Quoted(v);
      return false;
    default:
      point->fields.push_back({column.key, std::string(v)});
      return true;
  }
}

}  // namespace gpulse::ingest
