// Clang's thread-safety attributes behind macros: a member GUARDED_BY a
// mutex is touched only with it held, a function that REQUIRES one is
// called only with it held, and the compiler checks both where
// -Wthread-safety is on (tests/tools/check_thread_safety.sh, in CI). With
// g++ they expand to nothing.
//
// The attributes need a mutex type Clang knows as a capability, which
// libstdc++'s std::mutex is not: annotated members use storage/mutex.h's
// Mutex and MutexLock.
#pragma once

#if defined(__clang__)
#define GPULSE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define GPULSE_THREAD_ANNOTATION(x)
#endif

#define GPULSE_CAPABILITY(name) GPULSE_THREAD_ANNOTATION(capability(name))
#define GPULSE_SCOPED_CAPABILITY GPULSE_THREAD_ANNOTATION(scoped_lockable)
#define GPULSE_GUARDED_BY(mu) GPULSE_THREAD_ANNOTATION(guarded_by(mu))
#define GPULSE_PT_GUARDED_BY(mu) GPULSE_THREAD_ANNOTATION(pt_guarded_by(mu))
#define GPULSE_REQUIRES(...) GPULSE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define GPULSE_REQUIRES_SHARED(...) \
  GPULSE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define GPULSE_ACQUIRE(...) GPULSE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define GPULSE_RELEASE(...) GPULSE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define GPULSE_ACQUIRE_SHARED(...) GPULSE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define GPULSE_RELEASE_SHARED(...) GPULSE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define GPULSE_EXCLUDES(...) GPULSE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define GPULSE_NO_THREAD_SAFETY_ANALYSIS GPULSE_THREAD_ANNOTATION(no_thread_safety_analysis)
