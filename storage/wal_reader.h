// WalReader: iterates the records of one WAL segment held in memory and says
// where and why it stopped. It owns only its cursor; the bytes belong to the
// caller and must outlive the reader and every record it returns.
//
// The reader stops at the first frame that is not a valid record: a torn or
// zero-filled tail, a bad type, an absurd length, a length that runs past the
// end, or a bad checksum. Whether to go on is the Wal's decision (see wal.h):
// Resync() looks for the next valid frame after the damage, as LevelDB's log
// reader skips a damaged block, and reading goes on from there.
//
// Thread safety: none; one thread uses a reader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpulse::storage {

class WalReader {
 public:
  explicit WalReader(std::string_view segment) : data_(segment) {}

  // Sets *record to the next record's payload (a view into the segment) and
  // returns true, or returns false at the end or at the first bad frame.
  bool Next(std::string_view* record);

  // The offset just past the last good record: where the segment must be cut
  // when the reader stopped early.
  uint64_t good_offset() const { return offset_; }

  // True when Next() returned false before the end of the segment.
  bool stopped_early() const { return !reason_.empty(); }

  // Why Next() stopped early ("bad checksum", "zero-filled tail", ...); empty
  // while reading and after a clean end.
  const std::string& reason() const { return reason_; }

  // After an early stop: finds the first offset past good_offset() where a
  // valid frame starts (right type, a length inside the segment, a matching
  // checksum), makes it the next record and returns true; *skipped gets the
  // damaged bytes between. False when no valid frame follows (a torn tail),
  // or when the search would checksum more than `budget` bytes in all (so
  // that garbage full of plausible headers costs bounded time). A false
  // match needs a 32-bit checksum to agree by chance.
  bool Resync(uint64_t budget, uint64_t* skipped);

 private:
  bool Stop(std::string reason);

  const std::string_view data_;
  uint64_t offset_ = 0;
  std::string reason_;
};

}  // namespace gpulse::storage
