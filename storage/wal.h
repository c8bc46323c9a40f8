// Wal: the segmented write-ahead log. It owns the segment files
// DIR/%08llu.log, numbered upward: replay at Open, appends to the active
// (highest) segment, rotation, group-committed syncs, and retirement of old
// segments. Records are opaque byte strings; the engine decides what goes in
// one and when to sync (every batch, on an interval, or never). The byte
// format is in docs/format/wal.md.
//
// Durability: a record is durable once SyncTo(end) (or Sync) returns OK for
// an `end` at or past it. A segment is synced before appends move to the next
// one, and a new segment's directory entry is synced before it is used, so
// every byte below the last synced position survives a power loss.
//
// Errors are sticky: after a failed write or sync every later Append, Sync
// and Rotate returns that error (after a failed fsync the page cache state is
// unknown, so nothing may be retried as if it worked).
//
// Thread safety: every method may be called from any thread at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/env.h"
#include "storage/mutex.h"
#include "storage/status.h"
#include "storage/wal_writer.h"

namespace gpulse::storage {

struct WalOptions {
  uint64_t segment_bytes = 64ull << 20;  // rotate when the active segment passes this
  // The lowest segment a follower still needs (SetHold); none by default.
  uint64_t hold = UINT64_MAX;
};

// A place in the log: a segment and a byte offset in it, at a record
// boundary. Read hands out the position after each record it reads.
struct WalPosition {
  uint64_t segment = 0;
  uint64_t offset = 0;
  friend auto operator<=>(const WalPosition&, const WalPosition&) = default;
};

struct WalReplayReport {
  uint64_t segments = 0;       // segment files found (including empty ones)
  uint64_t records = 0;        // records handed to `apply`
  uint64_t bytes = 0;          // framed bytes of those records (headers included)
  uint64_t dropped_bytes = 0;  // bytes cut from the tail of the last segment(s)
  std::string dropped_reason;  // "DIR/00000007.log offset 1234: bad checksum; cut 517 bytes"
  // Damage inside the log, as opposed to a torn tail: bytes between a bad
  // frame and the next good one (or the end of a segment that later segments
  // follow with data). The records there are lost; every intact record
  // around them was replayed. One line per damaged region, e.g.
  // "DIR/00000003.log offset 1234: bad checksum; skipped 4096 bytes to the
  // next good record", and a copy of each damaged segment is kept as
  // DIR/damaged/NNNNNNNN.log for inspection.
  uint64_t damaged_bytes = 0;
  std::vector<std::string> damage;
};

// Group-commit syncs done by SyncTo and Sync, and the time spent in them.
struct WalSyncStats {
  uint64_t syncs = 0;
  uint64_t sync_nanos = 0;
};

class Wal {
 public:
  // Opens (creating DIR if missing) and replays every existing record, oldest
  // segment first, through `apply` (may be empty) before returning.
  //
  // A bad frame is skipped to the next valid frame of its segment (the reader
  // resynchronises, as LevelDB's log reader does), so damage in the middle
  // of the log costs only the damaged records: they are described in
  // report->damage, and the segment is copied to DIR/damaged/ for
  // inspection, never changed in place. A bad frame with no valid frame after
  // it is a torn tail when it is in the last segment that holds data: that
  // file is cut at the last good record (TruncateFile), later segments (empty
  // or all zeros) are cut to zero length, and *report (may be null) says
  // what was cut. In an earlier segment it is damage too: the rest of that
  // segment is lost and replay goes on with the next one. If `apply` returns
  // an error, Open returns it unchanged.
  // The last segment holding data is synced before appends go to a NEW segment
  // numbered above every existing one (a killed process leaves it unsynced).
  static Status Open(Env* env, const std::string& dir, const WalOptions& options,
                     const std::function<Status(std::string_view record)>& apply,
                     WalReplayReport* report, std::unique_ptr<Wal>* wal);

  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Closes the active segment WITHOUT syncing: unsynced appends are left to the
  // OS, as if the process had died. Call Close() for a clean shutdown. No
  // other call may be in progress.
  ~Wal();

  // Writes one record (rotating first when the active segment is past
  // segment_bytes) and hands it to the OS, not synced. *end (may be null) gets
  // the log position just past it: a byte count that increases across segments
  // and starts at the bytes of the live segments found at Open. A record over
  // wal_format::kMaxRecordBytes is InvalidArgument and not sticky.
  Status Append(std::string_view record, uint64_t* end);

  // Returns once everything up to `end` (a value from Append) is durable.
  // Concurrent callers share one fsync: a caller whose end is covered by a
  // finished sync returns at once, one caller syncs while the others wait for it.
  Status SyncTo(uint64_t end);

  // Everything appended so far.
  Status Sync();

  // Seals the active segment (synced) and starts a new one, even when the
  // active one is empty; *segment (may be null) gets the new segment's number.
  Status Rotate(uint64_t* segment);

