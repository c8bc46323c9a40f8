#include "query/fleet/ledger_row.h"

namespace gpulse::query {

std::string_view LossName(Loss loss) {
  constexpr std::string_view kNames[] = {"productive", "hardware", "software",
                                         "scheduling", "data_io",  "network",
                                         "lost_work",  "slack",    "unobserved"};
  return kNames[static_cast<size_t>(loss)];
}

double LedgerRow::Capacity() const {
  double total = 0;
  for (double m : minutes) total += m;
  return total;
}

std::string WorkloadClassOf(const ContributorNames& names, uint32_t id) {
  return id < names.size() ? names[id].second : std::string("\x01no job");
}

void WorkloadWeights::Add(const ContributorNames& names, const LedgerRow& row) {
  for (const auto& [id, minutes] : row.class_minutes)
    classes_[WorkloadClassOf(names, id)].second += minutes;
  for (const auto& [hash, attempt] : row.failed_attempts) {
    if (attempt.loss != Loss::kSoftware || !counted_.insert(hash).second) continue;
    const auto it = row.software_failure_class.find(hash);
    classes_[WorkloadClassOf(names,
                             it == row.software_failure_class.end() ? UINT32_MAX : it->second)]
        .first += 1;
  }
}

double WorkloadWeights::Of(const ContributorNames& names, uint32_t id) const {
  const auto it = classes_.find(WorkloadClassOf(names, id));
  if (it == classes_.end() || it->second.second <= 0) return 0;
  return (it->second.first + 1) / it->second.second;
}

double WorkloadWeights::Exposure(const ContributorNames& names, const LedgerRow& row) const {
  double exposure = 0;
  for (const auto& [id, minutes] : row.class_minutes) exposure += minutes * Of(names, id);
  return exposure;
}

}  // namespace gpulse::query
