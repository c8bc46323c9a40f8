// Inside the GPU-minute ledger (fleet_ledger.h): the LedgerBuilder that
// reads the fleet's measurements and classifies each GPU-minute, and what it
// keeps while it does. Its work is in four files: ledger_builder.cc
// (BuildLedger, the entry point fleet_ledger.h declares), ledger_read.cc
// (reading sched, job_step, node, links, cost and gpu), ledger_spans.cc
// (days and the kept spans of whole hours) and ledger_classify.cc (each
// GPU-minute to productive or one loss). Internal to query/fleet/.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "query/fleet/fleet_ledger.h"
#include "query/fleet/ledger_days.h"
#include "query/plan/condition.h"
#include "query/runtime/result.h"

namespace gpulse::query::ledger {

using storage::NumberAt;

inline constexpr int64_t kMinuteNs = 60'000'000'000;
inline constexpr int64_t kHourNs = 60 * kMinuteNs;
inline constexpr int64_t kDayNs = 1440 * kMinuteNs;
// Jobs wait at most two days in the simulator's queues; a backlog at the
// start of the range is rebuilt from this far back.
inline constexpr int64_t kQueueLookbackNs = 2 * 1440 * kMinuteNs;

// XIDs that mean the GPU, not the program, failed: 48 double-bit ECC, 63/64
// row remapping, 74 NVLink, 79 fallen off the bus, 92 high single-bit rate,
// 94/95 contained/uncontained ECC. (13, 31, 43 are the program's own.)
inline bool HardwareXid(int64_t xid) {
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
inline constexpr int64_t kHardwareThrottle = 0x8 | 0x40 | 0x80;
// A fabric link is troubled in a minute when it lost this share of its
// packets or more, or retransmitted this often: a healthy InfiniBand link
// loses next to nothing (under 0.0001%) and retransmits about once a minute.
inline constexpr double kTroubledPacketLossPct = 0.01;
inline constexpr double kTroubledRetransmits = 100;

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

inline constexpr uint32_t kNone = UINT32_MAX;  // no contributor id

struct JobRecord {
  std::string region;              // where its scheduler is
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

inline std::string TagOf(const Series& s, std::string_view key) { return TagValue(s.tags, key); }

inline Outcome OutcomeOf(std::string_view status) {
  if (status == "succeeded") return Outcome::kSucceeded;
  if (status == "failed") return Outcome::kFailed;
  if (status == "preempted") return Outcome::kPreempted;
  if (status == "cancelled") return Outcome::kCancelled;
  return Outcome::kOther;
}

inline Loss CauseOf(Outcome outcome, std::string_view reason) {
  if (outcome == Outcome::kFailed) {
    if (reason == "hardware") return Loss::kHardware;
    if (reason == "software") return Loss::kSoftware;
    if (reason == "network") return Loss::kNetwork;
  }
  return Loss::kLostWork;
}

// An attempt's end at `ts`, from sched ended's columns job, status, reason
// and last_checkpoint (cols[0..3]).
inline Ended EndedAt(const std::vector<Column>& cols, int64_t ts, Outcome outcome, Cursor* reason,
                     Cursor* checkpoint) {
  std::string_view why;
  if (cols[2].type == FieldType::kString && reason->At(ts)) why = cols[2].strings[reason->index()];
  Ended e{ts, INT64_MIN, outcome, CauseOf(outcome, why)};
  if (checkpoint->At(ts))
    e.last_checkpoint_ns = static_cast<int64_t>(NumberAt(cols[3], checkpoint->index()));
  return e;
}

inline uint64_t Mix(uint64_t h) {  // splitmix64's finalizer
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

// "n1,n2,n3" (sched started's `nodes`).
inline std::vector<std::string> SplitNodes(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (comma != 0) out.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

// The jobs whose data and sync shares are compared: the same region, the
// same workload class and the same width. A job across nodes syncs
// gradients over the fabric and spends several times the share of one that
// syncs over NVLink; against a median of mostly one-node jobs, every healthy
// multi-node minute looked like a network loss. A region has its own
// storage and fabric, and its own usual waits; judged by its own, a region's
// minutes are classified the same whether a store holds it alone or beside
// others (a central node's NORTHSTAR over the union is the sum of its
// regions').
inline std::string BaselineKey(const JobRecord& r) {
  return r.region + '\0' + r.workload_class + '\0' + static_cast<char>('0' + r.width);
}

inline double Median(std::vector<float>* v) {
  if (v->empty()) return 0;
  auto mid = v->begin() + static_cast<std::ptrdiff_t>(v->size() / 2);
  std::nth_element(v->begin(), mid, v->end());
  return *mid;
}

std::shared_ptr<const LedgerSpan> MergeSpans(
    const std::vector<std::shared_ptr<const LedgerSpan>>& spans);
std::shared_ptr<const LedgerSpan> Truncated(const LedgerSpan& span, int64_t to);

struct GpuWalk;  // ledger_classify.cc

// An event of the queue (sched): a job entering it or leaving it.
struct QueueEvent {
  int64_t ts;
  int delta;  // +1 enters the queue, -1 leaves it
  const std::string* region;
  const std::string* queue;
  int gpus;      // asked for (entering)
  uint64_t job;  // a hash of the region and the job (the same id may be used in two)
};

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
    // (DECOMPOSE's contributors trace what the day held before them: not
    // kept. ROLLOUTS' cohorts are, in ten-minute rows.)
    may_keep_ = o_.keep_days && !o_.contributors && o_.baselines == nullptr &&
                !o_.range_yardstick && (o_.where == nullptr || !o_.where_text.empty()) &&
                o_.known_until_ns < INT64_MAX / 2;
    if (may_keep_) {
      shape_ = o_.database + '\0' + o_.where_text;
      for (const std::string& key : o_.by) shape_ += '\0' + key;
      if (o_.cohorts) {
        shape_.append("\0\0cohorts", 9);  // (nine bytes: a literal stops at its first NUL)
        row_ns_ = kCohortRowNs;
      }
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
    stays_.clear();
    room_.clear();
    unhealthy_.clear();
    deferred_.clear();
    last_ = nullptr;
    day_ = day;
    start_ = from;
    end_ = to;
    minutes_ = static_cast<int32_t>((end_ - start_) / kMinuteNs);
  }
  Status BuildDay(int64_t day);
  // Whether each kept row of [from, to) falls in one bucket of the range.
  bool WholeRows(int64_t from, int64_t to) const;
  // Minutes [from, to) of `day`, from the data.
  Status BuildSegment(int64_t day, int64_t from, int64_t to);
  Status BuildSpan(int64_t day, int64_t from, int64_t to, std::shared_ptr<LedgerSpan>* out);
  void KeepSpans(const std::vector<std::shared_ptr<const LedgerSpan>>& spans);
  // Whether the data `inputs` name is unchanged since `as_of`.
  bool Unchanged(std::span<const LedgerSpan::Input> inputs, uint64_t as_of) const;
  // Until when a kept span is still true (ledger_days.h): *until, a row
  // start; at or past its end, all of it, at or before its start, none.
  Status HoldsUntil(const LedgerDays::Found& kept, int64_t* until);
  // A job's attempt that ended.
  struct JobEnd {
    uint64_t job;    // a hash of JobKey
    int64_t end_ns;  // when it ended
    int64_t
        changes_from_ns;  // a failure's first minute thrown away: its last checkpoint, or its end
    bool failure;         // failed or preempted (or no status told)
  };
  // The `sched` ended events of a day, before known_until.
  Status DayEnds(int64_t day, const std::vector<JobEnd>** out);
  // The span just built (in day_cells_), to keep.
  std::shared_ptr<LedgerSpan> KeepSpan();
  // The key of a job in jobs_, used_jobs_ and unhealthy_: region '\0' name.
  static std::string JobKey(std::string_view region, std::string_view job) {
    std::string key(region);
    key.push_back('\0');
    key.append(job);
    return key;
  }
  // A GPU held the job (by JobKey) in minute `t` of the day being kept
  // (its first or its last there, or before the span).
  void NoteJob(const std::string& job, int64_t t) {
    auto& [first, last] = used_jobs_.try_emplace(job, t, t).first->second;
    first = std::min(first, t);
    last = std::max(last, t);
  }
  // Adds a kept span's rows [from, to) to the range's buckets.
  void AddSpan(const LedgerSpan& span, int64_t from, int64_t to);
  // A kept row's drivers and images into a cell: `ids` are the span's
  // names as this ledger's contributor ids.
  void AddCohorts(const std::vector<uint32_t>& ids, const LedgerSpan::Cohorts& c, LedgerRow* cell);
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
  void ReplayQueue(std::vector<QueueEvent>* events, const std::vector<std::string>& regions,
                   const std::vector<std::string>& queues);
  Status ReadSteps();
  // The yardstick of the day's data and sync shares (docs/metric-framework.md, rule 6).
  Status Baselines(int64_t day);
  Status ReadNodes();
  Status ReadMaintenanceWindows();
  Status ReadLinks();
  // The troubled links of the nodes `job` ran on at minute m (contributor ids).
  void TroubledLinks(const JobRecord& job, int64_t t, int32_t m, std::vector<uint32_t>* out) const;
  Status ReadCost();
  Status ReadGpus();
  // Each of the day's minutes of one GPU (its columns: job, xid,
  // throttle_reasons, then the attribution fields), classified and counted.
  Status Classify(const Series& gpu, SeriesId id, const std::vector<Column>& cols);
  // *from: the first minute of the day the GPU is capacity in, its first
  // report when it never reported before (INT64_MAX: not in this day).
  Status FirstReport(SeriesId id, const std::vector<Column>& cols, int64_t* from);
  void StartWalk(const Series& gpu, const std::vector<Column>& cols, GpuWalk* w);
  Status ReportedMinute(const Series& gpu, const std::vector<Column>& cols, GpuWalk* w, int64_t t,
                        std::array<double, kLossCount>* add, const Ended** failed);
  void CountMinute(GpuWalk* w, int32_t m, int64_t t, const std::array<double, kLossCount>& add,
                   const Ended* failed);
  void CountCohorts(GpuWalk* w, int32_t m, const std::array<double, kLossCount>& add,
                    const Ended* failed, uint64_t attempt_hash, LedgerRow* row);
  // `capacity`: the minute's capacity (the sum of its losses and productive share).
  void CountClass(GpuWalk* w, double capacity, const Ended* failed, uint64_t attempt_hash,
                  LedgerRow* row);
  // Whether drivers and images are traced (contributors, or cohorts alone).
  bool Cohorts() const { return o_.contributors || o_.cohorts; }
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
  // A contributor's id: `dimension` indexes kContributorDimensions, or is
  // kClassDimension (a workload class, LedgerRow::class_minutes).
  static constexpr size_t kClassDimension = std::size(kContributorDimensions);
  uint32_t Intern(size_t dimension, std::string_view value);
  // `placed`: trace the minute's hardware loss to the GPU and node it was
  // on (false: a hardware failure's, traced later to its culprit).
  void Trace(const std::array<double, kLossCount>& add, const std::vector<uint32_t>& ids,
             const std::vector<uint32_t>& links, const std::string& region, int32_t m, bool placed,
             LedgerRow* row);
  // Traces the minutes hardware failures threw away to the GPUs that failed.
  void TraceHardwareFailures();
  // Counts each region's minutes, and those in which a job waited while one
  // node of the region had room for it, into the rows of the fleet or of
  // the region (LedgerRow::queue_waits).
  void TraceQueueWaits();

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
  bool keeping_ = false;  // the span being built is kept: its cells are rows in day_cells_
  // The length of a kept span's rows: an hour, or ROLLOUTS' ten-minute steps.
  static constexpr int64_t kCohortRowNs = 10 * kMinuteNs;
  int64_t row_ns_ = kHourNs;
  bool read_whole_day_steps_ = false;  // the span being kept read the day's later steps too
  std::string shape_;
  std::map<std::pair<std::vector<std::string>, int64_t>, LedgerRow> day_cells_;
  uint64_t as_of_ = 0;  // Db::LatestDataVersion before anything was read
  // The jobs on the GPUs of the span being kept, and the first and last
  // minutes each held one.
  std::unordered_map<std::string, std::pair<int64_t, int64_t>> used_jobs_;
  std::map<int64_t, std::vector<JobEnd>> day_ends_;  // DayEnds', by day
  int spans_reused_ = 0, spans_built_ = 0;
  // By JobKey: a job is its region's scheduler's name for it, and two
  // regions' schedulers may use the same name (a central node holds both).
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
  // With contributors, for TraceQueueWaits: each stay of a job in its
  // region's queue, in minutes of the day being built ([from, to), to =
  // minutes_ while it still waits), and each node's idle GPUs by minute.
  struct QueueStay {
    uint32_t region;  // contributor id
    int gpus;
    int32_t from, to;
  };
  std::vector<QueueStay> stays_;
  struct NodeRoom {
    uint32_t region;             // contributor id
    std::vector<uint16_t> idle;  // by minute
  };
  std::unordered_map<uint32_t, NodeRoom> room_;  // by the node's contributor id
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

}  // namespace gpulse::query::ledger
