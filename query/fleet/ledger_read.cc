// The GPU-minute ledger's reads (ledger_builder.h): job outcomes and the
// queue from sched, step progress and shares from job_step and their
// medians, node reports, fabric links, prices, and each GPU's minutes.

#include "query/fleet/ledger_builder.h"

namespace gpulse::query::ledger {

// Outcomes of every attempt that ended at or after the start, up to what
// was known (a job that failed after the range still loses the minutes the
// range saw after its last checkpoint), and the queue's length per region and minute: jobs
// submitted (or resubmitted) and neither started nor cancelled yet.
Status LedgerBuilder::ReadSched() {
  const std::vector<Series>* listed = nullptr;
  GPULSE_RETURN_IF_ERROR(SeriesOf("sched", &listed));
  const std::vector<Series>& series = *listed;
  const std::vector<std::string> fields = {
      "job", "status", "reason", "last_checkpoint", "requested_gpus", "nodes"};
  std::vector<QueueEvent> queue;
  std::vector<std::string> regions, queues;
  std::vector<uint64_t> region_hash;
  for (const Series& s : series) {
    regions.push_back(TagOf(s, "region"));
    queues.push_back(TagOf(s, "queue"));
    region_hash.push_back(std::hash<std::string>()(regions.back()));
  }
  // Outcomes first: a job that ended (failed, say) after the day's start is
  // one whose starts and resubmissions matter even when none of its steps
  // were read (its GPUs idle after it, from a range's start on).
  std::vector<size_t> order(series.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_partition(order.begin(), order.end(),
                        [&](size_t k) { return TagOf(series[k], "event") == "ended"; });
  for (size_t k : order) {
    GPULSE_RETURN_IF_ERROR(Check());
    const Series& s = series[k];
    const std::string event = TagOf(s, "event");
    std::vector<Column> cols;
    if (event == "ended" && medians_only_) continue;
    const int64_t to = event == "ended" ? o_.known_until_ns : end_;
    GPULSE_RETURN_IF_ERROR(db_->ReadSeries(s, fields, day_ - kQueueLookbackNs, to, &cols));
    const Column& job = cols[0];
    if (job.type != FieldType::kString) continue;
    Cursor status(cols[1]), reason(cols[2]), checkpoint(cols[3]), gpus(cols[4]), placed(cols[5]);
    for (size_t i = 0; i < job.size(); ++i) {
      const int64_t ts = job.ts[i];
      // Starts and resubmissions matter for the jobs that ran in the range
      // (their width, how long they had run, when they came back).
      const auto known = event == "retried" || event == "started"
                             ? jobs_.find(JobKey(regions[k], job.strings[i]))
                             : jobs_.end();
      if (event == "retried" && known != jobs_.end()) known->second.resubmits.push_back(ts);
      if (event == "started" && known != jobs_.end()) {
        JobRecord& record = known->second;
        record.starts.push_back(ts);
        // Its width is its first attempt's (a later start cannot change
        // how its earlier minutes were judged).
        if (record.width == 0 && cols[5].type == FieldType::kString && placed.At(ts))
          record.width = cols[5].strings[placed.index()].find(',') == std::string::npos ? 1 : 2;
        if (o_.contributors && cols[5].type == FieldType::kString && placed.At(ts))
          record.placements.push_back({ts, SplitNodes(cols[5].strings[placed.index()])});
      }
      if (event == "submitted" || event == "retried" || event == "started") {
        if (ts >= end_) continue;  // read for the starts' widths only
        const int asked = gpus.At(ts) ? static_cast<int>(NumberAt(cols[4], gpus.index())) : 1;
        queue.push_back({ts, event == "started" ? -1 : +1, &regions[k], &queues[k], asked,
                         Mix(region_hash[k] ^ std::hash<std::string>()(job.strings[i]))});
        continue;
      }
      if (event != "ended" || cols[1].type != FieldType::kString || !status.At(ts)) continue;
      const Outcome outcome = OutcomeOf(cols[1].strings[status.index()]);
      if (outcome == Outcome::kCancelled) {
        if (ts < end_) {
          queue.push_back({ts, -1, &regions[k], &queues[k], 0,
                           Mix(region_hash[k] ^ std::hash<std::string>()(job.strings[i]))});
        }
        continue;
      }
      if (ts < day_) continue;  // the day's minutes are judged by the attempts that end after them
      JobRecord& ended = jobs_[JobKey(regions[k], job.strings[i])];
      ended.region = regions[k];
      ended.ends.push_back(EndedAt(cols, ts, outcome, &reason, &checkpoint));
    }
  }
  ReplayQueue(&queue, regions, queues);
  for (auto& [name, record] : jobs_) {
    std::sort(record.ends.begin(), record.ends.end(),
              [](const Ended& a, const Ended& b) { return a.end_ns < b.end_ns; });
    std::sort(record.starts.begin(), record.starts.end());
    std::sort(record.placements.begin(), record.placements.end());
    std::sort(record.resubmits.begin(), record.resubmits.end());
  }
  return Status::Ok();
}

// The queue's length per region and minute, and with contributors the GPUs
// each queue's waiting jobs asked for, from its events.
void LedgerBuilder::ReplayQueue(std::vector<QueueEvent>* events,
                                const std::vector<std::string>& regions,
                                const std::vector<std::string>& queues) {
  std::vector<QueueEvent>& queue = *events;
  // Replayed in time order; a job leaving that was not seen entering (it
  // entered before the look-back) does not count.
  // A job submitted and started in the same minute has both events at the
  // same time: entering sorts first.
  std::sort(queue.begin(), queue.end(), [](const QueueEvent& a, const QueueEvent& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.delta > b.delta;
  });
  // By region and job (the same job id may be used in two regions).
  struct Waiting {
    int count = 0;
    int gpus = 0;
    const std::string* queue = nullptr;
    size_t stay = 0;  // in stays_, while it waits
  };
  std::unordered_map<uint64_t, Waiting> waiting;
  waiting.reserve(queue.size() / 2);
  for (size_t k = 0; k < regions.size(); ++k) {
    if (pending_[regions[k]].empty())
      pending_[regions[k]].assign(static_cast<size_t>(minutes_) + 1, 0);
    auto& demand = demand_[regions[k]][queues[k]];
    if (o_.contributors && demand.empty()) demand.assign(static_cast<size_t>(minutes_) + 1, 0);
  }
  for (const QueueEvent& e : queue) {
    Waiting& w = waiting[e.job];
    if (e.delta < 0 && w.count == 0) continue;
    if (e.delta > 0) {
      w.gpus = e.gpus;
      w.queue = e.queue;
    }
    const int32_t m = e.ts < start_ ? 0 : MinuteOf(e.ts);
    if (o_.contributors) {
      if (w.count == 0) {
        w.stay = stays_.size();
        stays_.push_back({Intern(0, *e.region), w.gpus, m, minutes_});
      } else if (w.count + e.delta == 0) {
        stays_[w.stay].to = m;
      }
    }
    w.count += e.delta;
    pending_[*e.region][m] += e.delta;
    if (o_.contributors) {
      auto& demand = demand_[*e.region][*w.queue];
      if (demand.empty()) demand.assign(static_cast<size_t>(minutes_) + 1, 0);
      demand[m] += e.delta * w.gpus;
    }
  }
  for (auto& [region, pending] : pending_) {
    int32_t level = 0;
    for (int32_t& v : pending) v = level += v;
  }
  for (auto& [region, by_queue] : demand_) {
    for (auto& [q, demand] : by_queue) {
      int32_t level = 0;
      for (int32_t& v : demand) v = level += v;
    }
  }
}

// Per job and minute: its step counter and the shares of data loading and
// gradient sync in its step time; the baselines are the medians of those
// shares per workload class over the range.
Status LedgerBuilder::ReadSteps() {
  const std::vector<Series>* listed = nullptr;
  GPULSE_RETURN_IF_ERROR(SeriesOf("job_step", &listed));
  const std::vector<Series>& series = *listed;
  // The image and framework (strings of every step minute) are read only
  // for contributors or cohorts.
  std::vector<std::string> fields = {
      "job", "step", "step_time_ms", "data_loader_ms", "grad_sync_ms", "workload_class"};
  if (Cohorts()) fields.insert(fields.end(), {"image", "framework"});
  for (const Series& s : series) {
    GPULSE_RETURN_IF_ERROR(Check());
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(db_->ReadSeries(s, fields, start_ - kMinuteNs, end_, &cols));
    cols.resize(8);  // empty image and framework when not read
    const Column& job = cols[0];
    if (job.type != FieldType::kString) continue;
    Cursor step(cols[1]), time(cols[2]), data(cols[3]), sync(cols[4]), cls(cols[5]), image(cols[6]),
        framework(cols[7]);
    // A job's minutes follow one another in its series: its record is
    // looked up when the job changes.
    JobRecord* current = nullptr;
    const std::string* current_job = nullptr;
    const std::string region = TagOf(s, "region");
    for (size_t i = 0; i < job.size(); ++i) {
      const int64_t ts = job.ts[i];
      if (!step.At(ts)) continue;
      StepMinute m{ts, static_cast<int64_t>(NumberAt(cols[1], step.index())), 0, 0, false};
      if (current_job == nullptr || *current_job != job.strings[i]) {
        current = &jobs_[JobKey(region, job.strings[i])];  // stays put as the map grows
        current->region = region;
        current_job = &job.strings[i];
      }
      JobRecord& record = *current;
      if (record.workload_class.empty() && cls.At(ts) && cols[5].type == FieldType::kString) {
        record.workload_class = cols[5].strings[cls.index()];
      }
      if (Cohorts() && record.image == kNone) {
        if (cols[6].type == FieldType::kString && image.At(ts))
          record.image = Intern(6, cols[6].strings[image.index()]);
        if (cols[7].type == FieldType::kString && framework.At(ts)) {
          record.framework = Intern(7, cols[7].strings[framework.index()]);
        }
      }
      if (time.At(ts)) {
        const double total = NumberAt(cols[2], time.index());
        if (total > 0) {
          m.timed = true;
          if (data.At(ts))
            m.data_share = static_cast<float>(NumberAt(cols[3], data.index()) / total);
          if (sync.At(ts))
            m.sync_share = static_cast<float>(NumberAt(cols[4], sync.index()) / total);
        }
      }
      record.steps.push_back(m);
    }
  }
  for (auto& [name, record] : jobs_) {
    std::sort(record.steps.begin(), record.steps.end(),
              [](const StepMinute& a, const StepMinute& b) { return a.minute_ns < b.minute_ns; });
  }
  return Status::Ok();
}

// The medians of the data and sync shares of the timed steps read (from
// start_ on), by class and width (known once the scheduler's starts are read).
StepBaselines LedgerBuilder::OwnMedians(int64_t from, int64_t to) const {
  from = std::max(from, start_);
  std::map<std::string, std::pair<std::vector<float>, std::vector<float>>> shares;
  for (const auto& [name, record] : jobs_) {
    std::pair<std::vector<float>, std::vector<float>>* into = nullptr;  // the job's class and width
    for (const StepMinute& m : record.steps) {
      if (!m.timed || m.minute_ns < from || m.minute_ns >= to) continue;
      if (into == nullptr) into = &shares[BaselineKey(record)];
      into->first.push_back(m.data_share);
      into->second.push_back(m.sync_share);
    }
  }
  StepBaselines out;
  for (auto& [key, pair] : shares) out[key] = {Median(&pair.first), Median(&pair.second)};
  return out;
}

// The medians of a whole day's steps: kept (ledger_days.h) while its steps
// and starts are unchanged, or read by a builder of their own.
Status LedgerBuilder::DayMedians(int64_t day, const StepBaselines** out) {
  auto it = day_medians_.find(day);
  if (it == day_medians_.end()) {
    const LedgerDays::MediansKey key{db_, o_.database, day};
    std::optional<LedgerDays::Medians> kept = LedgerDays::Process().FindMedians(key);
    if (kept.has_value() && Unchanged(MedianInputs(day), kept->as_of)) {
      it = day_medians_.emplace(day, std::move(kept->medians)).first;
    } else {
      LedgerBuilder reader(db_, o_);
      reader.medians_only_ = true;
      reader.StartDay(day, day, day + kDayNs);
      GPULSE_RETURN_IF_ERROR(reader.ReadSteps());
      GPULSE_RETURN_IF_ERROR(reader.ReadSched());
      it = day_medians_.emplace(day, reader.OwnMedians()).first;
      LedgerDays::Process().PutMedians(key, {it->second, as_of_});
    }
  }
  *out = &it->second;
  return Status::Ok();
}

Status LedgerBuilder::RangeMedians() {
  StartDay(range_start_, range_start_, range_end_);
  GPULSE_RETURN_IF_ERROR(ReadSteps());
  GPULSE_RETURN_IF_ERROR(ReadSched());
  range_baselines_ = OwnMedians();
  return Status::Ok();
}

// A day's data and sync shares are judged by the medians of the day before
// (a fixed yardstick: a minute's answer does not depend on the range, and an
// incident on half of a class's jobs does not raise the median it is judged
// by); a class and width the day before did not run, by the whole day's own
// (read only when one is missing). The caller's baselines (DECOMPOSE's), or
// the range's (range_yardstick), when given, instead. Needs the steps and
// starts read.
Status LedgerBuilder::Baselines(int64_t day) {
  // Counting cohorts alone (ROLLOUTS), no minute is split: their capacity
  // and failures are what is read, and the yardstick changes neither.
  if (o_.cohorts && !o_.contributors) return Status::Ok();
  const StepBaselines* yardstick = o_.baselines;
  if (yardstick == nullptr && o_.range_yardstick) yardstick = &range_baselines_;
  if (yardstick == nullptr) GPULSE_RETURN_IF_ERROR(DayMedians(day - kDayNs, &yardstick));
  baseline_ = *yardstick;
  // (Minutes before the range, read for a GPU's state, are not judged.)
  const int64_t counted = std::max(start_, range_start_);
  bool missing = false;
  for (const auto& [name, record] : jobs_) {
    if (record.steps.empty() || baseline_.contains(BaselineKey(record))) continue;
    missing = std::any_of(record.steps.begin(), record.steps.end(),
                          [&](const StepMinute& m) { return m.timed && m.minute_ns >= counted; });
    if (missing) break;
  }
  if (!missing) return Status::Ok();
  read_whole_day_steps_ = true;
  const StepBaselines* own = nullptr;
  GPULSE_RETURN_IF_ERROR(DayMedians(day, &own));
  for (const auto& [key, medians] : *own) baseline_.try_emplace(key, medians);
  return Status::Ok();
}

Status LedgerBuilder::ReadNodes() {
  const std::vector<Series>* listed = nullptr;
  GPULSE_RETURN_IF_ERROR(SeriesOf("node", &listed));
  const std::vector<Series>& series = *listed;
  const std::vector<std::string> fields = {"maintenance", "gpu_inventory", "driver_version"};
  for (const Series& s : series) {
    GPULSE_RETURN_IF_ERROR(Check());
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(db_->ReadSeries(s, fields, start_, end_, &cols));
    NodeMinutes& n = nodes_[TagOf(s, "node")];
    n.reported.assign(minutes_, 0);
    n.maintenance.assign(minutes_, 0);
    if (Cohorts()) {
      n.driver.assign(minutes_, kNone);
      if (cols[2].type == FieldType::kString) {
        for (size_t i = 0; i < cols[2].size(); ++i)
          n.driver[MinuteOf(cols[2].ts[i])] = Intern(5, cols[2].strings[i]);
      }
    }
    for (size_t i = 0; i < cols[0].size(); ++i) {
      const int32_t m = MinuteOf(cols[0].ts[i]);
      n.reported[m] = 1;
      n.maintenance[m] = NumberAt(cols[0], i) != 0;
    }
    for (int64_t ts : cols[1].ts) n.reported[MinuteOf(ts)] = 1;
  }
  return ReadMaintenanceWindows();
}

// Planned windows of the `maintenance` measurement (a person's status
// change writes one: query/fleet/nodes.h) are not capacity either, whether
// or not the node's agent reports maintenance = 1 in them.
Status LedgerBuilder::ReadMaintenanceWindows() {
  const std::vector<Series>* listed = nullptr;
  GPULSE_RETURN_IF_ERROR(SeriesOf("maintenance", &listed));
  const std::vector<std::string> fields = {"end"};
  for (const Series& s : *listed) {
    GPULSE_RETURN_IF_ERROR(Check());
    const auto it = nodes_.find(TagOf(s, "node"));
    if (it == nodes_.end()) continue;
    std::vector<Column> cols;
    // A window began at its point: the ones before the range may reach into it.
    GPULSE_RETURN_IF_ERROR(db_->ReadSeries(s, fields, INT64_MIN, end_, &cols));
    for (size_t i = 0; i < cols[0].size(); ++i) {
      const double end = NumberAt(cols[0], i);
      const int64_t from = std::max(cols[0].ts[i], start_);
      const int64_t to = end >= static_cast<double>(end_) ? end_ : static_cast<int64_t>(end);
      for (int64_t t = from; t < to; t += kMinuteNs) it->second.maintenance[MinuteOf(t)] = 1;
    }
  }
  return Status::Ok();
}

// Each node's fabric link, and the minutes it was troubled (packet loss or
// retransmits far above a healthy link's), so that a job's network loss is
// traced to the troubled link it crossed rather than to every node it ran on.
Status LedgerBuilder::ReadLinks() {
  const std::vector<Series>* listed = nullptr;
  GPULSE_RETURN_IF_ERROR(SeriesOf("link", &listed));
  const std::vector<Series>& series = *listed;
  const std::vector<std::string> fields = {"packet_loss_pct", "retransmits"};
  for (const Series& s : series) {
    GPULSE_RETURN_IF_ERROR(Check());
    const auto it = nodes_.find(TagOf(s, "node"));
    if (it == nodes_.end()) continue;
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(db_->ReadSeries(s, fields, start_, end_, &cols));
    NodeMinutes& n = it->second;
    n.link = Intern(4, it->first + "/" + TagOf(s, "link"));
    const auto mark = [&](const Column& c, double at_least) {
      for (size_t i = 0; i < c.size(); ++i) {
        if (NumberAt(c, i) < at_least) continue;
        if (n.troubled.empty()) n.troubled.assign(static_cast<size_t>(minutes_), 0);
        n.troubled[static_cast<size_t>(MinuteOf(c.ts[i]))] = 1;
      }
    };
    if (cols[0].type != FieldType::kString) mark(cols[0], kTroubledPacketLossPct);
    if (cols[1].type != FieldType::kString) mark(cols[1], kTroubledRetransmits);
  }
  return Status::Ok();
}

void LedgerBuilder::TroubledLinks(const JobRecord& job, int64_t t, int32_t m,
                                  std::vector<uint32_t>* out) const {
  out->clear();
  const auto after = std::upper_bound(
      job.placements.begin(), job.placements.end(), t,
      [](int64_t v, const std::pair<int64_t, std::vector<std::string>>& p) { return v < p.first; });
  if (after == job.placements.begin()) return;
  for (const std::string& node : std::prev(after)->second) {
    const auto it = nodes_.find(node);
    if (it != nodes_.end() && !it->second.troubled.empty() && it->second.troubled[m] != 0 &&
        it->second.link != kNone) {
      out->push_back(it->second.link);
    }
  }
}

// The price of a GPU-minute by region and SKU over the range: at each hourly
// `cost` point, the sum of usd_per_hour over its pricings (reserved, on
// demand) over the GPUs they pay for, held until the next point. A day
// before the range is read, so that its first minutes have a price.
Status LedgerBuilder::ReadCost() {
  constexpr int64_t kPriceLookbackNs = 1440 * kMinuteNs;
  const std::vector<Series>* listed = nullptr;
  GPULSE_RETURN_IF_ERROR(SeriesOf("cost", &listed));
  const std::vector<Series>& series = *listed;
  const std::vector<std::string> fields = {"usd_per_hour", "gpus"};
  std::map<std::string, std::map<int64_t, std::pair<double, double>>> paid;  // usd/h, gpus
  for (const Series& s : series) {
    GPULSE_RETURN_IF_ERROR(Check());
    std::vector<Column> cols;
    GPULSE_RETURN_IF_ERROR(db_->ReadSeries(s, fields, day_ - kPriceLookbackNs, end_, &cols));
    if (cols[0].type == FieldType::kString || cols[1].type == FieldType::kString) continue;
    auto& by_time = paid[TagOf(s, "region") + '\0' + TagOf(s, "sku")];
    Cursor gpus(cols[1]);
    for (size_t i = 0; i < cols[0].size(); ++i) {
      const int64_t ts = cols[0].ts[i];
      if (!gpus.At(ts)) continue;
      auto& [usd, count] = by_time[ts];
      usd += NumberAt(cols[0], i);
      count += NumberAt(cols[1], gpus.index());
    }
  }
  for (const auto& [key, by_time] : paid) {
    auto& track = prices_[key];
    for (const auto& [ts, pair] : by_time) {
      if (pair.second > 0) track.push_back({ts, pair.first / pair.second / 60});
    }
  }
  return Status::Ok();
}

Status LedgerBuilder::ReadGpus() {
  const std::vector<Series>* listed = nullptr;
  const std::vector<SeriesId>* listed_ids = nullptr;
  GPULSE_RETURN_IF_ERROR(SeriesOf("gpu", &listed, &listed_ids));
  const std::vector<Series>& series = *listed;
  // The attribution columns grouped by are read beside job and health.
  fields_ = {"job", "xid", "throttle_reasons"};
  for (const std::string& key : o_.by) {
    if (key == "team" || key == "workload_class" || key == "user") fields_.push_back(key);
  }
  if (o_.contributors && std::find(fields_.begin(), fields_.end(), "team") == fields_.end()) {
    fields_.push_back("team");
  }
  // A chunk of GPUs a store scan (one look at the catalog, one iterator),
  // as the fleet-wide folds read (query/runtime/inputs.cc): a call a series cost
  // 100,000 catalog lookups and iterators at 100,000 GPUs.
  constexpr size_t kChunk = 32;
  std::vector<size_t> chunk;  // indexes into series
  std::vector<SeriesId> ids;
  std::vector<std::vector<Column>> cols(kChunk, std::vector<Column>(fields_.size()));
  const auto read_chunk = [&]() -> Status {
    for (size_t c = 0; c < chunk.size(); ++c) {
      for (Column& col : cols[c]) col.Clear();
    }
    GPULSE_RETURN_IF_ERROR(db_->ScanSeries(
        ids, fields_, start_, end_,
        [&](size_t c, size_t field, const Column& run, size_t begin, size_t end) {
          Column& into = cols[c][field];
          if (into.size() == 0) into.type = run.type;
          if (into.type == run.type) storage::AppendPoints(run, begin, end, &into);
        },
        nullptr));
    for (size_t c = 0; c < chunk.size(); ++c)
      GPULSE_RETURN_IF_ERROR(Classify(series[chunk[c]], ids[c], cols[c]));
    chunk.clear();
    ids.clear();
    return Status::Ok();
  };
  for (size_t k = 0; k < series.size(); ++k) {
    GPULSE_RETURN_IF_ERROR(Check());
    if (o_.where != nullptr && !o_.where->Matches(series[k].tags)) continue;
    gpu_minutes_ += static_cast<uint64_t>(minutes_);
    if (gpu_minutes_ > o_.max_gpu_minutes) {
      return Status::ResourceExhausted(
          "NORTHSTAR would read more than " + std::to_string(o_.max_gpu_minutes) +
          " GPU-minutes (QueryLimits::max_points); narrow the range or WHERE");
    }
    chunk.push_back(k);
    ids.push_back((*listed_ids)[k]);
    if (chunk.size() == kChunk) GPULSE_RETURN_IF_ERROR(read_chunk());
  }
  if (!chunk.empty()) GPULSE_RETURN_IF_ERROR(read_chunk());
  if (o_.contributors) {
    TraceHardwareFailures();
    TraceQueueWaits();
  }
  return Status::Ok();
}

}  // namespace gpulse::query::ledger
