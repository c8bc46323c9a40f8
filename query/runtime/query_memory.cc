#include "query/runtime/query_memory.h"

#include <cstdio>

#include "query/runtime/result.h"
#include "storage/env.h"

namespace gpulse {

namespace {

// A query takes from the pool in grains of this size: a charge of a few
// bytes per series touches the pool once a grain, not once a series.
constexpr uint64_t kGrain = 4ull << 20;

uint64_t RoundUpToGrain(uint64_t bytes) { return (bytes + kGrain - 1) / kGrain * kGrain; }

}  // namespace

uint64_t ColumnBytes(const Column& c) {
  uint64_t bytes = c.ts.size() * sizeof(int64_t) + c.floats.size() * sizeof(double) +
                   c.ints.size() * sizeof(int64_t) + c.uints.size() * sizeof(uint64_t) +
                   c.bools.size();
  for (const std::string& v : c.strings)
    bytes += sizeof(std::string) + (v.size() > 15 ? v.size() : 0);
  return bytes;
}

uint64_t RowsBytes(size_t rows, size_t width) {
  // A row is a vector of its own: its header, its cells and the allocator's
  // 16 bytes around them.
  return static_cast<uint64_t>(rows) *
         (sizeof(std::vector<QueryValue>) + 16 + width * sizeof(QueryValue));
}

uint64_t SeriesBytes(const ResultSeries& rs) {
  uint64_t bytes = RowsBytes(rs.values.size(), rs.columns.size());
  for (const auto& row : rs.values) {
    for (const QueryValue& v : row) {
      if (const auto* text = std::get_if<std::string>(&v); text && text->size() > 15) {
        bytes += text->size();
      }
    }
  }
  bytes += rs.row_times.size() * sizeof(int64_t);
  for (const Column& c : rs.by_column) bytes += ColumnBytes(c);
  return bytes;
}

uint64_t DefaultQueryMemory() { return storage::PhysicalMemoryBytes() / 16; }
uint64_t DefaultServerQueryMemory() { return storage::PhysicalMemoryBytes() / 4; }

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, v < 10 ? "%.1f %s" : "%.0f %s", v, kUnits[unit]);
  }
  return text;
}

// --- QueryMemoryPool ------------------------------------------------------------

QueryMemoryPool::QueryMemoryPool(uint64_t limit)
    : limit_(limit == 0 ? DefaultServerQueryMemory() : limit) {}

bool QueryMemoryPool::TryTake(uint64_t bytes) {
  uint64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (held + bytes > limit_) return false;
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

void QueryMemoryPool::Give(uint64_t bytes) { held_.fetch_sub(bytes, std::memory_order_relaxed); }

// --- QueryMemory ------------------------------------------------------------------

QueryMemory::QueryMemory(uint64_t limit, QueryMemoryPool* pool)
    : limit_(limit == 0 ? DefaultQueryMemory() : limit), pool_(pool) {}

QueryMemory::~QueryMemory() {
  if (pool_ != nullptr) pool_->Give(taken_.load(std::memory_order_relaxed));
}

Status QueryMemory::Charge(uint64_t bytes, const char* what) {
  const uint64_t held = held_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (held > limit_) {
    held_.fetch_sub(bytes, std::memory_order_relaxed);
    return Status::ResourceExhausted(
        std::string("the query needs more than its memory budget of ") + FormatBytes(limit_) +
        " (limit query.max_memory_mb) for " + what +
        "; narrow the time range, add a tag condition or LIMIT, or read raw points with "
        "chunked=true");
  }
  if (pool_ != nullptr && !TakeFromPool(held)) {
    held_.fetch_sub(bytes, std::memory_order_relaxed);
    pool_->CountRefused();
    return Status::ResourceExhausted(
        std::string("the queries running now hold the server's query memory of ") +
        FormatBytes(pool_->limit()) + " (limit query.server_memory_mb); this one stopped at " +
        what + ": retry when they finish");
  }
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (held > peak && !peak_.compare_exchange_weak(peak, held, std::memory_order_relaxed)) {
  }
  return Status::Ok();
}

bool QueryMemory::TakeFromPool(uint64_t held) {
  uint64_t taken = taken_.load(std::memory_order_relaxed);
  while (held > taken) {
    const uint64_t more = RoundUpToGrain(held) - taken;
    if (!pool_->TryTake(more)) return false;
    if (taken_.compare_exchange_weak(taken, taken + more, std::memory_order_relaxed)) return true;
    pool_->Give(more);  // another thread took meanwhile: look again
  }
  return true;
}

void QueryMemory::Release(uint64_t bytes) {
  const uint64_t held = held_.fetch_sub(bytes, std::memory_order_relaxed) - bytes;
  if (pool_ == nullptr) return;
  // Keep a grain beyond what is held; give the rest back for other queries.
  uint64_t taken = taken_.load(std::memory_order_relaxed);
  const uint64_t keep = RoundUpToGrain(held) + kGrain;
  while (taken > keep) {
    if (taken_.compare_exchange_weak(taken, keep, std::memory_order_relaxed)) {
      pool_->Give(taken - keep);
      return;
    }
  }
}

}  // namespace gpulse
