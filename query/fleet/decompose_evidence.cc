// The direct evidence of DECOMPOSE (decompose_evidence.h).

#include "query/fleet/decompose_evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

namespace gpulse::query {

namespace {

// A driver's or image's software failures are evidence when a rate this
// unlikely or less (the binomial tail, Bonferroni-corrected over the
// cohorts tested) explains them: one in a thousand.
constexpr double kCohortAlpha = 0.001;
// How many items an evidence text names before "and N more".
constexpr size_t kEvidenceNamed = 3;

std::string FormatCount(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", x);
  return text;
}

// `lead` followed by the first items' texts, "; and N more".
void Summarize(const std::string& lead, const std::string& sep, Evidence* e) {
  e->summary = lead;
  for (size_t i = 0; i < e->items.size() && i < kEvidenceNamed; ++i)
    e->summary += (i == 0 ? "" : sep) + e->items[i].text;
  if (e->items.size() > kEvidenceNamed)
    e->summary += sep + "and " + std::to_string(e->items.size() - kEvidenceNamed) + " more";
}

// The items of `minutes` (contributor id -> minutes) in the later window
// whose names the earlier window's `before` does not have: what is new, the
// most minutes first.
Evidence Fresh(const ContributorNames& a, const std::unordered_map<uint32_t, double>* before,
               const ContributorNames& b, const std::unordered_map<uint32_t, double>& minutes,
               const std::string& unit) {
  std::set<std::string> seen;
  if (before != nullptr) {
    for (const auto& [id, m] : *before) seen.insert(a[id].second);
  }
  Evidence e;
  e.unit = unit;
  for (const auto& [id, m] : minutes) {
    const auto& [dimension, value] = b[id];
    if (!seen.contains(value))
      e.items.push_back({dimension, value, 0, m, value + " (" + FormatCount(m) + ")"});
  }
  std::sort(e.items.begin(), e.items.end(), [](const EvidenceItem& x, const EvidenceItem& y) {
    return x.after != y.after ? x.after > y.after : x.value < y.value;
  });
  return e;
}

// P(X >= k) for X ~ Binomial(n, p).
double UpperTail(double n, double k, double p) {
  if (k <= 0) return 1;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  double sum = 0;
  for (double i = k; i <= n; ++i) {
    sum += std::exp(std::lgamma(n + 1) - std::lgamma(i + 1) - std::lgamma(n - i + 1) +
                    i * std::log(p) + (n - i) * std::log1p(-p));
  }
  return std::min(1.0, sum);
}

// The items a test found beyond chance, by their tail probability, the
// least likely first, in an Evidence of `unit`.
Evidence LeastLikelyFirst(std::vector<std::pair<double, EvidenceItem>> found,
                          const std::string& unit) {
  std::sort(found.begin(), found.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second.value < y.second.value;
  });
  Evidence e;
  e.unit = unit;
  for (auto& [tail, item] : found) e.items.push_back(std::move(item));
  Summarize("", "; ", &e);
  return e;
}

}  // namespace

// Hardware: GPUs that raised a hardware XID in the later window and none in
// the earlier one.
Evidence HardwareEvidence(const ContributorNames& a, const LedgerRow* ra, const ContributorNames& b,
                          const LedgerRow* rb) {
  if (rb == nullptr) return {};
  Evidence e = Fresh(a, ra == nullptr ? nullptr : &ra->xid_minutes, b, rb->xid_minutes,
                     "minutes with a hardware XID");
  Summarize("hardware XIDs (minutes) on " + std::to_string(e.items.size()) +
                " GPU(s) that raised none before: ",
            ", ", &e);
  return e;
}

// Network: fabric links troubled in the later window (ledger_builder.h's
// kTroubledPacketLossPct, kTroubledRetransmits) and never in the earlier.
Evidence NetworkEvidence(const ContributorNames& a, const LedgerRow* ra, const ContributorNames& b,
                         const LedgerRow* rb) {
  if (rb == nullptr) return {};
  Evidence e = Fresh(a, ra == nullptr ? nullptr : &ra->troubled_minutes, b, rb->troubled_minutes,
                     "GPU-minutes under a troubled link");
  Summarize("packet loss or retransmits (GPU-minutes under them) on " +
                std::to_string(e.items.size()) + " link(s) that had none before: ",
            ", ", &e);
  return e;
}

