// The POSIX Env. See env.h for the contracts.
#include "storage/env.h"
#include "storage/mutex.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

namespace gpulse::storage {

namespace {

// "open PATH: strerror"; ENOENT is NotFound so callers can tell "absent".
Status PosixError(std::string_view op, const std::string& path, int error) {
  std::string msg = std::string(op) + " " + path + ": " + std::strerror(error);
  if (error == ENOENT) return Status::NotFound(std::move(msg));
  if (error == ENOSPC || error == EDQUOT) return Status::NoSpace(std::move(msg));
  return Status::IOError(std::move(msg));
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Status::IOError("write " + path_ + ": file is closed");
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError("write", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  Status Truncate(uint64_t size) override {
    if (fd_ < 0) return Status::IOError("truncate " + path_ + ": file is closed");
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
      return PosixError("truncate", path_, errno);
    if (::lseek(fd_, static_cast<off_t>(size), SEEK_SET) < 0) {
      return PosixError("seek", path_, errno);
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (fd_ < 0) return Status::IOError("fdatasync " + path_ + ": file is closed");
    if (::fdatasync(fd_) != 0) return PosixError("fdatasync", path_, errno);
    return Status::Ok();
  }

  Status Close() override {
    if (fd_ < 0) return Status::IOError("close " + path_ + ": file is closed");
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return PosixError("close", path_, errno);
    return Status::Ok();
  }

 private:
  const std::string path_;
  int fd_;
};

// The set of paths this process has locked: fcntl locks are per process, so a
// second lock from the same process would silently succeed without it.
class LockTable {
 public:
  bool Insert(const std::string& path) {
    MutexLock guard(&mu_);
    return paths_.insert(path).second;
  }
  void Erase(const std::string& path) {
    MutexLock guard(&mu_);
    paths_.erase(path);
  }

 private:
  Mutex mu_;
  std::set<std::string> paths_ GPULSE_GUARDED_BY(mu_);
};

class PosixFileLock final : public FileLock {
 public:
  PosixFileLock(LockTable* table, std::string path, int fd)
      : table_(table), path_(std::move(path)), fd_(fd) {}
  ~PosixFileLock() override {
    // Closing the descriptor drops the fcntl lock.
    ::close(fd_);
    table_->Erase(path_);
  }

 private:
  LockTable* const table_;
  const std::string path_;
  const int fd_;
};

class PosixEnv final : public Env {
 public:
  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* file) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return PosixError("open", path, errno);
    *file = std::make_unique<PosixWritableFile>(path, fd);
    return Status::Ok();
  }

  Status ReadFileToString(const std::string& path, std::string* contents) override {
    contents->clear();
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    Status s;
    char buf[64 << 10];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        s = PosixError("read", path, errno);
        break;
      }
      if (n == 0) break;
      contents->append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return s;
  }

  Status ReadFileRange(const std::string& path, uint64_t offset, uint64_t max_bytes,
                       std::string* contents) override {
    contents->clear();
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    Status s;
    contents->resize(max_bytes);
    uint64_t got = 0;
    while (got < max_bytes) {
      ssize_t n =
          ::pread(fd, contents->data() + got, max_bytes - got, static_cast<off_t>(offset + got));
      if (n < 0) {
        if (errno == EINTR) continue;
        s = PosixError("read", path, errno);
        break;
      }
      if (n == 0) break;
      got += static_cast<uint64_t>(n);
    }
    ::close(fd);
    contents->resize(got);
    return s;
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return PosixError("opendir", dir, errno);
    while (struct dirent* entry = ::readdir(d)) {
      std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      names->emplace_back(name);
    }
    ::closedir(d);
    return Status::Ok();
  }

  Status CreateDirIfMissing(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) == 0) return Status::Ok();
    if (errno != EEXIST) return PosixError("mkdir", dir, errno);
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return PosixError("stat", dir, errno);
    if (!S_ISDIR(st.st_mode)) return PosixError("mkdir", dir, ENOTDIR);
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return PosixError("unlink", path, errno);
    return Status::Ok();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return PosixError("rename", from + " to " + to, errno);
    }
    return Status::Ok();
  }

  Status GetFileSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return PosixError("stat", path, errno);
    *size = static_cast<uint64_t>(st.st_size);
    return Status::Ok();
  }

  Status TruncateFile(const std::string& path, uint64_t size) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    Status s;
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      s = PosixError("ftruncate", path, errno);
    } else if (::fsync(fd) != 0) {
      s = PosixError("fsync", path, errno);
    }
    ::close(fd);
    return s;
  }

  Status SyncFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    Status s;
    if (::fsync(fd) != 0) s = PosixError("fsync", path, errno);
    ::close(fd);
    return s;
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", dir, errno);
    Status s;
    if (::fsync(fd) != 0) s = PosixError("fsync", dir, errno);
    ::close(fd);
    return s;
  }

  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override {
    if (!locks_.Insert(path)) {
      return Status::Busy("lock " + path + ": already held by this process");
    }
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      locks_.Erase(path);
      return PosixError("open", path, errno);
    }
    struct flock request;
    std::memset(&request, 0, sizeof(request));
    request.l_type = F_WRLCK;
    request.l_whence = SEEK_SET;
    if (::fcntl(fd, F_SETLK, &request) != 0) {
      int error = errno;
      ::close(fd);
      locks_.Erase(path);
      if (error == EACCES || error == EAGAIN) {
        return Status::Busy("lock " + path + ": held by another process (" + std::strerror(error) +
                            ")");
      }
      return PosixError("lock", path, error);
    }
    *lock = std::make_unique<PosixFileLock>(&locks_, path, fd);
    return Status::Ok();
  }

 private:
  LockTable locks_;
};

}  // namespace

Env* Env::Default() {
  // Never destroyed: files and locks may outlive static destructors.
  static Env* const env = new PosixEnv();
  return env;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 8ull << 30;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace gpulse::storage
