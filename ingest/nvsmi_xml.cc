#include "ingest/nvsmi_xml.h"

#include <pugixml.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace gpulse::ingest {

namespace {

enum class Type { kString, kInteger, kFloat };

struct XmlField {
  const char* path;  // below <gpu>; a leading '/' means below <nvidia_smi_log>
  const char* key;
  Type type;
};

// Telegraf's fields, in the order its newest parser sets them: where two
// paths give one key (power_draw from power_readings and from
// gpu_power_readings, the instantaneous reading after the averaged one), the
// later one present wins, as there. Paths absent from a schema are simply
// not found, so one table serves v10 to v13.
constexpr XmlField kGpuFields[] = {
    {"/driver_version", "driver_version", Type::kString},
    {"/cuda_version", "cuda_version", Type::kString},
    {"serial", "serial", Type::kString},
    {"vbios_version", "vbios_version", Type::kString},
    {"display_active", "display_active", Type::kString},
    {"display_mode", "display_mode", Type::kString},
    {"ecc_mode/current_ecc", "current_ecc", Type::kString},
    {"fan_speed", "fan_speed", Type::kInteger},
    {"fb_memory_usage/total", "memory_total", Type::kInteger},
    {"fb_memory_usage/used", "memory_used", Type::kInteger},
    {"fb_memory_usage/free", "memory_free", Type::kInteger},
    {"fb_memory_usage/reserved", "memory_reserved", Type::kInteger},
    {"ecc_errors/volatile/dram_correctable", "ecc_errors_volatile_dram_correctable",
     Type::kInteger},
    {"ecc_errors/volatile/dram_uncorrectable", "ecc_errors_volatile_dram_uncorrectable",
     Type::kInteger},
    {"ecc_errors/volatile/sram_correctable", "ecc_errors_volatile_sram_correctable",
     Type::kInteger},
    {"ecc_errors/volatile/sram_uncorrectable", "ecc_errors_volatile_sram_uncorrectable",
     Type::kInteger},
    {"ecc_errors/volatile/sram_uncorrectable_parity",
     "ecc_errors_volatile_sram_uncorrectable_parity", Type::kInteger},
    {"ecc_errors/volatile/sram_uncorrectable_secded",
     "ecc_errors_volatile_sram_uncorrectable_secded", Type::kInteger},
    {"ecc_errors/aggregate/dram_correctable", "ecc_errors_aggregate_dram_correctable",
     Type::kInteger},
    {"ecc_errors/aggregate/dram_uncorrectable", "ecc_errors_aggregate_dram_uncorrectable",
     Type::kInteger},
    {"ecc_errors/aggregate/sram_correctable", "ecc_errors_aggregate_sram_correctable",
     Type::kInteger},
    {"ecc_errors/aggregate/sram_uncorrectable", "ecc_errors_aggregate_sram_uncorrectable",
     Type::kInteger},
    {"ecc_errors/aggregate/sram_uncorrectable_parity",
     "ecc_errors_aggregate_sram_uncorrectable_parity", Type::kInteger},
    {"ecc_errors/aggregate/sram_uncorrectable_secded",
     "ecc_errors_aggregate_sram_uncorrectable_secded", Type::kInteger},
    {"ecc_errors/aggregate/sram_threshold_exceeded", "ecc_errors_aggregate_sram_threshold_exceeded",
     Type::kString},
    {"ecc_errors/aggregate_uncorrectable_sram_sources/sram_l2",
     "ecc_errors_aggregate_sram_uncorrectable_l2", Type::kInteger},
    {"ecc_errors/aggregate_uncorrectable_sram_sources/sram_microcontroller",
     "ecc_errors_aggregate_sram_uncorrectable_microcontroller", Type::kInteger},
    {"ecc_errors/aggregate_uncorrectable_sram_sources/sram_other",
     "ecc_errors_aggregate_sram_uncorrectable_other", Type::kInteger},
    {"ecc_errors/aggregate_uncorrectable_sram_sources/sram_pcie",
     "ecc_errors_aggregate_sram_uncorrectable_pcie", Type::kInteger},
    {"ecc_errors/aggregate_uncorrectable_sram_sources/sram_sm",
     "ecc_errors_aggregate_sram_uncorrectable_sm", Type::kInteger},
    {"ecc_errors/channel_repair_pending", "ecc_errors_channel_repair_pending", Type::kString},
    {"ecc_errors/tpc_repair_pending", "ecc_errors_tpc_repair_pending", Type::kString},
    {"ecc_errors/unrepairable_memory", "ecc_errors_unrepairable_memory", Type::kString},
    {"retired_pages/multiple_single_bit_retirement/retired_count",
     "retired_pages_multiple_single_bit", Type::kInteger},
    {"retired_pages/double_bit_retirement/retired_count", "retired_pages_double_bit",
     Type::kInteger},
    {"retired_pages/pending_blacklist", "retired_pages_blacklist", Type::kString},
    {"retired_pages/pending_retirement", "retired_pages_pending", Type::kString},
    {"remapped_rows/remapped_row_corr", "remapped_rows_correctable", Type::kInteger},
    {"remapped_rows/remapped_row_unc", "remapped_rows_uncorrectable", Type::kInteger},
    {"remapped_rows/remapped_row_pending", "remapped_rows_pending", Type::kString},
    {"remapped_rows/remapped_row_failure", "remapped_rows_failure", Type::kString},
    {"temperature/gpu_temp", "temperature_gpu", Type::kInteger},
    {"temperature/gpu_temp_tlimit", "temperature_gpu_tlimit", Type::kInteger},
    {"temperature/memory_temp", "temperature_memory", Type::kInteger},
    {"temperature/gpu_target_temperature", "temperature_gpu_target", Type::kInteger},
    {"supported_gpu_target_temp/gpu_target_temp_min", "temperature_gpu_target_min", Type::kInteger},
    {"supported_gpu_target_temp/gpu_target_temp_max", "temperature_gpu_target_max", Type::kInteger},
    {"temperature/gpu_temp_max_threshold", "temperature_max_threshold", Type::kInteger},
    {"temperature/gpu_temp_slow_threshold", "temperature_slow_threshold", Type::kInteger},
    {"temperature/gpu_temp_max_gpu_threshold", "temperature_max_gpu_threshold", Type::kInteger},
    {"temperature/gpu_temp_max_mem_threshold", "temperature_max_mem_threshold", Type::kInteger},
    {"temperature/gpu_temp_max_tlimit_threshold", "temperature_max_tlimit_threshold",
     Type::kInteger},
    {"temperature/gpu_temp_slow_tlimit_threshold", "temperature_slow_tlimit_threshold",
     Type::kInteger},
    {"temperature/gpu_temp_max_gpu_tlimit_threshold", "temperature_max_gpu_tlimit_threshold",
     Type::kInteger},
    {"temperature/gpu_temp_max_mem_tlimit_threshold", "temperature_max_mem_tlimit_threshold",
     Type::kInteger},
    {"utilization/gpu_util", "utilization_gpu", Type::kInteger},
    {"utilization/memory_util", "utilization_memory", Type::kInteger},
    {"utilization/encoder_util", "utilization_encoder", Type::kInteger},
    {"utilization/decoder_util", "utilization_decoder", Type::kInteger},
    {"utilization/jpeg_util", "utilization_jpeg", Type::kInteger},
    {"utilization/ofa_util", "utilization_ofa", Type::kInteger},
    {"pci/pci_gpu_link_info/pcie_gen/current_link_gen", "pcie_link_gen_current", Type::kInteger},
    {"pci/pci_gpu_link_info/link_widths/current_link_width", "pcie_link_width_current",
     Type::kInteger},
    {"pci/rx_util", "pcie_rx_util", Type::kInteger},
    {"pci/tx_util", "pcie_tx_util", Type::kInteger},
    {"encoder_stats/session_count", "encoder_stats_session_count", Type::kInteger},
    {"encoder_stats/average_fps", "encoder_stats_average_fps", Type::kInteger},
    {"encoder_stats/average_latency", "encoder_stats_average_latency", Type::kInteger},
    {"fbc_stats/session_count", "fbc_stats_session_count", Type::kInteger},
    {"fbc_stats/average_fps", "fbc_stats_average_fps", Type::kInteger},
    {"fbc_stats/average_latency", "fbc_stats_average_latency", Type::kInteger},
    {"clocks/graphics_clock", "clocks_current_graphics", Type::kInteger},
    {"clocks/sm_clock", "clocks_current_sm", Type::kInteger},
    {"clocks/mem_clock", "clocks_current_memory", Type::kInteger},
    {"clocks/video_clock", "clocks_current_video", Type::kInteger},
    {"clocks_event_reasons_counters/clocks_event_reasons_counters_sw_power_cap",
     "clocks_event_reasons_counters_sw_power_cap", Type::kInteger},
    {"clocks_event_reasons_counters/clocks_event_reasons_counters_sw_therm_slowdown",
     "clocks_event_reasons_counters_sw_therm_slowdown", Type::kInteger},
    {"clocks_event_reasons_counters/clocks_event_reasons_counters_hw_therm_slowdown",
     "clocks_event_reasons_counters_hw_therm_slowdown", Type::kInteger},
    {"clocks_event_reasons_counters/clocks_event_reasons_counters_hw_power_brake",
     "clocks_event_reasons_counters_hw_power_brake", Type::kInteger},
    {"clocks_event_reasons_counters/clocks_event_reasons_counters_sync_boost",
     "clocks_event_reasons_counters_sync_boost", Type::kInteger},
    {"power_readings/power_draw", "power_draw", Type::kFloat},
    {"power_readings/instant_power_draw", "power_draw", Type::kFloat},
    {"power_readings/power_limit", "power_limit", Type::kFloat},
    {"power_readings/average_power_draw", "power_draw_average", Type::kFloat},
    {"power_readings/default_power_limit", "power_limit_default", Type::kFloat},
    {"power_readings/min_power_limit", "power_limit_min", Type::kFloat},
    {"power_readings/max_power_limit", "power_limit_max", Type::kFloat},
    {"gpu_power_readings/power_draw", "power_draw", Type::kFloat},
    {"gpu_power_readings/instant_power_draw", "power_draw", Type::kFloat},
    {"gpu_power_readings/current_power_limit", "power_limit", Type::kFloat},
    {"gpu_power_readings/power_limit", "power_limit", Type::kFloat},
    {"gpu_power_readings/average_power_draw", "power_draw_average", Type::kFloat},
    {"gpu_power_readings/default_power_limit", "power_limit_default", Type::kFloat},
    {"gpu_power_readings/min_power_limit", "power_limit_min", Type::kFloat},
    {"gpu_power_readings/max_power_limit", "power_limit_max", Type::kFloat},
    {"gpu_power_readings/requested_power_limit", "power_limit_requested", Type::kFloat},
    {"module_power_readings/power_draw", "module_power_draw", Type::kFloat},
    {"module_power_readings/instant_power_draw", "module_power_draw", Type::kFloat},
};

constexpr XmlField kMigFields[] = {
    {"ecc_error_count/volatile_count/sram_uncorrectable", "sram_uncorrectable", Type::kInteger},
    {"fb_memory_usage/total", "memory_fb_total", Type::kInteger},
    {"fb_memory_usage/reserved", "memory_fb_reserved", Type::kInteger},
    {"fb_memory_usage/used", "memory_fb_used", Type::kInteger},
    {"fb_memory_usage/free", "memory_fb_free", Type::kInteger},
    {"bar1_memory_usage/total", "memory_bar1_total", Type::kInteger},
    {"bar1_memory_usage/used", "memory_bar1_used", Type::kInteger},
    {"bar1_memory_usage/free", "memory_bar1_free", Type::kInteger},
};

constexpr XmlField kProcessFields[] = {
    {"pid", "pid", Type::kInteger},
    {"used_memory", "used_memory", Type::kInteger},
};

// Line and column of byte offsets in the document, for errors.
class Positions {
 public:
  explicit Positions(std::string_view body) : body_(body) {
    starts_.push_back(0);
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '\n') starts_.push_back(i + 1);
    }
  }
  // Fills line and column of `offset` (unknown offsets: line 0).
  void At(ptrdiff_t offset, RowError* e) const {
    if (offset < 0 || static_cast<size_t>(offset) > body_.size()) return;
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), static_cast<size_t>(offset));
    e->line = static_cast<size_t>(it - starts_.begin());
    e->column = static_cast<size_t>(offset) - *(it - 1) + 1;
  }

 private:
  std::string_view body_;
  std::vector<size_t> starts_;
};

