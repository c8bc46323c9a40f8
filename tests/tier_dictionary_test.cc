// Tier blocks compressed with a dictionary of their tier and field
// (storage/zstd_dictionary.h, engine/tier_dictionaries.h): the codec on its
// own, then through the Db: compaction trains them, answers stay the same
// across flushes, reopening and a second compaction, and a dictionary that
// cannot be read is reported and repaired from the raw points.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "engine/gpulse.h"
#include "engine/tier_dictionaries.h"
#include "leveldb/db.h"
#include "query/query.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"
#include "storage/zstd_dictionary.h"
#include "storage/zstd_frame.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/tier_rows.h"
#include "tests/support/time_units.h"

namespace gpulse {
namespace {

using gpulse::test::kDay;
using gpulse::test::kHour;
using gpulse::test::kMinute;
constexpr int64_t kT0 = 1'704'067'200'000'000'000;  // 2024-01-01T00:00:00Z

// The 1h block body of a day of one GPU's utilisation, as a flush builds it.
std::string HourBody(int gpu) {
  Column raw;
  raw.type = FieldType::kInt;
  for (int m = 0; m < 1440; ++m) {
    raw.ts.push_back(kT0 + m * kMinute);
    raw.ints.push_back(60 + (gpu * 7 + m * 13) % 37);
  }
  storage::RollupColumn rows;
  rows.Reset(FieldType::kInt);
  storage::BuildRollups(raw, 0, raw.size(), kHour, &rows);
  std::string block, scratch;
  storage::EncodeRollups(rows, /*sketches=*/false, &block);
  std::string_view body;
  EXPECT_TRUE(
      storage::OpenBlock(block, static_cast<uint8_t>(block[0]), 64 << 20, nullptr, &scratch, &body)
          .ok());
  return std::string(body);
}

TEST(ZstdDictionaryTest, BlocksCompressWithTheirDictionaryAndOpenOnlyWithIt) {
  std::vector<std::string> samples;
  for (int gpu = 0; gpu < 200; ++gpu) samples.push_back(HourBody(gpu));
  std::string bytes;
  ASSERT_TRUE(storage::ZstdDictionary::Train(samples, 1024, &bytes).ok());
  EXPECT_LE(bytes.size(), 1024u);
  std::unique_ptr<storage::ZstdDictionary> dict;
  ASSERT_TRUE(storage::ZstdDictionary::Load(bytes, 1, &dict).ok());

  const std::string body = HourBody(1000);  // a GPU it was not trained on
  std::string with, without;
  storage::AppendBlock(4, body, 1, dict.get(), &with);
  storage::AppendBlock(4, body, 1, nullptr, &without);
  EXPECT_TRUE(storage::IsDictionaryCompressedBlock(with));
  EXPECT_FALSE(storage::IsDictionaryCompressedBlock(without));
  EXPECT_LT(with.size() * 3, without.size() * 2) << with.size() << " " << without.size();

  std::string scratch;
  std::string_view opened;
  ASSERT_TRUE(storage::OpenBlock(with, 4, 64 << 20, dict.get(), &scratch, &opened).ok());
  EXPECT_EQ(opened, body);
  const Status lacking = storage::OpenBlock(with, 4, 64 << 20, nullptr, &scratch, &opened);
  EXPECT_TRUE(lacking.IsCorruption());
  EXPECT_NE(lacking.message().find("dictionary the store lacks"), std::string::npos);
  // Blocks without one still open with a dictionary at hand.
  ASSERT_TRUE(storage::OpenBlock(without, 4, 64 << 20, dict.get(), &scratch, &opened).ok());
  EXPECT_EQ(opened, body);
  // The rows decode through the rollup codec alike.
  storage::RollupColumn a, b;
  ASSERT_TRUE(storage::DecodeRollups(with, storage::kRollupAll, dict.get(), &a).ok());
  ASSERT_TRUE(storage::DecodeRollups(without, storage::kRollupAll, &b).ok());
  EXPECT_EQ(a.bucket, b.bucket);
  EXPECT_EQ(a.sum.ints, b.sum.ints);
  EXPECT_EQ(a.last.ints, b.last.ints);

  EXPECT_TRUE(storage::ZstdDictionary::Load("not a dictionary", 1, &dict).IsCorruption());
  const std::vector<std::string> two = {"ab", "cd"};
  EXPECT_FALSE(storage::ZstdDictionary::Train(two, 1024, &bytes).ok());
}

class TierDictionaryTest : public ::testing::Test {
 protected:
  static constexpr int kGpus = 160;
  static constexpr const char* kRange = " WHERE time >= 1704067200s AND time < 1704240000s";

