// `nvidia-smi -q -x` snapshots -> the points Telegraf's inputs.nvidia_smi
// sends for them: measurement nvidia_smi (one point per <gpu>),
// nvidia_smi_mig (per MIG device) and nvidia_smi_process (per process), with
// Telegraf's tag and field names and types, units stripped, N/A left out.
// docs/import.md lists the mapping and where it departs from Telegraf's.
//
// Parsed with pugixml (a DOM: a snapshot is tens of kilobytes).
//
// Thread safety: ParseNvsmiXml is a pure function of its arguments.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"
#include "ingest/civil_time.h"
#include "ingest/csv_row.h"

namespace gpulse::ingest {

struct NvsmiXmlOptions {
  std::vector<Tag> tags;  // host=NAME, --tag; Telegraf's own tags win
  TimeZone zone;          // of the <timestamp>
  // The time of points when the snapshot has no <timestamp> (or one that
  // does not parse): the import's.
  int64_t default_time_ns = 0;
};

// Appends the snapshot's points to *points (in document order: each GPU,
// then its MIG devices, then its processes) and a RowError per value that
// does not read as its field's type (that field is left out, the point
// kept). InvalidArgument, with line and column, when `body` is not an
// nvidia-smi XML document; nothing is appended then.
Status ParseNvsmiXml(std::string_view body, const NvsmiXmlOptions& options,
                     std::vector<Point>* points, std::vector<RowError>* errors);

}  // namespace gpulse::ingest
