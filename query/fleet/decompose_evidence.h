// The direct evidence DECOMPOSE shows beside a loss (decompose.h): what
// is new in the later window and a person checks first. GPUs that raised
// hardware XIDs, fabric links that were troubled, drivers and images whose
// jobs failed for software reasons beyond chance, regions whose scheduler
// left jobs waiting beside room for them beyond chance. docs/metric-framework.md,
// "Ranking the losses", gives the rules.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "query/fleet/ledger_row.h"

namespace gpulse::query {

// How many items an evidence table lists.
inline constexpr size_t kEvidenceListed = 10;

// One GPU, link, driver or image, with a figure before and after.
struct EvidenceItem {
  std::string dimension, value;
  double before = 0, after = 0;
  std::string text;  // how the summary names it
};

// The items behind one loss, the strongest first; none when there is none.
struct Evidence {
  std::string unit;  // of before and after
  std::vector<EvidenceItem> items;
  std::string summary;  // a sentence naming the first few
  bool found() const { return !items.empty(); }
};

// Each compares the later window's row (rb) with the earlier's (ra; either
// may be null), as built with LedgerOptions::contributors.
Evidence HardwareEvidence(const ContributorNames& a, const LedgerRow* ra, const ContributorNames& b,
                          const LedgerRow* rb);
Evidence NetworkEvidence(const ContributorNames& a, const LedgerRow* ra, const ContributorNames& b,
                         const LedgerRow* rb);
Evidence SoftwareEvidence(const ContributorNames& a, const LedgerRow* ra, const ContributorNames& b,
                          const LedgerRow* rb);
Evidence SchedulingEvidence(const ContributorNames& a, const LedgerRow* ra,
                            const ContributorNames& b, const LedgerRow* rb);

}  // namespace gpulse::query
