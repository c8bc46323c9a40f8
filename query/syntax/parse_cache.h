// ParseCache: parsed query texts, kept for the next request with the same
// text.
//
// A dashboard asks the same question every few seconds, and its text rarely
// changes between refreshes: Grafana writes a relative range as
// `time >= now() - 6h`, and now() is evaluated when a statement runs, never
// when it is parsed, so a kept tree answers exactly as a fresh parse would.
// Parsing costs a few microseconds on a warm CPU, but on one whose caches
// hold other work's memory (a dashboard server's usual state between
// refreshes) it is the costliest step of a small query: the parser's code
// is cold (docs/performance.md, session 13).
//
// Bounded by entries (least recently used out first) and by text length
// (longer texts are parsed every time). Failed parses are not kept.
//
// Thread safety: every method may be called from any thread. The trees it
// hands out are shared and must not be modified (the executor only reads
// them).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "query/syntax/parser.h"
#include "storage/mutex.h"

namespace gpulse::query {

class ParseCache {
 public:
  // Texts up to this many bytes are kept.
  static constexpr size_t kMaxTextBytes = 16 << 10;

  explicit ParseCache(size_t capacity = 256) : capacity_(capacity) {}

  // ParseQuery(text), or the tree an earlier call parsed from the same
  // text (then *hit, when given, is set).
  Result<std::shared_ptr<const StatementList>> Parse(std::string_view text,
                                                     ParseError* error = nullptr,
                                                     bool* hit = nullptr);

  struct Stats {
    uint64_t hits = 0, misses = 0, entries = 0;
  };
  Stats stats() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const StatementList>>;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  const size_t capacity_;
  mutable Mutex mu_;
  std::list<Entry> order_ GPULSE_GUARDED_BY(mu_);  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator, Hash, std::equal_to<>> index_
      GPULSE_GUARDED_BY(mu_);
  uint64_t hits_ GPULSE_GUARDED_BY(mu_) = 0;
  uint64_t misses_ GPULSE_GUARDED_BY(mu_) = 0;
};

}  // namespace gpulse::query
