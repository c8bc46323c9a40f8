// The GPU-minute ledger (fleet_ledger.h). It reads, through the public Db
// API: sched (every job attempt's outcome, and the queue's length over
// time), job_step (whether a job advanced in a minute, and the shares of
// its steps spent on data and on gradient sync), node (planned maintenance,
// GPUs reported against inventory, whether the agent reported at all) and
// gpu (the job on each GPU each minute, and its health). Then each GPU-minute
// of the range is classified once.

#include "query/fleet/fleet_ledger.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>

#include "engine/column_ops.h"  // AppendPoints (a public home for it: issue 24)
#include "query/fleet/ledger_days.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

using storage::NumberAt;

constexpr int64_t kMinuteNs = 60'000'000'000;
constexpr int64_t kHourNs = 60 * kMinuteNs;
constexpr int64_t kDayNs = 1440 * kMinuteNs;
// Jobs wait at most two days in the simulator's queues; a backlog at the
// start of the range is rebuilt from this far back.
constexpr int64_t kQueueLookbackNs = 2 * 1440 * kMinuteNs;

// XIDs that mean the GPU, not the program, failed: 48 double-bit ECC, 63/64
// row remapping, 74 NVLink, 79 fallen off the bus, 92 high single-bit rate,
// 94/95 contained/uncontained ECC. (13, 31, 43 are the program's own.)
bool HardwareXid(int64_t xid) {
  switch (xid) {
    case 48:
    case 63:
    case 64:
    case 74:
    case 79:
    case 92:
    case 94:
    case 95:
      return true;
    default:
      return false;
  }
}
// DCGM clock event reasons that are the hardware's: HW slowdown, HW thermal,
// HW power brake (software caps are the operator's choice, not ill health).
constexpr int64_t kHardwareThrottle = 0x8 | 0x40 | 0x80;
// A fabric link is troubled in a minute when it lost this share of its
// packets or more, or retransmitted this often: a healthy InfiniBand link
// loses next to nothing (under 0.0001%) and retransmits about once a minute.
constexpr double kTroubledPacketLossPct = 0.01;
constexpr double kTroubledRetransmits = 100;

enum class Outcome : unsigned char { kSucceeded, kFailed, kPreempted, kCancelled, kOther };

struct Ended {
  int64_t end_ns;
  int64_t last_checkpoint_ns;  // INT64_MIN: none
  Outcome outcome;
  Loss cause;  // where its lost minutes go
};

struct StepMinute {
  int64_t minute_ns;
  int64_t step;
  float data_share, sync_share;
  bool timed;  // the minute reported a step time (a spinning job does not)
};

constexpr uint32_t kNone = UINT32_MAX;  // no contributor id

struct JobRecord {
  std::vector<Ended> ends;         // by end time: one per attempt
  std::vector<StepMinute> steps;   // by time
  std::vector<int64_t> starts;     // `started` events, by time
  std::vector<int64_t> resubmits;  // `retried` events, by time
  std::string workload_class;
  // Placed on one node (1) or several (2), from sched started's `nodes`; 0
  // when unknown (started before the look-back, or no `nodes` field).
  uint8_t width = 0;
  uint32_t image = kNone, framework = kNone;  // contributor ids
  // With contributors: each attempt's start and the nodes it was placed on.
  std::vector<std::pair<int64_t, std::vector<std::string>>> placements;
};

struct NodeMinutes {
  std::vector<uint8_t> reported;     // the agent sent a node point
  std::vector<uint8_t> maintenance;  // planned maintenance
  std::vector<uint32_t> driver;      // contributor id of driver_version, with contributors
  uint32_t link = kNone;             // contributor id of its fabric link, with contributors
  std::vector<uint8_t> troubled;     // its link was troubled (with contributors; empty: never)
};

// The value of column `c` at timestamp `ts`, walking a cursor forward.
class Cursor {
 public:
  explicit Cursor(const Column& c) : c_(c) {}
  bool At(int64_t ts) {
    while (i_ < c_.size() && c_.ts[i_] < ts) ++i_;
    return i_ < c_.size() && c_.ts[i_] == ts;
  }
  size_t index() const { return i_; }

 private:
  const Column& c_;
  size_t i_ = 0;
};

std::string TagOf(const Series& s, std::string_view key) { return TagValue(s.tags, key); }