  void SetUp() override {
    options_.sync_policy = SyncPolicy::kNone;
    options_.info_log = [this](std::string_view line) {
      std::lock_guard<std::mutex> l(log_mu_);
      log_.emplace_back(line);
    };
    options_.out_of_order_window = std::chrono::hours(24 * 365);
    Reopen();
  }

  void Reopen() {
    db_.reset();
    ASSERT_TRUE(Db::Open(options_, dir_.path(), &db_).ok());
  }

  // A day of kGpus GPUs at one point a minute: integer utilisation and
  // power with one decimal.
  void WriteDay(int64_t day_start) {
    for (int m = 0; m < 1440; ++m) {
      std::vector<Point> batch;
      for (int g = 0; g < kGpus; ++g) {
        Point p;
        p.measurement = "gpu";
        char node[16];
        std::snprintf(node, sizeof node, "n%03d", g);
        p.tags = {{"node", node}};
        p.fields = {{"util", int64_t{50 + (g * 7 + m * 13) % 41}},
                    {"power", 300.0 + ((g * 11 + m * 17) % 900) / 10.0}};
        // A field of a few GPUs: too few blocks to train a dictionary on.
        if (g < 8) p.fields.push_back({"fan", int64_t{30 + (g + m) % 7}});
        p.timestamp_ns = day_start + m * kMinute;
        batch.push_back(std::move(p));
      }
      ASSERT_TRUE(db_->Write(batch).ok());
    }
    ASSERT_TRUE(db_->Flush().ok());
  }

  // A point of n007 half a minute into 05:30 of the first day: among stored
  // points of its hour, so a flush computes that bucket again.
  static Point LatePoint() {
    Point late;
    late.measurement = "gpu";
    late.tags = {{"node", "n007"}};
    late.fields = {{"util", int64_t{3}}, {"power", 123.4}};
    late.timestamp_ns = kT0 + 5 * kHour + 30 * kMinute + 30'000'000'000;
    return late;
  }

  // The answers of the hour tier over the first two days, as text: exact
  // aggregates only, so that they equal raw's to the last digit.
  std::string HourAnswers(const std::string& from = "gpu") {
    return Answer(
        "SELECT count(util), sum(util), min(util), max(util), first(util), last(util), "
        "min(power), max(power), first(power), last(power) FROM " +
        from + kRange + " GROUP BY time(1h), node");
  }
  // Both tiers' answers, means and a quantile of the day sketches included.
  std::string Answers() {
    return HourAnswers() +
           Answer("SELECT mean(power) FROM gpu" + std::string(kRange) +
                  " GROUP BY time(1h), node") +
           Answer("SELECT max(util), percentile(power, 90) FROM gpu" + std::string(kRange) +
                  " GROUP BY time(1d), node");
  }

  std::string Answer(const std::string& q) {
    QueryResult r;
    EXPECT_TRUE(gpulse::Query(db_.get(), q, QueryOptions(), &r).ok()) << q;
    EXPECT_EQ(r.statements.size(), 1u);
    if (r.statements.empty()) return "";
    if (!r.statements[0].status.ok()) return "error: " + r.statements[0].status.ToString();
    std::string out;
    for (const std::string& note : r.statements[0].notes) out += "note: " + note + "\n";
    for (const auto& s : r.statements[0].series) {
      for (const auto& row : s.values) {
        for (const QueryValue& v : row) out += ToString(v) + " ";
        out += "\n";
      }
    }
    return out;
  }

  static std::string ToString(const QueryValue& v) {
    if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
    if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
    if (const auto* s = std::get_if<std::string>(&v)) return *s;
    return "null";
  }

  // With the Db closed: the store's keys and values of one prefix.
  std::map<std::string, std::string> StoreKeys(char prefix) {
    db_.reset();
    leveldb::DB* raw = nullptr;
    EXPECT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    std::map<std::string, std::string> out;
    std::unique_ptr<leveldb::Iterator> it(store->NewIterator(leveldb::ReadOptions()));
    for (it->Seek(std::string(1, prefix)); it->Valid() && it->key()[0] == prefix; it->Next()) {
      out.emplace(it->key().ToString(), it->value().ToString());
    }
    return out;
  }

  size_t LogLines(const std::string& part) {
    std::lock_guard<std::mutex> l(log_mu_);
    size_t n = 0;
    for (const std::string& line : log_) n += line.find(part) != std::string::npos;
    return n;
  }

