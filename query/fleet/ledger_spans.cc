// The GPU-minute ledger by day (ledger_builder.h): whole settled hours kept
// as spans and reused while what they were built from holds (ledger_days.h),
// the rest built from the data.

#include "query/fleet/ledger_builder.h"

namespace gpulse::query::ledger {

// One day of the range: its whole hours, as far as what is asked knows
// them settled, from kept spans (kept now where there are none, or they no
// longer hold), and the minutes at the edges from the data. An hour is
// settled kSettleNs after its end: agents at minute grain deliver a minute
// late, and a span that a late point changes is built again whole.
Status LedgerBuilder::BuildDay(int64_t day) {
  constexpr int64_t kSettleNs = 5 * kMinuteNs;
  GPULSE_RETURN_IF_ERROR(Check());
  const int64_t from = std::max(day, range_start_), to = std::min(day + kDayNs, range_end_);
  const int64_t hours_from = from + (kHourNs - (((from % kHourNs) + kHourNs) % kHourNs)) % kHourNs;
  const int64_t settled = std::min(to, o_.known_until_ns - kSettleNs);
  const int64_t hours_to = settled - (((settled % kHourNs) + kHourNs) % kHourNs);
  if (!may_keep_ || hours_from >= hours_to || !WholeHours(hours_from, hours_to)) {
    return BuildSegment(day, from, to);
  }
  if (from < hours_from) GPULSE_RETURN_IF_ERROR(BuildSegment(day, from, hours_from));
  std::vector<std::shared_ptr<const LedgerSpan>> valid;
  for (const LedgerDays::Found& found : LedgerDays::Process().FindDay(db_, shape_, day)) {
    if (found.span->to_ns <= hours_from || found.span->from_ns >= hours_to) continue;
    bool reusable = false;
    GPULSE_RETURN_IF_ERROR(Reusable(found, &reusable));
    if (reusable) {
      valid.push_back(found.span);
    } else {
      LedgerDays::Process().Erase(db_, shape_, found.span->from_ns);
    }
  }
  // Hour by hour: from a kept span, or built up to the next one.
  std::vector<std::shared_ptr<const LedgerSpan>> used;
  size_t next = 0;  // valid spans are in hour order
  for (int64_t hour = hours_from; hour < hours_to;) {
    while (next < valid.size() && valid[next]->to_ns <= hour) ++next;
    std::shared_ptr<const LedgerSpan> span;
    if (next < valid.size() && valid[next]->from_ns <= hour) {
      span = valid[next];
      ++spans_reused_;
    } else {
      const int64_t until = next < valid.size() ? valid[next]->from_ns : hours_to;
      std::shared_ptr<LedgerSpan> built;
      GPULSE_RETURN_IF_ERROR(BuildSpan(day, hour, until, &built));
      span = std::move(built);
      ++spans_built_;
    }
    const int64_t until = std::min(span->to_ns, hours_to);
    AddSpan(*span, hour, until);
    if (!used.empty() && used.back()->to_ns != span->from_ns) {
      KeepSpans(used);
      used.clear();
    }
    used.push_back(std::move(span));
    hour = until;
  }
  KeepSpans(used);
  if (hours_to < to) GPULSE_RETURN_IF_ERROR(BuildSegment(day, hours_to, to));
  return Status::Ok();
}

bool LedgerBuilder::WholeHours(int64_t from, int64_t to) const {
  for (int64_t hour = from; hour < to; hour += kHourNs) {
    if (Bucket(hour) != Bucket(hour + kHourNs - kMinuteNs)) return false;
  }
  return true;
}

// Minutes [from, to) of `day` classified into hours, to keep.
Status LedgerBuilder::BuildSpan(int64_t day, int64_t from, int64_t to,
                                std::shared_ptr<LedgerSpan>* out) {
  StartDay(day, from, to);
  keeping_ = true;
  read_whole_day_steps_ = false;
  // Steps first: the jobs that ran are the ones whose earlier scheduler
  // events (starts, resubmissions) are kept.
  GPULSE_RETURN_IF_ERROR(ReadSteps());
  GPULSE_RETURN_IF_ERROR(ReadSched());
  if (from == day && to == day + kDayNs) {
    // The whole day's steps are read: its medians, the next day's yardstick.
    day_medians_[day] = OwnMedians();
    LedgerDays::Process().PutMedians({db_, o_.database, day}, {day_medians_[day], as_of_});
  }
  GPULSE_RETURN_IF_ERROR(Baselines(day));
  GPULSE_RETURN_IF_ERROR(ReadNodes());
  GPULSE_RETURN_IF_ERROR(ReadCost());
  const Status read = ReadGpus();
  keeping_ = false;
  last_ = nullptr;
  GPULSE_RETURN_IF_ERROR(read);
  *out = KeepSpan();
  return Status::Ok();
}

// Keeps spans used one after another as one.
void LedgerBuilder::KeepSpans(const std::vector<std::shared_ptr<const LedgerSpan>>& spans) {
  if (spans.empty()) return;
  std::shared_ptr<const LedgerSpan> kept = spans.size() == 1 ? spans[0] : MergeSpans(spans);
  for (const auto& span : spans) {
    if (span->from_ns != kept->from_ns) LedgerDays::Process().Erase(db_, shape_, span->from_ns);
  }
  LedgerDays::Process().Put({std::move(kept), o_.known_until_ns, as_of_}, db_, shape_);
}

// Classified from `from` (the GPUs' last jobs before it looked up when it
// matters), or from the day's start for DECOMPOSE, whose contributors trace
// what the day held before (the GPUs that failed a job, its team).
Status LedgerBuilder::BuildSegment(int64_t day, int64_t from, int64_t to) {
  StartDay(day, o_.contributors ? day : from, to);
  // Steps first: the jobs that ran are the ones whose earlier scheduler
  // events (starts, resubmissions) are kept.
  GPULSE_RETURN_IF_ERROR(ReadSteps());
  GPULSE_RETURN_IF_ERROR(ReadSched());
  // A range_yardstick inside one day: the range's steps are all read here.
  if (o_.range_yardstick && o_.baselines == nullptr && range_start_ >= day &&
      range_end_ <= day + kDayNs) {
    range_baselines_ = OwnMedians(range_start_, range_end_);
  }
  GPULSE_RETURN_IF_ERROR(Baselines(day));
  GPULSE_RETURN_IF_ERROR(ReadNodes());
  if (o_.contributors) GPULSE_RETURN_IF_ERROR(ReadLinks());
  GPULSE_RETURN_IF_ERROR(ReadCost());
  return ReadGpus();
}

bool LedgerBuilder::Unchanged(std::span<const LedgerSpan::Input> inputs, uint64_t as_of) const {
  for (const LedgerSpan::Input& input : inputs) {
    if (db_->DataVersion(input.measurement, input.start_ns, input.end_ns) > as_of) return false;
  }
  return true;
}

// A kept span is true while its inputs are unchanged, what is asked knows
// no less than it did, and no end of one of its jobs has come to be known
// since, at or before the end that decided the job's minutes: ended events
// on days written since it was kept, or timed since it knew.
Status LedgerBuilder::Reusable(const LedgerDays::Found& kept, bool* reusable) {
  *reusable = false;
  const int64_t known = o_.known_until_ns;
  const int64_t day = kept.span->day_ns;
  // (Days asked about from years later are built again rather than checked.)
  constexpr int64_t kMaxDaysChecked = 800;
  if (known < kept.known_until_ns || (known - day) / kDayNs > kMaxDaysChecked ||
      !Unchanged(kept.span->Inputs(), kept.as_of)) {
    return Status::Ok();
  }
  const auto& jobs = kept.span->jobs;
  for (int64_t x = day; x < known; x += kDayNs) {
    const bool written = db_->DataVersion("sched", x, x + kDayNs) > kept.as_of;
    const int64_t from = written ? x : std::max(x, kept.known_until_ns);
    if (from >= std::min(x + kDayNs, known)) continue;
    const std::vector<std::pair<uint64_t, int64_t>>* ends = nullptr;
    GPULSE_RETURN_IF_ERROR(DayEnds(x, &ends));
    for (const auto& [job, ts] : *ends) {
      if (ts < from) continue;
      const auto it = std::lower_bound(jobs.begin(), jobs.end(), std::make_pair(job, INT64_MIN));
      if (it != jobs.end() && it->first == job && ts <= it->second) return Status::Ok();
    }
  }
  *reusable = true;
  return Status::Ok();
}

Status LedgerBuilder::DayEnds(int64_t day, const std::vector<std::pair<uint64_t, int64_t>>** out) {
  auto it = day_ends_.find(day);
  if (it == day_ends_.end()) {
    std::vector<std::pair<uint64_t, int64_t>> ends;
    const std::vector<Series>* listed = nullptr;
    GPULSE_RETURN_IF_ERROR(SeriesOf("sched", &listed));
    const std::vector<std::string> fields = {"job"};
    for (const Series& s : *listed) {
      if (TagOf(s, "event") != "ended") continue;
      GPULSE_RETURN_IF_ERROR(Check());
      std::vector<Column> cols;
      GPULSE_RETURN_IF_ERROR(
          db_->ReadSeries(s, fields, day, std::min(day + kDayNs, o_.known_until_ns), &cols));
      if (cols[0].type != FieldType::kString) continue;
      const std::string region = TagOf(s, "region");
      for (size_t i = 0; i < cols[0].size(); ++i)
        ends.emplace_back(std::hash<std::string>()(JobKey(region, cols[0].strings[i])),
                          cols[0].ts[i]);
    }
    it = day_ends_.emplace(day, std::move(ends)).first;
  }
  *out = &it->second;
  return Status::Ok();
}

std::shared_ptr<LedgerSpan> LedgerBuilder::KeepSpan() {
  auto kept = std::make_shared<LedgerSpan>();
  kept->day_ns = day_;
  kept->from_ns = start_;
  kept->to_ns = end_;
  kept->read_whole_day_steps = read_whole_day_steps_;
  std::map<std::vector<std::string>, uint32_t> groups;
  for (auto& [key, cell] : day_cells_) {
    const auto [g, added] = groups.try_emplace(cell.group, static_cast<uint32_t>(groups.size()));
    if (added) kept->groups.push_back(cell.group);
    LedgerSpan::Row row;
    row.hour_ns = cell.bucket_ns;
    row.group = g->second;
    row.minutes = cell.minutes;
    row.cost_usd = cell.cost_usd;
    row.priced_minutes = cell.priced_minutes;
    row.failed_attempts.assign(cell.failed_attempts.begin(), cell.failed_attempts.end());
    kept->rows.push_back(std::move(row));
  }
  day_cells_.clear();
  // Each job's minutes were decided by the first end after them (Allocated,
  // RestartGap): after its last minute, the end that decided them all.
  for (const auto& [job, last] : used_jobs_) {
    int64_t decided = INT64_MAX;
    const auto it = jobs_.find(job);
    if (it != jobs_.end()) {
      const std::vector<Ended>& ends = it->second.ends;
      const auto end = std::upper_bound(ends.begin(), ends.end(), last,
                                        [](int64_t v, const Ended& e) { return v < e.end_ns; });
      if (end != ends.end()) decided = end->end_ns;
    }
    kept->jobs.emplace_back(std::hash<std::string>()(job), decided);
  }
  used_jobs_.clear();
  kept->SortJobs();  // jobs whose names share a hash: the later end stands for both
  return kept;
}

void LedgerBuilder::AddSpan(const LedgerSpan& span, int64_t from, int64_t to) {
  for (const LedgerSpan::Row& row : span.rows) {
    if (row.hour_ns < from || row.hour_ns >= to) continue;
    const std::vector<std::string>& group = span.groups[row.group];
    const int64_t bucket = Bucket(row.hour_ns);
    LedgerRow& cell = cells_[{group, bucket}];
    cell.group = group;
    cell.bucket_ns = bucket;
    for (size_t l = 0; l < kLossCount; ++l) cell.minutes[l] += row.minutes[l];
    cell.cost_usd += row.cost_usd;
    cell.priced_minutes += row.priced_minutes;
    for (const auto& [hash, attempt] : row.failed_attempts) {
      LedgerRow::FailedAttempt& into = cell.failed_attempts[hash];
      into.loss = attempt.loss;
      into.minutes += attempt.minutes;
    }
  }
  last_ = nullptr;
}

// Spans of a day used one after another become one (their rows and jobs
// together), true as of now: they were just found true, or built.
std::shared_ptr<const LedgerSpan> MergeSpans(
    const std::vector<std::shared_ptr<const LedgerSpan>>& spans) {
  auto merged = std::make_shared<LedgerSpan>();
  merged->day_ns = spans.front()->day_ns;
  merged->from_ns = spans.front()->from_ns;
  merged->to_ns = spans.back()->to_ns;
  std::map<std::vector<std::string>, uint32_t> groups;
  for (const auto& span : spans) {
    merged->read_whole_day_steps |= span->read_whole_day_steps;
    for (const LedgerSpan::Row& row : span->rows) {
      const std::vector<std::string>& group = span->groups[row.group];
      const auto [g, added] = groups.try_emplace(group, static_cast<uint32_t>(groups.size()));
      if (added) merged->groups.push_back(group);
      merged->rows.push_back(row);
      merged->rows.back().group = g->second;
    }
    merged->jobs.insert(merged->jobs.end(), span->jobs.begin(), span->jobs.end());
  }
  merged->SortJobs();  // a job in several: the latest end that decided its minutes stands
  return merged;
}

}  // namespace gpulse::query::ledger
