// Env: every file-system call the storage layer makes goes through this
// interface, so that tests can substitute an Env that fails the Nth write or
// drops unsynced data (tests/support/fault_injection_env.h). Env::Default() is
// the POSIX implementation. The model is LevelDB's Env.
//
// Errors carry the path and strerror(errno): "open /data/wal/00000003.log:
// No such file or directory". A missing file is NotFound, other failures are
// IOError, a held lock is Busy.
//
// Thread safety: Env methods may be called from any thread at once. A
// WritableFile is used by one thread at a time, except that Sync() may run
// concurrently with Append() from another thread (the WAL syncs outside its
// lock while appends continue); Close() must not race with anything.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/status.h"

namespace gpulse::storage {

// An append-only file. Destroying it closes it without syncing.
class WritableFile {
 public:
  virtual ~WritableFile() = default;

  // Hands all of `data` to the OS (loops on short writes and EINTR). Not
  // durable until Sync() returns OK.
  virtual Status Append(std::string_view data) = 0;

  // Makes every byte appended before the call durable (fdatasync). After a
  // failure the state of unsynced data is unknown; callers must not retry.
  virtual Status Sync() = 0;

  // Cuts the file to `size` bytes and appends from there: takes back the
  // part of a frame an Append that failed (NoSpace) left. A file that cannot
  // returns IOError, and the caller treats the failed Append as final.
  virtual Status Truncate(uint64_t size) {
    (void)size;
    return Status::IOError("truncate is not supported by this file");
  }

  // Closes the file; later calls fail.
  virtual Status Close() = 0;
};

// An exclusive advisory lock; released when destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

class Env {
 public:
  virtual ~Env() = default;

  // The POSIX env; lives for the whole process and is never deleted.
  static Env* Default();

  // Creates `path`, or truncates it when it exists, and opens it for append.
  virtual Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* file) = 0;

  // Replaces *contents with the whole file.
  virtual Status ReadFileToString(const std::string& path, std::string* contents) = 0;

  // Replaces *contents with up to `max_bytes` of the file from `offset` on
  // (fewer at its end): what a reader of a growing file (the WAL's
  // followers) reads of it.
  virtual Status ReadFileRange(const std::string& path, uint64_t offset, uint64_t max_bytes,
                               std::string* contents) = 0;

  virtual bool FileExists(const std::string& path) = 0;

  // Replaces *names with the entry names of `dir` (not paths), without "." and
  // "..", in no particular order.
  virtual Status GetChildren(const std::string& dir, std::vector<std::string>* names) = 0;

  // OK when `dir` exists afterwards (its parent must exist).
  virtual Status CreateDirIfMissing(const std::string& dir) = 0;

  virtual Status RemoveFile(const std::string& path) = 0;

  // Atomically replaces `to` with `from` (rename(2)); durable after SyncDir.
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;

  virtual Status GetFileSize(const std::string& path, uint64_t* size) = 0;

  // Cuts (or zero-extends) `path` to `size` bytes and syncs the file, so the new
  // length is durable when this returns OK.
  virtual Status TruncateFile(const std::string& path, uint64_t size) = 0;

  // Makes the data of an existing file durable (fsync), such as the tail a
  // crashed process appended but never synced.
  virtual Status SyncFile(const std::string& path) = 0;

  // Makes the creates, renames and removes of entries in `dir` durable.
  virtual Status SyncDir(const std::string& dir) = 0;

  // Takes an exclusive advisory lock on `path`, creating the file. Returns Busy,
  // naming the path, when another process holds it, and also when this process
  // already holds it (POSIX record locks alone would not see the latter). Paths
  // are compared as given, so lock one canonical path per directory.
  virtual Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) = 0;
};

// Physical memory of this machine (sysconf), or 8 GiB when unknown: what the
// default memory budgets (the head's, the queries') are fractions of.
uint64_t PhysicalMemoryBytes();

}  // namespace gpulse::storage
