// FaultInjectionEnv: a test Env that wraps a real Env (over a real temp dir)
// and simulates what a crash and a failing disk do to the files written
// through it. It owns the bookkeeping of every file it has created: bytes
// written, bytes synced, and whether the file's directory entry is durable.
//
//  * DropUnsyncedData() is a power loss: every tracked file is cut to its last
//    synced length and every file created since the last SyncDir of its
//    directory is removed. Renames and removes are treated as durable at once,
//    and files it did not create are assumed durable.
//  * FailNthAppend(n) / FailNthSync(n): the nth Append (or Sync, counting
//    WritableFile::Sync, Env::SyncFile and Env::SyncDir) from now returns IOError; a failed
//    Append first writes half its bytes, like a short write before the error.
//    Every later operation on that file fails too.
//
// Thread safety: every method may be called from any thread at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "storage/env.h"

namespace gpulse::storage {

class FaultInjectionEnv : public Env {
 public:
  // `base` must outlive this env.
  explicit FaultInjectionEnv(Env* base) : base_(base) {}

  // Power loss; see the header comment. Call with no file being written.
  Status DropUnsyncedData();

  // Like DropUnsyncedData, but a random prefix of each file's unsynced bytes
  // (chosen by `seed`) survives, as a torn write would leave it.
  Status DropUnsyncedDataKeepingTornPrefix(uint32_t seed);

  // Arms a failure of the nth (1-based) call from now; 0 disarms.
  void FailNthAppend(int n);
  void FailNthSync(int n);

  // Whether an armed failure has fired since it was armed.
  bool injected() const;

  // Counts of calls seen since construction, to size crash-point sweeps.
  int appends() const;
  int syncs() const;

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* file) override;
  Status ReadFileToString(const std::string& path, std::string* contents) override {
    return base_->ReadFileToString(path, contents);
  }
  Status ReadFileRange(const std::string& path, uint64_t offset, uint64_t max_bytes,
                       std::string* contents) override {
    return base_->ReadFileRange(path, offset, max_bytes, contents);
  }
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    return base_->GetChildren(dir, names);
  }
  Status CreateDirIfMissing(const std::string& dir) override {
    return base_->CreateDirIfMissing(dir);
  }
  Status RemoveFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status GetFileSize(const std::string& path, uint64_t* size) override {
    return base_->GetFileSize(path, size);
  }
  Status TruncateFile(const std::string& path, uint64_t size) override;
  Status SyncFile(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override {
    return base_->LockFile(path, lock);
  }

 private:
  class File;
  friend class File;

  struct FileState {
    uint64_t written = 0;
    uint64_t synced = 0;
    bool entry_durable = false;  // SyncDir of its directory ran since creation
    bool failed = false;         // an injected failure hit it; later ops fail
  };

  // Called by File. Returns IOError when the op must fail (injected now, or the
  // file failed earlier); for an injected append failure *partial is set.
  Status BeforeAppend(const std::string& path, bool* partial);
  void AfterAppend(const std::string& path, uint64_t bytes);
  Status BeforeSync(const std::string& path, uint64_t* written);
  void AfterSync(const std::string& path, uint64_t written);

  // REQUIRES: mu_ held. Decrements a countdown; true when it hits zero now.
  bool FireLocked(int* countdown);

  Status DropUnsynced(bool keep_torn_prefix, uint32_t seed);

  Env* const base_;
  mutable std::mutex mu_;
  std::map<std::string, FileState> files_;  // GUARDED_BY(mu_)
  int fail_append_in_ = 0;                  // GUARDED_BY(mu_): 0 = disarmed
  int fail_sync_in_ = 0;                    // GUARDED_BY(mu_): 0 = disarmed
  bool injected_ = false;                   // GUARDED_BY(mu_)
  int appends_ = 0;                         // GUARDED_BY(mu_)
  int syncs_ = 0;                           // GUARDED_BY(mu_)
};

}  // namespace gpulse::storage
