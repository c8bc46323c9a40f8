#include "storage/wal_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "storage/wal_writer.h"

namespace gpulse::storage {
namespace {

std::string Frame(std::string_view payload) {
  char header[wal_format::kHeaderSize];
  WalWriter::EncodeHeader(payload, header);
  return std::string(header, sizeof(header)) + std::string(payload);
}

std::vector<std::string> ReadAll(WalReader* reader) {
  std::vector<std::string> out;
  std::string_view record;
  while (reader->Next(&record)) out.emplace_back(record);
  return out;
}

TEST(WalReaderTest, EmptySegmentEndsCleanly) {
  WalReader reader("");
  EXPECT_TRUE(ReadAll(&reader).empty());
  EXPECT_FALSE(reader.stopped_early());
  EXPECT_EQ(reader.good_offset(), 0u);
}

TEST(WalReaderTest, ReadsEmptyAndNonEmptyRecords) {
  std::string segment = Frame("") + Frame("x") + Frame("hello");
  WalReader reader(segment);
  EXPECT_EQ(ReadAll(&reader), (std::vector<std::string>{"", "x", "hello"}));
  EXPECT_FALSE(reader.stopped_early());
  EXPECT_EQ(reader.good_offset(), segment.size());
  EXPECT_EQ(segment.size(), 3 * wal_format::kHeaderSize + 6);
}

TEST(WalReaderTest, AllZeroHeaderIsNeverARecord) {
  std::string segment = Frame("a") + std::string(wal_format::kHeaderSize, '\0');
  WalReader reader(segment);
  EXPECT_EQ(ReadAll(&reader), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(reader.stopped_early());
  EXPECT_EQ(reader.reason(), "zero-filled tail");
  EXPECT_EQ(reader.good_offset(), wal_format::kHeaderSize + 1);
}

TEST(WalReaderTest, ZeroHeaderFollowedByDataIsBadType) {
  std::string segment = std::string(wal_format::kHeaderSize, '\0') + Frame("a");
  WalReader reader(segment);
  EXPECT_TRUE(ReadAll(&reader).empty());
  EXPECT_EQ(reader.reason(), "bad record type 0");
  EXPECT_EQ(reader.good_offset(), 0u);
}

TEST(WalReaderTest, StopsAtFirstBadFrameAndStaysStopped) {
  std::string segment = Frame("one") + Frame("two") + Frame("three");
  segment[wal_format::kHeaderSize + 3 + wal_format::kHeaderSize] ^= 0x01;  // payload of "two"
  WalReader reader(segment);
  EXPECT_EQ(ReadAll(&reader), (std::vector<std::string>{"one"}));
  EXPECT_EQ(reader.reason(), "bad checksum");
  EXPECT_EQ(reader.good_offset(), wal_format::kHeaderSize + 3);
  std::string_view record;
  EXPECT_FALSE(reader.Next(&record));
}

TEST(WalReaderTest, AbsurdLengthIsRejectedBeforeReading) {
  std::string segment = Frame("abc");
  for (uint32_t length : {wal_format::kMaxRecordBytes + 1, 0xFFFFFFFFu}) {
    for (int i = 0; i < 4; ++i) {
      segment[wal_format::kLengthOffset + i] = static_cast<char>((length >> (8 * i)) & 0xff);
    }
    WalReader reader(segment);
    EXPECT_TRUE(ReadAll(&reader).empty());
    EXPECT_EQ(reader.reason(), "absurd record length " + std::to_string(length));
  }
}

TEST(WalReaderTest, LengthPastEndIsATornRecord) {
  std::string segment = Frame("abcdef");
  segment.resize(segment.size() - 2);
  WalReader reader(segment);
  EXPECT_TRUE(ReadAll(&reader).empty());
  EXPECT_EQ(reader.reason(), "record length 6 runs past end of file");
}

}  // namespace
}  // namespace gpulse::storage