Outcome OutcomeOf(std::string_view status) {
  if (status == "succeeded") return Outcome::kSucceeded;
  if (status == "failed") return Outcome::kFailed;
  if (status == "preempted") return Outcome::kPreempted;
  if (status == "cancelled") return Outcome::kCancelled;
  return Outcome::kOther;
}

Loss CauseOf(Outcome outcome, std::string_view reason) {
  if (outcome == Outcome::kFailed) {
    if (reason == "hardware") return Loss::kHardware;
    if (reason == "software") return Loss::kSoftware;
    if (reason == "network") return Loss::kNetwork;
  }
  return Loss::kLostWork;
}

// An attempt's end at `ts`, from sched ended's columns job, status, reason
// and last_checkpoint (cols[0..3]).
Ended EndedAt(const std::vector<Column>& cols, int64_t ts, Outcome outcome, Cursor* reason,
              Cursor* checkpoint) {
  std::string_view why;
  if (cols[2].type == FieldType::kString && reason->At(ts)) why = cols[2].strings[reason->index()];
  Ended e{ts, INT64_MIN, outcome, CauseOf(outcome, why)};
  if (checkpoint->At(ts))
    e.last_checkpoint_ns = static_cast<int64_t>(NumberAt(cols[3], checkpoint->index()));
  return e;
}

