#include "tests/support/fault_injection_env.h"

#include <gtest/gtest.h>

#include "tests/support/scratch_dir.h"

namespace gpulse::storage {
namespace {

std::string Read(const std::string& path) {
  std::string s;
  EXPECT_TRUE(Env::Default()->ReadFileToString(path, &s).ok()) << path;
  return s;
}

TEST(FaultInjectionEnvTest, DropUnsyncedDataKeepsExactlyWhatWasSynced) {
  ScratchDir tmp;
  FaultInjectionEnv env(Env::Default());
  const std::string durable = tmp.path() + "/durable";
  const std::string fresh = tmp.path() + "/fresh";
  std::unique_ptr<WritableFile> a, b;
  ASSERT_TRUE(env.NewWritableFile(durable, &a).ok());
  ASSERT_TRUE(a->Append("synced").ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(env.SyncDir(tmp.path()).ok());
  ASSERT_TRUE(a->Append("-lost").ok());
  ASSERT_TRUE(env.NewWritableFile(fresh, &b).ok());  // no SyncDir after this
  ASSERT_TRUE(b->Append("x").ok());
  ASSERT_TRUE(b->Sync().ok());
  a.reset();
  b.reset();
  EXPECT_EQ(Read(durable), "synced-lost");

  ASSERT_TRUE(env.DropUnsyncedData().ok());
  EXPECT_EQ(Read(durable), "synced");
  EXPECT_FALSE(env.FileExists(fresh));
}

TEST(FaultInjectionEnvTest, TornPrefixKeepsPartOfTheUnsyncedBytes) {
  ScratchDir tmp;
  FaultInjectionEnv env(Env::Default());
  const std::string path = tmp.path() + "/f";
  std::unique_ptr<WritableFile> f;
  ASSERT_TRUE(env.NewWritableFile(path, &f).ok());
  ASSERT_TRUE(env.SyncDir(tmp.path()).ok());
  ASSERT_TRUE(f->Append("0123").ok());
  ASSERT_TRUE(f->Sync().ok());
  ASSERT_TRUE(f->Append("456789").ok());
  f.reset();
  ASSERT_TRUE(env.DropUnsyncedDataKeepingTornPrefix(7).ok());
  std::string kept = Read(path);
  EXPECT_GE(kept.size(), 4u);
  EXPECT_EQ(kept, std::string("0123456789").substr(0, kept.size()));
}

TEST(FaultInjectionEnvTest, FailNthAppendAndSyncThenTheFileStaysFailed) {
  ScratchDir tmp;
  FaultInjectionEnv env(Env::Default());
  std::unique_ptr<WritableFile> f, g;
  ASSERT_TRUE(env.NewWritableFile(tmp.path() + "/f", &f).ok());
  ASSERT_TRUE(env.NewWritableFile(tmp.path() + "/g", &g).ok());
  env.FailNthAppend(2);
  EXPECT_TRUE(f->Append("ab").ok());
  EXPECT_FALSE(env.injected());
  Status s = f->Append("cdef");
  EXPECT_TRUE(s.IsIOError());
  EXPECT_TRUE(env.injected());
  EXPECT_EQ(Read(tmp.path() + "/f"), "abcd");  // half of the failed append landed
  EXPECT_TRUE(f->Append("x").IsIOError());
  EXPECT_TRUE(f->Sync().IsIOError());
  EXPECT_TRUE(g->Append("fine").ok());  // other files are unaffected

  env.FailNthSync(1);
  EXPECT_TRUE(g->Sync().IsIOError());
  EXPECT_TRUE(g->Append("y").IsIOError());
  EXPECT_TRUE(env.SyncDir(tmp.path()).ok());  // the countdown fired once
}

}  // namespace
}  // namespace gpulse::storage
