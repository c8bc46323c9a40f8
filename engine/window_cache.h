// WindowCache: decoded chunk windows (every part of one series, field and
// window, merged), kept so that a dashboard asking the same question every
// few seconds decodes each stored window once, not on every refresh. The
// range coder that makes chunks small costs about 50 ns a value to decode;
// a hit costs unpacking the window (PackedWindow) into a scratch column.
//
// Bounded by bytes (Options::window_cache_bytes); what goes out first is
// chosen by CLOCK (an entry looked up since the hand last passed it gets
// another round), close to least recently used without a list to relink on
// every hit. Whether a new window goes in at all, once the cache is full, is
// TinyLFU's rule (FrequencySketch counts every lookup): only if it was asked
// for more often lately than the entry it would push out. So a query that
// reads more than the cache holds once (every field of a fleet's hour) is
// read without pushing out the windows that dashboards ask for again and
// again; its own windows come in as they are asked for again. The entries sit in one
// open-addressing table, so a lookup reads a slot or two of one array: a query reads hundreds of
// windows, and after other work has run, each pointer followed is a cache miss. Entries never go
// stale: a flush that writes a window erases its entry, and a compaction clears the cache. A reader
// that decoded a window from a snapshot taken before such a change must not insert it afterwards:
// it passes the epoch it saw before taking its snapshot, and Insert refuses it when an invalidation
// came in between.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "engine/frequency_sketch.h"
#include "storage/column.h"
#include "storage/mutex.h"
#include "storage/rollup.h"
#include "storage/tally.h"

namespace gpulse::engine {

// tier 0: a raw window (a Column); tiers 1..3: a rollup block (a
// RollupColumn with every part decoded) starting at window_start.
struct WindowKey {
  uint32_t series_id;
  uint32_t field_id;
  int64_t window_start;
  uint8_t tier = 0;
  friend bool operator==(const WindowKey&, const WindowKey&) = default;
};

// A raw window as the cache keeps it: integers in the narrowest width (1, 2
// or 4 bytes) that holds the window's range, as offsets from its smallest
// value, and then timestamps at a steady step as their first and step; what
// does not pack (floats, strings, bools, wide ranges, uneven times) stays
// as decoded, and a window of floats, strings or bools is handed over in
// place. A day of per-minute GPU utilisation is 1 byte a point here
// against 16 decoded, so a query folding a whole fleet reads a sixteenth of
// the memory, and what it reads is more often still in the CPU's caches
// (measured in docs/performance.md).
class PackedWindow {
 public:
  explicit PackedWindow(storage::Column column);

  // The window as decoded: the kept column itself when nothing packed,
  // else unpacked into *scratch (its vectors' room reused).
  const storage::Column& View(storage::Column* scratch) const;
  // At least its points in [lo, hi): when packed, just those are unpacked
  // (an hour of a day's window unpacks an hour).
  const storage::Column& View(storage::Column* scratch, int64_t lo, int64_t hi) const;

  // The window as packed integers at a steady interval, when it is one
  // (*out views this window's bytes: valid while it lives).
  bool Packed(storage::PackedRun* out) const;

  // Heap bytes held.
  uint64_t bytes() const;

 private:
  // The position of the first point at or after t.
  size_t IndexOf(int64_t t) const;
  // Points [b, e) into *scratch (the kept column when nothing packed).
  const storage::Column& Unpack(storage::Column* scratch, size_t b, size_t e) const;

