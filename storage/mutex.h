// Mutex, SharedMutex and CondVar, with their scoped holders: std::mutex,
// std::shared_mutex and std::condition_variable as capabilities Clang's
// thread-safety analysis knows (storage/thread_annotations.h), so that the
// members they guard are checked, not only commented.
//
// Thread safety: these are what make other things thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

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
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope. Unlock and Lock let go of it for a stretch
// (a slow call made outside it) and take it back; the destructor releases
// it only when held.
class GPULSE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) GPULSE_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() GPULSE_RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() GPULSE_RELEASE() {
    held_ = false;
    mu_->Unlock();
  }
  void Lock() GPULSE_ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// A condition variable over a Mutex. Wait releases the mutex while it
// waits and holds it again when it returns; it may return without a
// Signal (spuriously), so callers wait in a loop over their condition:
//   while (!ready_) ready_cv_.Wait(&mu_);
// (A predicate lambda would read guarded members where the analysis cannot
// see the mutex held.)
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) GPULSE_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's to release
  }
  // Wait, giving up at `deadline`: false when it passed.
  template <class Clock, class Duration>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline)
      GPULSE_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  // Wait, giving up after `timeout`: false when it passed.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout) GPULSE_REQUIRES(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A reader-writer mutex: readers share it, a writer holds it alone.
class GPULSE_CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() GPULSE_ACQUIRE() { mu_.lock(); }
  void Unlock() GPULSE_RELEASE() { mu_.unlock(); }
  void ReaderLock() GPULSE_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void ReaderUnlock() GPULSE_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex alone for its scope.
class GPULSE_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) GPULSE_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() GPULSE_RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Shares a SharedMutex for its scope.
class GPULSE_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) GPULSE_ACQUIRE_SHARED(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderLock() GPULSE_RELEASE() { mu_->ReaderUnlock(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* const mu_;
};

}  // namespace gpulse