std::string_view Trim(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// Telegraf's test for "nvidia-smi gave a usable value".
bool IsUsable(std::string_view v) {
  return !v.empty() && v != "N/A" && v != "Requested functionality has been deprecated";
}

// "20475 MiB" -> "20475", "16x" -> "16": the first word, a trailing x cut.
std::string_view Number(std::string_view v) {
  std::string_view word = v.substr(0, v.find_first_of(" \t"));
  if (!word.empty() && word.back() == 'x') word.remove_suffix(1);
  return word;
}

void SetField(Point* p, std::string key, FieldValue value) {
  for (Field& f : p->fields) {
    if (f.key == key) {
      f.value = std::move(value);
      return;
    }
  }
  p->fields.push_back({std::move(key), std::move(value)});
}

class SnapshotReader {
 public:
  SnapshotReader(const Positions& positions, std::vector<RowError>* errors)
      : positions_(positions), errors_(errors) {}

  // Sets one field from the element at `path`; a value that is present and
  // usable but does not read as the type is reported and left out.
  void Read(pugi::xml_node root, pugi::xml_node base, const XmlField& f, Point* p) {
    const std::string_view path = f.path;
    const pugi::xml_node node = path.front() == '/' ? root.first_element_by_path(f.path + 1)
                                                    : base.first_element_by_path(f.path);
    if (!node) return;
    const std::string_view v = Trim(node.child_value());
    if (!IsUsable(v)) return;
    if (f.type == Type::kString) {
      SetField(p, f.key, std::string(v));
      return;
    }
    const std::string_view n = Number(v);
    const char* end = n.data() + n.size();
    if (f.type == Type::kInteger) {
      int64_t i = 0;
      const auto r = std::from_chars(n.data(), end, i);
      if (r.ec == std::errc() && r.ptr == end && !n.empty()) return SetField(p, f.key, i);
    } else {
      double d = 0;
      const auto r = std::from_chars(n.data(), end, d);
      if (r.ec == std::errc() && r.ptr == end && !n.empty() && std::isfinite(d)) {
        return SetField(p, f.key, d);
      }
    }
    RowError e;
    positions_.At(node.offset_debug(), &e);
    e.reason = std::string(f.key) + ": expected " +
               (f.type == Type::kInteger ? "an integer" : "a number") + ", found \"" +
               std::string(v) + "\"";
    errors_->push_back(std::move(e));
  }

  template <size_t N>
  void ReadAll(pugi::xml_node root, pugi::xml_node base, const XmlField (&fields)[N], Point* p) {
    for (const XmlField& f : fields) Read(root, base, f, p);
  }

 private:
  const Positions& positions_;
  std::vector<RowError>* errors_;
};

// Clock event (throttle) reasons, 1 while active; older drivers' throttle
// names are renamed to the event names, as Telegraf does. Other elements in
// these groups are skipped: their names could be any field's (power_draw)
// and give it a second type.
void ReadClockReasons(pugi::xml_node gpu, Point* p) {
  for (const char* group : {"clocks_throttle_reasons", "clocks_event_reasons"}) {
    for (pugi::xml_node r : gpu.child(group).children()) {
      std::string key = r.name();
      const std::string old_prefix = "clocks_throttle_reason_";
      if (key.rfind(old_prefix, 0) == 0) {
        key = "clocks_event_reason_" + key.substr(old_prefix.size());
      }
      if (key.rfind("clocks_event_reason_", 0) != 0) continue;
      const std::string_view v = Trim(r.child_value());
      if (v == "Active" || v == "Not Active") SetField(p, key, int64_t{v == "Active" ? 1 : 0});
    }
  }
}

// The schema version from the DOCTYPE (nvsmi_device_v12.dtd -> 12); 0
// without one, which Telegraf reads as v11.
int SchemaVersion(const pugi::xml_document& doc) {
  for (pugi::xml_node n : doc.children()) {
    if (n.type() != pugi::node_doctype) continue;
    const std::string_view v = n.value();
    const size_t at = v.find("nvsmi_device_v");
    if (at == std::string_view::npos) return 0;
    int version = 0;
    const char* begin = v.data() + at + 14;
    std::from_chars(begin, v.data() + v.size(), version);
    return version;
  }
  return 0;
}

void SetTagIfUsed(std::vector<Tag>* tags, const char* key, pugi::xml_node node) {
  const std::string_view v = Trim(node.child_value());
  if (!v.empty()) SetTag(tags, key, std::string(v));
}

// The GPU tags a MIG device repeats.
void SetGpuTags(pugi::xml_node gpu, bool with_arch, std::vector<Tag>* tags) {
  SetTagIfUsed(tags, "pstate", gpu.child("performance_state"));
  SetTagIfUsed(tags, "name", gpu.child("product_name"));
  if (with_arch) SetTagIfUsed(tags, "arch", gpu.child("product_architecture"));
  SetTagIfUsed(tags, "uuid", gpu.child("uuid"));
  SetTagIfUsed(tags, "compute_mode", gpu.child("compute_mode"));
}

Point NewPoint(const char* measurement, const NvsmiXmlOptions& o, int64_t time) {
  Point p;
  p.measurement = measurement;
  p.tags = o.tags;
  p.timestamp_ns = time;
  return p;
}

void AppendIfAny(Point p, std::vector<Point>* points) {
  // A point needs a field; an element with none usable adds nothing.
  if (!p.fields.empty()) points->push_back(std::move(p));
}

int64_t SnapshotTime(pugi::xml_node root, const NvsmiXmlOptions& o, const Positions& positions,
                     std::vector<RowError>* errors) {
  const pugi::xml_node ts = root.child("timestamp");
  const std::string_view text = Trim(ts.child_value());
  if (text.empty()) return o.default_time_ns;
  if (const auto t = ParseAsctime(text, o.zone)) return *t;
  RowError e;
  positions.At(ts.offset_debug(), &e);
  e.reason = "timestamp: expected a time like \"Fri Aug  4 11:44:30 2023\", found \"" +
             std::string(text) + "\"; the points take the import's time";
  errors->push_back(std::move(e));
  return o.default_time_ns;
}

}  // namespace

