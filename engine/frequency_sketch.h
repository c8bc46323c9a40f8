// FrequencySketch: how often each key was asked for lately, approximately,
// in a byte a counter: the window cache's admission filter (TinyLFU, Einziger
// and Friedman). A cache that keeps whatever it was given last lets one
// query that reads more than it holds (every field of a 100,000-GPU fleet's
// hour) push out what dashboards ask for every few seconds; with the sketch,
// a new window takes the place of an old one only if it was asked for more
// often lately.
//
// A count-min sketch: each key raises four counters of one table (saturating
// at 15), only those at the key's smallest (the conservative update, fewer
// overestimates); its estimate is the smallest of the four. A key's four
// counters lie in one 64-byte block, so a lookup costs the CPU one cache
// line, not four. After ten lookups for each key it has room for, every
// counter is halved, so that "lately" means about that many lookups, and a
// key asked for often last hour and never since gives way.
//
// Thread safety: none; the window cache calls it under its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpulse::engine {

class FrequencySketch {
 public:
  // Room for about `keys` distinct keys (a power of two of counters, four a
  // key, at least 4,096); forgets every count.
  void Resize(size_t keys);
  size_t counters() const { return table_.size(); }

  // Counts one lookup of the key whose 64-bit hash is `hash`.
  void Add(uint64_t hash);
  // Lookups of it lately: 0 to 15, never under the truth since the last
  // halving (collisions may only add).
  int Estimate(uint64_t hash) const;

 private:
  // The table position of the key's i-th counter: a block by the hash's low
  // bits, a byte of it by six of the high bits for each i.
  size_t Slot(uint64_t hash, int i) const {
    const uint64_t block = (hash & block_mask_) << 6;
    return static_cast<size_t>(block | ((hash >> (40 + 6 * i)) & 63));
  }
  void Halve();

  std::vector<uint8_t> table_;
  uint64_t block_mask_ = 0;  // blocks - 1
  size_t additions_ = 0;
  size_t sample_ = 0;  // additions between halvings
};

}  // namespace gpulse::engine
