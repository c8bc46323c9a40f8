#include "engine/data_versions.h"

#include <algorithm>
#include <atomic>

namespace gpulse::engine {

namespace {
std::atomic<uint64_t> next_version{1};
}  // namespace

// Sequentially consistent: a reader that sees a version from Latest also
// sees the write that took it, which was applied before.
uint64_t DataVersions::Next() { return next_version.fetch_add(1); }

uint64_t DataVersions::Latest() { return next_version.load() - 1; }

DataVersions::DataVersions() : base_(Next()) {}

void DataVersions::Touch(std::span<const std::pair<std::string_view, int64_t>> touched) {
  if (touched.empty()) return;
  MutexLock l(&mu_);
  const uint64_t version = Next();
  std::string_view last_name;
  Measurement* m = nullptr;
  int64_t last_slice = 0;
  for (const auto& [name, ts] : touched) {
    const int64_t slice = SliceOf(ts);
    if (m != nullptr && name == last_name) {
      if (slice == last_slice) continue;  // a batch's points mostly share both
    } else {
      auto it = measurements_.find(name);
      if (it == measurements_.end())
        it = measurements_.emplace(std::string(name), Measurement{}).first;
      m = &it->second;
      last_name = name;
    }
    last_slice = slice;
    m->slices[slice] = version;
    if (m->slices.size() > kMaxSlices) {
      m->slices.clear();
      m->all = version;
    }
  }
}

void DataVersions::TouchAll(std::string_view measurement) {
  MutexLock l(&mu_);
  auto it = measurements_.find(measurement);
  if (it == measurements_.end())
    it = measurements_.emplace(std::string(measurement), Measurement{}).first;
  it->second.slices.clear();
  it->second.all = Next();
}

void DataVersions::TouchEverything() {
  MutexLock l(&mu_);
  measurements_.clear();
  base_ = Next();
}

uint64_t DataVersions::Get(std::string_view measurement, int64_t start_ns, int64_t end_ns) const {
  MutexLock l(&mu_);
  const auto it = measurements_.find(measurement);
  if (it == measurements_.end()) return base_;
  const Measurement& m = it->second;
  uint64_t version = std::max(base_, m.all);
  for (auto h = m.slices.lower_bound(SliceOf(start_ns)); h != m.slices.end() && h->first < end_ns;
       ++h) {
    version = std::max(version, h->second);
  }
  return version;
}

}  // namespace gpulse::engine