// Software: a driver or image whose jobs failed for software reasons far
// more often in the later window than chance allows, against its own rate
// in the earlier window, or, new to the later window, against the rest of
// it. Its exposure is its GPU-minutes, each weighted by what its work fails
// at (WorkloadWeights over both windows): by GPU-minutes alone, an image
// whose work turned from training to notebooks failed more with nothing
// wrong with it (two clean controls called one). Given the failures of
// both, each falls to the cohort with its share of the exposure (a
// binomial). The least likely first: a driver that fails every image's jobs
// raises each image's rate too, and is named before them.
Evidence SoftwareEvidence(const ContributorNames& a, const LedgerRow* ra, const ContributorNames& b,
                          const LedgerRow* rb) {
  if (rb == nullptr) return {};
  WorkloadWeights weights;
  if (ra != nullptr) weights.Add(a, *ra);
  weights.Add(b, *rb);
  struct Cohort {
    double failed_before = 0, minutes_before = 0, exposure_before = 0;
    double failed = 0, minutes = 0, exposure = 0;
  };
  std::map<std::pair<std::string, std::string>, Cohort> cohorts;
  const auto add = [&](const ContributorNames& w, const LedgerRow* row, bool later) {
    if (row == nullptr) return;
    for (const auto& [id, attempts] : row->software_failures) {
      Cohort& c = cohorts[w[id]];
      (later ? c.failed : c.failed_before) += static_cast<double>(attempts.size());
    }
    for (const auto& [key, minutes] : row->cohort_class_minutes) {
      Cohort& c = cohorts[w[static_cast<uint32_t>(key >> 32)]];
      const double exposure = minutes * weights.Of(w, static_cast<uint32_t>(key));
      (later ? c.minutes : c.minutes_before) += minutes;
      (later ? c.exposure : c.exposure_before) += exposure;
    }
  };
  add(a, ra, false);
  add(b, rb, true);
  double failed_all = 0;
  for (const auto& [hash, attempt] : rb->failed_attempts)
    failed_all += attempt.loss == Loss::kSoftware;
  const double exposure_all = weights.Exposure(b, *rb);
  double tested = 0;
  for (const auto& [name, c] : cohorts) tested += c.failed > 0 && c.exposure > 0;
  std::vector<std::pair<double, EvidenceItem>> found;  // (tail, item)
  for (const auto& [name, c] : cohorts) {
    if (c.failed <= 0 || c.exposure <= 0 || c.minutes <= 0) continue;
    EvidenceItem item{name.first, name.second, 0, 60 * c.failed / c.minutes, ""};
    item.text = name.first + " " + name.second + ": " + FormatCount(c.failed) +
                " software failures in " + FormatCount(c.minutes / 60) + " GPU-hours";
    char detail[128];
    double tail = 1;
    if (c.exposure_before > 0) {
      const double n = c.failed_before + c.failed,
                   p = c.exposure / (c.exposure + c.exposure_before);
      tail = UpperTail(n, c.failed, p);
      item.before = c.minutes_before > 0 ? 60 * c.failed_before / c.minutes_before : 0;
      // What its rate before would have given its later work (the mix
      // weighed in): how far beyond its own habit it went.
      const double expected = c.failed_before * c.exposure / c.exposure_before;
      if (c.failed_before > 0) {
        std::snprintf(detail, sizeof detail,
                      ", %.1f times its rate before (%.1f expected of its work at that rate)",
                      item.after / item.before, expected);
      } else {
        std::snprintf(detail, sizeof detail, ", none before");
      }
      item.text += detail;
    } else {
      const double failed = std::max(failed_all, c.failed);
      const double p = exposure_all > c.exposure ? c.exposure / exposure_all : 1;
      tail = UpperTail(failed, c.failed, p);
      item.before =
          rb->Capacity() > c.minutes ? 60 * (failed - c.failed) / (rb->Capacity() - c.minutes) : 0;
      const double expected = p < 1 ? (failed - c.failed) * p / (1 - p) : 0;
      std::snprintf(detail, sizeof detail,
                    " (new): %.0f%% of the window's on %.0f%% of it (%.1f expected of its work at "
                    "the rest's rate)",
                    100 * c.failed / failed, 100 * c.minutes / rb->Capacity(), expected);
      item.text += detail;
    }
    if (tail * tested < kCohortAlpha) found.push_back({tail, std::move(item)});
  }
  return LeastLikelyFirst(std::move(found), "software failures a GPU-hour");
}

// Scheduling: a region in which jobs waited beside a node with room for
// them (LedgerRow::queue_waits) in far more of its minutes than chance
// allows: given the minutes beside room of both windows, each falls to a
// window with its share of the region's minutes (a binomial, as for the
// cohorts), Bonferroni-corrected over the regions tested. A scheduler that
// places what fits makes no such wait however full the region is, so the
// test sees its order or placement change.
Evidence SchedulingEvidence(const ContributorNames& a, const LedgerRow* ra,
                            const ContributorNames& b, const LedgerRow* rb) {
  if (rb == nullptr) return {};
  struct Region {
    double minutes_before = 0, room_before = 0, minutes = 0, room = 0;
  };
  std::map<std::string, Region> regions;
  const auto add = [&](const ContributorNames& w, const LedgerRow* row, bool later) {
    if (row == nullptr) return;
    for (const auto& [id, waits] : row->queue_waits) {
      Region& r = regions[w[id].second];
      (later ? r.minutes : r.minutes_before) += waits.minutes;
      (later ? r.room : r.room_before) += waits.beside_room;
    }
  };
  add(a, ra, false);
  add(b, rb, true);
  double tested = 0;
  for (const auto& [name, r] : regions) tested += r.room > 0;
  std::vector<std::pair<double, EvidenceItem>> found;  // (tail, item)
  for (const auto& [name, r] : regions) {
    if (r.room <= 0) continue;
    EvidenceItem item{"region", name, r.minutes_before > 0 ? r.room_before / r.minutes_before : 0,
                      r.room / r.minutes, ""};
    item.text = "region " + name + ": jobs waited beside a node with room for them in " +
                FormatCount(r.room) + " of " + FormatCount(r.minutes) +
                " minutes (before: " + FormatCount(r.room_before) + " of " +
                FormatCount(r.minutes_before) + ")";
    const double tail =
        UpperTail(r.room_before + r.room, r.room, r.minutes / (r.minutes + r.minutes_before));
    if (tail * tested < kCohortAlpha) found.push_back({tail, std::move(item)});
  }
  return LeastLikelyFirst(std::move(found), "share of minutes in which a job waited beside room");
}

}  // namespace gpulse::query
