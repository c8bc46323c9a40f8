// The GPU-minute ledger's rules (ledger_builder.h; docs/metric-framework.md):
// each GPU-minute to productive or exactly one loss, its bucket and group,
// and the contributors it is traced to.

#include "query/fleet/ledger_builder.h"

namespace gpulse::query::ledger {

uint32_t LedgerBuilder::Intern(size_t dimension, std::string_view value) {
  std::string key(1, static_cast<char>(dimension));
  key += value;
  const auto [it, added] = ids_.try_emplace(std::move(key), static_cast<uint32_t>(names_.size()));
  if (added)
    names_.emplace_back(
        dimension == kClassDimension ? "workload_class" : kContributorDimensions[dimension],
        std::string(value));
  return it->second;
}

int64_t LedgerBuilder::Bucket(int64_t ts) const {
  return o_.bucket_of      ? o_.bucket_of(ts)
         : o_.every_ns > 0 ? range_start_ + (ts - range_start_) / o_.every_ns * o_.every_ns
                           : range_start_;
}

LedgerRow& LedgerBuilder::Cell(const std::vector<std::string>& group, int64_t ts) {
  // A day to keep is built in rows (hours, or ten minutes), bucketed when it is added.
  const int64_t bucket = keeping_ ? ts - (((ts % row_ns_) + row_ns_) % row_ns_) : Bucket(ts);
  // Consecutive minutes of a GPU mostly land in the same cell.
  if (last_ != nullptr && last_->bucket_ns == bucket && last_->group == group) return *last_;
  LedgerRow& row = (keeping_ ? day_cells_ : cells_)[{group, bucket}];
  row.group = group;
  row.bucket_ns = bucket;
  last_ = &row;
  return row;
}

// A minute of `job` on a healthy GPU: kept and advancing is productive (less
// the data and network shares above baseline); work later thrown away goes
// to its failure's cause; no step is software's.
std::array<double, kLossCount> LedgerBuilder::Allocated(const std::string& job, int64_t t,
                                                        bool healthy, const JobRecord** record,
                                                        const Ended** failed) {
  std::array<double, kLossCount> out{};
  *failed = nullptr;
  // A GPU's minutes mostly hold the job of the minute before.
  if (found_job_ != job) {
    const auto it = jobs_.find(job);
    found_job_ = job;
    found_ = it == jobs_.end() ? nullptr : &it->second;
  }
  *record = found_;
  if (!healthy) {
    out[static_cast<size_t>(Loss::kHardware)] = 1;
    return out;
  }
  if (found_ == nullptr) {  // no steps and no outcome known: it did not visibly advance
    out[static_cast<size_t>(Loss::kSoftware)] = 1;
    return out;
  }
  const JobRecord& r = *found_;
  // The attempt running at t is the first to end after it.
  const auto end = std::upper_bound(r.ends.begin(), r.ends.end(), t,
                                    [](int64_t v, const Ended& e) { return v < e.end_ns; });
  if (end != r.ends.end() &&
      (end->outcome == Outcome::kFailed || end->outcome == Outcome::kPreempted) &&
      t >= end->last_checkpoint_ns) {
    out[static_cast<size_t>(end->cause)] = 1;
    *failed = &*end;
    return out;
  }
  const auto step =
      std::lower_bound(r.steps.begin(), r.steps.end(), t,
                       [](const StepMinute& s, int64_t v) { return s.minute_ns < v; });
  bool advanced = false;
  if (step != r.steps.end() && step->minute_ns == t) {
    if (step != r.steps.begin() && std::prev(step)->minute_ns == t - kMinuteNs) {
      advanced = step->step > std::prev(step)->step;
    } else {
      advanced = step->timed;  // the attempt's first minute
    }
  }
  if (!advanced) {
    out[static_cast<size_t>(Loss::kSoftware)] = 1;
    return out;
  }
  const auto base = baseline_.find(BaselineKey(r));
  double data = 0, sync = 0;
  if (base != baseline_.end()) {
    data = std::max(0.0, step->data_share - base->second.first);
    sync = std::max(0.0, step->sync_share - base->second.second);
  }
  const double waste = std::min(1.0, data + sync);
  if (waste > 0) {
    out[static_cast<size_t>(Loss::kDataIo)] = data / (data + sync) * waste;
    out[static_cast<size_t>(Loss::kNetwork)] = sync / (data + sync) * waste;
  }
  out[static_cast<size_t>(Loss::kProductive)] = 1 - waste;
  return out;
}

// A GPU idle at `t` whose last job (there until `last_t`) failed or was
// preempted is idle because of that failure until the job is resubmitted,
// or, when it is not, until the GPU is given other work; for at most as long
// as the job had run, over all its attempts (the best guess of the work it
// still had: a job that ran for hours had hours left, one that died in its
// first minute held the GPU for a minute).
const Ended* LedgerBuilder::RestartGap(const JobRecord& r, int64_t last_t, int64_t t) {
  const auto end = std::upper_bound(r.ends.begin(), r.ends.end(), last_t,
                                    [](int64_t v, const Ended& e) { return v < e.end_ns; });
  if (end == r.ends.end()) return nullptr;
  // Events carry nanoseconds within their minute (docs/fleet-schema.md).
  const int64_t ended = end->end_ns - (((end->end_ns % kMinuteNs) + kMinuteNs) % kMinuteNs);
  if (ended > t) return nullptr;
  if (end->outcome != Outcome::kFailed && end->outcome != Outcome::kPreempted) return nullptr;
  const auto again = std::lower_bound(r.resubmits.begin(), r.resubmits.end(), end->end_ns);
  if (again != r.resubmits.end() && *again <= t) return nullptr;
  const int64_t ran = r.starts.empty() || r.starts.front() > last_t
                          ? kQueueLookbackNs  // started before the look-back
                          : end->end_ns - r.starts.front();
  if (t - ended >= ran) return nullptr;
  return &*end;
}

// A job killed by one faulty GPU loses minutes on all of its GPUs; the
// loss is that GPU's (and its node's), not spread thin over the job's 64
// healthy ones, where no contributor would stand out. The culprits are the
// GPUs the job held that were unhealthy in the attempt's last hour; with
// none seen, the minutes stay where they were.
void LedgerBuilder::TraceHardwareFailures() {
  constexpr int64_t kCulpritWindowNs = 60 * kMinuteNs;
  constexpr size_t kHardware = static_cast<size_t>(Loss::kHardware);
  std::vector<std::pair<uint32_t, uint32_t>> culprits;
  for (const auto& [key, minutes] : deferred_) {
    const auto& [row, job, end_ns, node, gpu] = key;
    culprits.clear();
    const auto it = unhealthy_.find(job);
    if (it != unhealthy_.end()) {
      for (const Unhealthy& u : it->second) {
        if (u.t <= end_ns && u.t > end_ns - kCulpritWindowNs) culprits.push_back({u.node, u.gpu});
      }
    }
    std::sort(culprits.begin(), culprits.end());
    culprits.erase(std::unique(culprits.begin(), culprits.end()), culprits.end());
    auto& tally = row->contributors[kHardware];
    if (culprits.empty()) {
      tally[node] += minutes;
      tally[gpu] += minutes;
      continue;
    }
    for (const auto& [culprit_node, culprit_gpu] : culprits) {
      tally[culprit_node] += minutes / static_cast<double>(culprits.size());
      tally[culprit_gpu] += minutes / static_cast<double>(culprits.size());
    }
  }
}

// A scheduler that places what fits starts a waiting job within the minute
// a node has room for it; one whose order or placement went wrong (no
// backfill, jobs spread so that no node keeps room for a wide one) leaves
// jobs waiting beside idle GPUs. Counted by minute, not by job, since one
// stall holds many jobs at once: each region's minutes, and those in which a
// job waited a whole minute (not the one it came in or the one it left)
// beside a node of its region with at least the GPUs it asked for. The
// minutes before the range are not looked at.
void LedgerBuilder::TraceQueueWaits() {
  const bool by_region = o_.by.size() == 1 && o_.by[0] == "region";
  if (!o_.by.empty() && !by_region) return;
  // A node whose planned maintenance begins within this long may be held
  // back from jobs that would run into it (Slurm's reservations do that,
  // and the simulator drains a node for up to 12 hours): its idle GPUs are
  // not room.
  constexpr int32_t kDrainMinutes = 12 * 60;
  // By region: the most idle GPUs one node had, by minute.
  std::unordered_map<uint32_t, std::vector<uint16_t>> most;
  for (const auto& [node, room] : room_) {
    std::vector<uint16_t>& top = most[room.region];
    if (top.empty()) top.assign(static_cast<size_t>(minutes_), 0);
    const auto n = nodes_.find(names_[node].second);
    int32_t next_window = INT32_MAX;  // the node's first maintenance minute from m on
    for (int32_t m = minutes_ - 1; m >= 0; --m) {
      const size_t at = static_cast<size_t>(m);
      if (n != nodes_.end() && n->second.maintenance[at]) next_window = m;
      if (next_window - m > kDrainMinutes) top[at] = std::max(top[at], room.idle[at]);
    }
  }
  // By region with GPUs: the minutes a job waited beside room.
  std::map<uint32_t, std::vector<uint8_t>> beside_room;
  for (const auto& [region, top] : most) beside_room[region].assign(top.size(), 0);
  const int32_t first = range_start_ > start_ ? MinuteOf(range_start_) : 0;
  for (const QueueStay& stay : stays_) {
    const auto top = most.find(stay.region);
    if (top == most.end() || stay.gpus <= 0) continue;
    std::vector<uint8_t>& minutes = beside_room[stay.region];
    for (int32_t m = std::max(stay.from + 1, first); m < stay.to; ++m) {
      const size_t at = static_cast<size_t>(m);
      if (stay.gpus <= top->second[at]) minutes[at] = 1;
    }
  }
  for (const auto& [region, minutes] : beside_room) {
    const std::vector<std::string> group =
        by_region ? std::vector<std::string>{names_[region].second} : std::vector<std::string>{};
    for (int32_t m = first; m < minutes_; ++m) {
      LedgerRow::QueueWaits& waits = Cell(group, start_ + m * kMinuteNs).queue_waits[region];
      waits.minutes += 1;
      waits.beside_room += minutes[static_cast<size_t>(m)];
    }
  }
}

Status LedgerBuilder::LastJobBefore(const Series& gpu, std::string* job, int64_t* t, bool* found) {
  *found = false;
  std::vector<Column> cols;
  const std::string field[] = {"job"};
  GPULSE_RETURN_IF_ERROR(db_->ReadSeries(gpu, field, day_, start_, &cols));
  if (cols[0].type != FieldType::kString) return Status::Ok();
  for (size_t i = cols[0].size(); i-- > 0;) {
    if (cols[0].strings[i].empty()) continue;
    *job = cols[0].strings[i];
    *t = cols[0].ts[i];
    *found = true;
    break;
  }
  return Status::Ok();
}

// One GPU's walk through the day's minutes (Classify): where it is, its
// columns' cursors, its group, and the job it held last.
struct GpuWalk {
  GpuWalk(const std::vector<Column>& cols, const Column* team_column)
      : job(cols[0]),
        xid(cols[1]),
        throttle(cols[2]),
        team(team_column),
        team_at(team_column != nullptr ? *team_column : cols[0]) {}