  // Retires every segment numbered below `segment` (their records are durable
  // elsewhere), then syncs the directory: one at or above the hold (SetHold)
  // moves to DIR/held/, where Read still finds it and replay does not; the
  // others are deleted. InvalidArgument when `segment` is above the active
  // segment: the active segment is never retired.
  Status RemoveSegmentsBefore(uint64_t segment);

  // Followers: readers of the log that outlive the engine's use of it (the
  // server's forwarding to remote-write receivers). `segment` is the lowest
  // segment one still needs, UINT64_MAX when there is none: segments retired
  // from then on at or above it are held, and held segments below it are
  // deleted now.
  Status SetHold(uint64_t segment);

  // Reads records from `from` on, oldest first, handing each to `each` with
  // the position just past it. Stops once about `max_bytes` of records are
  // read (at least one record is), at the end of what was appended, or at an
  // error from `each` (returned). *end gets the position after the last
  // record read (`from` when none was). A position in a segment that is gone
  // reads on from the next segment there is. A damaged frame is skipped to
  // the next good one, as replay does.
  Status Read(WalPosition from, uint64_t max_bytes,
              const std::function<Status(std::string_view record, WalPosition next)>& each,
              WalPosition* end);

  // The position just past the last appended record.
  WalPosition end_position() const;

  // Bytes of the log from `from` to its end, held segments included.
  uint64_t BytesFrom(WalPosition from) const;

  // Bytes in DIR/held/.
  uint64_t held_bytes() const;

  uint64_t active_segment() const;

  WalSyncStats sync_stats() const;

  // Bytes in the live segment files, counting appended but unsynced bytes.
  uint64_t total_bytes() const;

  // Syncs and closes the active segment; every later call fails.
  Status Close();

  // "DIR/00000042.log".
  static std::string SegmentPath(const std::string& dir, uint64_t segment);

  // Sets *segment from a name "00000042.log"; false for other names.
  static bool ParseSegmentName(std::string_view name, uint64_t* segment);

 private:
  Wal(Env* env, std::string dir, const WalOptions& options);

  // Replays the existing segments (sorted) into `apply`; fills segment_sizes_.
  Status Replay(const std::vector<uint64_t>& segments,
                const std::function<Status(std::string_view record)>& apply,
                WalReplayReport* report);

  // Cuts segments[index] at `offset` and every later segment to zero; fails
  // when a later segment holds anything but zeros.
  // `size` is the damaged segment's length.
  Status CutTail(const std::vector<uint64_t>& segments, size_t index, uint64_t size,
                 uint64_t offset, const std::string& reason, WalReplayReport* report);
  // Whether a segment after segments[index] holds a non-zero byte.
  Status LaterSegmentsHoldData(const std::vector<uint64_t>& segments, size_t index, bool* data);
  // Copies a damaged segment's bytes to DIR/damaged/NNNNNNNN.log, once.
  Status KeepAside(uint64_t segment, std::string_view contents);

  // REQUIRES: no sync in progress, no sticky error.
  // Syncs and closes the active segment (if any), then creates segment
  // `number`, syncs the directory and makes it active.
  Status StartSegmentLocked(uint64_t number) GPULSE_REQUIRES(mu_);

  // Waits until no sync is in progress.
  void WaitForSyncLocked() GPULSE_REQUIRES(mu_);

  // Records `s` as the sticky error when it is one.
  Status SetErrorLocked(Status s) GPULSE_REQUIRES(mu_);

  Env* const env_;
  const std::string dir_;
  const WalOptions options_;

  mutable Mutex mu_;
  CondVar sync_done_;                    // signalled when a sync finishes
  Status error_ GPULSE_GUARDED_BY(mu_);  // sticky
  bool closed_ GPULSE_GUARDED_BY(mu_) = false;
  bool sync_in_progress_ GPULSE_GUARDED_BY(mu_) = false;
  uint64_t appended_ GPULSE_GUARDED_BY(mu_) = 0;  // log position of the last append
  uint64_t synced_ GPULSE_GUARDED_BY(mu_) = 0;    // every byte below is durable
  WalSyncStats sync_stats_ GPULSE_GUARDED_BY(mu_);
  uint64_t active_ GPULSE_GUARDED_BY(mu_) = 0;                         // active segment number
  std::map<uint64_t, uint64_t> segment_sizes_ GPULSE_GUARDED_BY(mu_);  // live segment -> bytes
  std::map<uint64_t, uint64_t> held_sizes_ GPULSE_GUARDED_BY(mu_);     // held segment -> bytes
  uint64_t hold_ GPULSE_GUARDED_BY(mu_) = UINT64_MAX;
  // The active segment. The file is swapped only under mu_ with no sync in
  // progress, so a syncer may call file_->Sync() outside mu_ (SyncTo takes
  // the pointer under mu_).
  std::unique_ptr<WritableFile> file_ GPULSE_GUARDED_BY(mu_);
  std::unique_ptr<WalWriter> writer_ GPULSE_GUARDED_BY(mu_);
};

}  // namespace gpulse::storage
