// Mutex and MutexLock: std::mutex as a capability Clang's thread-safety
// analysis knows (storage/thread_annotations.h), so that the members it
// guards are checked, not only commented.
//
// Thread safety: a Mutex is what makes other things thread-safe.
#pragma once

#include <mutex>

#include "storage/thread_annotations.h"

namespace gpulse {

class GPULSE_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() GPULSE_ACQUIRE() { mu_.lock(); }
  void Unlock() GPULSE_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class GPULSE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) GPULSE_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() GPULSE_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace gpulse
