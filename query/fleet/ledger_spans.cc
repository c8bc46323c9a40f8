// The GPU-minute ledger by day (ledger_builder.h): whole settled rows (hours,
// or ROLLOUTS' ten minutes) kept as spans and reused while what they were
// built from holds (ledger_days.h), the rest built from the data.

#include "query/fleet/ledger_builder.h"

namespace gpulse::query::ledger {

namespace {

// The names of a table by value: their ids.
using NameIndex = std::map<std::pair<std::string, std::string>, uint32_t>;

// Ids of one table of names (a ledger's, or a span's) given anew in another
// (a span's), each name added the first time it is met; kNone stays itself.
// `index` holds the names already in `to` (several tables merged into one
// share it).
class Renames {
 public:
  Renames(const ContributorNames& from, ContributorNames* to, NameIndex* index)
      : from_(from), to_(to), index_(index) {}
  uint32_t operator()(uint32_t id) {
    if (id == kNone) return kNone;
    const auto [it, added] = ids_.try_emplace(id, 0);
    if (added) {
      const auto [at, fresh] = index_->try_emplace(from_[id], static_cast<uint32_t>(to_->size()));
      if (fresh) to_->push_back(from_[id]);
      it->second = at->second;
    }
    return it->second;
  }

 private:
  const ContributorNames& from_;
  ContributorNames* to_;
  NameIndex* index_;
  std::unordered_map<uint32_t, uint32_t> ids_;
};

// A cell's drivers and images (LedgerRow's fields, by the ledger's ids).
LedgerSpan::Cohorts CohortsOf(const LedgerRow& cell) {
  LedgerSpan::Cohorts c;
  c.presence.assign(cell.contributors[0].begin(), cell.contributors[0].end());
  c.class_minutes.assign(cell.class_minutes.begin(), cell.class_minutes.end());
  c.cohort_class_minutes.assign(cell.cohort_class_minutes.begin(), cell.cohort_class_minutes.end());
  for (const auto& [id, attempts] : cell.software_failures) {
    for (const uint64_t attempt : attempts) c.software_failures.emplace_back(id, attempt);
  }
  c.software_failure_class.assign(cell.software_failure_class.begin(),
                                  cell.software_failure_class.end());
  return c;
}

// Drivers and images with their ids renamed (a ledger's into a span's, a
// span's into a merged span's).
std::shared_ptr<const LedgerSpan::Cohorts> Renamed(const LedgerSpan::Cohorts& c, Renames& rename) {
  auto out = std::make_shared<LedgerSpan::Cohorts>();
  for (const auto& [id, m] : c.presence) out->presence.emplace_back(rename(id), m);
  for (const auto& [id, m] : c.class_minutes) out->class_minutes.emplace_back(rename(id), m);
  for (const auto& [key, m] : c.cohort_class_minutes) {
    const uint32_t cohort = rename(static_cast<uint32_t>(key >> 32));
    out->cohort_class_minutes.emplace_back(
        CohortClassKey(cohort, rename(static_cast<uint32_t>(key))), m);
  }
  for (const auto& [id, attempt] : c.software_failures)
    out->software_failures.emplace_back(rename(id), attempt);
  for (const auto& [attempt, id] : c.software_failure_class)
    out->software_failure_class.emplace_back(attempt, rename(id));
  return out;
}

}  // namespace

// One day of the range: its whole rows (hours; ten minutes for ROLLOUTS'
// cohorts), as far as what is asked knows them settled, from kept spans
// (kept now where there are none, or they no longer hold), and the minutes
// at the edges from the data. A row is settled kSettleNs after its end:
// agents at minute grain deliver a minute late, and a span that a late
// point changes is built again whole.
Status LedgerBuilder::BuildDay(int64_t day) {
  constexpr int64_t kSettleNs = 5 * kMinuteNs;
  GPULSE_RETURN_IF_ERROR(Check());
  const int64_t from = std::max(day, range_start_), to = std::min(day + kDayNs, range_end_);
  const int64_t hours_from = from + (row_ns_ - (((from % row_ns_) + row_ns_) % row_ns_)) % row_ns_;
  const int64_t settled = std::min(to, o_.known_until_ns - kSettleNs);
  const int64_t hours_to = settled - (((settled % row_ns_) + row_ns_) % row_ns_);
  if (!may_keep_ || hours_from >= hours_to || !WholeRows(hours_from, hours_to)) {
    return BuildSegment(day, from, to);
  }
  if (from < hours_from) GPULSE_RETURN_IF_ERROR(BuildSegment(day, from, hours_from));
  std::vector<std::shared_ptr<const LedgerSpan>> valid;
  for (const LedgerDays::Found& found : LedgerDays::Process().FindDay(db_, shape_, day)) {
    if (found.span->to_ns <= hours_from || found.span->from_ns >= hours_to) continue;
    if (found.span->row_ns != row_ns_) {  // (a shape is one row length; never mix them)
      LedgerDays::Process().Erase(db_, shape_, found.span->from_ns);
      continue;
    }
    int64_t holds_until = 0;
    GPULSE_RETURN_IF_ERROR(HoldsUntil(found, &holds_until));
    if (holds_until >= found.span->to_ns) {
      valid.push_back(found.span);
    } else if (holds_until > found.span->from_ns) {
      valid.push_back(Truncated(*found.span, holds_until));  // kept in its place below
    } else {
      LedgerDays::Process().Erase(db_, shape_, found.span->from_ns);
    }
  }
  // Row by row: from a kept span, or built up to the next one.
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

bool LedgerBuilder::WholeRows(int64_t from, int64_t to) const {
  for (int64_t row = from; row < to; row += row_ns_) {
    if (Bucket(row) != Bucket(row + row_ns_ - kMinuteNs)) return false;
  }
  return true;
}

// Minutes [from, to) of `day` classified into rows, to keep.
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
// no less than it did, and no end of one of its jobs that changes it has
// come to be known since, at or before the end that decided the job's
// minutes: ended events in slices written since it was kept, or timed
// since it knew. An end timed since is a failure (or a preemption) or
// changes nothing; a failure changes only the job's minutes from its last
// checkpoint on, so the span's rows before that (and before the job's
// first minute there) still hold. An end written late, or written again,
// may change any of the job's minutes (it comes before the end that
// decided them), as may any end of a job the span had no record of (its
// minutes had no class): those cut the span at the job's first minute.
Status LedgerBuilder::HoldsUntil(const LedgerDays::Found& kept, int64_t* until) {
  *until = INT64_MIN;
  const int64_t known = o_.known_until_ns;
  const int64_t day = kept.span->day_ns;
  // (Days asked about from years later are built again rather than checked.)
  constexpr int64_t kMaxDaysChecked = 800;
  if (known < kept.known_until_ns || (known - day) / kDayNs > kMaxDaysChecked ||
      !Unchanged(kept.span->Inputs(), kept.as_of)) {
    return Status::Ok();
  }
  int64_t holds = kept.span->to_ns;
  const auto& jobs = kept.span->jobs;
  for (int64_t x = day; x < known; x += kDayNs) {
    const bool written = db_->DataVersion("sched", x, x + kDayNs) > kept.as_of;
    const int64_t from = written ? x : std::max(x, kept.known_until_ns);
    if (from >= std::min(x + kDayNs, known)) continue;
    const std::vector<JobEnd>* ends = nullptr;
    GPULSE_RETURN_IF_ERROR(DayEnds(x, &ends));
    for (const JobEnd& e : *ends) {
      if (e.end_ns < from) continue;
      // Written late (or again): timed before what the span knew, in a
      // slice written since. (Not so: it was known then.)
      const bool late = e.end_ns < kept.known_until_ns;
      if (late && db_->DataVersion("sched", e.end_ns, e.end_ns + 1) <= kept.as_of) continue;
      const auto it = std::lower_bound(jobs.begin(), jobs.end(), LedgerSpan::Job{e.job});
      if (it == jobs.end() || it->hash != e.job || e.end_ns > it->decided_ns) continue;
      int64_t cut = it->first_ns;
      if (!late && it->recorded) {
        if (!e.failure) continue;
        cut = std::max(cut, e.changes_from_ns);
      }
      const int64_t r = kept.span->row_ns;  // the row its first changed minute is in
      cut = std::max(cut, INT64_MIN / 2);
      cut -= ((cut % r) + r) % r;
      holds = std::min(holds, cut);
    }
  }
  *until = holds;
  return Status::Ok();
}

Status LedgerBuilder::DayEnds(int64_t day, const std::vector<JobEnd>** out) {
  auto it = day_ends_.find(day);
  if (it == day_ends_.end()) {
    std::vector<JobEnd> ends;
    const std::vector<Series>* listed = nullptr;
    GPULSE_RETURN_IF_ERROR(SeriesOf("sched", &listed));
    const std::vector<std::string> fields = {"job", "status", "last_checkpoint"};
    for (const Series& s : *listed) {
      if (TagOf(s, "event") != "ended") continue;
      GPULSE_RETURN_IF_ERROR(Check());
      std::vector<Column> cols;
      GPULSE_RETURN_IF_ERROR(
          db_->ReadSeries(s, fields, day, std::min(day + kDayNs, o_.known_until_ns), &cols));
      if (cols[0].type != FieldType::kString) continue;
      const std::string region = TagOf(s, "region");
      Cursor status(cols[1]), checkpoint(cols[2]);
      for (size_t i = 0; i < cols[0].size(); ++i) {
        const int64_t ts = cols[0].ts[i];
        JobEnd e{std::hash<std::string>()(JobKey(region, cols[0].strings[i])), ts, INT64_MIN, true};
        // Only a failure or a preemption throws minutes away (Allocated,
        // RestartGap). (No status: it may have failed.)
        if (cols[1].type == FieldType::kString && status.At(ts)) {
          const Outcome outcome = OutcomeOf(cols[1].strings[status.index()]);
          e.failure = outcome == Outcome::kFailed || outcome == Outcome::kPreempted;
        }
        // It throws away the minutes from its last checkpoint (none: any),
        // and the idle ones after its end while the job comes back.
        if (checkpoint.At(ts) && cols[2].type != FieldType::kString) {
          const double c = NumberAt(cols[2], checkpoint.index());
          if (c > -9e18 && c < 9e18) e.changes_from_ns = static_cast<int64_t>(c);
        }
        e.changes_from_ns =
            std::min(e.changes_from_ns, ts - (((ts % kMinuteNs) + kMinuteNs) % kMinuteNs));
        ends.push_back(e);
      }
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
  kept->row_ns = row_ns_;
  kept->read_whole_day_steps = read_whole_day_steps_;
  std::map<std::vector<std::string>, uint32_t> groups;
  NameIndex index;
  Renames rename(names_, &kept->names, &index);
  for (auto& [key, cell] : day_cells_) {
    const auto [g, added] = groups.try_emplace(cell.group, static_cast<uint32_t>(groups.size()));
    if (added) kept->groups.push_back(cell.group);
    LedgerSpan::Row row;
    row.start_ns = cell.bucket_ns;
    row.group = g->second;
    row.minutes = cell.minutes;
    row.cost_usd = cell.cost_usd;
    row.priced_minutes = cell.priced_minutes;
    row.failed_attempts.assign(cell.failed_attempts.begin(), cell.failed_attempts.end());
    if (o_.cohorts) row.cohorts = Renamed(CohortsOf(cell), rename);
    kept->rows.push_back(std::move(row));
  }
  day_cells_.clear();
  // Each job's minutes were decided by the first end after them (Allocated,
  // RestartGap): after its last minute, the end that decided them all.
  for (const auto& [job, held] : used_jobs_) {
    const auto [first, last] = held;
    int64_t decided = INT64_MAX;
    const auto it = jobs_.find(job);
    if (it != jobs_.end()) {
      const std::vector<Ended>& ends = it->second.ends;
      const auto end = std::upper_bound(ends.begin(), ends.end(), last,
                                        [](int64_t v, const Ended& e) { return v < e.end_ns; });
      if (end != ends.end()) decided = end->end_ns;
    }
    kept->jobs.push_back({std::hash<std::string>()(job), decided, first, it != jobs_.end()});
  }
  used_jobs_.clear();
  kept->SortJobs();  // jobs whose names share a hash: one stands for both
  return kept;
}

void LedgerBuilder::AddSpan(const LedgerSpan& span, int64_t from, int64_t to) {
  std::vector<uint32_t> ids;  // the span's names as this ledger's contributor ids
  ids.reserve(span.names.size());
  for (const auto& [dimension, value] : span.names) {
    const auto* begin = std::begin(kContributorDimensions);
    const auto* end = std::end(kContributorDimensions);
    ids.push_back(Intern(static_cast<size_t>(std::find(begin, end, dimension) - begin), value));
  }
  for (const LedgerSpan::Row& row : span.rows) {
    if (row.start_ns < from || row.start_ns >= to) continue;
    const std::vector<std::string>& group = span.groups[row.group];
    const int64_t bucket = Bucket(row.start_ns);
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
    if (row.cohorts != nullptr) AddCohorts(ids, *row.cohorts, &cell);
  }
  last_ = nullptr;
}

void LedgerBuilder::AddCohorts(const std::vector<uint32_t>& ids, const LedgerSpan::Cohorts& c,
                               LedgerRow* cell) {
  const auto id = [&](uint32_t i) { return i == kNone ? kNone : ids[i]; };
  for (const auto& [i, m] : c.presence) cell->contributors[0][id(i)] += m;
  for (const auto& [i, m] : c.class_minutes) cell->class_minutes[id(i)] += m;
  for (const auto& [key, m] : c.cohort_class_minutes) {
    cell->cohort_class_minutes[CohortClassKey(id(static_cast<uint32_t>(key >> 32)),
                                              id(static_cast<uint32_t>(key)))] += m;
  }
  for (const auto& [i, attempt] : c.software_failures)
    cell->software_failures[id(i)].insert(attempt);
  for (const auto& [attempt, i] : c.software_failure_class)
    cell->software_failure_class[attempt] = id(i);
}

// Spans of a day used one after another become one (their rows and jobs
// together), true as of now: they were just found true, or built.
std::shared_ptr<const LedgerSpan> MergeSpans(
    const std::vector<std::shared_ptr<const LedgerSpan>>& spans) {
  auto merged = std::make_shared<LedgerSpan>();
  merged->day_ns = spans.front()->day_ns;
  merged->from_ns = spans.front()->from_ns;
  merged->to_ns = spans.back()->to_ns;
  merged->row_ns = spans.front()->row_ns;
  std::map<std::vector<std::string>, uint32_t> groups;
  NameIndex index;  // one table for all
  for (const auto& span : spans) {
    merged->read_whole_day_steps |= span->read_whole_day_steps;
    Renames rename(span->names, &merged->names, &index);
    for (const LedgerSpan::Row& row : span->rows) {
      const std::vector<std::string>& group = span->groups[row.group];
      const auto [g, added] = groups.try_emplace(group, static_cast<uint32_t>(groups.size()));
      if (added) merged->groups.push_back(group);
      merged->rows.push_back(row);
      merged->rows.back().group = g->second;
      if (row.cohorts != nullptr) merged->rows.back().cohorts = Renamed(*row.cohorts, rename);
    }
    merged->jobs.insert(merged->jobs.end(), span->jobs.begin(), span->jobs.end());
  }
  merged->SortJobs();  // a job in several: the latest end that decided its minutes stands
  return merged;
}

// The rows of `span` before `to` (a row start), as a span of its own. Its
// jobs are the whole span's: a job's end that decided a later minute is
// at or after the one that decided its last minute before `to`, so a span
// checked against them is rebuilt when it must be, and maybe when it need
// not be.
std::shared_ptr<const LedgerSpan> Truncated(const LedgerSpan& span, int64_t to) {
  auto out = std::make_shared<LedgerSpan>(span);
  out->to_ns = to;
  std::erase_if(out->rows, [to](const LedgerSpan::Row& r) { return r.start_ns >= to; });
  return out;
}

}  // namespace gpulse::query::ledger
