#include "storage/env.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "tests/support/scratch_dir.h"

namespace gpulse::storage {
namespace {

TEST(EnvTest, WriteReadSizeTruncateRenameRemove) {
  ScratchDir tmp;
  Env* env = Env::Default();
  const std::string path = tmp.path() + "/f";
  std::unique_ptr<WritableFile> file;
  ASSERT_TRUE(env->NewWritableFile(path, &file).ok());
  ASSERT_TRUE(file->Append("hello ").ok());
  ASSERT_TRUE(file->Append(std::string(100000, 'x')).ok());
  ASSERT_TRUE(file->Sync().ok());
  ASSERT_TRUE(file->Close().ok());
  EXPECT_FALSE(file->Append("late").ok());

  std::string contents;
  ASSERT_TRUE(env->ReadFileToString(path, &contents).ok());
  EXPECT_EQ(contents, "hello " + std::string(100000, 'x'));
  uint64_t size = 0;
  ASSERT_TRUE(env->GetFileSize(path, &size).ok());
  EXPECT_EQ(size, 100006u);
  ASSERT_TRUE(env->TruncateFile(path, 5).ok());
  ASSERT_TRUE(env->ReadFileToString(path, &contents).ok());
  EXPECT_EQ(contents, "hello");

  ASSERT_TRUE(env->CreateDirIfMissing(tmp.path() + "/sub").ok());
  ASSERT_TRUE(env->CreateDirIfMissing(tmp.path() + "/sub").ok());
  ASSERT_TRUE(env->RenameFile(path, tmp.path() + "/sub/g").ok());
  ASSERT_TRUE(env->SyncDir(tmp.path() + "/sub").ok());
  EXPECT_FALSE(env->FileExists(path));
  EXPECT_TRUE(env->FileExists(tmp.path() + "/sub/g"));
  std::vector<std::string> names;
  ASSERT_TRUE(env->GetChildren(tmp.path(), &names).ok());
  EXPECT_EQ(names, std::vector<std::string>{"sub"});
  ASSERT_TRUE(env->RemoveFile(tmp.path() + "/sub/g").ok());
  EXPECT_FALSE(env->FileExists(tmp.path() + "/sub/g"));
}

TEST(EnvTest, ErrorsNameThePathAndCause) {
  ScratchDir tmp;
  const std::string missing = tmp.path() + "/missing";
  std::string contents;
  Status s = Env::Default()->ReadFileToString(missing, &contents);
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_EQ(s.message(), "open " + missing + ": No such file or directory");
  uint64_t size;
  EXPECT_TRUE(Env::Default()->GetFileSize(missing, &size).IsNotFound());
  EXPECT_TRUE(Env::Default()->RemoveFile(missing).IsNotFound());
  s = Env::Default()->CreateDirIfMissing(missing + "/a/b");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(missing + "/a/b"), std::string::npos);
}

TEST(EnvTest, LockIsExclusiveWithinAndAcrossProcesses) {
  ScratchDir tmp;
  Env* env = Env::Default();
  const std::string path = tmp.path() + "/LOCK";
  std::unique_ptr<FileLock> lock;
  ASSERT_TRUE(env->LockFile(path, &lock).ok());

  std::unique_ptr<FileLock> second;
  Status s = env->LockFile(path, &second);
  EXPECT_TRUE(s.IsBusy());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();

  // A child process spells the path differently so that only the kernel's
  // record lock, not this process's table, can refuse it.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::unique_ptr<FileLock> theirs;
    Status cs = env->LockFile(tmp.path() + "/./LOCK", &theirs);
    bool ok = cs.IsBusy() && cs.message().find("another process") != std::string::npos;
    ::_exit(ok ? 0 : 1);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);

  lock.reset();
  EXPECT_TRUE(env->LockFile(path, &second).ok());
}

}  // namespace
}  // namespace gpulse::storage
