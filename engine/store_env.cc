// The chunk store's file layer. See store_env.h.

#include "engine/store_env.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <algorithm>
#include <limits>

#include "engine/gpulse.h"

namespace gpulse {

size_t StoreDescriptorBudget() {
  // LevelDB's table cache holds at most 1,000 files (Options::max_open_files).
  constexpr size_t kTableCacheFiles = 1000;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return kTableCacheFiles;
  }
  return std::min<size_t>(kTableCacheFiles, static_cast<size_t>(limit.rlim_cur / 5));
}

namespace engine {

namespace {

leveldb::Status ErrnoStatus(const std::string& name, int error) {
  if (error == ENOENT) return leveldb::Status::NotFound(name, std::strerror(error));
  return leveldb::Status::IOError(name, std::strerror(error));
}

// A table file read with pread. `fd` is -1 for a file past the budget,
// which opens the file for each read.
class PreadFile final : public leveldb::RandomAccessFile {
 public:
  PreadFile(std::string name, int fd, std::atomic<int>* held)
      : name_(std::move(name)), fd_(fd), held_(held) {}

  ~PreadFile() override {
    if (fd_ < 0) return;
    ::close(fd_);
    held_->fetch_sub(1, std::memory_order_relaxed);
  }

  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    // Every failure of a read is an IOError: NotFound from a read would tell
    // a LevelDB Get that the key is not there.
    int fd = fd_;
    if (fd < 0) {
      fd = ::open(name_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return leveldb::Status::IOError(name_, std::strerror(errno));
    }
    // A regular file reads whole short of its end; the loop covers a read
    // a signal cut short.
    size_t got = 0;
    int error = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd, scratch + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) error = errno;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    if (fd != fd_) ::close(fd);
    *result = leveldb::Slice(scratch, got);
    return error != 0 ? leveldb::Status::IOError(name_, std::strerror(error))
                      : leveldb::Status::OK();
  }

 private:
  const std::string name_;
  const int fd_;
  std::atomic<int>* const held_;
};

}  // namespace

StoreEnv::StoreEnv(leveldb::Env* target)
    : leveldb::EnvWrapper(target),
      budget_(static_cast<int>(
          std::min<size_t>(StoreDescriptorBudget(), std::numeric_limits<int>::max()))) {}

leveldb::Status StoreEnv::NewRandomAccessFile(const std::string& name,
                                              leveldb::RandomAccessFile** out) {
  *out = nullptr;
  int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(name, errno);
  if (held_.fetch_add(1, std::memory_order_relaxed) >= budget_) {
    held_.fetch_sub(1, std::memory_order_relaxed);
    ::close(fd);
    fd = -1;
  }
  *out = new PreadFile(name, fd, &held_);
  return leveldb::Status::OK();
}

int StoreEnv::DescriptorsHeld() const { return held_.load(std::memory_order_relaxed); }

}  // namespace engine
}  // namespace gpulse
