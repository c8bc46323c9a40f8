// Followers of the write-ahead log (gpulse.h, Db::FollowLog): named positions
// kept as definitions of kind kLogFollowerKind ("SEGMENT OFFSET"), and the
// hold they put on the WAL's retirement (storage/wal.h, SetHold): segments
// the flush is done with but a follower has not read move to wal/held/.

#include <charconv>

#include "engine/db_impl.h"
#include "engine/wal_batch.h"

namespace gpulse::engine {

namespace {

constexpr std::string_view kLogFollowerKind = "log_follower";

std::string PositionText(LogPosition p) {
  return std::to_string(p.segment) + " " + std::to_string(p.offset);
}

bool ParsePosition(std::string_view text, LogPosition* p) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return false;
  const char* end = text.data() + text.size();
  const auto seg = std::from_chars(text.data(), text.data() + space, p->segment);
  const auto off = std::from_chars(text.data() + space + 1, end, p->offset);
  return seg.ec == std::errc() && seg.ptr == text.data() + space && off.ec == std::errc() &&
         off.ptr == end;
}

Status NoFollower(std::string_view name) {
  return Status::NotFound("no log follower '" + std::string(name) + "'");
}

storage::WalPosition ToWal(LogPosition p) { return {p.segment, p.offset}; }
LogPosition FromWal(storage::WalPosition p) { return {p.segment, p.offset}; }

}  // namespace

Status DbImpl::LoadFollowers() {
  std::vector<std::pair<std::string, std::string>> defs;
  GPULSE_RETURN_IF_ERROR(ScanDefinitions(kLogFollowerKind, &defs));
  MutexLock l(&followers_mu_);
  followers_.clear();
  for (const auto& [name, text] : defs) {
    LogPosition p;
    if (!ParsePosition(text, &p)) {
      return Status::Corruption(path_ + "/store: log follower '" + name + "' has position '" +
                                text + "'");
    }
    followers_[name] = p;
  }
  return Status::Ok();
}

uint64_t DbImpl::LowestFollowedSegmentLocked() const {
  uint64_t lowest = UINT64_MAX;
  for (const auto& [name, p] : followers_) lowest = std::min(lowest, p.segment);
  return lowest;
}

Status DbImpl::FollowLog(std::string_view name, LogPosition* position) {
  if (name.empty() || name.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("a log follower's name is empty or holds a NUL byte");
  }
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  MutexLock l(&followers_mu_);
  if (const auto it = followers_.find(name); it != followers_.end()) {
    *position = it->second;
    return Status::Ok();
  }
  // Hold the active segment before taking the end: a flush that retires
  // segments after this keeps the one the end lies in.
  GPULSE_RETURN_IF_ERROR(
      wal_->SetHold(std::min(LowestFollowedSegmentLocked(), wal_->active_segment())));
  const LogPosition end = FromWal(wal_->end_position());
  const Status put = StoreDefinition(kLogFollowerKind, name, PositionText(end));
  if (!put.ok()) {
    (void)wal_->SetHold(LowestFollowedSegmentLocked());
    return put;
  }
  followers_.emplace(std::string(name), end);
  *position = end;
  return Status::Ok();
}

Status DbImpl::AdvanceLog(std::string_view name, LogPosition position) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  MutexLock l(&followers_mu_);
  const auto it = followers_.find(name);
  if (it == followers_.end()) return NoFollower(name);
  if (position == it->second) return Status::Ok();
  GPULSE_RETURN_IF_ERROR(StoreDefinition(kLogFollowerKind, name, PositionText(position)));
  it->second = position;
  return wal_->SetHold(LowestFollowedSegmentLocked());
}

Status DbImpl::UnfollowLog(std::string_view name) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  MutexLock l(&followers_mu_);
  const auto it = followers_.find(name);
  if (it == followers_.end()) return NoFollower(name);
  GPULSE_RETURN_IF_ERROR(EraseDefinition(kLogFollowerKind, name));
  followers_.erase(it);
  return wal_->SetHold(LowestFollowedSegmentLocked());
}

Status DbImpl::LogFollowers(std::vector<std::pair<std::string, LogPosition>>* out) {
  out->clear();
  MutexLock l(&followers_mu_);
  for (const auto& [name, p] : followers_) out->emplace_back(name, p);
  return Status::Ok();
}

Status DbImpl::ReadLog(
    LogPosition from, uint64_t max_bytes,
    const std::function<Status(std::span<const LoggedPoint> points, LogPosition next)>& each,
    LogPosition* end) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  DecodedBatch batch;
  storage::WalPosition reached;
  const Status s = wal_->Read(
      ToWal(from), max_bytes,
      [&](std::string_view record, storage::WalPosition next) {
        if (WalRecordKind(record) != kWalBatchV1) return Status::Ok();  // a delete
        GPULSE_RETURN_IF_ERROR(
            DecodeWalBatch(record, &batch)
                .WithContext(path_ + "/wal segment " + std::to_string(next.segment)));
        return each(batch.points, FromWal(next));
      },
      &reached);
  *end = FromWal(reached);
  return s;
}

uint64_t DbImpl::LogBytesFrom(LogPosition from) {
  const auto open = HoldOpen();
  if (!CheckOpen().ok()) return 0;
  return wal_->BytesFrom(ToWal(from));
}

}  // namespace gpulse::engine