uint64_t Mix(uint64_t h) {  // splitmix64's finalizer
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

// "n1,n2,n3" (sched started's `nodes`).
std::vector<std::string> SplitNodes(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (comma != 0) out.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

// The jobs whose data and sync shares are compared: the same workload class
// and the same width. A job across nodes syncs gradients over the fabric
// and spends several times the share of one that syncs over NVLink; against
// a median of mostly one-node jobs, every healthy multi-node minute looked
// like a network loss.
std::string BaselineKey(const JobRecord& r) {
  return r.workload_class + '\0' + static_cast<char>('0' + r.width);
}

double Median(std::vector<float>* v) {
  if (v->empty()) return 0;
  auto mid = v->begin() + static_cast<std::ptrdiff_t>(v->size() / 2);
  std::nth_element(v->begin(), mid, v->end());
  return *mid;
}

std::shared_ptr<const LedgerSpan> MergeSpans(
    const std::vector<std::shared_ptr<const LedgerSpan>>& spans);

class LedgerBuilder {
 public:
  LedgerBuilder(Db* db, const LedgerOptions& o) : db_(db), o_(o) {
    if (!o.database.empty()) scope_.push_back({"db", o.database});
  }

  // Day by day (the UTC days the range touches): each day's minutes are
  // classified from the data of that day, so that a minute's answer does not
  // depend on the range it is asked in (docs/metric-framework.md).
  Status Build(Ledger* out) {
    as_of_ = db_->LatestDataVersion();  // before anything is read
    GPULSE_RETURN_IF_ERROR(SetRange());
    // (A range inside one day reads its steps once, in BuildSegment.)
    if (o_.range_yardstick && o_.baselines == nullptr &&
        DayOf(range_start_) != DayOf(range_end_ - 1)) {
      GPULSE_RETURN_IF_ERROR(RangeMedians());
    }
    // Whole hours are kept for reuse (ledger_days.h) when nothing but the
    // shape (database, WHERE, BY) and the day decides them.
    may_keep_ = o_.keep_days && !o_.contributors && o_.baselines == nullptr &&
                !o_.range_yardstick && (o_.where == nullptr || !o_.where_text.empty()) &&
                o_.known_until_ns < INT64_MAX / 2;
    if (may_keep_) {
      shape_ = o_.database + '\0' + o_.where_text;
      for (const std::string& key : o_.by) shape_ += '\0' + key;
    }
    for (int64_t day = DayOf(range_start_); day < range_end_; day += kDayNs) {
      GPULSE_RETURN_IF_ERROR(BuildDay(day));
    }
    std::vector<LedgerRow>* rows = &out->rows;
    rows->clear();
    for (auto& [key, row] : cells_) {
      if (row.Capacity() > 0) rows->push_back(std::move(row));
    }
    out->contributor_names = std::move(names_);
    out->baselines = std::move(range_baselines_);
    out->spans_reused = spans_reused_;
    out->spans_built = spans_built_;
    LedgerDays::Process().Count(spans_reused_, spans_built_);
    return Status::Ok();
  }

 private:
  static int64_t DayOf(int64_t t) { return t - (((t % kDayNs) + kDayNs) % kDayNs); }
  int32_t MinuteOf(int64_t ts) const { return static_cast<int32_t>((ts - start_) / kMinuteNs); }

  // The range in whole minutes, checked before any arithmetic can overflow:
  // at most 400 days, and far enough from the ends of int64 for the
  // look-backs.
  Status SetRange() {
    constexpr int64_t kMaxSpan = 400LL * 1440 * kMinuteNs;
    if (o_.start_ns < INT64_MIN / 2 || o_.end_ns > INT64_MAX / 2) {
      return Status::InvalidArgument(
          "the time range is outside the years the fleet metrics handle");
    }
    if (o_.end_ns <= o_.start_ns) return Status::InvalidArgument("the time range is empty");
    if (o_.end_ns - o_.start_ns > kMaxSpan)
      return Status::InvalidArgument("the time range is longer than 400 days");
    range_start_ = o_.start_ns - (((o_.start_ns % kMinuteNs) + kMinuteNs) % kMinuteNs);
    range_end_ = o_.end_ns;
    const int64_t over = ((range_end_ % kMinuteNs) + kMinuteNs) % kMinuteNs;
    if (over != 0) range_end_ += kMinuteNs - over;
    return Status::Ok();
  }
  // Forgets what the previous day read, and sets the day's window: minutes
  // [from, to) are classified (and their steps read); the look-backs
  // (queue, starts, prices) and the outcomes read count from the day's start.
  void StartDay(int64_t day, int64_t from, int64_t to) {
    jobs_.clear();
    found_job_.clear();
    found_ = nullptr;
    pending_.clear();
    nodes_.clear();
    prices_.clear();
    baseline_.clear();
    demand_.clear();
    unhealthy_.clear();
    deferred_.clear();
    last_ = nullptr;
    day_ = day;
    start_ = from;
    end_ = to;
    minutes_ = static_cast<int32_t>((end_ - start_) / kMinuteNs);
  }
  Status BuildDay(int64_t day);
  // Whether each hour of [from, to) falls in one bucket of the range.
  bool WholeHours(int64_t from, int64_t to) const;
  // Minutes [from, to) of `day`, from the data.
  Status BuildSegment(int64_t day, int64_t from, int64_t to);
  Status BuildSpan(int64_t day, int64_t from, int64_t to, std::shared_ptr<LedgerSpan>* out);
  void KeepSpans(const std::vector<std::shared_ptr<const LedgerSpan>>& spans);
  // Whether the data `inputs` name is unchanged since `as_of`.
  bool Unchanged(std::span<const LedgerSpan::Input> inputs, uint64_t as_of) const;
  // Whether a kept span is still true (ledger_days.h).
  Status Reusable(const LedgerDays::Found& kept, bool* reusable);
  // The `sched` ended events of a day before known_until: (hash of the job, time).
  Status DayEnds(int64_t day, const std::vector<std::pair<uint64_t, int64_t>>** out);
  // The span just built (in day_cells_), to keep.
  std::shared_ptr<LedgerSpan> KeepSpan();
  // A GPU held `job` until minute `t` of the day being kept.
  void NoteJob(const std::string& job, int64_t t) {
    int64_t& last = used_jobs_.try_emplace(job, t).first->second;
    last = std::max(last, t);
  }
  // Adds a kept span's hours [from, to) to the range's buckets.
  void AddSpan(const LedgerSpan& span, int64_t from, int64_t to);
  // The series of a measurement in scope, listed once for all the days.
  Status SeriesOf(const std::string& measurement, const std::vector<Series>** out,
                  const std::vector<SeriesId>** ids = nullptr) {
    auto it = listed_.find(measurement);
    if (it == listed_.end()) {
      std::pair<std::vector<Series>, std::vector<SeriesId>> listed;
      GPULSE_RETURN_IF_ERROR(db_->ListSeries(measurement, scope_, &listed.first, &listed.second));
      it = listed_.emplace(measurement, std::move(listed)).first;
    }
    *out = &it->second.first;
    if (ids != nullptr) *ids = &it->second.second;
    return Status::Ok();
  }
  // The medians of `day`'s timed steps by class and width (memoized).
  Status DayMedians(int64_t day, const StepBaselines** out);
  // The medians over the whole range (LedgerOptions::range_yardstick).
  Status RangeMedians();
  // Of the timed steps read in [from, to) (default: all read from start_).
  StepBaselines OwnMedians(int64_t from = INT64_MIN, int64_t to = INT64_MAX) const;
  Status Check() const {
    if (o_.cancelled && o_.cancelled()) return Status::Cancelled("NORTHSTAR cancelled");
    return Status::Ok();
  }

  Status ReadSched();
  Status ReadSteps();
  // The yardstick of the day's data and sync shares (docs/metric-framework.md, rule 6).
  Status Baselines(int64_t day);
  Status ReadNodes();
  Status ReadLinks();
  // The troubled links of the nodes `job` ran on at minute m (contributor ids).
  void TroubledLinks(const JobRecord& job, int64_t t, int32_t m, std::vector<uint32_t>* out) const;
  Status ReadCost();
  Status ReadGpus();
  Status Classify(const Series& gpu, const std::vector<Column>& cols);
  // The last job a GPU held in the day before start_, and the minute:
  // false when it held none.
  Status LastJobBefore(const Series& gpu, std::string* job, int64_t* t, bool* found);
  int64_t Bucket(int64_t ts) const;  // the start of the range's bucket holding ts
  LedgerRow& Cell(const std::vector<std::string>& group, int64_t ts);
  // *failed: the attempt whose failure threw the minute away, or null.
  std::array<double, kLossCount> Allocated(const std::string& job, int64_t t, bool healthy,
                                           const JobRecord** record, const Ended** failed);
  // The failure that keeps a GPU idle at `t` while its job comes back, or null.
  static const Ended* RestartGap(const JobRecord& r, int64_t last_t, int64_t t);
  uint32_t Intern(size_t dimension, std::string_view value);
  // `placed`: trace the minute's hardware loss to the GPU and node it was
  // on (false: a hardware failure's, traced later to its culprit).
  void Trace(const std::array<double, kLossCount>& add, const std::vector<uint32_t>& ids,
             const std::vector<uint32_t>& links, const std::string& region, int32_t m, bool placed,
             LedgerRow* row);
  // Traces the minutes hardware failures threw away to the GPUs that failed.
  void TraceHardwareFailures();

  Db* db_;
  const LedgerOptions& o_;
  int64_t range_start_ = 0, range_end_ = 0;  // in whole minutes
  // The day being built: its minutes [start_, end_) are classified (those
  // before range_start_ are not counted), its steps read up to end_,
  // its starts and the queue's events up to end_.
  int64_t day_ = 0, start_ = 0, end_ = 0;
  bool medians_only_ = false;  // reads steps and starts for the medians only
  int32_t minutes_ = 0;
  std::map<int64_t, StepBaselines> day_medians_;  // by day
  StepBaselines range_baselines_;                 // with range_yardstick
  // By measurement: the series and their catalog ids.
  std::map<std::string, std::pair<std::vector<Series>, std::vector<SeriesId>>> listed_;
  // Kept days (ledger_days.h).
  bool may_keep_ = false;
  bool keeping_ = false;  // the span being built is kept: its cells are hours in day_cells_
  bool read_whole_day_steps_ = false;  // the span being kept read the day's later steps too
  std::string shape_;
  std::map<std::pair<std::vector<std::string>, int64_t>, LedgerRow> day_cells_;
  uint64_t as_of_ = 0;  // Db::LatestDataVersion before anything was read
  // The jobs on the GPUs of the span being kept, and the last minute each held one.
  std::unordered_map<std::string, int64_t> used_jobs_;
  std::map<int64_t, std::vector<std::pair<uint64_t, int64_t>>> day_ends_;  // DayEnds', by day
  int spans_reused_ = 0, spans_built_ = 0;
  std::unordered_map<std::string, JobRecord> jobs_;
  // Allocated's last lookup in jobs_ (which no longer grows then).
  std::string found_job_;
  const JobRecord* found_ = nullptr;
  std::map<std::string, std::vector<int32_t>> pending_;  // by region: jobs waiting, by minute
  std::map<std::string, NodeMinutes> nodes_;
  // By region '\0' sku: from each instant on, the price of a GPU-minute.
  std::map<std::string, std::vector<std::pair<int64_t, double>>> prices_;
  StepBaselines baseline_;  // by class and width: data, sync share
  std::map<std::pair<std::vector<std::string>, int64_t>, LedgerRow> cells_;
  uint64_t gpu_minutes_ = 0;
  std::vector<std::string> fields_;  // of the gpu measurement, read per series
  std::vector<TagMatcher> scope_;    // the database's series only
  LedgerRow* last_ = nullptr;        // the cell Cell returned last
  // Contributors: ids by "dimension index + value", and back.
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::pair<std::string, std::string>> names_;
  // By region and queue: GPUs asked for by the jobs waiting, by minute.
  std::map<std::string, std::map<std::string, std::vector<int32_t>>> demand_;
  // By job: the minutes a GPU it held was unhealthy (contributor ids of
  // that GPU and its node), the culprits of its hardware failures.
  struct Unhealthy {
    int64_t t;
    uint32_t node, gpu;
  };
  std::unordered_map<std::string, std::vector<Unhealthy>> unhealthy_;
  // Minutes thrown away by a hardware failure, waiting for the culprit to be
  // known: by row, job, the attempt's end, and the GPU and node they were on.
  std::map<std::tuple<LedgerRow*, std::string, int64_t, uint32_t, uint32_t>, double> deferred_;
};

uint32_t LedgerBuilder::Intern(size_t dimension, std::string_view value) {
  std::string key(1, static_cast<char>(dimension));
  key += value;
  const auto [it, added] = ids_.try_emplace(std::move(key), static_cast<uint32_t>(names_.size()));
  if (added)
    names_.emplace_back(std::string(kContributorDimensions[dimension]), std::string(value));
  return it->second;
}

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
  struct QueueEvent {
    int64_t ts;
    int delta;  // +1 enters the queue, -1 leaves it
    const std::string* region;
    const std::string* queue;
    int gpus;      // asked for (entering)
    uint64_t job;  // a hash of the region and the job (the same id may be used in two)
  };
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
      const auto known =
          event == "retried" || event == "started" ? jobs_.find(job.strings[i]) : jobs_.end();
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
      jobs_[job.strings[i]].ends.push_back(EndedAt(cols, ts, outcome, &reason, &checkpoint));
    }
  }
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
    w.count += e.delta;
    const int32_t m = e.ts < start_ ? 0 : MinuteOf(e.ts);
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
  for (auto& [name, record] : jobs_) {
    std::sort(record.ends.begin(), record.ends.end(),
              [](const Ended& a, const Ended& b) { return a.end_ns < b.end_ns; });
    std::sort(record.starts.begin(), record.starts.end());
    std::sort(record.placements.begin(), record.placements.end());
    std::sort(record.resubmits.begin(), record.resubmits.end());
  }
  return Status::Ok();
}

