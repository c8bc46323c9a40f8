#include "bench/fleet_lp.h"

#include <cstdlib>
#include <string_view>

namespace gpulse::bench {

namespace {

FieldValue ParseValue(std::string_view raw) {
  const std::string text(raw);
  if (!raw.empty() && raw.back() == 'i') return int64_t{std::strtoll(text.c_str(), nullptr, 10)};
  if (!raw.empty() && raw.back() == 'u') return uint64_t{std::strtoull(text.c_str(), nullptr, 10)};
  if (raw == "t" || raw == "true") return true;
  if (raw == "f" || raw == "false") return false;
  if (!raw.empty() && raw.front() == '"') return std::string(raw.substr(1, raw.size() - 2));
  return std::strtod(text.c_str(), nullptr);
}

// Splits "a=1,b=2" into (key, value) pairs and calls fn for each.
template <typename Fn>
void ForEachPair(std::string_view list, Fn&& fn) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    const size_t eq = item.find('=');
    fn(item.substr(0, eq), item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

bool ParseLine(std::string_view line, Point* p) {
  const size_t s1 = line.find(' ');
  const size_t s2 = line.rfind(' ');
  if (s1 == std::string_view::npos || s2 <= s1) return false;
  const std::string_view key = line.substr(0, s1);
  const size_t comma = key.find(',');
  p->measurement = std::string(key.substr(0, comma));
  p->tags.clear();
  if (comma != std::string_view::npos) {
    ForEachPair(key.substr(comma + 1), [&](std::string_view k, std::string_view v) {
      p->tags.push_back(Tag{std::string(k), std::string(v)});
    });
  }
  p->fields.clear();
  ForEachPair(line.substr(s1 + 1, s2 - s1 - 1), [&](std::string_view k, std::string_view v) {
    p->fields.push_back(Field{std::string(k), ParseValue(v)});
  });
  p->timestamp_ns =
      std::strtoll(std::string(line.substr(s2 + 1)).c_str(), nullptr, 10) * int64_t{1000000000};
  return true;
}

}  // namespace

FleetLpReader::~FleetLpReader() {
  if (file_) std::fclose(file_);
  std::free(line_);
}

bool FleetLpReader::Open(const std::string& path) {
  file_ = std::fopen(path.c_str(), "r");
  return file_ != nullptr;
}

bool FleetLpReader::NextBatch(size_t max_points, std::vector<Point>* out) {
  out->clear();
  while (out->size() < max_points) {
    const ssize_t n = getline(&line_, &capacity_, file_);
    if (n <= 0) break;
    std::string_view line(line_, static_cast<size_t>(n));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    out->emplace_back();
    if (!ParseLine(line, &out->back())) out->pop_back();
  }
  return !out->empty();
}

std::string FleetLpPath() {
  const char* env = std::getenv("GPULSE_BENCH_LP");
  return env ? env : "/tmp/fleet/fleet-80x1.lp";
}

}  // namespace gpulse::bench