Status ParseNvsmiXml(std::string_view body, const NvsmiXmlOptions& options,
                     std::vector<Point>* points, std::vector<RowError>* errors) {
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed =
      doc.load_buffer(body.data(), body.size(), pugi::parse_default | pugi::parse_doctype);
  const Positions positions(body);
  if (!parsed) {
    RowError e;
    positions.At(parsed.offset, &e);
    return Status::InvalidArgument("line " + std::to_string(e.line) + ", column " +
                                   std::to_string(e.column) + ": not XML: " + parsed.description());
  }
  const pugi::xml_node root = doc.child("nvidia_smi_log");
  if (!root) {
    return Status::InvalidArgument("no <nvidia_smi_log> element: not nvidia-smi -q -x output");
  }
  // v12 and later carry the architecture, MIG devices and processes that
  // Telegraf's v11 parser (v10, v11 and files without a DOCTYPE) leaves out.
  const bool v12 = SchemaVersion(doc) >= 12;
  const int64_t time = SnapshotTime(root, options, positions, errors);
  SnapshotReader reader(positions, errors);
  int index = 0;
  for (pugi::xml_node gpu : root.children("gpu")) {
    Point p = NewPoint("nvidia_smi", options, time);
    SetTag(&p.tags, "index", std::to_string(index++));
    SetGpuTags(gpu, v12, &p.tags);
    reader.ReadAll(root, gpu, kGpuFields, &p);
    ReadClockReasons(gpu, &p);
    AppendIfAny(std::move(p), points);
    if (!v12) continue;
    for (pugi::xml_node mig : gpu.child("mig_devices").children("mig_device")) {
      Point m = NewPoint("nvidia_smi_mig", options, time);
      SetTagIfUsed(&m.tags, "index", mig.child("index"));
      SetTagIfUsed(&m.tags, "gpu_index", mig.child("gpu_instance_id"));
      SetTagIfUsed(&m.tags, "compute_index", mig.child("compute_instance_id"));
      SetGpuTags(gpu, v12, &m.tags);
      reader.ReadAll(root, mig, kMigFields, &m);
      AppendIfAny(std::move(m), points);
    }
    for (pugi::xml_node proc : gpu.child("processes").children("process_info")) {
      Point q = NewPoint("nvidia_smi_process", options, time);
      SetTagIfUsed(&q.tags, "name", proc.child("process_name"));
      SetTagIfUsed(&q.tags, "type", proc.child("type"));
      reader.ReadAll(root, proc, kProcessFields, &q);
      AppendIfAny(std::move(q), points);
    }
  }
  return Status::Ok();
}

}  // namespace gpulse::ingest
