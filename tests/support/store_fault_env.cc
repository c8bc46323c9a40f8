#include "tests/support/store_fault_env.h"

#include <unistd.h>

#include <memory>
#include <thread>

namespace gpulse::test {

namespace {

class FaultFile : public leveldb::WritableFile {
 public:
  FaultFile(StoreFaultEnv* env, std::string name, leveldb::WritableFile* file)
      : env_(env), name_(std::move(name)), file_(file) {}

  leveldb::Status Append(const leveldb::Slice& data) override {
    if (!env_->Allow()) return leveldb::Status::IOError(name_, env_->failure());
    leveldb::Status s = file_->Append(data);
    if (s.ok()) env_->Appended(name_, data.size());
    return s;
  }
  leveldb::Status Close() override { return file_->Close(); }
  leveldb::Status Flush() override { return file_->Flush(); }
  leveldb::Status Sync() override {
    env_->MaybeStall();
    if (!env_->Allow()) return leveldb::Status::IOError(name_, env_->failure());
    leveldb::Status s = file_->Sync();
    if (s.ok()) env_->Synced(name_);
    return s;
  }

 private:
  StoreFaultEnv* env_;
  std::string name_;
  std::unique_ptr<leveldb::WritableFile> file_;
};

}  // namespace

void StoreFaultEnv::MaybeStall() {
  const int64_t ms = stall_ms_.exchange(0);
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

leveldb::Status StoreFaultEnv::LockFile(const std::string& name, leveldb::FileLock** lock) {
  if (refuse_locks_) return leveldb::Status::IOError(name, "lock refused by the test");
  return target()->LockFile(name, lock);
}

bool StoreFaultEnv::Allow() {
  ++operations_;
  int64_t left = budget_.load();
  while (left >= 0) {
    if (left == 0) return false;
    if (budget_.compare_exchange_weak(left, left - 1)) return true;
  }
  return true;
}

void StoreFaultEnv::Appended(const std::string& name, uint64_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  files_[name].size += bytes;
}

void StoreFaultEnv::Synced(const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  FileState& f = files_[name];
  f.synced = f.size;
}

leveldb::Status StoreFaultEnv::Wrap(const std::string& name, leveldb::WritableFile* file,
                                    uint64_t size, leveldb::WritableFile** out) {
  {
    std::lock_guard<std::mutex> l(mu_);
    files_[name] = FileState{size, size};
  }
  *out = new FaultFile(this, name, file);
  return leveldb::Status::OK();
}

leveldb::Status StoreFaultEnv::NewWritableFile(const std::string& name,
                                               leveldb::WritableFile** out) {
  leveldb::WritableFile* file = nullptr;
  leveldb::Status s = target()->NewWritableFile(name, &file);
  if (!s.ok()) return s;
  // A new (or truncated) file: nothing of it is synced yet.
  s = Wrap(name, file, 0, out);
  std::lock_guard<std::mutex> l(mu_);
  files_[name].synced = 0;
  return s;
}

leveldb::Status StoreFaultEnv::NewAppendableFile(const std::string& name,
                                                 leveldb::WritableFile** out) {
  uint64_t size = 0;
  if (target()->FileExists(name)) target()->GetFileSize(name, &size);
  leveldb::WritableFile* file = nullptr;
  leveldb::Status s = target()->NewAppendableFile(name, &file);
  if (!s.ok()) return s;
  return Wrap(name, file, size, out);
}

leveldb::Status StoreFaultEnv::RenameFile(const std::string& from, const std::string& to) {
  leveldb::Status s = target()->RenameFile(from, to);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> l(mu_);
  auto it = files_.find(from);
  if (it != files_.end()) {
    files_[to] = it->second;
    files_.erase(it);
  } else {
    files_.erase(to);
  }
  return s;
}

leveldb::Status StoreFaultEnv::RemoveFile(const std::string& name) {
  leveldb::Status s = target()->RemoveFile(name);
  std::lock_guard<std::mutex> l(mu_);
  files_.erase(name);
  return s;
}

leveldb::Status StoreFaultEnv::DropUnsyncedData() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, state] : files_) {
    if (state.synced >= state.size || !target()->FileExists(name)) continue;
    if (truncate(name.c_str(), static_cast<off_t>(state.synced)) != 0) {
      return leveldb::Status::IOError(name, "truncate failed");
    }
    state.size = state.synced;
  }
  return leveldb::Status::OK();
}

}  // namespace gpulse::test
