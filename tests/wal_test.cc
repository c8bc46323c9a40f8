#include "storage/wal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "storage/env.h"
#include "storage/wal_writer.h"
#include "tests/support/fault_injection_env.h"
#include "tests/support/scratch_dir.h"

namespace gpulse::storage {
namespace {

// Record i: a size from a cycle that includes 0, 1, header-sized and one
// larger than the small-segment limit, and bytes that depend on i and position.
std::string Record(int i) {
  static const size_t kSizes[] = {0, 1, 2, 9, 17, 100, 1000, 5000, 33, 70000};
  std::string r(kSizes[i % std::size(kSizes)], '\0');
  for (size_t j = 0; j < r.size(); ++j) r[j] = static_cast<char>((i * 131 + j * 7) & 0xff);
  return r;
}

struct Opened {
  Status status;
  std::vector<std::string> records;
  WalReplayReport report;
  std::unique_ptr<Wal> wal;
};

Opened OpenWal(const std::string& dir, WalOptions options = WalOptions(),
               Env* env = Env::Default()) {
  Opened o;
  o.status = Wal::Open(
      env, dir, options,
      [&o](std::string_view r) {
        o.records.emplace_back(r);
        return Status::Ok();
      },
      &o.report, &o.wal);
  return o;
}

std::vector<uint64_t> SegmentsIn(const std::string& dir) {
  std::vector<std::string> names;
  EXPECT_TRUE(Env::Default()->GetChildren(dir, &names).ok());
  std::vector<uint64_t> out;
  for (const auto& name : names) {
    uint64_t n;
    if (Wal::ParseSegmentName(name, &n)) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t FileSize(const std::string& path) {
  uint64_t size = 0;
  EXPECT_TRUE(Env::Default()->GetFileSize(path, &size).ok()) << path;
  return size;
}

std::string ReadFile(const std::string& path) {
  std::string s;
  EXPECT_TRUE(Env::Default()->ReadFileToString(path, &s).ok()) << path;
  return s;
}

void WriteFile(const std::string& path, std::string_view contents) {
  std::unique_ptr<WritableFile> f;
  ASSERT_TRUE(Env::Default()->NewWritableFile(path, &f).ok());
  ASSERT_TRUE(f->Append(contents).ok());
  ASSERT_TRUE(f->Close().ok());
}

TEST(WalTest, SegmentNames) {
  EXPECT_EQ(Wal::SegmentPath("d", 7), "d/00000007.log");
  EXPECT_EQ(Wal::SegmentPath("d", 123456789), "d/123456789.log");
  uint64_t n = 0;
  EXPECT_TRUE(Wal::ParseSegmentName("00000042.log", &n));
  EXPECT_EQ(n, 42u);
  EXPECT_TRUE(Wal::ParseSegmentName("123456789.log", &n));
  EXPECT_EQ(n, 123456789u);
  for (const char* bad : {"42.log", "000000042.log", "00000042.log.tmp", "0000004a.log", ".log",
                          "LOCK", "00000042"}) {
    EXPECT_FALSE(Wal::ParseSegmentName(bad, &n)) << bad;
  }
}

TEST(WalTest, OpenEmptyDirCreatesFirstSegment) {
  ScratchDir tmp;
  const std::string dir = tmp.path() + "/wal";
  Opened o = OpenWal(dir);
  ASSERT_TRUE(o.status.ok()) << o.status.ToString();
  EXPECT_TRUE(o.records.empty());
  EXPECT_EQ(o.report.segments, 0u);
  EXPECT_EQ(o.report.dropped_bytes, 0u);
  EXPECT_EQ(o.wal->active_segment(), 1u);
  EXPECT_EQ(o.wal->total_bytes(), 0u);
  EXPECT_EQ(SegmentsIn(dir), (std::vector<uint64_t>{1}));
  EXPECT_TRUE(o.wal->Close().ok());
}

TEST(WalTest, RoundTripAcrossSegmentsThenAppendToNewSegment) {
  ScratchDir tmp;
  const std::string dir = tmp.path();
  WalOptions options;
  options.segment_bytes = 4096;
  std::vector<std::string> written;
  uint64_t last_end = 0;
  {
    Opened o = OpenWal(dir, options);
    ASSERT_TRUE(o.status.ok());
    for (int i = 0; i < 120; ++i) {
      written.push_back(Record(i));
      uint64_t end = 0;
      ASSERT_TRUE(o.wal->Append(written.back(), &end).ok());
      EXPECT_EQ(end, last_end + WalWriter::FramedSize(written.back().size()));
      last_end = end;
      if (i % 40 == 39) {
        ASSERT_TRUE(o.wal->SyncTo(end).ok());
      }
    }
    EXPECT_GT(o.wal->active_segment(), 5u);
    EXPECT_EQ(o.wal->total_bytes(), last_end);
    ASSERT_TRUE(o.wal->Close().ok());
    EXPECT_FALSE(o.wal->Append("x", nullptr).ok());
    EXPECT_FALSE(o.wal->Sync().ok());
    EXPECT_FALSE(o.wal->Close().ok());
  }
  std::vector<uint64_t> segments = SegmentsIn(dir);
  uint64_t on_disk = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    EXPECT_EQ(segments[i], i + 1);  // numbered upward without gaps
    uint64_t size = FileSize(Wal::SegmentPath(dir, segments[i]));
    // Only a record larger than a segment may overflow one, alone.
    EXPECT_TRUE(size <= options.segment_bytes || size == WalWriter::FramedSize(5000) ||
                size == WalWriter::FramedSize(70000))
        << size;
    on_disk += size;
  }
  EXPECT_EQ(on_disk, last_end);

  {
    Opened o = OpenWal(dir, options);
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    EXPECT_EQ(o.records, written);
    EXPECT_EQ(o.report.records, written.size());
    EXPECT_EQ(o.report.bytes, last_end);
    EXPECT_EQ(o.report.segments, segments.size());
    EXPECT_EQ(o.report.dropped_bytes, 0u);
    EXPECT_EQ(o.report.dropped_reason, "");
    EXPECT_EQ(o.wal->active_segment(), segments.back() + 1);
    EXPECT_EQ(FileSize(Wal::SegmentPath(dir, segments.back() + 1)), 0u);
    for (int i = 1000; i < 1005; ++i) {
      written.push_back(Record(i));
      uint64_t end = 0;
      ASSERT_TRUE(o.wal->Append(written.back(), &end).ok());
      EXPECT_GT(end, last_end);  // positions keep increasing across a reopen
      last_end = end;
    }
    ASSERT_TRUE(o.wal->Close().ok());
  }
  Opened o = OpenWal(dir, options);
  ASSERT_TRUE(o.status.ok());
  EXPECT_EQ(o.records, written);
  EXPECT_TRUE(o.wal->Close().ok());
}

TEST(WalTest, RotateAndRemoveSegmentsBefore) {
  ScratchDir tmp;
  const std::string dir = tmp.path();
  {
    Opened o = OpenWal(dir);
    ASSERT_TRUE(o.status.ok());
    uint64_t segment = 0;
    ASSERT_TRUE(o.wal->Append("a", nullptr).ok());
    ASSERT_TRUE(o.wal->Rotate(&segment).ok());
    EXPECT_EQ(segment, 2u);
    ASSERT_TRUE(o.wal->Append("b", nullptr).ok());
    ASSERT_TRUE(o.wal->Rotate(&segment).ok());
    EXPECT_EQ(segment, 3u);
    EXPECT_EQ(o.wal->active_segment(), 3u);
    ASSERT_TRUE(o.wal->Append("c", nullptr).ok());
    EXPECT_EQ(o.wal->total_bytes(), 3 * WalWriter::FramedSize(1));
    EXPECT_TRUE(o.wal->RemoveSegmentsBefore(4).IsInvalidArgument());
    ASSERT_TRUE(o.wal->RemoveSegmentsBefore(3).ok());
    EXPECT_EQ(SegmentsIn(dir), (std::vector<uint64_t>{3}));
    EXPECT_EQ(o.wal->total_bytes(), WalWriter::FramedSize(1));
    ASSERT_TRUE(o.wal->RemoveSegmentsBefore(3).ok());  // nothing left to remove
    ASSERT_TRUE(o.wal->Close().ok());
  }
  Opened o = OpenWal(dir);
  ASSERT_TRUE(o.status.ok());
  EXPECT_EQ(o.records, (std::vector<std::string>{"c"}));
  EXPECT_EQ(o.wal->active_segment(), 4u);
  ASSERT_TRUE(o.wal->RemoveSegmentsBefore(4).ok());
  EXPECT_EQ(SegmentsIn(dir), (std::vector<uint64_t>{4}));
  EXPECT_EQ(o.wal->total_bytes(), 0u);
  EXPECT_TRUE(o.wal->Close().ok());
}

TEST(WalTest, ApplyErrorIsReturnedFromOpen) {
  ScratchDir tmp;
  {
    Opened o = OpenWal(tmp.path());
    ASSERT_TRUE(o.status.ok());
    for (const char* r : {"1", "2", "3"}) ASSERT_TRUE(o.wal->Append(r, nullptr).ok());
    ASSERT_TRUE(o.wal->Close().ok());
  }
  int seen = 0;
  std::unique_ptr<Wal> wal;
  Status s = Wal::Open(
      Env::Default(), tmp.path(), WalOptions(),
      [&seen](std::string_view) {
        return ++seen == 2 ? Status::InvalidArgument("bad point") : Status::Ok();
      },
      nullptr, &wal);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "bad point");
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(wal, nullptr);
}

// Writes kRecords into segment 1 of a fresh dir and returns the start offset
// of every record, plus the end.
const std::vector<std::string> kRecords = {"first record", "", std::string(40, 'z'), "last one!"};

std::vector<uint64_t> WriteOneSegment(const std::string& dir) {
  Opened o = OpenWal(dir);
  EXPECT_TRUE(o.status.ok());
  std::vector<uint64_t> starts = {0};
  for (const auto& r : kRecords) {
    uint64_t end = 0;
    EXPECT_TRUE(o.wal->Append(r, &end).ok());
    starts.push_back(end);
  }
  EXPECT_TRUE(o.wal->Close().ok());
  return starts;
}

void PutLength(std::string* seg, uint64_t record_start, uint32_t length) {
  for (int i = 0; i < 4; ++i) {
    (*seg)[record_start + wal_format::kLengthOffset + i] =
        static_cast<char>((length >> (8 * i)) & 0xff);
  }
}

struct CorruptionCase {
  std::string name;
  std::function<void(std::string* segment, const std::vector<uint64_t>& starts)> damage;
  size_t kept;         // records replayed before the damage
  std::string reason;  // expected substring of the report; "" = nothing dropped
  // The damaged record has intact records after it: replay skips it to the
  // next one and reports damage; nothing is cut.
  bool resyncs = false;
};

// Damage in the middle: every record but the damaged one comes back, the
// report names the region, the segment is unchanged and a copy of it is kept
// aside; a second reopen answers the same.
void RunResyncCase(const CorruptionCase& c, const std::string& dir, const std::string& segment,
                   const std::vector<uint64_t>& starts) {
  const std::string path = Wal::SegmentPath(dir, 1);
  std::vector<std::string> want = kRecords;
  want.erase(want.begin() + static_cast<ptrdiff_t>(c.kept));
  for (int pass = 0; pass < 2; ++pass) {
    Opened o = OpenWal(dir);
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    EXPECT_EQ(o.records, want);
    EXPECT_EQ(o.report.dropped_bytes, 0u);
    EXPECT_EQ(o.report.damaged_bytes, starts[c.kept + 1] - starts[c.kept]);
    ASSERT_EQ(o.report.damage.size(), 1u);
    EXPECT_EQ(
        o.report.damage[0].rfind(path + " offset " + std::to_string(starts[c.kept]) + ": ", 0), 0u)
        << o.report.damage[0];
    EXPECT_NE(o.report.damage[0].find(c.reason), std::string::npos) << o.report.damage[0];
    EXPECT_EQ(FileSize(path), segment.size());
    EXPECT_EQ(ReadFile(Wal::SegmentPath(dir + "/damaged", 1)), segment);
    ASSERT_TRUE(o.wal->Close().ok());
  }
}

// Damages a written segment, reopens, and checks exactly what was replayed,
// reported and cut; a second reopen must then find a clean log.
void RunCorruptionCase(const CorruptionCase& c) {
  SCOPED_TRACE(c.name);
  ScratchDir tmp;
  const std::string dir = tmp.path();
  std::vector<uint64_t> starts = WriteOneSegment(dir);
  const std::string path = Wal::SegmentPath(dir, 1);
  std::string segment = ReadFile(path);
  ASSERT_EQ(segment.size(), starts.back());
  c.damage(&segment, starts);
  WriteFile(path, segment);
  if (c.resyncs) return RunResyncCase(c, dir, segment, starts);

  const uint64_t cut_at = starts[c.kept];
  Opened o = OpenWal(dir);
  ASSERT_TRUE(o.status.ok()) << o.status.ToString();
  EXPECT_EQ(o.records, std::vector<std::string>(kRecords.begin(), kRecords.begin() + c.kept));
  if (c.reason.empty()) {
    EXPECT_EQ(o.report.dropped_bytes, 0u);
    EXPECT_EQ(o.report.dropped_reason, "");
  } else {
    EXPECT_EQ(o.report.dropped_bytes, segment.size() - cut_at);
    EXPECT_NE(o.report.dropped_reason.find(c.reason), std::string::npos) << o.report.dropped_reason;
    EXPECT_EQ(o.report.dropped_reason.rfind(path + " offset " + std::to_string(cut_at) + ": ", 0),
              0u)
        << o.report.dropped_reason;
  }
  EXPECT_EQ(FileSize(path), c.reason.empty() ? segment.size() : cut_at);
  ASSERT_TRUE(o.wal->Close().ok());

  Opened again = OpenWal(dir);
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(again.records, o.records);
  EXPECT_EQ(again.report.dropped_bytes, 0u);
  EXPECT_EQ(again.report.dropped_reason, "");
  EXPECT_TRUE(again.wal->Close().ok());
}

TEST(WalCorruptionTest, FlipEveryByteOfEveryRecord) {
  ScratchDir probe;
  const std::vector<uint64_t> starts = WriteOneSegment(probe.path());
  std::vector<CorruptionCase> cases;
  for (size_t k = 0; k < kRecords.size(); ++k) {
    for (uint64_t pos = starts[k]; pos < starts[k + 1]; ++pos) {
      for (uint8_t mask : {0x01, 0xff}) {
        cases.push_back({"flip byte " + std::to_string(pos) + " with " + std::to_string(mask),
                         [pos, mask](std::string* s, const std::vector<uint64_t>&) {
                           (*s)[pos] = static_cast<char>((*s)[pos] ^ mask);
                         },
                         k, "offset " + std::to_string(starts[k]), k + 1 < kRecords.size()});
      }
    }
  }
  for (const auto& c : cases) RunCorruptionCase(c);
}

TEST(WalCorruptionTest, TruncateAtEveryOffsetOfTheLastRecord) {
  ScratchDir probe;
  const std::vector<uint64_t> starts = WriteOneSegment(probe.path());
  const size_t last = kRecords.size() - 1;
  for (uint64_t size = starts[last]; size < starts[last + 1]; ++size) {
    std::string reason;
    if (size == starts[last]) {
      reason = "";  // a clean cut between records drops nothing
    } else if (size - starts[last] < wal_format::kHeaderSize) {
      reason = "truncated header";
    } else {
      reason = "runs past end of file";
    }
    RunCorruptionCase({"truncate to " + std::to_string(size),
                       [size](std::string* s, const std::vector<uint64_t>&) { s->resize(size); },
                       last, reason});
  }
}

TEST(WalCorruptionTest, TableOfDamage) {
  const size_t n = kRecords.size();
  std::vector<CorruptionCase> cases = {
      {"bad checksum of record 2",
       [](std::string* s, const std::vector<uint64_t>& st) {
         (*s)[st[2] + wal_format::kCrcOffset] ^= 0x40;
       },
       2, "bad checksum", true},
      {"length of the last record one past EOF",
       [n](std::string* s, const std::vector<uint64_t>& st) {
         PutLength(s, st[n - 1], static_cast<uint32_t>(kRecords[n - 1].size() + 1));
       },
       n - 1, "runs past end of file"},
      {"length of record 1 runs far past EOF",
       [](std::string* s, const std::vector<uint64_t>& st) { PutLength(s, st[1], 100000); }, 1,
       "record length 100000 runs past end of file", true},
      {"huge length",
       [](std::string* s, const std::vector<uint64_t>& st) { PutLength(s, st[2], 0xFFFFFFFFu); }, 2,
       "absurd record length 4294967295", true},
      {"just over the record limit",
       [](std::string* s, const std::vector<uint64_t>& st) {
         PutLength(s, st[0], wal_format::kMaxRecordBytes + 1);
       },
       0, "absurd record length", true},
      {"bad type",
       [](std::string* s, const std::vector<uint64_t>& st) {
         (*s)[st[3] + wal_format::kTypeOffset] = 7;
       },
       3, "bad record type 7"},
      {"zeroed header of record 1 with data after it",
       [](std::string* s, const std::vector<uint64_t>& st) {
         std::fill_n(s->begin() + st[1], wal_format::kHeaderSize, '\0');
       },
       1, "bad record type 0", true},
      {"zeroed last record",
       [n](std::string* s, const std::vector<uint64_t>& st) {
         std::fill(s->begin() + st[n - 1], s->end(), '\0');
       },
       n - 1, "zero-filled tail"},
      {"garbage tail",
       [](std::string* s, const std::vector<uint64_t>&) { s->append("\x01\x02garbage!!", 11); }, n,
       "bad record type"},
  };
  for (size_t zeros : {1, 8, 9, 10, 100, 4096}) {
    cases.push_back(
        {"zero-filled tail of " + std::to_string(zeros),
         [zeros](std::string* s, const std::vector<uint64_t>&) { s->append(zeros, '\0'); }, n,
         "zero-filled tail"});
  }
  for (const auto& c : cases) RunCorruptionCase(c);
}

// Writes "a0".."a2" into segment 1 and "b0".."b2" into segment 2.
void WriteTwoSegments(const std::string& dir) {
  Opened o = OpenWal(dir);
  ASSERT_TRUE(o.status.ok());
  for (const char* r : {"a0", "a1", "a2"}) ASSERT_TRUE(o.wal->Append(r, nullptr).ok());
  ASSERT_TRUE(o.wal->Rotate(nullptr).ok());
  for (const char* r : {"b0", "b1", "b2"}) ASSERT_TRUE(o.wal->Append(r, nullptr).ok());
  ASSERT_TRUE(o.wal->Close().ok());
}

// A segment is synced before the next one gets a byte, so damage there is
// no torn tail: replay skips the damaged record (or, with no good frame after
// it in its segment, the rest of the segment) and goes on with the later
// segments, cutting nothing; what was lost is in the report.
TEST(WalCorruptionTest, DamageInAnEarlierSegmentCostsOnlyWhatIsDamaged) {
  const uint64_t framed = WalWriter::FramedSize(2);
  struct Case {
    uint64_t flip;  // the byte of segment 1 flipped
    std::vector<std::string> records;
    std::string damage;
  };
  const std::vector<Case> cases = {
      {framed + wal_format::kHeaderSize,
       {"a0", "a2", "b0", "b1", "b2"},
       "offset " + std::to_string(framed) + ": bad checksum; skipped " + std::to_string(framed) +
           " bytes to the next good record"},
      {2 * framed + wal_format::kHeaderSize,
       {"a0", "a1", "b0", "b1", "b2"},
       "offset " + std::to_string(2 * framed) + ": bad checksum; lost the last " +
           std::to_string(framed) + " bytes of the segment (a later segment holds data)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flip);
    ScratchDir tmp;
    const std::string dir = tmp.path();
    WriteTwoSegments(dir);
    const std::string first = Wal::SegmentPath(dir, 1);
    std::string segment = ReadFile(first);
    segment[c.flip] ^= 0x01;
    WriteFile(first, segment);
    for (int pass = 0; pass < 2; ++pass) {
      Opened o = OpenWal(dir);
      ASSERT_TRUE(o.status.ok()) << o.status.ToString();
      EXPECT_EQ(o.records, c.records);
      ASSERT_EQ(o.report.damage.size(), 1u);
      EXPECT_EQ(o.report.damage[0], first + " " + c.damage);
      EXPECT_EQ(o.report.damaged_bytes, framed);
      EXPECT_EQ(o.report.dropped_bytes, 0u);
      EXPECT_EQ(FileSize(first), segment.size());  // nothing was cut
      EXPECT_EQ(ReadFile(Wal::SegmentPath(dir + "/damaged", 1)), segment);
      ASSERT_TRUE(o.wal->Close().ok());
    }
  }
}

TEST(WalCorruptionTest, TornTailBeforeOnlyEmptyOrZeroSegmentsIsCut) {
  ScratchDir tmp;
  const std::string dir = tmp.path();
  WriteTwoSegments(dir);
  // Segment 2 is torn mid-record; segment 3 is empty (a reopen that crashed
  // before writing) and segment 4 was zero-extended by the filesystem.
  const std::string second = Wal::SegmentPath(dir, 2);
  std::string segment = ReadFile(second);
  const uint64_t cut_at = 2 * WalWriter::FramedSize(2);
  segment.resize(cut_at + 5);
  WriteFile(second, segment);
  WriteFile(Wal::SegmentPath(dir, 3), "");
  WriteFile(Wal::SegmentPath(dir, 4), std::string(4096, '\0'));

  Opened o = OpenWal(dir);
  ASSERT_TRUE(o.status.ok()) << o.status.ToString();
  EXPECT_EQ(o.records, (std::vector<std::string>{"a0", "a1", "a2", "b0", "b1"}));
  EXPECT_EQ(o.report.segments, 4u);
  EXPECT_EQ(o.report.dropped_bytes, 5u + 4096u);
  EXPECT_EQ(o.report.dropped_reason, second + " offset " + std::to_string(cut_at) +
                                         ": truncated header (5 bytes); cut 5 bytes and 4096 "
                                         "zero bytes from later segments");
  EXPECT_EQ(FileSize(second), cut_at);
  EXPECT_EQ(FileSize(Wal::SegmentPath(dir, 4)), 0u);
  EXPECT_EQ(o.wal->active_segment(), 5u);
  EXPECT_EQ(o.wal->total_bytes(), 3 * WalWriter::FramedSize(2) + cut_at);
  ASSERT_TRUE(o.wal->Close().ok());

  Opened again = OpenWal(dir);
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(again.records, o.records);
  EXPECT_EQ(again.report.dropped_bytes, 0u);
  EXPECT_TRUE(again.wal->Close().ok());
}

TEST(WalTest, ConcurrentAppendersWithGroupCommitLoseNothing) {
  ScratchDir tmp;
  const std::string dir = tmp.path();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 150;
  WalOptions options;
  options.segment_bytes = 2048;  // rotations race with syncs
  FaultInjectionEnv env(Env::Default());
  {
    Opened o = OpenWal(dir, options, &env);
    ASSERT_TRUE(o.status.ok());
    std::vector<std::thread> threads;
    std::vector<int> failures(kThreads, 0);
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&o, &failures, t] {
        for (int i = 0; i < kPerThread; ++i) {
          std::string record = std::to_string(t) + ":" + std::to_string(i) + ":" +
                               std::string(static_cast<size_t>(i % 50), 'p');
          uint64_t end = 0;
          if (!o.wal->Append(record, &end).ok() || !o.wal->SyncTo(end).ok()) ++failures[t];
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures, std::vector<int>(kThreads, 0));
    // Every SyncTo covered its record; nothing more may be needed to survive
    // a power loss.
    std::unique_ptr<Wal> crashed = std::move(o.wal);
    crashed.reset();
    ASSERT_TRUE(env.DropUnsyncedData().ok());
  }
  Opened o = OpenWal(dir, options);
  ASSERT_TRUE(o.status.ok());
  ASSERT_EQ(o.records.size(), static_cast<size_t>(kThreads * kPerThread));
  std::vector<int> next(kThreads, 0);
  for (const auto& r : o.records) {
    int t = r[0] - '0';
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    std::string expected = std::to_string(t) + ":" + std::to_string(next[t]) + ":" +
                           std::string(static_cast<size_t>(next[t] % 50), 'p');
    EXPECT_EQ(r, expected);  // each thread's records in its own order
    ++next[t];
  }
  EXPECT_EQ(next, std::vector<int>(kThreads, kPerThread));
  EXPECT_TRUE(o.wal->Close().ok());
}

TEST(WalTest, ErrorsAreSticky) {
  ScratchDir tmp;
  FaultInjectionEnv env(Env::Default());
  {
    Opened o = OpenWal(tmp.path(), WalOptions(), &env);
    ASSERT_TRUE(o.status.ok());
    ASSERT_TRUE(o.wal->Append("ok", nullptr).ok());
    env.FailNthSync(1);
    Status s = o.wal->Sync();
    ASSERT_TRUE(s.IsIOError());
    EXPECT_TRUE(env.injected());
    // The next sync would succeed, but the page cache state is unknown.
    EXPECT_EQ(o.wal->Append("more", nullptr).ToString(), s.ToString());
    EXPECT_EQ(o.wal->Sync().ToString(), s.ToString());
    EXPECT_EQ(o.wal->Rotate(nullptr).ToString(), s.ToString());
    EXPECT_EQ(o.wal->Close().ToString(), s.ToString());
  }
  ScratchDir tmp2;
  Opened o = OpenWal(tmp2.path(), WalOptions(), &env);
  ASSERT_TRUE(o.status.ok());
  env.FailNthAppend(2);
  uint64_t end = 0;
  ASSERT_TRUE(o.wal->Append("one", &end).ok());
  Status s = o.wal->Append("two", nullptr);
  ASSERT_TRUE(s.IsIOError());
  EXPECT_NE(s.message().find("00000001.log"), std::string::npos) << s.message();
  EXPECT_EQ(o.wal->SyncTo(end).ToString(), s.ToString());
  EXPECT_EQ(o.wal->Append("three", nullptr).ToString(), s.ToString());
}

TEST(WalTest, SyncToPastTheEndIsInvalid) {
  ScratchDir tmp;
  Opened o = OpenWal(tmp.path());
  ASSERT_TRUE(o.status.ok());
  uint64_t end = 0;
  ASSERT_TRUE(o.wal->Append("r", &end).ok());
  EXPECT_TRUE(o.wal->SyncTo(end + 1).IsInvalidArgument());
  EXPECT_TRUE(o.wal->SyncTo(end).ok());
  EXPECT_TRUE(o.wal->SyncTo(end).ok());  // already covered
  EXPECT_TRUE(o.wal->Close().ok());
}

}  // namespace
}  // namespace gpulse::storage