// Per job and minute: its step counter and the shares of data loading and
// gradient sync in its step time; the baselines are the medians of those
// shares per workload class over the range.
Status LedgerBuilder::ReadSteps() {
  const std::vector<Series>* listed = nullptr;
  GPULSE_RETURN_IF_ERROR(SeriesOf("job_step", &listed));
  const std::vector<Series>& series = *listed;
  // The image and framework (strings of every step minute) are read only
  // for contributors.
  std::vector<std::string> fields = {
      "job", "step", "step_time_ms", "data_loader_ms", "grad_sync_ms", "workload_class"};
  if (o_.contributors) fields.insert(fields.end(), {"image", "framework"});
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
    for (size_t i = 0; i < job.size(); ++i) {
      const int64_t ts = job.ts[i];
      if (!step.At(ts)) continue;
      StepMinute m{ts, static_cast<int64_t>(NumberAt(cols[1], step.index())), 0, 0, false};
      if (current_job == nullptr || *current_job != job.strings[i]) {
        current = &jobs_[job.strings[i]];  // unordered_map: stays put as the map grows
        current_job = &job.strings[i];
      }
      JobRecord& record = *current;
      if (record.workload_class.empty() && cls.At(ts) && cols[5].type == FieldType::kString) {
        record.workload_class = cols[5].strings[cls.index()];
      }
      if (o_.contributors && record.image == kNone) {
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
      for (size_t i = 0; i < cols[0].size(); ++i)
        ends.emplace_back(std::hash<std::string>()(cols[0].strings[i]), cols[0].ts[i]);
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
    if (o_.contributors) {
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

int64_t LedgerBuilder::Bucket(int64_t ts) const {
  return o_.bucket_of      ? o_.bucket_of(ts)
         : o_.every_ns > 0 ? range_start_ + (ts - range_start_) / o_.every_ns * o_.every_ns
                           : range_start_;
}

LedgerRow& LedgerBuilder::Cell(const std::vector<std::string>& group, int64_t ts) {
  // A day to keep is built in hours, bucketed when it is added.
  const int64_t bucket = keeping_ ? ts - (((ts % kHourNs) + kHourNs) % kHourNs) : Bucket(ts);
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
          if (into.type == run.type) engine::AppendPoints(run, begin, end, &into);
        },
        nullptr));
    for (size_t c = 0; c < chunk.size(); ++c)
      GPULSE_RETURN_IF_ERROR(Classify(series[chunk[c]], cols[c]));
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
  if (o_.contributors) TraceHardwareFailures();
  return Status::Ok();
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

Status LedgerBuilder::Classify(const Series& gpu, const std::vector<Column>& cols) {
  const std::string node = TagOf(gpu, "node");
  const std::string region = TagOf(gpu, "region");
  const auto price_it = prices_.find(region + '\0' + TagOf(gpu, "sku"));
  const std::vector<std::pair<int64_t, double>>* prices =
      price_it == prices_.end() ? nullptr : &price_it->second;
  size_t price_at = 0;  // prices[price_at - 1] holds at t (0: none yet)
  const auto node_it = nodes_.find(node);
  const NodeMinutes* n = node_it == nodes_.end() ? nullptr : &node_it->second;
  const auto pending_it = pending_.find(region);
  const std::vector<int32_t>* pending =
      pending_it == pending_.end() ? nullptr : &pending_it->second;
  // The group's tag part is fixed for the series; attribution varies by minute.
  std::vector<std::string> group(o_.by.size());
  std::vector<std::pair<size_t, const Column*>> per_minute;  // group index, its column
  for (size_t k = 0; k < o_.by.size(); ++k) {
    const auto f = std::find(fields_.begin(), fields_.end(), o_.by[k]);
    if (f != fields_.end()) {
      per_minute.push_back({k, &cols[static_cast<size_t>(f - fields_.begin())]});
    } else {
      group[k] = TagOf(gpu, o_.by[k]);
    }
  }
  Cursor job(cols[0]), xid(cols[1]), throttle(cols[2]);
  std::vector<Cursor> attribution;
  for (const auto& [k, col] : per_minute) attribution.emplace_back(*col);
  // Contributor ids, in kContributorDimensions order but queue: where the
  // GPU is, then per minute its driver, the job's image and framework, team.
  std::vector<uint32_t> ids;
  const Column* team = nullptr;
  if (o_.contributors) {
    const std::string name = node + "/" + TagOf(gpu, "gpu");
    ids = {Intern(0, region),
           Intern(1, TagOf(gpu, "cluster")),
           Intern(2, node),
           Intern(3, name),
           n != nullptr && n->link != kNone ? n->link : Intern(4, node + "/ib0"),
           kNone,
           kNone,
           kNone,
           kNone};
    const auto f = std::find(fields_.begin(), fields_.end(), "team");
    if (f != fields_.end()) team = &cols[static_cast<size_t>(f - fields_.begin())];
  }
  Cursor team_at(team != nullptr ? *team : cols[0]);
  std::vector<uint32_t> links;  // troubled links a network loss crossed
  // The job that held this GPU last, for the idle minutes after it failed.
  const std::string* last_job = nullptr;
  const JobRecord* last_record = nullptr;
  int64_t last_t = 0;
  std::string job_before;  // the last job before start_, looked up once
  bool looked_back = false;
  uint32_t last_team = kNone;
  for (int32_t m = 0; m < minutes_; ++m) {
    const int64_t t = start_ + m * kMinuteNs;
    if (n != nullptr && n->maintenance[m]) continue;  // not capacity
    std::array<double, kLossCount> add{};
    const Ended* failed = nullptr;  // the attempt of *last_job whose failure lost the minute
    const bool has_point = job.At(t) || xid.At(t);
    for (size_t a = 0; a < per_minute.size(); ++a) {
      const Column& col = *per_minute[a].second;
      group[per_minute[a].first] = attribution[a].At(t) && col.type == FieldType::kString
                                       ? col.strings[attribution[a].index()]
                                       : "";
    }
    if (!has_point) {
      // Silent: the whole node's agent (unobserved), or a GPU its node no
      // longer reports (hardware).
      const bool node_reported = n != nullptr && n->reported[m];
      add[static_cast<size_t>(node_reported ? Loss::kHardware : Loss::kUnobserved)] = 1;
    } else {
      const bool healthy =
          !(xid.At(t) && HardwareXid(static_cast<int64_t>(NumberAt(cols[1], xid.index())))) &&
          !(throttle.At(t) &&
            (static_cast<int64_t>(NumberAt(cols[2], throttle.index())) & kHardwareThrottle) != 0);
      if (job.At(t) && cols[0].type == FieldType::kString &&
          !cols[0].strings[job.index()].empty()) {
        const JobRecord* record = nullptr;
        if (keeping_ && last_job != nullptr && *last_job != cols[0].strings[job.index()])
          NoteJob(*last_job, last_t);
        last_job = &cols[0].strings[job.index()];
        add = Allocated(*last_job, t, healthy, &record, &failed);
        last_record = record;
        last_t = t;
        if (o_.contributors && !healthy) unhealthy_[*last_job].push_back({t, ids[2], ids[3]});
        if (o_.contributors) {
          ids[6] = record != nullptr ? record->image : kNone;
          ids[7] = record != nullptr ? record->framework : kNone;
          ids[8] = last_team = team != nullptr && team->type == FieldType::kString && team_at.At(t)
                                   ? Intern(9, team->strings[team_at.index()])
                                   : kNone;
        }
      } else if (!healthy) {
        add[static_cast<size_t>(Loss::kHardware)] = 1;
      } else {
        // Idle. Classified from after the day's start, the GPU's last job
        // before is looked up the first time it matters.
        if (last_job == nullptr && !looked_back && start_ > day_) {
          looked_back = true;
          bool found = false;
          GPULSE_RETURN_IF_ERROR(LastJobBefore(gpu, &job_before, &last_t, &found));
          if (found) {
            last_job = &job_before;
            const auto it = jobs_.find(job_before);
            last_record = it == jobs_.end() ? nullptr : &it->second;
          }
        }
        if (last_record != nullptr && (failed = RestartGap(*last_record, last_t, t)) != nullptr) {
          // Idle while its failed job comes back: the failure's cost.
          add[static_cast<size_t>(failed->cause)] = 1;
          if (o_.contributors) {
            ids[6] = last_record->image;
            ids[7] = last_record->framework;
            ids[8] = last_team;
          }
        } else {
          const bool waiting = pending != nullptr && (*pending)[m] > 0;
          add[static_cast<size_t>(waiting ? Loss::kScheduling : Loss::kSlack)] = 1;
        }
      }
    }
    if (t < range_start_ && !keeping_) {  // read for the GPU's state only
      if (o_.contributors) ids[6] = ids[7] = ids[8] = kNone;
      continue;
    }
    LedgerRow& row = Cell(group, t);
    for (size_t l = 0; l < kLossCount; ++l) row.minutes[l] += add[l];
    if (prices != nullptr) {
      while (price_at < prices->size() && (*prices)[price_at].first <= t) ++price_at;
      if (price_at > 0) {
        row.cost_usd += (*prices)[price_at - 1].second;
        row.priced_minutes += 1;
      }
    }
    if (failed != nullptr) {
      LedgerRow::FailedAttempt& attempt =
          row.failed_attempts[std::hash<std::string>()(*last_job) ^
                              static_cast<uint64_t>(failed->end_ns)];
      attempt.loss = failed->cause;
      attempt.minutes += add[static_cast<size_t>(failed->cause)];
    }
    if (o_.contributors) {
      ids[5] = n != nullptr && !n->driver.empty() ? n->driver[m] : kNone;
      links.clear();
      // A network loss is the job's that held the GPU (running, or waiting to come back).
      if (add[static_cast<size_t>(Loss::kNetwork)] > 0 && last_record != nullptr)
        TroubledLinks(*last_record, t, m, &links);
      // A hardware failure's minutes wait for the GPU that failed.
      const bool placed = failed == nullptr || failed->cause != Loss::kHardware;
      Trace(add, ids, links, region, m, placed, &row);
      if (!placed) {
        deferred_[{&row, *last_job, failed->end_ns, ids[2], ids[3]}] +=
            add[static_cast<size_t>(Loss::kHardware)];
      }
      ids[6] = ids[7] = ids[8] = kNone;
    }
  }
  if (keeping_ && last_job != nullptr) NoteJob(*last_job, last_t);
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

}  // namespace

Status BuildLedger(Db* db, const LedgerOptions& options, Ledger* out) {
  return LedgerBuilder(db, options).Build(out);
}

}  // namespace gpulse::query
