// The ledger's export (ledger_export.h).

#include "server/ledger_export.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "query/fleet/fleet_ledger.h"
#include "storage/key_layout.h"

namespace gpulse::server {

namespace {

constexpr std::string_view kCursorKind = "ledger_export";
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kDay = 86'400 * kSecond;
// Tags of the rows: the ledger's BY.
const std::vector<std::string> kBy = {"region", "cluster", "sku", "team"};

}  // namespace

LedgerExport::LedgerExport(LedgerExportConfig config, Db* db)
    : config_(std::move(config)), db_(db) {}

LedgerExport::~LedgerExport() { Stop(); }

void LedgerExport::Start() {
  {
    MutexLock l(&mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void LedgerExport::Stop() {
  {
    MutexLock l(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void LedgerExport::Loop() {
  while (true) {
    const Status s = ExportUntil(WallClockNanos(), nullptr);
    if (!s.ok()) std::fprintf(stderr, "gpulse: ledger export: %s\n", s.ToString().c_str());
    MutexLock l(&mu_);
    if (stopping_) return;
    wake_.WaitFor(&mu_, config_.interval);
    if (stopping_) return;
  }
}

Status LedgerExport::ExportUntil(int64_t now_ns, uint64_t* rows) {
  if (rows != nullptr) *rows = 0;
  const int64_t every = config_.every_ns;
  const int64_t end = storage::WindowStart(now_ns - config_.lag_ns, every);
  int64_t cursor = storage::WindowStart(end - config_.backfill_ns, every);
  std::vector<std::pair<std::string, std::string>> defs;
  GPULSE_RETURN_IF_ERROR(db_->ListDefinitions(kCursorKind, &defs));
  for (const auto& [name, text] : defs) {
    if (name != config_.measurement) continue;
    int64_t kept = 0;
    if (std::from_chars(text.data(), text.data() + text.size(), kept).ec == std::errc()) {
      cursor = kept;
    }
  }
  // A day of buckets at a time: the ledger's cost grows with the range.
  const int64_t chunk = std::max(every, kDay / every * every);
  while (cursor < end) {
    {
      MutexLock l(&mu_);
      if (stopping_) return Status::Cancelled("stopping");
    }
    const int64_t until = std::min(end, cursor + chunk);
    query::LedgerOptions lo;
    lo.start_ns = cursor;
    lo.end_ns = until;
    lo.every_ns = every;
    lo.by = kBy;
    lo.known_until_ns = now_ns;
    query::Ledger ledger;
    GPULSE_RETURN_IF_ERROR(query::BuildLedger(db_, lo, &ledger));
    std::vector<Point> points;
    for (const query::LedgerRow& row : ledger.rows) {
      Point p;
      p.measurement = config_.measurement;
      if (!config_.database.empty()) p.tags.push_back({"db", config_.database});
      for (size_t k = 0; k < kBy.size(); ++k) {
        if (!row.group[k].empty()) p.tags.push_back({kBy[k], row.group[k]});
      }
      p.fields.push_back({"capacity", row.Capacity()});
      for (size_t l = 0; l < query::kLossCount; ++l) {
        p.fields.push_back(
            {std::string(query::LossName(static_cast<query::Loss>(l))), row.minutes[l]});
      }
      p.timestamp_ns = row.bucket_ns + every - kSecond;
      points.push_back(std::move(p));
    }
    if (!points.empty()) GPULSE_RETURN_IF_ERROR(db_->Write(points));
    if (rows != nullptr) *rows += points.size();
    GPULSE_RETURN_IF_ERROR(
        db_->PutDefinition(kCursorKind, config_.measurement, std::to_string(until)));
    cursor = until;
  }
  return Status::Ok();
}

}  // namespace gpulse::server
