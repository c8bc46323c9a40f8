#include "storage/wal.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "storage/wal_reader.h"

namespace gpulse::storage {

namespace {

Status ClosedError(const std::string& dir) {
  return Status::InvalidArgument("wal " + dir + " is closed");
}

bool AllZero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

std::string HeldDir(const std::string& dir) { return dir + "/held"; }

std::string ParentDir(const std::string& dir) {
  size_t slash = dir.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return dir.substr(0, slash);
}

}  // namespace

std::string Wal::SegmentPath(const std::string& dir, uint64_t segment) {
  char name[32];
  std::snprintf(name, sizeof(name), "%08llu.log", static_cast<unsigned long long>(segment));
  return dir + "/" + name;
}

bool Wal::ParseSegmentName(std::string_view name, uint64_t* segment) {
  constexpr std::string_view kSuffix = ".log";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return false;
  std::string_view stem = name.substr(0, name.size() - kSuffix.size());
  if (stem.size() > 20 ||
      !std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  unsigned long long value = std::strtoull(std::string(stem).c_str(), nullptr, 10);
  // Only the exact spelling SegmentPath produces, so "7.log" or "000000007.log"
  // (another tool's file) is never mistaken for a segment.
  char canonical[32];
  std::snprintf(canonical, sizeof(canonical), "%08llu", value);
  if (stem != canonical) return false;
  *segment = value;
  return true;
}

Wal::Wal(Env* env, std::string dir, const WalOptions& options)
    : env_(env), dir_(std::move(dir)), options_(options) {}

Wal::~Wal() = default;

Status Wal::Open(Env* env, const std::string& dir, const WalOptions& options,
                 const std::function<Status(std::string_view record)>& apply,
                 WalReplayReport* report, std::unique_ptr<Wal>* wal) {
  wal->reset();
  WalReplayReport unused;
  if (report == nullptr) report = &unused;
  *report = WalReplayReport();

  bool existed = env->FileExists(dir);
  GPULSE_RETURN_IF_ERROR(env->CreateDirIfMissing(dir));
  // A new directory's own entry must survive a crash along with its segments.
  if (!existed) GPULSE_RETURN_IF_ERROR(env->SyncDir(ParentDir(dir)));

  std::vector<std::string> names;
  GPULSE_RETURN_IF_ERROR(env->GetChildren(dir, &names));
  std::vector<uint64_t> segments;
  for (const std::string& name : names) {
    uint64_t number;
    if (ParseSegmentName(name, &number)) segments.push_back(number);
  }
  std::sort(segments.begin(), segments.end());

  std::unique_ptr<Wal> result(new Wal(env, dir, options));
  // Held segments are the followers' alone: never replayed, but counted so
  // that a new segment is numbered above them too.
  uint64_t next_segment = segments.empty() ? 1 : segments.back() + 1;
  if (env->FileExists(HeldDir(dir))) {
    GPULSE_RETURN_IF_ERROR(env->GetChildren(HeldDir(dir), &names));
    MutexLock lock(&result->mu_);
    for (const std::string& name : names) {
      uint64_t number, size;
      if (!ParseSegmentName(name, &number)) continue;
      GPULSE_RETURN_IF_ERROR(env->GetFileSize(SegmentPath(HeldDir(dir), number), &size));
      result->held_sizes_[number] = size;
      next_segment = std::max(next_segment, number + 1);
    }
  }
  GPULSE_RETURN_IF_ERROR(result->Replay(segments, apply, report));
  GPULSE_RETURN_IF_ERROR(result->SetHold(options.hold));
  {
    MutexLock lock(&result->mu_);
    uint64_t live = 0;
    const uint64_t* last_with_data = nullptr;
    for (const auto& [number, size] : result->segment_sizes_) {
      live += size;
      if (size > 0) last_with_data = &number;
    }
    // A process that crashed (the machine did not) leaves its last segment's
    // tail unsynced in the page cache; it was just replayed as if durable. Sync
    // it before a newer segment gets data, or a later power loss could tear it
    // behind a surviving newer segment, which replay must call Corruption.
    if (last_with_data != nullptr) {
      GPULSE_RETURN_IF_ERROR(env->SyncFile(SegmentPath(dir, *last_with_data)));
    }
    result->appended_ = live;
    result->synced_ = live;
    GPULSE_RETURN_IF_ERROR(result->StartSegmentLocked(next_segment));
  }
  *wal = std::move(result);
  return Status::Ok();
}

Status Wal::Replay(const std::vector<uint64_t>& segments,
                   const std::function<Status(std::string_view record)>& apply,
                   WalReplayReport* report) {
  // Runs inside Open before the Wal is shared; mu_ is taken where members
  // it guards are touched, uncontended, as the analysis checks.
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string path = SegmentPath(dir_, segments[i]);
    std::string contents;
    GPULSE_RETURN_IF_ERROR(env_->ReadFileToString(path, &contents));
    ++report->segments;
    WalReader reader(contents);
    std::string_view record;
    bool damaged = false;
    while (true) {
      while (reader.Next(&record)) {
        if (apply) GPULSE_RETURN_IF_ERROR(apply(record));
        ++report->records;
        report->bytes += WalWriter::FramedSize(record.size());
      }
      if (!reader.stopped_early()) break;
      const uint64_t bad_at = reader.good_offset();
      const std::string reason = reader.reason();
      uint64_t skipped = 0;
      // A search that checksums more than a few times the segment is over
      // garbage full of plausible headers: give up there, as at a torn tail.
      if (!reader.Resync(8 * contents.size() + (1 << 20), &skipped)) break;
      damaged = true;
      report->damaged_bytes += skipped;
      report->damage.push_back(path + " offset " + std::to_string(bad_at) + ": " + reason +
                               "; skipped " + std::to_string(skipped) +
                               " bytes to the next good record");
    }
    {
      MutexLock lock(&mu_);
      segment_sizes_[segments[i]] = reader.good_offset();
    }
    if (reader.stopped_early()) {
      bool later_data = false;
      GPULSE_RETURN_IF_ERROR(LaterSegmentsHoldData(segments, i, &later_data));
      if (!later_data) {
        if (damaged) GPULSE_RETURN_IF_ERROR(KeepAside(segments[i], contents));
        return CutTail(segments, i, contents.size(), reader.good_offset(), reader.reason(), report);
      }
      // Not a torn tail: this segment was synced before the next one got a
      // byte. What is left of it is lost; the later segments still replay.
      const uint64_t lost = contents.size() - reader.good_offset();
      damaged = true;
      report->damaged_bytes += lost;
      report->damage.push_back(path + " offset " + std::to_string(reader.good_offset()) + ": " +
                               reader.reason() + "; lost the last " + std::to_string(lost) +
                               " bytes of the segment (a later segment holds data)");
      MutexLock lock(&mu_);
      segment_sizes_[segments[i]] = contents.size();
    }
    if (damaged) GPULSE_RETURN_IF_ERROR(KeepAside(segments[i], contents));
  }
  return Status::Ok();
}

Status Wal::LaterSegmentsHoldData(const std::vector<uint64_t>& segments, size_t index, bool* data) {
  *data = false;
  for (size_t j = index + 1; j < segments.size() && !*data; ++j) {
    const std::string later = SegmentPath(dir_, segments[j]);
    uint64_t size = 0;
    GPULSE_RETURN_IF_ERROR(env_->GetFileSize(later, &size));
    if (size == 0) continue;
    std::string contents;
    GPULSE_RETURN_IF_ERROR(env_->ReadFileToString(later, &contents));
    *data = !AllZero(contents);
  }
  return Status::Ok();
}

Status Wal::KeepAside(uint64_t segment, std::string_view contents) {
  const std::string aside = dir_ + "/damaged";
  const std::string name = SegmentPath(aside, segment);
  if (env_->FileExists(name)) return Status::Ok();  // kept at an earlier Open
  GPULSE_RETURN_IF_ERROR(env_->CreateDirIfMissing(aside));
  std::unique_ptr<WritableFile> file;
  GPULSE_RETURN_IF_ERROR(env_->NewWritableFile(name + ".tmp", &file));
  GPULSE_RETURN_IF_ERROR(file->Append(contents));
  GPULSE_RETURN_IF_ERROR(file->Sync());
  GPULSE_RETURN_IF_ERROR(file->Close());
  GPULSE_RETURN_IF_ERROR(env_->RenameFile(name + ".tmp", name));
  return env_->SyncDir(aside);
}

Status Wal::CutTail(const std::vector<uint64_t>& segments, size_t index, uint64_t size,
                    uint64_t offset, const std::string& reason, WalReplayReport* report) {
  const std::string path = SegmentPath(dir_, segments[index]);
  const std::string where = path + " offset " + std::to_string(offset) + ": " + reason;
  // The caller found every later segment empty or all zeros
  // (LaterSegmentsHoldData): damage followed by data is not a torn tail.
  std::vector<uint64_t> later_sizes;
  for (size_t j = index + 1; j < segments.size(); ++j) {
    uint64_t later_size;
    GPULSE_RETURN_IF_ERROR(env_->GetFileSize(SegmentPath(dir_, segments[j]), &later_size));
    later_sizes.push_back(later_size);
  }

  GPULSE_RETURN_IF_ERROR(env_->TruncateFile(path, offset));
  uint64_t later_cut = 0;
  for (size_t j = index + 1; j < segments.size(); ++j) {
    uint64_t later_size = later_sizes[j - index - 1];
    if (later_size > 0) {
      GPULSE_RETURN_IF_ERROR(env_->TruncateFile(SegmentPath(dir_, segments[j]), 0));
    }
    later_cut += later_size;
    ++report->segments;
    MutexLock lock(&mu_);
    segment_sizes_[segments[j]] = 0;
  }
  report->dropped_bytes = (size - offset) + later_cut;
  report->dropped_reason = where + "; cut " + std::to_string(size - offset) + " bytes";
  if (later_cut > 0) {
    report->dropped_reason +=
        " and " + std::to_string(later_cut) + " zero bytes from later segments";
  }
  return Status::Ok();
}

Status Wal::SetErrorLocked(Status s) {
  if (!s.ok() && error_.ok()) error_ = s;
  return s;
}

void Wal::WaitForSyncLocked() {
  while (sync_in_progress_) sync_done_.Wait(&mu_);
}

Status Wal::StartSegmentLocked(uint64_t number) {
  // The new file first: on a full disk this fails with the old segment
  // still active and nothing changed, so writes resume once space returns.
  std::unique_ptr<WritableFile> file;
  const Status created = env_->NewWritableFile(SegmentPath(dir_, number), &file);
  if (created.IsNoSpace()) return created;
  GPULSE_RETURN_IF_ERROR(SetErrorLocked(created));
  if (file_ != nullptr) {
    // Seal the old segment before any byte goes to the new one: replay treats
    // damage in a non-last segment as corruption, which is only true if it
    // was durable before its successor existed.
    GPULSE_RETURN_IF_ERROR(SetErrorLocked(file_->Sync()));
    synced_ = appended_;
    Status s = file_->Close();
    writer_.reset();
    file_.reset();
    GPULSE_RETURN_IF_ERROR(SetErrorLocked(s));
  }
  // Without this a synced record in the new segment could vanish with the
  // segment's directory entry after a power loss.
  GPULSE_RETURN_IF_ERROR(SetErrorLocked(env_->SyncDir(dir_)));
  file_ = std::move(file);
  writer_ = std::make_unique<WalWriter>(file_.get());
  active_ = number;
  segment_sizes_[number] = 0;
  return Status::Ok();
}

Status Wal::Append(std::string_view record, uint64_t* end) {
  if (record.size() > wal_format::kMaxRecordBytes) {
    return Status::InvalidArgument("wal record of " + std::to_string(record.size()) +
                                   " bytes exceeds the limit of " +
                                   std::to_string(wal_format::kMaxRecordBytes));
  }
  const uint64_t framed = WalWriter::FramedSize(record.size());
  MutexLock lock(&mu_);
  while (true) {
    if (closed_) return ClosedError(dir_);
    if (!error_.ok()) return error_;
    uint64_t used = writer_->offset();
    if (used == 0 || used + framed <= options_.segment_bytes) break;
    // The file may be swapped only while nobody syncs it outside the lock.
    if (sync_in_progress_) {
      WaitForSyncLocked();
      continue;
    }
    GPULSE_RETURN_IF_ERROR(StartSegmentLocked(active_ + 1));
  }
  const uint64_t before = writer_->offset();
  Status s = writer_->AddRecord(record);
  if (s.IsNoSpace() && writer_->Rewind(before).ok()) {
    // The disk is full: the part of the frame that got out is taken back,
    // and the log goes on as if this Append never happened, so that a write
    // after space returns succeeds (and replay never meets the fragment).
    return s;
  }
  segment_sizes_[active_] = writer_->offset();
  appended_ += framed;
  if (!s.ok()) return SetErrorLocked(s);
  if (end != nullptr) *end = appended_;
  return Status::Ok();
}

Status Wal::SyncTo(uint64_t end) {
  MutexLock lock(&mu_);
  while (true) {
    if (closed_) return ClosedError(dir_);
    if (!error_.ok()) return error_;
    if (end > appended_) {
      return Status::InvalidArgument("wal sync to " + std::to_string(end) +
                                     " is past the appended end " + std::to_string(appended_));
    }
    if (synced_ >= end) return Status::Ok();
    if (sync_in_progress_) {
      // Group commit: the running sync may cover `end`; if not, the loop
      // starts the next one with everything appended meanwhile.
      WaitForSyncLocked();
      continue;
    }
    sync_in_progress_ = true;
    const uint64_t target = appended_;
    WritableFile* file = file_.get();
    lock.Unlock();
    const auto started = std::chrono::steady_clock::now();
    Status s = file->Sync();
    const auto took = std::chrono::steady_clock::now() - started;
    lock.Lock();
    sync_in_progress_ = false;
    ++sync_stats_.syncs;
    sync_stats_.sync_nanos += std::chrono::duration_cast<std::chrono::nanoseconds>(took).count();
    if (s.ok()) {
      synced_ = std::max(synced_, target);
    } else {
      (void)SetErrorLocked(s);  // sticky; the loop returns it
    }
    sync_done_.SignalAll();
  }
}

Status Wal::Sync() {
  uint64_t end;
  {
    MutexLock lock(&mu_);
    end = appended_;
  }
  return SyncTo(end);
}

Status Wal::Rotate(uint64_t* segment) {
  MutexLock lock(&mu_);
  while (true) {
    if (closed_) return ClosedError(dir_);
    if (!error_.ok()) return error_;
    if (!sync_in_progress_) break;
    WaitForSyncLocked();
  }
  GPULSE_RETURN_IF_ERROR(StartSegmentLocked(active_ + 1));
  if (segment != nullptr) *segment = active_;
  return Status::Ok();
}

Status Wal::RemoveSegmentsBefore(uint64_t segment) {
  std::vector<uint64_t> doomed, held;
  {
    MutexLock lock(&mu_);
    if (closed_) return ClosedError(dir_);
    if (segment > active_) {
      return Status::InvalidArgument("wal " + dir_ + ": cannot remove segments before " +
                                     std::to_string(segment) + ", above the active segment " +
                                     std::to_string(active_));
    }
    while (!segment_sizes_.empty() && segment_sizes_.begin()->first < segment) {
      const auto [number, size] = *segment_sizes_.begin();
      (number >= hold_ ? held : doomed).push_back(number);
      segment_sizes_.erase(segment_sizes_.begin());
    }
  }
  if (doomed.empty() && held.empty()) return Status::Ok();
  // Oldest first, so a failure part-way leaves a contiguous run of segments.
  for (uint64_t number : doomed) {
    GPULSE_RETURN_IF_ERROR(env_->RemoveFile(SegmentPath(dir_, number)));
  }
  if (!held.empty()) {
    // The segments stay whole and in order; a crash between the renames
    // leaves some still live, which replay applies again (harmless, as for
    // a crash before retirement).
    const std::string to = HeldDir(dir_);
    GPULSE_RETURN_IF_ERROR(env_->CreateDirIfMissing(to));
    for (uint64_t number : held) {
      GPULSE_RETURN_IF_ERROR(env_->RenameFile(SegmentPath(dir_, number), SegmentPath(to, number)));
      uint64_t size = 0;
      GPULSE_RETURN_IF_ERROR(env_->GetFileSize(SegmentPath(to, number), &size));
      MutexLock lock(&mu_);
      held_sizes_[number] = size;
    }
    GPULSE_RETURN_IF_ERROR(env_->SyncDir(to));
  }
  return env_->SyncDir(dir_);
}

Status Wal::SetHold(uint64_t segment) {
  std::vector<uint64_t> doomed;
  {
    MutexLock lock(&mu_);
    hold_ = segment;
    while (!held_sizes_.empty() && held_sizes_.begin()->first < segment) {
      doomed.push_back(held_sizes_.begin()->first);
      held_sizes_.erase(held_sizes_.begin());
    }
  }
  if (doomed.empty()) return Status::Ok();
  for (uint64_t number : doomed) {
    GPULSE_RETURN_IF_ERROR(env_->RemoveFile(SegmentPath(HeldDir(dir_), number)));
  }
  return env_->SyncDir(HeldDir(dir_));
}

Status Wal::Read(WalPosition from, uint64_t max_bytes,
                 const std::function<Status(std::string_view record, WalPosition next)>& each,
                 WalPosition* end) {
  *end = from;
  WalPosition at = from;
  uint64_t read = 0;
  std::string bytes;
  while (read < max_bytes) {
    // The first segment at or after `at`, held or live, and the bytes of it
    // that hold whole records.
    uint64_t extent = 0;
    bool sealed = false, is_held = false;
    {
      MutexLock lock(&mu_);
      if (closed_) return ClosedError(dir_);
      const auto live = segment_sizes_.lower_bound(at.segment);
      const auto kept = held_sizes_.lower_bound(at.segment);
      const bool have_live = live != segment_sizes_.end();
      const bool have_kept = kept != held_sizes_.end();
      if (!have_live && !have_kept) break;
      is_held = have_kept && (!have_live || kept->first < live->first);
      const auto [number, size] = is_held ? *kept : *live;
      if (number != at.segment) at = WalPosition{number, 0};
      extent = size;
      sealed = number != active_;
    }
    if (at.offset >= extent) {
      if (!sealed) break;  // caught up with the writer
      at = WalPosition{at.segment + 1, 0};
      *end = at;
      continue;
    }
    // A segment can move to DIR/held/ between the look-up and the read.
    const std::string live_path = SegmentPath(dir_, at.segment);
    const std::string held_path = SegmentPath(HeldDir(dir_), at.segment);
    const uint64_t left = extent - at.offset;
    const uint64_t want = std::min(left, std::max<uint64_t>(max_bytes - read, 64 << 10));
    Status got = env_->ReadFileRange(is_held ? held_path : live_path, at.offset, want, &bytes);
    if (!got.ok() && !is_held) got = env_->ReadFileRange(held_path, at.offset, want, &bytes);
    GPULSE_RETURN_IF_ERROR(got);
    WalReader reader(bytes);
    std::string_view record;
    uint64_t records = 0;
    while (true) {
      while (reader.Next(&record)) {
        ++records;
        read += WalWriter::FramedSize(record.size());
        const WalPosition next{at.segment, at.offset + reader.good_offset()};
        GPULSE_RETURN_IF_ERROR(each(record, next));
        *end = next;
        if (read >= max_bytes) return Status::Ok();
      }
      // A frame cut by `want` is read next time; damage is skipped.
      if (!reader.stopped_early() || bytes.size() < left) break;
      uint64_t skipped = 0;
      if (!reader.Resync(8 * bytes.size() + (1 << 20), &skipped)) break;
    }
    if (records == 0 && bytes.size() < left) {
      // One record longer than `want`: read it whole next round.
      max_bytes = read + left;
      continue;
    }
    const uint64_t done =
        reader.stopped_early() && bytes.size() >= left ? left : reader.good_offset();
    at.offset += done;
    if (reader.stopped_early() && bytes.size() >= left) *end = at;  // past the damaged rest
    if (done == left && !sealed) break;
  }
  return Status::Ok();
}

WalPosition Wal::end_position() const {
  MutexLock lock(&mu_);
  const auto it = segment_sizes_.find(active_);
  return WalPosition{active_, it == segment_sizes_.end() ? 0 : it->second};
}

uint64_t Wal::BytesFrom(WalPosition from) const {
  MutexLock lock(&mu_);
  uint64_t total = 0;
  for (const auto* sizes : {&held_sizes_, &segment_sizes_}) {
    for (auto it = sizes->lower_bound(from.segment); it != sizes->end(); ++it) {
      const uint64_t skip = it->first == from.segment ? std::min(from.offset, it->second) : 0;
      total += it->second - skip;
    }
  }
  return total;
}

uint64_t Wal::held_bytes() const {
  MutexLock lock(&mu_);
  uint64_t total = 0;
  for (const auto& [number, size] : held_sizes_) total += size;
  return total;
}

WalSyncStats Wal::sync_stats() const {
  MutexLock lock(&mu_);
  return sync_stats_;
}

uint64_t Wal::active_segment() const {
  MutexLock lock(&mu_);
  return active_;
}

uint64_t Wal::total_bytes() const {
  MutexLock lock(&mu_);
  uint64_t total = 0;
  for (const auto& [number, size] : segment_sizes_) total += size;
  return total;
}

Status Wal::Close() {
  MutexLock lock(&mu_);
  WaitForSyncLocked();
  if (closed_) return ClosedError(dir_);
  closed_ = true;
  Status s = error_;
  if (file_ != nullptr) {
    if (s.ok()) s = file_->Sync();
    if (s.ok()) synced_ = appended_;
    Status c = file_->Close();
    if (s.ok()) s = c;
    writer_.reset();
    file_.reset();
  }
  return s;
}

}  // namespace gpulse::storage
