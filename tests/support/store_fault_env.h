// StoreFaultEnv: a LevelDB Env (Options::store_env) for crash tests of the
// chunk store. It counts every append and sync to a file, can make all of
// them fail after the next N (as a dying disk or a full one would), and can
// cut every file it wrote back to what was synced of it: what a power loss
// leaves. Renames and deletes are taken as durable (LevelDB syncs what it
// renames into place first), as LevelDB's own fault-injection test does.
//
// Thread safety: every method may be called from any thread (LevelDB writes
// from its background thread too).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "leveldb/env.h"

namespace gpulse::test {

class StoreFaultEnv : public leveldb::EnvWrapper {
 public:
  StoreFaultEnv() : leveldb::EnvWrapper(leveldb::Env::Default()) {}

  // Appends and syncs after the next `n` fail with an IOError; n < 0 never.
  void FailAfter(int64_t n) { budget_ = n; }
  // Whether those failures say what a full disk's do ("No space left on
  // device", which gpulse tells from other errors), or that they are
  // injected.
  void FailAsFullDisk(bool full) { full_disk_ = full; }
  const char* failure() const {
    return full_disk_ ? "No space left on device" : "injected failure";
  }
  // Whether LockFile fails (a store that cannot be opened again, as when
  // descriptors run out).
  void RefuseLocks(bool refuse) { refuse_locks_ = refuse; }
  // Appends and syncs seen so far (failed ones included).
  int64_t operations() const { return operations_; }
  // The next sync first waits `d` (a slow disk at the worst moment): a
  // flush then outlasts the writes that fill the next head.
  void StallNextSync(std::chrono::milliseconds d) { stall_ms_ = d.count(); }
  // Truncates every file written through this env to its synced length.
  leveldb::Status DropUnsyncedData();

  leveldb::Status NewWritableFile(const std::string& name, leveldb::WritableFile** out) override;
  leveldb::Status NewAppendableFile(const std::string& name, leveldb::WritableFile** out) override;
  leveldb::Status RenameFile(const std::string& from, const std::string& to) override;
  leveldb::Status RemoveFile(const std::string& name) override;
  leveldb::Status LockFile(const std::string& name, leveldb::FileLock** lock) override;

  // For the file wrapper: whether this operation may go ahead, and the
  // lengths it reached.
  bool Allow();
  void MaybeStall();
  void Appended(const std::string& name, uint64_t bytes);
  void Synced(const std::string& name);

 private:
  struct FileState {
    uint64_t size = 0;
    uint64_t synced = 0;
  };
  leveldb::Status Wrap(const std::string& name, leveldb::WritableFile* file, uint64_t size,
                       leveldb::WritableFile** out);

  std::atomic<int64_t> budget_{-1};
  std::atomic<int64_t> operations_{0};
  std::atomic<int64_t> stall_ms_{0};
  std::atomic<bool> full_disk_{false};
  std::atomic<bool> refuse_locks_{false};
  std::mutex mu_;
  std::map<std::string, FileState> files_;  // GUARDED_BY(mu_)
};

}  // namespace gpulse::test
