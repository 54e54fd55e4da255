// The hook a submit passes through inside its transaction: whatever admits or holds jobs (per-user
// limits and budgets, daemon/auth/auth_admission.h) implements it, so jobs/ does not depend on
// the concern that decides.
//
// Thread safety: admit() is called on the store's writer thread, inside the submit's transaction.
#pragma once

#include "base/expected.h"
#include "daemon/jobs/protocol.h"
#include "daemon/store/store.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

class SubmitAdmission {
 public:
  virtual ~SubmitAdmission() = default;
  // Called by JobCommands::submit_job_async with the parsed spec, before anything is written (any
  // thread): what the submitter may not ask for at all. An error refuses the submit. It may note
  // in `context` what admit() needs (the job's estimated cost), outside the transaction.
  virtual Status admit_spec(const train::JobSpec& spec, SubmitContext& context) = 0;
  // Called by JobCommands::submit_job_async after the job row and its "submitted" event are written, in
  // the same transaction. An error refuses the submit (the transaction part rolls back); holding
  // sets row.state = held and writes the "held" event.
  virtual Status admit(store::WriteTxn& txn, store::JobRow& row, const SubmitContext& context) = 0;
};

}  // namespace jobctl::daemon::jobs
