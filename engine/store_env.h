// StoreEnv: the file layer the chunk store (LevelDB) is opened with. It is
// its target Env (LevelDB's default, or a test's) in everything but one: a
// table file is read with pread(2) into LevelDB's buffer rather than through
// a mapping of the file.
//
// Why: LevelDB's default Env maps up to 1,000 table files and reads their
// blocks from the mapping, so every page a flush's reads, a compaction or a
// query touched stays in the process's resident set until the kernel needs
// it back (up to 82 MiB during the 100,000-GPU hour's import, more or less of
// it at the peak from one run to the next as compactions fell). Read with pread, the
// same pages are the kernel's page cache, shared and reclaimed as it sees
// fit, and the process's memory is what it allocated (docs/performance.md).
// A block read this way is copied once into a buffer LevelDB owns (its block
// cache keeps it, or the iterator frees it): the cost of a read is the copy
// and one system call.
//
// Descriptors: a table file keeps its descriptor open for as long as
// LevelDB's table cache holds the file, for up to StoreDescriptorBudget()
// files at once; a file opened past that opens and closes one for each read
// (the rule LevelDB applies to its own pread files).
//
// The target must be a file-system Env: table files are opened by name with
// open(2), never through the target's NewRandomAccessFile.
//
// Thread safety: as any leveldb::Env; files are read from many threads.
#pragma once

#include <atomic>
#include <string>

#include "leveldb/env.h"

namespace gpulse::engine {

class StoreEnv final : public leveldb::EnvWrapper {
 public:
  // `target` serves every call but NewRandomAccessFile; it must outlive this.
  explicit StoreEnv(leveldb::Env* target);

  leveldb::Status NewRandomAccessFile(const std::string& name,
                                      leveldb::RandomAccessFile** out) override;

  // Table files holding a descriptor now (for tests).
  int DescriptorsHeld() const;

 private:
  const int budget_;
  // Shared with the files, which give a descriptor back when deleted.
  std::atomic<int> held_{0};
};

}  // namespace gpulse::engine
