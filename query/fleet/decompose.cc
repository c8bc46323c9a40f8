// DECOMPOSE (decompose.h).

#include "query/fleet/decompose.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>

#include "query/fleet/decompose_evidence.h"
#include "query/fleet/fleet_ledger.h"
#include "query/plan/condition.h"
#include "query/runtime/eval.h"
#include "query/runtime/result.h"

namespace gpulse::query {

namespace {

constexpr size_t kTopContributors = 5;
// A contributor must carry at least this share of a loss's change to be
// named: below it, a node or a team is one of many, not where it went.
constexpr double kMinShareOfChange = 0.10;

Status Bound(const Expr& e, int64_t now_ns, int64_t* ns) {
  const Result<int64_t> v = EvalTime(e, now_ns);
  if (!v.ok()) return ErrorAt(e, v.status().message());
  *ns = *v;
  return Status::Ok();
}

// How many pieces a window is cut into to see how much each loss swings
// within it (its noise), and the least noise a change is judged against.
constexpr int64_t kPiecesPerWindow = 24;
constexpr double kMinNoise = 0.001;  // 0.1 points

// One window's ledger per group, merged over its pieces, and each loss's
// share of capacity piece by piece.
struct Window {
  std::map<std::vector<std::string>, LedgerRow> groups;
  std::map<std::vector<std::string>, std::array<std::vector<double>, kLossCount>> pieces;
  std::vector<std::pair<std::string, std::string>> names;
};

void Merge(LedgerRow&& from, LedgerRow* into) {
  for (size_t l = 0; l < kLossCount; ++l) {
    into->minutes[l] += from.minutes[l];
    for (const auto& [id, minutes] : from.contributors[l]) into->contributors[l][id] += minutes;
  }
  for (const auto& [hash, attempt] : from.failed_attempts) {
    LedgerRow::FailedAttempt& a = into->failed_attempts[hash];
    a.loss = attempt.loss;
    a.minutes += attempt.minutes;
  }
  into->cost_usd += from.cost_usd;
  into->priced_minutes += from.priced_minutes;
  for (const auto& [id, minutes] : from.xid_minutes) into->xid_minutes[id] += minutes;
  for (const auto& [id, minutes] : from.troubled_minutes) into->troubled_minutes[id] += minutes;
  for (auto& [id, attempts] : from.software_failures) into->software_failures[id].merge(attempts);
  for (const auto& [id, minutes] : from.class_minutes) into->class_minutes[id] += minutes;
  for (const auto& [key, minutes] : from.cohort_class_minutes)
    into->cohort_class_minutes[key] += minutes;
  into->software_failure_class.merge(from.software_failure_class);
  for (const auto& [id, waits] : from.queue_waits) {
    into->queue_waits[id].minutes += waits.minutes;
    into->queue_waits[id].beside_room += waits.beside_room;
  }
}

// The ledger of [start, end) grouped by `by`, as the query may read it.
LedgerOptions LedgerFor(const QueryOptions& options, int64_t now_ns,
                        const std::vector<std::string>& by, int64_t start, int64_t end) {
  LedgerOptions lo;
  lo.start_ns = start;
  lo.end_ns = end;
  lo.by = by;
  lo.AskedBy(options, now_ns);
  return lo;
}

Status LedgerOf(Db* db, const QueryOptions& options, int64_t now_ns,
                const std::vector<std::string>& by, int64_t start, int64_t end,
                const StepBaselines* baselines, Window* w, StepBaselines* used) {
  LedgerOptions lo = LedgerFor(options, now_ns, by, start, end);
  lo.contributors = true;
  lo.baselines = baselines;
  lo.range_yardstick = baselines == nullptr;
  constexpr int64_t kMinuteNs = 60'000'000'000;
  lo.every_ns = std::max<int64_t>(1, (end - start) / kPiecesPerWindow / kMinuteNs) * kMinuteNs;
  Ledger ledger;
  GPULSE_RETURN_IF_ERROR(BuildLedger(db, lo, &ledger));
  for (LedgerRow& row : ledger.rows) {
    const double capacity = row.Capacity();
    auto& pieces = w->pieces[row.group];
    for (size_t l = 0; l < kLossCount; ++l) pieces[l].push_back(row.minutes[l] / capacity);
    Merge(std::move(row), &w->groups[row.group]);
  }
  w->names = std::move(ledger.contributor_names);
  if (used != nullptr) *used = std::move(ledger.baselines);
  return Status::Ok();
}

// The history yardstick looks back this many windows (so at most one
// fewer changes between them), and needs at least kMinHistoryChanges.
constexpr int kHistoryWindows = 8;
constexpr size_t kMinHistoryChanges = 3;

// Each group's share of each loss in [start, end), from the ledger NORTHSTAR
// reads (no contributors: its whole hours are kept and reused); none for a
// group whose agents reported nothing.
using Shares = std::map<std::vector<std::string>, std::array<double, kLossCount>>;

Status SharesOf(Db* db, const QueryOptions& options, int64_t now_ns,
                const std::vector<std::string>& by, int64_t start, int64_t end, Shares* out) {
  Ledger ledger;
  GPULSE_RETURN_IF_ERROR(BuildLedger(db, LedgerFor(options, now_ns, by, start, end), &ledger));
  for (const LedgerRow& row : ledger.rows) {
    const double capacity = row.Capacity();
    // A group no agent reported from (before the fleet's data began) has no history.
    if (capacity <= 0 || row.minutes[static_cast<size_t>(Loss::kUnobserved)] >= capacity) continue;
    for (size_t l = 0; l < kLossCount; ++l) (*out)[row.group][l] = row.minutes[l] / capacity;
  }
  return Status::Ok();
}

// The fleet's own history of each loss (docs/metric-framework.md, "Ranking
// the losses"): the windows [start, end) moved back `step` at a time, as
// long as they hold capacity, and the change of each group's share of each
// loss from one to the next: the comparison asked, made earlier. A loss's
// usual noise is 1.4826 times the median size of those changes (the median
// absolute deviation about no change, scaled to a standard deviation),
// which one earlier window with an incident of its own hardly moves.
// Groups with fewer than kMinHistoryChanges changes get none.
struct Yardstick {
  size_t changes = 0;
  std::array<double, kLossCount> noise{};
};
using Yardsticks = std::map<std::vector<std::string>, Yardstick>;

double Median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n == 0 ? 0 : n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

Status History(Db* db, const QueryOptions& options, int64_t now_ns,
               const std::vector<std::string>& by, int64_t start, int64_t end, int64_t step,
               Yardsticks* out) {
  std::vector<Shares> windows;
  for (int j = 0; j < kHistoryWindows; ++j) {
    Shares shares;
    GPULSE_RETURN_IF_ERROR(
        SharesOf(db, options, now_ns, by, start - j * step, end - j * step, &shares));
    if (shares.empty()) break;
    windows.push_back(std::move(shares));
  }
  std::map<std::vector<std::string>, std::array<std::vector<double>, kLossCount>> changes;
  for (size_t j = 1; j < windows.size(); ++j) {
    for (const auto& [group, later] : windows[j - 1]) {
      const auto earlier = windows[j].find(group);
      if (earlier == windows[j].end()) continue;
      for (size_t l = 0; l < kLossCount; ++l)
        changes[group][l].push_back(std::abs(later[l] - earlier->second[l]));
    }
  }
  for (const auto& [group, by_loss] : changes) {
    if (by_loss[0].size() < kMinHistoryChanges) continue;
    Yardstick& y = (*out)[group];
    y.changes = by_loss[0].size();
    for (size_t l = 0; l < kLossCount; ++l) y.noise[l] = 1.4826 * Median(by_loss[l]);
  }
  return Status::Ok();
}

double Share(const LedgerRow* row, size_t loss) {
  if (row == nullptr || row->Capacity() <= 0) return 0;
  return row->minutes[loss] / row->Capacity();
}

// The share of capacity that the one failed attempt that threw away most of
// `loss` threw away: a single job's failure, however large, is one event.
double LargestFailure(const LedgerRow* row, size_t loss) {
  if (row == nullptr || row->Capacity() <= 0) return 0;
  double most = 0;
  for (const auto& [id, attempt] : row->failed_attempts) {
    if (static_cast<size_t>(attempt.loss) == loss) most = std::max(most, attempt.minutes);
  }
  return most / row->Capacity();
}

// How much a loss grew beyond what one job's failure explains: the change
// with each window's largest single failure of that loss taken out.
double SystematicChange(const LedgerRow* ra, const LedgerRow* rb, size_t loss) {
  return (Share(rb, loss) - LargestFailure(rb, loss)) -
         (Share(ra, loss) - LargestFailure(ra, loss));
}

// The standard error of the mean of a loss's share over a window's pieces
// (0 for fewer than three). Pieces next to each other are alike when a loss
// persists for hours (a queue that stays long, a slow cluster), so they are
// fewer independent looks than their count: the count is discounted by
// their lag-1 autocorrelation r, n (1 - r) / (1 + r), as for an AR(1)
// series, and never below two.
double StandardError(const std::vector<double>& shares) {
  const size_t n = shares.size();
  if (n < 3) return 0;
  double mean = 0;
  for (double x : shares) mean += x;
  mean /= static_cast<double>(n);
  double sum_sq = 0, lagged = 0;
  for (size_t i = 0; i < n; ++i) {
    sum_sq += (shares[i] - mean) * (shares[i] - mean);
    if (i + 1 < n) lagged += (shares[i] - mean) * (shares[i + 1] - mean);
  }
  if (sum_sq <= 0) return 0;
  const double r = std::clamp(lagged / sum_sq, 0.0, 0.9);
  const double n_eff = std::max(2.0, static_cast<double>(n) * (1 - r) / (1 + r));
  return std::sqrt(sum_sq / static_cast<double>(n - 1) / n_eff);
}

// A loss's usual noise: the larger of two yardsticks. The windows' own
// pieces: the standard error of the difference of their means (Welch). The
// fleet's history, where there is enough of it (History). No less than
// kMinNoise. The loss's systematic change in units of it is its
// significance: a loss that swings by a point from one day to the next
// moving by a point means less than one that never moves moving by half.
double Noise(const Window& a, const Window& b, const Yardsticks& history,
             const std::vector<std::string>& group, size_t loss) {
  const auto error = [&](const Window& w) {
    const auto it = w.pieces.find(group);
    return it == w.pieces.end() ? 0.0 : StandardError(it->second[loss]);
  };
  const double ea = error(a), eb = error(b);
  double noise = std::sqrt(ea * ea + eb * eb);
  const auto h = history.find(group);
  if (h != history.end()) noise = std::max(noise, h->second.noise[loss]);
  return std::max(noise, kMinNoise);
}

// A loss stands out when its systematic change is this many times its
// noise: beyond its usual range. Three: a quiet fleet's loss moves that far
// about once in 700 looks (one-sided, normal), and a DECOMPOSE looks at
// seven losses.
constexpr double kStandsOut = 3;
std::string FormatPoints(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", 100 * share);
  return text;
}

struct Contributor {
  std::string dimension, value;
  double before = 0, after = 0;  // share of capacity lost to the loss through it
  double share_of_change = 0;
  double concentration = 0;  // share of the change over share of presence
};

// The contributors of `loss` in a group, keyed by name (the two windows
// number their contributors separately).
std::vector<Contributor> Contributors(const Window& a, const LedgerRow* ra, const Window& b,
                                      const LedgerRow* rb, size_t loss) {
  std::map<std::pair<std::string, std::string>, Contributor> by_name;
  const auto add = [&](const Window& w, const LedgerRow* row, bool after) {
    if (row == nullptr) return;
    const double capacity = row->Capacity();
    for (const auto& [id, minutes] : row->contributors[loss]) {
      Contributor& c = by_name[w.names[id]];
      (after ? c.after : c.before) += minutes / capacity;
    }
  };
  add(a, ra, false);
  add(b, rb, true);
  const double change = Share(rb, loss) - Share(ra, loss);
  std::map<std::pair<std::string, std::string>, double> presence;  // in the after window
  if (rb != nullptr) {
    for (const auto& [id, minutes] : rb->contributors[0])
      presence[b.names[id]] = minutes / rb->Capacity();
  }
  std::vector<Contributor> out;
  for (auto& [name, c] : by_name) {
    c.dimension = name.first;
    c.value = name.second;
    c.share_of_change = change != 0 ? (c.after - c.before) / change : 0;
    const auto p = presence.find(name);
    c.concentration = c.share_of_change / std::max(p == presence.end() ? 0.0 : p->second, 0.001);
    if (c.dimension == "queue") {
      // A queue holds no capacity: its presence is its part of the loss
      // before, so a queue that newly waits stands out as a node that newly
      // fails does.
      const double before = Share(ra, loss);
      c.concentration = c.share_of_change / std::max(before > 0 ? c.before / before : 0.0, 0.001);
    }
    if (c.share_of_change >= kMinShareOfChange) out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const Contributor& x, const Contributor& y) {
    return x.concentration != y.concentration ? x.concentration > y.concentration
                                              : x.value < y.value;
  });
  if (out.size() > kTopContributors) out.resize(kTopContributors);
  return out;
}

// A series `name` about one loss of a group: the group's tags and `loss`.
ResultSeries LossSeries(const char* name, const std::vector<Tag>& tags, size_t loss) {
  ResultSeries rs;
  rs.name = name;
  rs.tags = tags;
  rs.tags.push_back({"loss", std::string(LossName(static_cast<Loss>(loss)))});
  std::sort(rs.tags.begin(), rs.tags.end(),
            [](const Tag& x, const Tag& y) { return x.key < y.key; });
  return rs;
}

}  // namespace

