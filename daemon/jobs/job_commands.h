// The commands on jobs and workers that are not a worker's lease reports: submit, list, show,
// cancel, move and unplace jobs; register and list workers (docs/api.md).
//
// Ownership: borrows the Store, the Clock, the broker, the lease reports, the moves and the
// observer (all outlive it); the submit checks (admission, feasibility) are borrowed too, may be
// null, and must outlive the commands once set.
// Thread safety: every method is safe from any thread. The submit checks are set before serving
// (their owners are built after the service) and read through atomics, so a submit on another
// thread sees either the old check or the new one, never a torn pointer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/jobs/feasibility.h"
#include "daemon/jobs/job_moves.h"
#include "daemon/jobs/job_observer.h"
#include "daemon/jobs/lease_broker.h"
#include "daemon/jobs/lease_reports.h"
#include "daemon/jobs/protocol.h"
#include "daemon/jobs/service_options.h"
#include "daemon/jobs/submit_admission.h"
#include "daemon/store/store.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

// A spec sent as text (a submit, a quote), decoded and checked by the spec parser: jobctld's one
// decoder of spec text besides the store's row codecs, which decode the specs it stored.
Expected<train::JobSpec> decode_spec_text(std::string_view text);

class JobCommands {
 public:
  JobCommands(store::Store& store, const Clock& clock, const ServiceOptions& options, LeaseBroker& broker,
              LeaseReports& reports, JobMoves& moves, JobObserver& observer);
  JobCommands(const JobCommands&) = delete;
  JobCommands& operator=(const JobCommands&) = delete;

  // Limits and budget holds checked inside every submit's transaction (submit_admission.h), and
  // the refusal of what nothing could ever run (feasibility.h, told of every registration).
  void set_admission(SubmitAdmission* admission) { admission_.store(admission); }
  void set_feasibility(Feasibility* feasibility) { feasibility_.store(feasibility); }

  // `done` runs on the store's writer thread once the job is durable (or with the error), or on
  // the calling thread when the spec is refused. It must be quick.
  void submit_job_async(std::string_view spec_json, const SubmitContext& context,
                        std::function<void(Expected<JobRow>)> done);
  // A sweep (train/spec/job_sweep.h): one job per case of the spec's `sweep`, all stored in one
  // transaction or none; each row's array_id is the first job's id. A case the spec parser or the
  // submit checks refuse refuses the whole array, its index in the message. `done` as above.
  void submit_array_async(std::string_view spec_json, const SubmitContext& context,
                          std::function<void(Expected<std::vector<JobRow>>)> done);
  Expected<JobPage> list_jobs(const JobListRequest& request);
  Expected<JobDetail> get_job(int64_t id);
  // dependency_failed: cancelled by placement, as a dependency it waited for failed (the reason
  // is the event's and the job's error); nullopt: by its owner.
  Expected<JobRow> cancel_job(int64_t id, const std::optional<std::string>& dependency_failed = std::nullopt);
  // Cancels every job of the array that has not ended (owner: only that user's jobs); returns
  // all its jobs as they now are. not_found when it has none (to this owner).
  Expected<std::vector<JobRow>> cancel_array(int64_t array_id, const std::optional<std::string>& owner);
  Expected<JobRow> request_move(int64_t job_id, const MoveRequest& request);
  Expected<bool> unplace(int64_t job_id, const std::string& reason);
  Expected<bool> hold_waiting(int64_t job_id, const nlohmann::json& detail);

  Expected<WorkerRegistered> register_worker(const WorkerRegistration& request);
  Expected<std::vector<WorkerInfo>> list_workers(const std::optional<std::string>& owner, int64_t after_id,
                                                 int64_t limit);

 private:
  struct Prepared;
  Expected<Prepared> prepare(std::string_view spec_json, const SubmitContext& context);
  // Inserts a prepared job with its `submitted` event, its submitter and admission's verdict.
  Expected<JobRow> insert_prepared(store::WriteTxn& txn, const Prepared& prepared, SubmitAdmission* admission);

  store::Store& store_;
  const Clock& clock_;
  const ServiceOptions options_;
  LeaseBroker& broker_;
  LeaseReports& reports_;
  JobMoves& moves_;
  JobObserver& observer_;
  std::atomic<SubmitAdmission*> admission_{nullptr};
  std::atomic<Feasibility*> feasibility_{nullptr};
};

}  // namespace jobctl::daemon::jobs
