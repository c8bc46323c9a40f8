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

}  // namespace gpulse::query
