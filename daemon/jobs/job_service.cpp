#include "daemon/jobs/job_service.h"

#include <utility>

#include "daemon/jobs/job_service_support.h"

namespace jobctl::daemon::jobs {

using store::WriteTxn;

JobService::JobService(store::Store& store, const Clock& clock, std::unique_ptr<JobMatcher> matcher,
                       ServiceOptions options, ServiceDependencies dependencies)
    : store_(store),
      clock_(clock),
      options_(options),
      broker_(store, clock, std::move(matcher), options_, dependencies.lease_recorder, dependencies.lease_credentials,
              moves_, observers_),
      reports_(store, clock, options_, dependencies.lease_recorder, broker_, moves_, observers_),
      commands_(store, clock, options_, broker_, reports_, moves_, observers_),
      housekeeping_(store, clock, options_, dependencies.log ? *dependencies.log : stderr_log(), broker_, reports_,
                    commands_, moves_) {}

JobService::~JobService() { shutdown(); }

Status JobService::start() {
  // A restarted daemon gives every lease one lease timeout to be renewed, so workers that kept
  // running while it was down reconnect instead of losing their jobs (docs/recovery.md).
  const int64_t grace_until = clock_.now_ms() + int64_t{options_.lease_timeout_s} * 1000;
  if (auto st = store_.write([grace_until](WriteTxn& txn) -> Status {
        auto n = txn.rebase_active_leases(grace_until);
        return n ? Status{} : Status{n.error()};
      });
      !st)
    return st;
  return broker_.load();
}

Expected<JobRow> JobService::submit_job(std::string_view spec_json, const SubmitContext& context) {
  return wait_for_answer<JobRow>([&](auto done) { submit_job_async(spec_json, context, std::move(done)); });
}

Expected<std::vector<JobRow>> JobService::submit_array(std::string_view spec_json, const SubmitContext& context) {
  return wait_for_answer<std::vector<JobRow>>(
      [&](auto done) { submit_array_async(spec_json, context, std::move(done)); });
}

Expected<HeartbeatReply> JobService::heartbeat(int64_t job_id, const HeartbeatReport& report) {
  return wait_for_answer<HeartbeatReply>([&](auto done) { heartbeat_async(job_id, report, std::move(done)); });
}

}  // namespace jobctl::daemon::jobs