  storage::Column rest_;  // the type; values and times that did not pack
  size_t size_ = 0;
  bool steady_ = false;  // times are first_ + i * step_ (as uint64, wrapping)
  uint64_t first_ = 0, step_ = 0;
  uint8_t width_ = 0;  // bytes an integer offset; 0: values in rest_
  uint64_t base_ = 0;  // the smallest value (as uint64; integers wrap)
  std::vector<uint8_t> narrow_;
};

class WindowCache {
 public:
  explicit WindowCache(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Read before taking the snapshot the decoded window comes from.
  uint64_t epoch() const;

  // The window (tier 0) or rollup block (other tiers), or null.
  std::shared_ptr<const PackedWindow> Lookup(const WindowKey& key);
  // The same for many keys under one hold of the lock, out[k] for keys[k]
  // (null where not held): a fleet scan's first windows, a chunk of series
  // at a time, where a lock a window kept two query threads waiting on it.
  void Lookup(std::span<const WindowKey> keys, std::shared_ptr<const PackedWindow>* out);
  std::shared_ptr<const storage::RollupColumn> LookupRollups(const WindowKey& key);
  // A tally block (a string field's tier rows) under the same keys.
  std::shared_ptr<const storage::TallyColumn> LookupTallies(const WindowKey& key);
  // The same for many keys under one hold of the lock: out[i] for keys[i].
  void LookupRollups(std::span<const WindowKey> keys,
                     std::shared_ptr<const storage::RollupColumn>* out);
  void LookupTallies(std::span<const WindowKey> keys,
                     std::shared_ptr<const storage::TallyColumn>* out);

  // Keeps `column` unless an invalidation happened since `epoch`, or it is
  // larger than an eighth of the capacity (one scan must not flush it all).
  void Insert(const WindowKey& key, storage::Column column, uint64_t epoch);
  void InsertRollups(const WindowKey& key, std::shared_ptr<const storage::RollupColumn> rows,
                     uint64_t epoch);
  void InsertTallies(const WindowKey& key, std::shared_ptr<const storage::TallyColumn> rows,
                     uint64_t epoch);

  // A flush wrote these windows: drop them (and refuse older decodes).
  void Invalidate(const std::vector<WindowKey>& keys);
  void Clear();

  struct Stats {
    uint64_t hits = 0, misses = 0, bytes = 0, entries = 0;
    uint64_t refused = 0;  // windows not kept: asked for less often than the one to go
  };
  Stats stats() const;

 private:
  struct KeyHash {
    // splitmix64's finaliser over the fields: window starts are multiples of
    // a day or of a tier block, so a weaker mix leaves their low bits alike.
    static uint64_t Mix(uint64_t z) {
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return z ^ (z >> 31);
    }
    size_t operator()(const WindowKey& k) const {
      const uint64_t ids = (static_cast<uint64_t>(k.series_id) << 32) ^ k.field_id;
      return static_cast<size_t>(
          Mix(ids ^ Mix(static_cast<uint64_t>(k.window_start) + k.tier * 0x9E3779B97F4A7C15ull)));
    }
  };

  struct Slot {
    WindowKey key{};
    bool used = false;
    bool referenced = false;  // looked up (or put) since the hand last passed
    uint64_t bytes = 0;
    // PackedWindow, or for tiers RollupColumn or TallyColumn by the field's
    // type.
    std::shared_ptr<const void> value;
  };
  std::shared_ptr<const void> Find(const WindowKey& key);
  // Calls put(i, value) for each key found.
  template <typename Fn>
  void FindMany(std::span<const WindowKey> keys, Fn&& put);
  void Put(const WindowKey& key, std::shared_ptr<const void> value, uint64_t bytes, uint64_t epoch);
  // The slot holding key (whose KeyHash is `hash`), or SIZE_MAX.
  size_t IndexLocked(const WindowKey& key, size_t hash) const GPULSE_REQUIRES(mu_);
  size_t IndexLocked(const WindowKey& key) const GPULSE_REQUIRES(mu_) {
    return IndexLocked(key, KeyHash()(key));
  }
  // Counts a lookup; the slot holding key, or SIZE_MAX.
  size_t LookedUpLocked(const WindowKey& key) GPULSE_REQUIRES(mu_);
  void EraseLocked(size_t i) GPULSE_REQUIRES(mu_);
  void GrowLocked() GPULSE_REQUIRES(mu_);
  // The slot CLOCK would evict next (the hand moves to it, clearing the
  // referenced bits it passes). The cache must not be empty.
  size_t VictimLocked() GPULSE_REQUIRES(mu_);

  const uint64_t capacity_;
  mutable Mutex mu_;
  uint64_t epoch_ GPULSE_GUARDED_BY(mu_) = 0;
  uint64_t bytes_ GPULSE_GUARDED_BY(mu_) = 0;
  uint64_t hits_ GPULSE_GUARDED_BY(mu_) = 0;
  uint64_t misses_ GPULSE_GUARDED_BY(mu_) = 0;
  uint64_t refused_ GPULSE_GUARDED_BY(mu_) = 0;
  // Lookups by key lately; sized with the table, never shrunk (a Clear
  // keeps what was asked for).
  FrequencySketch sketch_ GPULSE_GUARDED_BY(mu_);
  // Linear probing over a power-of-two table at most 70% full; erasing
  // shifts the run after the slot back, so there are no tombstones.
  std::vector<Slot> slots_ GPULSE_GUARDED_BY(mu_);
  size_t count_ GPULSE_GUARDED_BY(mu_) = 0;
  size_t hand_ GPULSE_GUARDED_BY(mu_) = 0;
};

}  // namespace gpulse::engine