  Options options_;
  storage::ScratchDir dir_;
  std::unique_ptr<Db> db_;
  std::mutex log_mu_;  // the Db's threads log too
  std::vector<std::string> log_;
};

TEST_F(TierDictionaryTest, CompactionTrainsThemAndEveryAnswerStaysTheSame) {
  WriteDay(kT0);
  const std::string before = Answers();
  ASSERT_EQ(HourAnswers(), HourAnswers("\"raw\".gpu"));
  ASSERT_TRUE(db_->Compact().ok());
  EXPECT_EQ(LogLines("tier dictionaries trained"), 1u);
  EXPECT_EQ(Answers(), before);

  // A dictionary for each field's hour blocks, none for the field of eight
  // GPUs; every hour block of a field with one is written with it.
  const std::map<std::string, std::string> dicts = StoreKeys(storage::kDictionaryPrefix);
  std::map<uint32_t, std::string> field_names;
  for (const auto& [key, value] : StoreKeys(storage::kFieldPrefix)) {
    field_names[storage::GetU32BE(key.data() + 1)] = value.substr(value.find('\0') + 1);
  }
  std::set<std::pair<uint8_t, std::string>> trained;
  for (const auto& [key, value] : dicts) {
    uint8_t tier = 0;
    uint32_t field = 0;
    ASSERT_TRUE(storage::ParseDictionaryKey(key, &tier, &field));
    trained.emplace(tier, field_names[field]);
  }
  const uint8_t hour = storage::kTiers[1].id;
  EXPECT_TRUE(trained.contains({hour, "util"}));
  EXPECT_TRUE(trained.contains({hour, "power"}));
  EXPECT_FALSE(trained.contains({hour, "fan"}));
  size_t hour_blocks = 0;
  for (const auto& [key, value] : StoreKeys(storage::kChunkPrefix)) {
    storage::ChunkKeyParts k;
    ASSERT_TRUE(storage::ParseChunkKey(key, &k));
    if (k.tier == storage::kRawTier) continue;
    const bool has = trained.contains({k.tier, field_names[k.field_id]});
    if (storage::IsDictionaryCompressedBlock(value)) {
      EXPECT_TRUE(has) << storage::KeyHex(key);
    }
    if (k.tier != hour || field_names[k.field_id] == "fan") continue;
    ++hour_blocks;
    EXPECT_TRUE(storage::IsDictionaryCompressedBlock(value)) << storage::KeyHex(key);
  }
  EXPECT_EQ(hour_blocks, 2u * kGpus);

  // Reopened, then flushes that fold new points into blocks written with a
  // dictionary: a late point inside stored hours, and a second day.
  Reopen();
  EXPECT_EQ(Answers(), before);
  ASSERT_TRUE(db_->Write({LatePoint()}).ok());
  WriteDay(kT0 + kDay);
  const std::string after = Answers();
  EXPECT_NE(after, before);
  EXPECT_EQ(HourAnswers(), HourAnswers("\"raw\".gpu"));

  // A second compaction keeps the dictionaries as they are: a block names
  // its dictionary by its key alone.
  ASSERT_TRUE(db_->Compact().ok());
  EXPECT_EQ(LogLines("tier dictionaries trained"), 1u);
  EXPECT_EQ(Answers(), after);
  EXPECT_EQ(StoreKeys(storage::kDictionaryPrefix), dicts);
  Reopen();
  EXPECT_EQ(Answers(), after);
}

TEST_F(TierDictionaryTest, AnUnreadableDictionaryIsReportedAndRepairedFromRaw) {
  WriteDay(kT0);
  const std::string before = Answers();
  ASSERT_TRUE(db_->Compact().ok());
  std::map<std::string, std::string> dicts = StoreKeys(storage::kDictionaryPrefix);
  const size_t trained = dicts.size();
  ASSERT_GE(trained, 2u);
  // One byte of the first dictionary flipped: its checksum no longer holds.
  const std::string key = dicts.begin()->first;
  {
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    std::string value = dicts.begin()->second;
    value[value.size() / 2] ^= 0x20;
    ASSERT_TRUE(store->Put(leveldb::WriteOptions(), key, value).ok());
  }
  Reopen();
  EXPECT_EQ(LogLines("dictionary checksum mismatch"), 1u);
  // Answers leave the field's blocks out and say why.
  const std::string damaged = HourAnswers();
  EXPECT_EQ(damaged.rfind("note: damaged stored data was left out of this answer", 0), 0u)
      << damaged.substr(0, 300);
  EXPECT_NE(damaged.find("compressed with a dictionary the store lacks"), std::string::npos)
      << damaged.substr(0, 300);

  // A flush that folds a late point into one of those blocks builds that
  // block again from the raw points: writes go on.
  ASSERT_TRUE(db_->Write({LatePoint()}).ok());
  ASSERT_TRUE(db_->Flush().ok());
  EXPECT_EQ(LogLines("built again from the raw points"), 1u);

  // So does a delete whose range cuts another of them (a retention pass, or
  // one replayed at open, would otherwise fail at every run): an hour of
  // n003's, from 02:30.
  const Series n003{"gpu", {{"node", "n003"}}};
  ASSERT_TRUE(db_->Delete(std::span<const Series>(&n003, 1), kT0 + 2 * kHour + 30 * kMinute,
                          kT0 + 3 * kHour + 30 * kMinute)
                  .ok());
  EXPECT_EQ(LogLines("built again from the raw points left"), 1u);

  Db::VerifyReport report;
  ASSERT_TRUE(db_->Verify(/*drop_damaged=*/false, &report).ok());
  // The field's other hour blocks and its dictionary.
  ASSERT_EQ(report.damaged.size(), kGpus - 2 + 1u);
  EXPECT_EQ(report.damaged.back().key, storage::KeyHex(key));
  EXPECT_EQ(report.damaged.back().tier, "1h");
  ASSERT_TRUE(db_->Verify(/*drop_damaged=*/true, &report).ok());
  EXPECT_EQ(report.rebuilt, kGpus - 2u);
  const std::string after = Answers();
  EXPECT_NE(after, before);  // the late point
  EXPECT_EQ(HourAnswers(), HourAnswers("\"raw\".gpu"));
  ASSERT_TRUE(db_->Verify(/*drop_damaged=*/false, &report).ok());
  EXPECT_TRUE(report.damaged.empty());

  // The next compaction trains the field a new dictionary.
  ASSERT_TRUE(db_->Compact().ok());
  EXPECT_EQ(Answers(), after);
  dicts = StoreKeys(storage::kDictionaryPrefix);
  EXPECT_EQ(dicts.size(), trained);
  Reopen();
  EXPECT_EQ(Answers(), after);
  EXPECT_EQ(LogLines("dictionary checksum mismatch"), 1u);
}

// A retention pass whose 1h cut falls inside blocks it cannot read (their
// dictionary damaged) builds them again from the raw points after the cut
// only: the raw retention is longer than the tier's, so the raw points
// before the cut are still there to be left out.
TEST_F(TierDictionaryTest, ARetentionPassOverUnreadableBlocksKeepsOnlyTheRowsAfterItsCut) {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t day = storage::WindowStart(now - 2 * kDay, kDay);
  WriteDay(day);
  ASSERT_TRUE(db_->Compact().ok());
  std::map<std::string, uint32_t> field_ids;
  for (const auto& [key, value] : StoreKeys(storage::kFieldPrefix)) {
    field_ids[value.substr(value.find('\0') + 1)] = storage::GetU32BE(key.data() + 1);
  }
  const std::string util_hours = storage::DictionaryKey(storage::kTiers[1].id, field_ids["util"]);
  {
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    std::string value;
    ASSERT_TRUE(store->Get(leveldb::ReadOptions(), util_hours, &value).ok());
    value[value.size() / 2] ^= 0x20;
    ASSERT_TRUE(store->Put(leveldb::WriteOptions(), util_hours, value).ok());
  }
  // 1h rows kept from noon of the day on; raw points for good.
  const int64_t cut = day + 12 * kHour;
  options_.retention = {{"1h", std::chrono::nanoseconds(now - cut)}};
  Reopen();
  ASSERT_TRUE(db_->EnforceRetention(now).ok());
  EXPECT_GE(LogLines("built again from the raw points left"), 1u);
  for (const char* node : {"n000", "n007", "n159"}) {
    const Series series{"gpu", {{"node", node}}};
    const storage::RollupColumn rows = test::AllRollups(db_.get(), series, "util", 1);
    ASSERT_EQ(rows.size(), 12u) << node;
    EXPECT_EQ(rows.bucket.front(), cut) << node;
    for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows.count[i], 60u) << node << " " << i;
  }
  Db::VerifyReport report;
  ASSERT_TRUE(db_->Verify(/*drop_damaged=*/false, &report).ok());
  ASSERT_EQ(report.damaged.size(), 1u);  // the dictionary alone: every block was rebuilt
  EXPECT_EQ(report.damaged[0].key, storage::KeyHex(util_hours));
}

// A dictionary no block needs any more (its field's series dropped) is not
// carried by compaction: it would count toward the store's cap for good.
TEST_F(TierDictionaryTest, CompactionDropsADictionaryNoBlockNeeds) {
  WriteDay(kT0);
  ASSERT_TRUE(db_->Compact().ok());
  const std::map<std::string, std::string> dicts = StoreKeys(storage::kDictionaryPrefix);
  ASSERT_GE(dicts.size(), 2u);
  Reopen();
  std::vector<Series> all;
  for (int g = 0; g < kGpus; ++g) {
    char node[16];
    std::snprintf(node, sizeof node, "n%03d", g);
    all.push_back({"gpu", {{"node", node}}});
  }
  ASSERT_TRUE(db_->DropSeries(all).ok());
  ASSERT_TRUE(db_->Compact().ok());
  EXPECT_EQ(LogLines(std::to_string(dicts.size()) + " tier dictionaries dropped"), 1u);
  EXPECT_TRUE(StoreKeys(storage::kDictionaryPrefix).empty());

  // The series written again: their fields train dictionaries again, under
  // the same keys (a field keeps its id), and answers equal raw's.
  Reopen();
  WriteDay(kT0 + kDay);
  ASSERT_TRUE(db_->Compact().ok());
  EXPECT_EQ(HourAnswers(), HourAnswers("\"raw\".gpu"));
  const std::map<std::string, std::string> again = StoreKeys(storage::kDictionaryPrefix);
  EXPECT_EQ(again.size(), dicts.size());
  for (const auto& [k, v] : dicts) EXPECT_TRUE(again.contains(k)) << storage::KeyHex(k);
}

// The cap of 256 counts only the dictionaries some block still needs: a
// store copy drops the others, so they leave room for new ones.
TEST_F(TierDictionaryTest, DictionariesNoBlockNeedsLeaveRoomUnderTheCap) {
  WriteDay(kT0);
  db_.reset();
  leveldb::DB* raw = nullptr;
  ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
  std::unique_ptr<leveldb::DB> store(raw);
  engine::TierDictionaries have;  // 256 of fields with no block (unreadable ones, for brevity)
  for (uint32_t f = 0; f < 256; ++f) have.Add(storage::kTiers[1].id, 1'000'000 + f, nullptr);
  std::vector<engine::TrainedDictionary> trained;
  ASSERT_TRUE(engine::TrainTierDictionaries(store.get(), have, 1, &trained).ok());
  EXPECT_GE(trained.size(), 2u);  // the hour blocks of util and power at least
}

// A block written with a dictionary whose key is gone (lost with its table)
// must not be read with a new one trained under the same key: compaction
// trains none for the field until a repair has rebuilt its blocks.
TEST_F(TierDictionaryTest, NoDictionaryIsTrainedOverBlocksThatNeedALostOne) {
  WriteDay(kT0);
  const std::string before = Answers();
  ASSERT_TRUE(db_->Compact().ok());
  const std::map<std::string, std::string> dicts = StoreKeys(storage::kDictionaryPrefix);
  ASSERT_GE(dicts.size(), 2u);
  const std::string lost = dicts.begin()->first;
  {
    leveldb::DB* raw = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir_.path() + "/store", &raw).ok());
    std::unique_ptr<leveldb::DB> store(raw);
    ASSERT_TRUE(store->Delete(leveldb::WriteOptions(), lost).ok());
  }
  // A later day lands in new hour blocks, written without a dictionary:
  // enough to train one on, were the field's older blocks not waiting for
  // the lost one.
  Reopen();
  WriteDay(kT0 + 13 * kDay);
  ASSERT_TRUE(db_->Compact().ok());
  EXPECT_FALSE(StoreKeys(storage::kDictionaryPrefix).contains(lost));
  Reopen();
  const std::string damaged = HourAnswers();
  EXPECT_NE(damaged.find("compressed with a dictionary the store lacks"), std::string::npos)
      << damaged.substr(0, 300);
  Db::VerifyReport report;
  ASSERT_TRUE(db_->Verify(/*drop_damaged=*/true, &report).ok());
  EXPECT_EQ(report.rebuilt, static_cast<uint64_t>(kGpus));
  EXPECT_EQ(Answers(), before);
  // Rebuilt without one, the field's blocks train a new one.
  ASSERT_TRUE(db_->Compact().ok());
  EXPECT_TRUE(StoreKeys(storage::kDictionaryPrefix).contains(lost));
  Reopen();
  EXPECT_EQ(Answers(), before);
}

}  // namespace
}  // namespace gpulse
