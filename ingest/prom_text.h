// Prometheus text exposition format 0.0.4: the parser. Owns nothing but the
// unescaped copies of label values that held escapes (PromTextScratch); every
// other string a sample carries is a view into the body it was parsed from.
//
// This is what dcgm-exporter, node_exporter and nvidia_gpu_exporter serve on
// /metrics:
//
//   # HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
//   # TYPE DCGM_FI_DEV_GPU_UTIL gauge
//   DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-c452...",Hostname="gpu-node-1"} 0
//
// Coverage and the grammar accepted are in docs/prometheus-mapping.md.
//
// Thread safety: ParsePromText is a pure function of its input; calls on
// different output objects may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpulse::ingest {

// One sample line. Histogram and summary series (_bucket with le, _sum,
// _count, quantile) are ordinary samples.
struct PromSample {
  std::string_view name;
  // In the order written; names are unique within a sample. Values are
  // unescaped (\\ \" \n). Empty values are kept as they come.
  std::vector<std::pair<std::string_view, std::string_view>> labels;
  double value = 0;                     // NaN and +-Inf as written
  std::optional<int64_t> timestamp_ms;  // absent when the line has none
  // "counter", "gauge", "histogram", "summary" or "untyped": from the # TYPE
  // line of the sample's family (for foo_bucket, foo_sum, foo_count, the
  // family foo when it is a histogram or summary). Views a static string.
  std::string_view type;
  size_t line = 0;  // 1-based
};

// What # TYPE and # HELP say of a metric family (/api/v1/metadata).
struct PromMetadata {
  std::string name;
  std::string type;  // "untyped" without a TYPE line
  std::string help;
  std::string unit;  // remote write's; text exposition 0.0.4 has none
};

// A line that was not understood. The parser skips that line and goes on.
struct PromError {
  size_t line = 0;    // 1-based
  size_t column = 0;  // 1-based byte offset within the line
  std::string message;

  // "line 12, column 31: expected '=' after label name \"gpu\"".
  std::string ToString() const;
};

// Storage for label values that had to be unescaped. Element addresses never
// change (std::deque grows without moving its elements, and moving the deque
// moves its blocks), so views into it stay valid while the scratch lives,
// including after it is moved.
struct PromTextScratch {
  std::deque<std::string> unescaped;
};

// Parses `body` and appends its samples and errors (in line order) to
// *samples and *errors. A bad line yields one error and no sample; the lines
// after it are parsed as usual. Lines may end in "\n" or "\r\n".
//
// The views in each sample point into `body`, or into *scratch for label
// values that contained escapes, or into static storage (type). They stay
// valid while both `body` and *scratch live.
//
// With `metadata`, it also appends what the body's # TYPE and # HELP lines
// said of each metric family (HELP's escapes undone), in name order.
void ParsePromText(std::string_view body, PromTextScratch* scratch,
                   std::vector<PromSample>* samples, std::vector<PromError>* errors,
                   std::vector<PromMetadata>* metadata = nullptr);

// Parses a sample value as Prometheus does (Go's strconv.ParseFloat): decimal
// and exponent forms, hexadecimal floats ("0x1p-3"), "NaN", "Inf" and
// "Infinity" with an optional sign before the infinities, case-insensitive.
// Returns nullopt for anything else, including values beyond +-DBL_MAX.
std::optional<double> ParsePromFloat(std::string_view text);

}  // namespace gpulse::ingest