  std::string node, region;
  const std::vector<std::pair<int64_t, double>>* prices = nullptr;
  size_t price_at = 0;  // prices[price_at - 1] holds at t (0: none yet)
  const NodeMinutes* n = nullptr;
  const std::vector<int32_t>* pending = nullptr;  // the region's jobs waiting, by minute
  // The group's tag part is fixed for the series; attribution varies by minute.
  std::vector<std::string> group;
  std::vector<std::pair<size_t, const Column*>> per_minute;  // group index, its column
  std::vector<Cursor> attribution;
  Cursor job, xid, throttle;
  bool hardware_xid = false;  // the minute's XID is a hardware one
  // Contributor ids, in kContributorDimensions order but queue: where the
  // GPU is, then per minute its driver, the job's image and framework, team.
  std::vector<uint32_t> ids;
  const Column* team;
  Cursor team_at;
  std::vector<uint32_t> links;  // troubled links a network loss crossed
  // The job that held this GPU last (its JobKey), for the idle minutes
  // after it failed; and its name.
  const std::string* last_job = nullptr;
  std::string job_key, job_name;
  const JobRecord* last_record = nullptr;
  int64_t last_t = 0;
  std::string job_before;  // the last job before start_, looked up once
  bool looked_back = false;
  uint32_t last_team = kNone;
  std::vector<uint16_t>* idle = nullptr;  // its node's idle GPUs by minute, with contributors
  // With cohorts: the job that held the minute (running, or waiting to
  // come back after it failed), and the id of the last one's workload class.
  const JobRecord* held = nullptr;
  const JobRecord* class_of = nullptr;
  uint32_t class_id = kNone;
};

void LedgerBuilder::StartWalk(const Series& gpu, const std::vector<Column>& cols, GpuWalk* w) {
  w->node = TagOf(gpu, "node");
  w->region = TagOf(gpu, "region");
  const auto price_it = prices_.find(w->region + '\0' + TagOf(gpu, "sku"));
  w->prices = price_it == prices_.end() ? nullptr : &price_it->second;
  const auto node_it = nodes_.find(w->node);
  w->n = node_it == nodes_.end() ? nullptr : &node_it->second;
  const auto pending_it = pending_.find(w->region);
  w->pending = pending_it == pending_.end() ? nullptr : &pending_it->second;
  w->group.resize(o_.by.size());
  for (size_t k = 0; k < o_.by.size(); ++k) {
    const auto f = std::find(fields_.begin(), fields_.end(), o_.by[k]);
    if (f != fields_.end()) {
      w->per_minute.push_back({k, &cols[static_cast<size_t>(f - fields_.begin())]});
    } else {
      w->group[k] = TagOf(gpu, o_.by[k]);
    }
  }
  for (const auto& [k, col] : w->per_minute) w->attribution.emplace_back(*col);
  if (o_.contributors) {
    const std::string name = w->node + "/" + TagOf(gpu, "gpu");
    w->ids = {Intern(0, w->region),
              Intern(1, TagOf(gpu, "cluster")),
              Intern(2, w->node),
              Intern(3, name),
              w->n != nullptr && w->n->link != kNone ? w->n->link : Intern(4, w->node + "/ib0"),
              kNone,
              kNone,
              kNone,
              kNone};
    NodeRoom& room = room_[w->ids[2]];
    if (room.idle.empty()) {
      room.region = w->ids[0];
      room.idle.assign(static_cast<size_t>(minutes_), 0);
    }
    w->idle = &room.idle;
  } else if (o_.cohorts) {
    w->ids.assign(9, kNone);  // the driver (5) and image (6) only
  }
}

// A minute the GPU reported: allocated (the job's minute, by Allocated),
// unhealthy, or idle (a failed job's restart gap, scheduling or slack).
Status LedgerBuilder::ReportedMinute(const Series& gpu, const std::vector<Column>& cols, GpuWalk* w,
                                     int64_t t, std::array<double, kLossCount>* add,
                                     const Ended** failed) {
  w->hardware_xid =
      w->xid.At(t) && HardwareXid(static_cast<int64_t>(NumberAt(cols[1], w->xid.index())));
  const bool healthy =
      !w->hardware_xid &&
      !(w->throttle.At(t) &&
        (static_cast<int64_t>(NumberAt(cols[2], w->throttle.index())) & kHardwareThrottle) != 0);
  if (w->job.At(t) && cols[0].type == FieldType::kString &&
      !cols[0].strings[w->job.index()].empty()) {
    const JobRecord* record = nullptr;
    const std::string& name = cols[0].strings[w->job.index()];
    if (w->last_job == nullptr || w->job_name != name) {
      if (keeping_ && w->last_job != nullptr) NoteJob(*w->last_job, w->last_t);
      w->job_name = name;
      w->job_key = JobKey(w->region, name);
      if (keeping_) NoteJob(w->job_key, t);
    }
    w->last_job = &w->job_key;
    *add = Allocated(*w->last_job, t, healthy, &record, failed);
    w->last_record = record;
    w->last_t = t;
    if (o_.contributors && !healthy) unhealthy_[*w->last_job].push_back({t, w->ids[2], w->ids[3]});
    w->held = record;
    if (Cohorts()) w->ids[6] = record != nullptr ? record->image : kNone;
    if (o_.contributors) {
      w->ids[7] = record != nullptr ? record->framework : kNone;
      w->ids[8] = w->last_team =
          w->team != nullptr && w->team->type == FieldType::kString && w->team_at.At(t)
              ? Intern(9, w->team->strings[w->team_at.index()])
              : kNone;
    }
    return Status::Ok();
  }
  if (!healthy) {
    (*add)[static_cast<size_t>(Loss::kHardware)] = 1;
    return Status::Ok();
  }
  // Idle. Classified from after the day's start, the GPU's last job before
  // is looked up the first time it matters.
  if (w->last_job == nullptr && !w->looked_back && start_ > day_) {
    w->looked_back = true;
    bool found = false;
    GPULSE_RETURN_IF_ERROR(LastJobBefore(gpu, &w->job_before, &w->last_t, &found));
    if (found) {
      w->job_name = w->job_before;
      w->job_key = JobKey(w->region, w->job_before);
      w->last_job = &w->job_key;
      // Held before the span: a failure of it may change any of the span's
      // minutes on this GPU (its restart gap, or its minutes when it comes back).
      if (keeping_) NoteJob(w->job_key, w->last_t);
      const auto it = jobs_.find(w->job_key);
      w->last_record = it == jobs_.end() ? nullptr : &it->second;
    }
  }
  if (w->last_record != nullptr &&
      (*failed = RestartGap(*w->last_record, w->last_t, t)) != nullptr) {
    // Idle while its failed job comes back: the failure's cost.
    (*add)[static_cast<size_t>((*failed)->cause)] = 1;
    w->held = w->last_record;
    if (Cohorts()) w->ids[6] = w->last_record->image;
    if (o_.contributors) {
      w->ids[7] = w->last_record->framework;
      w->ids[8] = w->last_team;
    }
    return Status::Ok();
  }
  const int32_t m = MinuteOf(t);
  const bool waiting = w->pending != nullptr && (*w->pending)[m] > 0;
  (*add)[static_cast<size_t>(waiting ? Loss::kScheduling : Loss::kSlack)] = 1;
  return Status::Ok();
}

// A classified minute into its row: minutes by loss, cost, the attempt
// whose failure threw it away, and its contributors.
void LedgerBuilder::CountMinute(GpuWalk* w, int32_t m, int64_t t,
                                const std::array<double, kLossCount>& add, const Ended* failed) {
  LedgerRow& row = Cell(w->group, t);
  for (size_t l = 0; l < kLossCount; ++l) row.minutes[l] += add[l];
  if (w->prices != nullptr) {
    while (w->price_at < w->prices->size() && (*w->prices)[w->price_at].first <= t) ++w->price_at;
    if (w->price_at > 0) {
      row.cost_usd += (*w->prices)[w->price_at - 1].second;
      row.priced_minutes += 1;
    }
  }
  const uint64_t attempt_hash = failed == nullptr ? 0
                                                  : std::hash<std::string>()(*w->last_job) ^
                                                        static_cast<uint64_t>(failed->end_ns);
  if (failed != nullptr) {
    LedgerRow::FailedAttempt& attempt = row.failed_attempts[attempt_hash];
    attempt.loss = failed->cause;
    attempt.minutes += add[static_cast<size_t>(failed->cause)];
  }
  if (!o_.contributors) {
    if (o_.cohorts) CountCohorts(w, m, add, failed, attempt_hash, &row);
    return;
  }
  w->ids[5] = w->n != nullptr && !w->n->driver.empty() ? w->n->driver[m] : kNone;
  // An idle GPU is room for a waiting job (TraceQueueWaits).
  if (add[static_cast<size_t>(Loss::kScheduling)] > 0 ||
      add[static_cast<size_t>(Loss::kSlack)] > 0) {
    ++(*w->idle)[static_cast<size_t>(m)];
  }
  // The evidence: XIDs by GPU, troubled links, software failures by driver and image.
  if (w->hardware_xid) row.xid_minutes[w->ids[3]] += 1;
  if (w->n != nullptr && !w->n->troubled.empty() && w->n->troubled[m] != 0 && w->n->link != kNone)
    row.troubled_minutes[w->n->link] += 1;
  double capacity = 0;
  for (const double v : add) capacity += v;
  CountClass(w, capacity, failed, attempt_hash, &row);
  w->links.clear();
  // A network loss is the job's that held the GPU (running, or waiting to come back).
  if (add[static_cast<size_t>(Loss::kNetwork)] > 0 && w->last_record != nullptr)
    TroubledLinks(*w->last_record, t, m, &w->links);
  // A hardware failure's minutes wait for the GPU that failed.
  const bool placed = failed == nullptr || failed->cause != Loss::kHardware;
  Trace(add, w->ids, w->links, w->region, m, placed, &row);
  if (!placed) {
    deferred_[{&row, *w->last_job, failed->end_ns, w->ids[2], w->ids[3]}] +=
        add[static_cast<size_t>(Loss::kHardware)];
  }
  w->ids[6] = w->ids[7] = w->ids[8] = kNone;
  w->held = nullptr;
}

// The minute's work by workload class (LedgerRow::class_minutes), for the
// fleet and for its driver and image, and the software failure that threw
// it away, by cohort and by class.
void LedgerBuilder::CountClass(GpuWalk* w, double capacity, const Ended* failed,
                               uint64_t attempt_hash, LedgerRow* row) {
  if (w->held != w->class_of) {
    w->class_of = w->held;
    w->class_id = w->held == nullptr ? kNone : Intern(kClassDimension, w->held->workload_class);
  }
  row->class_minutes[w->class_id] += capacity;
  const bool software = failed != nullptr && failed->cause == Loss::kSoftware;
  if (software) row->software_failure_class[attempt_hash] = w->class_id;
  for (const size_t k : {size_t{5}, size_t{6}}) {
    if (w->ids[k] == kNone) continue;
    row->cohort_class_minutes[CohortClassKey(w->ids[k], w->class_id)] += capacity;
    if (software) row->software_failures[w->ids[k]].insert(attempt_hash);
  }
}

// The minute's driver and image (LedgerOptions::cohorts without contributors):
// their presence, and their work and software failures by class (CountClass).
void LedgerBuilder::CountCohorts(GpuWalk* w, int32_t m, const std::array<double, kLossCount>& add,
                                 const Ended* failed, uint64_t attempt_hash, LedgerRow* row) {
  w->ids[5] = w->n != nullptr && !w->n->driver.empty() ? w->n->driver[m] : kNone;
  double capacity = 0;
  for (const double v : add) capacity += v;
  for (const size_t k : {size_t{5}, size_t{6}}) {
    if (w->ids[k] != kNone) row->contributors[0][w->ids[k]] += capacity;
  }
  CountClass(w, capacity, failed, attempt_hash, row);
  w->ids[6] = kNone;
  w->held = nullptr;
}

// A GPU is capacity from its first report on: the days before its agent
// was installed, or before the GPU was added, are nobody's loss (counted
// unobserved, a fleet's history before it was watched read as a fleet whose
// agents were all down). A GPU that reported before and is silent now is
// unobserved or missing, as before.
Status LedgerBuilder::FirstReport(SeriesId id, const std::vector<Column>& cols, int64_t* from) {
  *from = start_;
  int64_t first = INT64_MAX;
  for (const size_t f : {size_t{0}, size_t{1}}) {  // job, xid: what makes a minute reported
    if (cols[f].size() > 0) first = std::min(first, cols[f].ts.front());
  }
  if (first <= start_) return Status::Ok();
  static const std::string kReported[] = {"job", "xid"};
  int64_t before_first = 0, before_last = 0;
  GPULSE_RETURN_IF_ERROR(
      db_->TimeExtent({&id, 1}, kReported, INT64_MIN, start_, &before_first, &before_last));
  if (before_first > before_last) *from = first;
  return Status::Ok();
}

Status LedgerBuilder::Classify(const Series& gpu, SeriesId id, const std::vector<Column>& cols) {
  int64_t from = 0;
  GPULSE_RETURN_IF_ERROR(FirstReport(id, cols, &from));
  if (from == INT64_MAX) return Status::Ok();
  const Column* team = nullptr;
  if (o_.contributors) {
    const auto f = std::find(fields_.begin(), fields_.end(), "team");
    if (f != fields_.end()) team = &cols[static_cast<size_t>(f - fields_.begin())];
  }
  GpuWalk w(cols, team);
  StartWalk(gpu, cols, &w);
  for (int32_t m = 0; m < minutes_; ++m) {
    const int64_t t = start_ + m * kMinuteNs;
    if (t < from) continue;                               // not yet in the fleet
    if (w.n != nullptr && w.n->maintenance[m]) continue;  // not capacity
    std::array<double, kLossCount> add{};
    const Ended* failed = nullptr;  // the attempt of *last_job whose failure lost the minute
    w.hardware_xid = false;
    const bool has_point = w.job.At(t) || w.xid.At(t);
    for (size_t a = 0; a < w.per_minute.size(); ++a) {
      const Column& col = *w.per_minute[a].second;
      w.group[w.per_minute[a].first] = w.attribution[a].At(t) && col.type == FieldType::kString
                                           ? col.strings[w.attribution[a].index()]
                                           : "";
    }
    if (!has_point) {
      // Silent: the whole node's agent (unobserved), or a GPU its node no
      // longer reports (hardware).
      const bool node_reported = w.n != nullptr && w.n->reported[m];
      add[static_cast<size_t>(node_reported ? Loss::kHardware : Loss::kUnobserved)] = 1;
    } else {
      GPULSE_RETURN_IF_ERROR(ReportedMinute(gpu, cols, &w, t, &add, &failed));
    }
    if (t < range_start_ && !keeping_) {  // read for the GPU's state only
      if (Cohorts()) w.ids[6] = w.ids[7] = w.ids[8] = kNone;
      w.held = nullptr;
      continue;
    }
    CountMinute(&w, m, t, add, failed);
  }
  if (keeping_ && w.last_job != nullptr) NoteJob(*w.last_job, w.last_t);
  return Status::Ok();
}

// Adds a minute's losses to its contributors; a scheduling loss to the
// queues that waited, in proportion to the GPUs they asked for.
void LedgerBuilder::Trace(const std::array<double, kLossCount>& add,
                          const std::vector<uint32_t>& ids, const std::vector<uint32_t>& links,
                          const std::string& region, int32_t m, bool placed, LedgerRow* row) {
  double capacity = 0;
  for (double v : add) capacity += v;
  for (uint32_t id : ids) {
    if (id != kNone) row->contributors[0][id] += capacity;
  }
  for (size_t l = 1; l < kLossCount; ++l) {
    if (add[l] <= 0) continue;
    auto& tally = row->contributors[l];
    for (size_t k = 0; k < ids.size(); ++k) {
      // A node's link explains network losses only; elsewhere it repeats the node.
      if (ids[k] == kNone || (k == 4 && static_cast<Loss>(l) != Loss::kNetwork)) continue;
      // A network loss goes to the troubled links the job crossed, if any.
      if (k == 4 && !links.empty()) continue;
      if ((k == 2 || k == 3) && !placed && static_cast<Loss>(l) == Loss::kHardware) continue;
      tally[ids[k]] += add[l];
    }
    if (static_cast<Loss>(l) == Loss::kNetwork) {
      for (uint32_t link : links) tally[link] += add[l] / static_cast<double>(links.size());
    }
    if (static_cast<Loss>(l) != Loss::kScheduling) continue;
    const auto it = demand_.find(region);
    if (it == demand_.end()) continue;
    double total = 0;
    for (const auto& [q, demand] : it->second) total += std::max(0, demand[m]);
    if (total <= 0) continue;
    for (const auto& [q, demand] : it->second) {
      if (demand[m] > 0) tally[Intern(8, q)] += add[l] * demand[m] / total;
    }
  }
}

}  // namespace gpulse::query::ledger