Status RunDecompose(Db* db, const DecomposeStatement& s, const QueryOptions& options,
                    int64_t now_ns, std::vector<ResultSeries>* out,
                    std::vector<std::string>* notes) {
  std::vector<std::string> by;
  for (const auto& d : s.dimensions) {
    if (d->kind != ExprKind::kVarRef)
      return ErrorAt(*d, "DECOMPOSE groups BY tags or attribution columns");
    by.push_back(d->text);
  }
  int64_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
  GPULSE_RETURN_IF_ERROR(Bound(*s.between_start, now_ns, &a0));
  GPULSE_RETURN_IF_ERROR(Bound(*s.between_end, now_ns, &a1));
  GPULSE_RETURN_IF_ERROR(Bound(*s.versus_start, now_ns, &b0));
  GPULSE_RETURN_IF_ERROR(Bound(*s.versus_end, now_ns, &b1));
  if (a1 <= a0) return ErrorAt(*s.between_end, "the BETWEEN window ends before it starts");
  if (b1 <= b0) return ErrorAt(*s.versus_end, "the VERSUS window ends before it starts");
  // Data and network waits are judged in both windows against the usual
  // shares of the BETWEEN window: were each window its own yardstick, an
  // incident on a large part of the fleet would raise the median it is
  // measured against and hide itself.
  Window before, after;
  StepBaselines baselines;
  GPULSE_RETURN_IF_ERROR(LedgerOf(db, options, now_ns, by, a0, a1, nullptr, &before, &baselines));
  GPULSE_RETURN_IF_ERROR(LedgerOf(db, options, now_ns, by, b0, b1, &baselines, &after, nullptr));
  // Windows of one length some distance apart have a history: the same
  // comparison made earlier, a step of that distance at a time.
  Yardsticks history;
  if (a1 - a0 == b1 - b0 && b0 != a0) {
    const int64_t first = std::min(a0, b0);
    GPULSE_RETURN_IF_ERROR(
        History(db, options, now_ns, by, first, first + (a1 - a0), std::abs(b0 - a0), &history));
  }
  std::map<std::vector<std::string>, int> groups;
  for (const auto& [g, row] : before.groups) groups[g];
  for (const auto& [g, row] : after.groups) groups[g];
  if (groups.empty()) {
    notes->push_back(
        "no GPU-minutes of capacity in either window: is there a gpu measurement "
        "(docs/fleet-schema.md)?");
    return Status::Ok();
  }
  size_t quiet_groups = 0;  // groups none of whose losses stands out
  for (const auto& [group, unused] : groups) {
    const auto ia = before.groups.find(group);
    const auto ib = after.groups.find(group);
    const LedgerRow* ra = ia == before.groups.end() ? nullptr : &ia->second;
    const LedgerRow* rb = ib == after.groups.end() ? nullptr : &ib->second;
    std::vector<Tag> tags;
    for (size_t k = 0; k < by.size(); ++k) tags.push_back({by[k], group[k]});
    std::sort(tags.begin(), tags.end(), [](const Tag& x, const Tag& y) { return x.key < y.key; });
    // The ranking (docs/metric-framework.md, "Ranking the losses"): the
    // losses that stand out (beyond their usual range, or backed by direct
    // evidence) first, then the rest, each by its change less what one job's
    // failure explains (one large job failing after its checkpoint is an
    // event; a cause is what fails many). Slack comes last whatever its
    // change: capacity nobody asked for says how demand moved, not what went
    // wrong (a note says when it moved goodput more than every other loss
    // together).
    constexpr size_t kSlack = static_cast<size_t>(Loss::kSlack);
    std::vector<size_t> order;
    for (size_t l = 1; l < kLossCount; ++l) {
      if (l != kSlack) order.push_back(l);
    }
    std::array<double, kLossCount> systematic{}, noise{}, significance{};
    std::array<Evidence, kLossCount> evidence;
    evidence[static_cast<size_t>(Loss::kHardware)] =
        HardwareEvidence(before.names, ra, after.names, rb);
    evidence[static_cast<size_t>(Loss::kSoftware)] =
        SoftwareEvidence(before.names, ra, after.names, rb);
    evidence[static_cast<size_t>(Loss::kNetwork)] =
        NetworkEvidence(before.names, ra, after.names, rb);
    evidence[static_cast<size_t>(Loss::kScheduling)] =
        SchedulingEvidence(before.names, ra, after.names, rb);
    for (size_t l = 1; l < kLossCount; ++l) {
      systematic[l] = SystematicChange(ra, rb, l);
      noise[l] = Noise(before, after, history, group, l);
      significance[l] = systematic[l] / noise[l];
    }
    const auto beyond = [&](size_t l) { return significance[l] >= kStandsOut; };
    const auto stands_out = [&](size_t l) { return beyond(l) || evidence[l].found(); };
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      if (stands_out(x) != stands_out(y)) return stands_out(x);
      return systematic[x] > systematic[y];
    });
    order.push_back(kSlack);
    if (!stands_out(order[0])) ++quiet_groups;
    double ill_growth = 0;
    for (size_t l : order) {
      if (l != kSlack) ill_growth += std::max(0.0, Share(rb, l) - Share(ra, l));
    }
    const double slack_change = Share(rb, kSlack) - Share(ra, kSlack);
    if (std::abs(slack_change) >= 0.0005 && std::abs(slack_change) > ill_growth) {
      std::string where;
      for (const Tag& t : tags) where += (where.empty() ? " (" : ", ") + t.key + "=" + t.value;
      if (!where.empty()) where += ")";
      notes->push_back("goodput" + where + " moved with demand more than with ill health: slack " +
                       (slack_change > 0 ? "grew" : "fell") + " by " +
                       FormatPoints(std::abs(slack_change)) +
                       " points, every other loss together grew by " + FormatPoints(ill_growth));
    }
    ResultSeries summary;
    summary.name = "decompose";
    summary.tags = tags;
    summary.columns = {"rank",         "loss",          "before",
                       "after",        "change_points", "single_job_points",
                       "noise_points", "significance",  "yardstick",
                       "verdict",      "evidence"};
    const auto h = history.find(group);
    const std::string yardstick = h == history.end()
                                      ? "the windows' hours"
                                      : std::to_string(h->second.changes) + " earlier changes";
    summary.values.push_back(
        {QueryValue(int64_t{0}), QueryValue(std::string("goodput")), QueryValue(Share(ra, 0)),
         QueryValue(Share(rb, 0)), QueryValue(100 * (Share(rb, 0) - Share(ra, 0))), QueryValue(),
         QueryValue(), QueryValue(), QueryValue(), QueryValue(), QueryValue()});
    int64_t rank = 0;
    for (size_t l : order) {
      const std::string verdict = l == kSlack ? "demand"
                                  : beyond(l) && evidence[l].found()
                                      ? "beyond its usual range, with evidence"
                                  : beyond(l)           ? "beyond its usual range"
                                  : evidence[l].found() ? "backed by evidence"
                                                        : "within its usual range";
      summary.values.push_back(
          {QueryValue(++rank), QueryValue(std::string(LossName(static_cast<Loss>(l)))),
           QueryValue(Share(ra, l)), QueryValue(Share(rb, l)),
           QueryValue(100 * (Share(rb, l) - Share(ra, l))),
           QueryValue(100 * (LargestFailure(rb, l) - LargestFailure(ra, l))),
           QueryValue(100 * noise[l]), QueryValue(significance[l]), QueryValue(yardstick),
           QueryValue(verdict),
           evidence[l].found() ? QueryValue(evidence[l].summary) : QueryValue()});
    }
    out->push_back(std::move(summary));
    for (size_t l : order) {
      if (!evidence[l].found()) continue;
      ResultSeries rs = LossSeries("evidence", tags, l);
      rs.columns = {"rank", "dimension", "value", "before", "after", "unit"};
      int64_t r = 0;
      for (const EvidenceItem& item : evidence[l].items) {
        if (r == static_cast<int64_t>(kEvidenceListed)) break;
        rs.values.push_back({QueryValue(++r), QueryValue(item.dimension), QueryValue(item.value),
                             QueryValue(item.before), QueryValue(item.after),
                             QueryValue(evidence[l].unit)});
      }
      out->push_back(std::move(rs));
    }
    for (size_t l : order) {
      if (std::abs(Share(rb, l) - Share(ra, l)) < 0.0005)
        continue;  // under 0.05 points: nothing to explain
      const std::vector<Contributor> top = Contributors(before, ra, after, rb, l);
      if (top.empty()) continue;
      ResultSeries rs = LossSeries("contributors", tags, l);
      rs.columns = {"rank",  "dimension",     "value",          "before",
                    "after", "change_points", "share_of_change"};
      int64_t r = 0;
      for (const Contributor& c : top) {
        rs.values.push_back({QueryValue(++r), QueryValue(c.dimension), QueryValue(c.value),
                             QueryValue(c.before), QueryValue(c.after),
                             QueryValue(100 * (c.after - c.before)),
                             QueryValue(c.share_of_change)});
      }
      out->push_back(std::move(rs));
    }
  }
  if (quiet_groups == groups.size() && by.empty()) {
    notes->push_back(
        "no loss moved beyond its usual range (3 times its noise), and none has direct evidence "
        "behind it: goodput moved as much as it does between comparable windows");
  } else if (quiet_groups > 0) {
    notes->push_back("in " + std::to_string(quiet_groups) + " of " + std::to_string(groups.size()) +
                     " groups no loss moved beyond its usual range and none has direct evidence");
  }
  return Status::Ok();
}

}  // namespace gpulse::query
