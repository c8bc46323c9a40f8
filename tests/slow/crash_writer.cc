// crash_writer: the child process of kill9_test. Writes GPU-minutes into a
// data directory with SyncPolicy::kEveryBatch, one batch per minute, and
// after each acknowledged batch prints the minute on stdout, until killed.
//
//   crash_writer DIR FIRST_MINUTE
//
// Every value is a function of (gpu, minute), so the parent can check both
// that acknowledged points survived and that nothing else was invented.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/gpulse.h"
#include "tests/support/crash_workload.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: crash_writer DIR FIRST_MINUTE\n");
    return 2;
  }
  gpulse::Options options;
  options.sync_policy = gpulse::SyncPolicy::kEveryBatch;
  options.head_memory_bytes = 256 << 10;  // flush often, so kills land mid-flush too
  options.wal_segment_bytes = 64 << 10;
  options.info_log = [](std::string_view) {};
  std::unique_ptr<gpulse::Db> db;
  gpulse::Status s = gpulse::Db::Open(options, argv[1], &db);
  if (!s.ok()) {
    std::fprintf(stderr, "crash_writer: %s\n", s.ToString().c_str());
    return 1;
  }
  for (int64_t minute = std::atoll(argv[2]);; ++minute) {
    s = db->Write(gpulse::test::CrashBatch(minute));
    if (!s.ok()) {
      std::fprintf(stderr, "crash_writer: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("%lld\n", static_cast<long long>(minute));
    std::fflush(stdout);
  }
}
