// The GPU-minute ledger (fleet_ledger.h). It reads, through the public Db
// API: sched (every job attempt's outcome, and the queue's length over
// time), job_step (whether a job advanced in a minute, and the shares of
// its steps spent on data and on gradient sync), node (planned maintenance,
// GPUs reported against inventory, whether the agent reported at all) and
// gpu (the job on each GPU each minute, and its health). Then each GPU-minute
// of the range is classified once.

#include "query/fleet/ledger_builder.h"

namespace gpulse::query {

Status BuildLedger(Db* db, const LedgerOptions& options, Ledger* out) {
  return ledger::LedgerBuilder(db, options).Build(out);
}

}  // namespace gpulse::query
