#include "tests/support/fault_injection_env.h"

#include <random>

namespace gpulse::storage {

namespace {
std::string DirOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}
}  // namespace

// Forwards to the base file and reports every step to the env, which decides
// whether the step fails.
class FaultInjectionEnv::File final : public WritableFile {
 public:
  File(FaultInjectionEnv* env, std::string path, std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}

  Status Append(std::string_view data) override {
    bool partial = false;
    Status s = env_->BeforeAppend(path_, &partial);
    if (!s.ok()) {
      if (partial) {
        std::string_view half = data.substr(0, data.size() / 2);
        if (base_->Append(half).ok()) env_->AfterAppend(path_, half.size());
      }
      return s;
    }
    s = base_->Append(data);
    if (s.ok()) env_->AfterAppend(path_, data.size());
    return s;
  }

  Status Sync() override {
    uint64_t written = 0;
    GPULSE_RETURN_IF_ERROR(env_->BeforeSync(path_, &written));
    GPULSE_RETURN_IF_ERROR(base_->Sync());
    env_->AfterSync(path_, written);
    return Status::Ok();
  }

  Status Close() override { return base_->Close(); }

 private:
  FaultInjectionEnv* const env_;
  const std::string path_;
  const std::unique_ptr<WritableFile> base_;
};

void FaultInjectionEnv::FailNthAppend(int n) {
  std::lock_guard<std::mutex> guard(mu_);
  fail_append_in_ = n;
  injected_ = false;
}

void FaultInjectionEnv::FailNthSync(int n) {
  std::lock_guard<std::mutex> guard(mu_);
  fail_sync_in_ = n;
  injected_ = false;
}

bool FaultInjectionEnv::injected() const {
  std::lock_guard<std::mutex> guard(mu_);
  return injected_;
}

int FaultInjectionEnv::appends() const {
  std::lock_guard<std::mutex> guard(mu_);
  return appends_;
}

int FaultInjectionEnv::syncs() const {
  std::lock_guard<std::mutex> guard(mu_);
  return syncs_;
}

bool FaultInjectionEnv::FireLocked(int* countdown) {
  if (*countdown <= 0) return false;
  if (--*countdown > 0) return false;
  injected_ = true;
  return true;
}

Status FaultInjectionEnv::BeforeAppend(const std::string& path, bool* partial) {
  std::lock_guard<std::mutex> guard(mu_);
  ++appends_;
  FileState& state = files_[path];
  if (state.failed) return Status::IOError("write " + path + ": file failed earlier (injected)");
  if (FireLocked(&fail_append_in_)) {
    state.failed = true;
    *partial = true;
    return Status::IOError("write " + path + ": injected failure");
  }
  return Status::Ok();
}

void FaultInjectionEnv::AfterAppend(const std::string& path, uint64_t bytes) {
  std::lock_guard<std::mutex> guard(mu_);
  files_[path].written += bytes;
}

Status FaultInjectionEnv::BeforeSync(const std::string& path, uint64_t* written) {
  std::lock_guard<std::mutex> guard(mu_);
  ++syncs_;
  FileState& state = files_[path];
  if (state.failed)
    return Status::IOError("fdatasync " + path + ": file failed earlier (injected)");
  if (FireLocked(&fail_sync_in_)) {
    state.failed = true;
    return Status::IOError("fdatasync " + path + ": injected failure");
  }
  // Only bytes whose Append finished before the sync began count as synced.
  *written = state.written;
  return Status::Ok();
}

void FaultInjectionEnv::AfterSync(const std::string& path, uint64_t written) {
  std::lock_guard<std::mutex> guard(mu_);
  FileState& state = files_[path];
  if (written > state.synced) state.synced = written;
}

Status FaultInjectionEnv::NewWritableFile(const std::string& path,
                                          std::unique_ptr<WritableFile>* file) {
  std::unique_ptr<WritableFile> base;
  GPULSE_RETURN_IF_ERROR(base_->NewWritableFile(path, &base));
  {
    std::lock_guard<std::mutex> guard(mu_);
    files_[path] = FileState();
  }
  *file = std::make_unique<File>(this, path, std::move(base));
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  GPULSE_RETURN_IF_ERROR(base_->RemoveFile(path));
  std::lock_guard<std::mutex> guard(mu_);
  files_.erase(path);
  return Status::Ok();
}

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  GPULSE_RETURN_IF_ERROR(base_->RenameFile(from, to));
  std::lock_guard<std::mutex> guard(mu_);
  auto it = files_.find(from);
  if (it == files_.end()) {
    files_.erase(to);
  } else {
    files_[to] = it->second;
    files_.erase(from);
  }
  return Status::Ok();
}

Status FaultInjectionEnv::TruncateFile(const std::string& path, uint64_t size) {
  // The base truncate is durable (see Env::TruncateFile).
  GPULSE_RETURN_IF_ERROR(base_->TruncateFile(path, size));
  std::lock_guard<std::mutex> guard(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) it->second.written = it->second.synced = size;
  return Status::Ok();
}

Status FaultInjectionEnv::SyncFile(const std::string& path) {
  {
    std::lock_guard<std::mutex> guard(mu_);
    ++syncs_;
    if (FireLocked(&fail_sync_in_)) return Status::IOError("fsync " + path + ": injected failure");
  }
  GPULSE_RETURN_IF_ERROR(base_->SyncFile(path));
  std::lock_guard<std::mutex> guard(mu_);
  auto it = files_.find(path);
  if (it != files_.end()) it->second.synced = it->second.written;
  return Status::Ok();
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  {
    std::lock_guard<std::mutex> guard(mu_);
    ++syncs_;
    if (FireLocked(&fail_sync_in_)) return Status::IOError("fsync " + dir + ": injected failure");
  }
  GPULSE_RETURN_IF_ERROR(base_->SyncDir(dir));
  std::lock_guard<std::mutex> guard(mu_);
  for (auto& [path, state] : files_) {
    if (DirOf(path) == dir) state.entry_durable = true;
  }
  return Status::Ok();
}

Status FaultInjectionEnv::DropUnsyncedData() { return DropUnsynced(false, 0); }

Status FaultInjectionEnv::DropUnsyncedDataKeepingTornPrefix(uint32_t seed) {
  return DropUnsynced(true, seed);
}

Status FaultInjectionEnv::DropUnsynced(bool keep_torn_prefix, uint32_t seed) {
  std::mt19937 rng(seed);
  std::lock_guard<std::mutex> guard(mu_);
  for (auto it = files_.begin(); it != files_.end();) {
    const std::string& path = it->first;
    FileState& state = it->second;
    if (!state.entry_durable) {
      Status s = base_->RemoveFile(path);
      if (!s.ok() && !s.IsNotFound()) return s;
      it = files_.erase(it);
      continue;
    }
    uint64_t keep = state.synced;
    if (keep_torn_prefix && state.written > state.synced) {
      keep += rng() % (state.written - state.synced + 1);
    }
    if (state.written != keep) GPULSE_RETURN_IF_ERROR(base_->TruncateFile(path, keep));
    state.written = state.synced = keep;
    state.failed = false;
    ++it;
  }
  fail_append_in_ = 0;
  fail_sync_in_ = 0;
  return Status::Ok();
}

}  // namespace gpulse::storage
