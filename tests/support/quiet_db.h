// A Db for a test that needs a plain one: in a directory of its own, no
// fsync, no log lines.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "engine/gpulse.h"

namespace gpulse::test {

inline Options QuietDbOptions() {
  Options options;
  options.sync_policy = SyncPolicy::kNone;
  options.info_log = [](std::string_view) {};
  return options;
}

// Opens a Db in `dir` with QuietDbOptions(); fails the test if it cannot.
inline std::unique_ptr<Db> OpenQuietDb(const std::string& dir) {
  std::unique_ptr<Db> db;
  const Status s = Db::Open(QuietDbOptions(), dir, &db);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return db;
}

}  // namespace gpulse::test
