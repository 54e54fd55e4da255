#include "daemon/jobs/lease_reports.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "daemon/jobs/job_service_support.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/jobs/lease_fence.h"
#include "scheduler/job_state.h"

namespace jobctl::daemon::jobs {

using nlohmann::json;
using store::WriteTxn;

namespace {

// Heartbeats move a worker's last_seen_ms forward in steps of at least this much.
constexpr int64_t kLastSeenResolutionMs = 10'000;

}  // namespace

LeaseReports::LeaseReports(store::Store& store, const Clock& clock, const ServiceOptions& options,
                           LeaseRecorder* recorder, LeaseBroker& broker, JobMoves& moves, JobObserver& observer)
    : store_(store),
      clock_(clock),
      options_(options),
      recorder_(recorder),
      broker_(broker),
      moves_(moves),
      observer_(observer),
      // Stored every half timeout: a worker heartbeating more often than that renews the stored
      // expiry before it passes; the expiry pass renews from memory for one that does not.
      live_(int64_t{options.lease_timeout_s} * 1000, int64_t{options.lease_timeout_s} * 500) {}

void LeaseReports::answer_heartbeat(int64_t job_id, const HeartbeatReport& report, Expected<HeartbeatReply> reply,
                                    const std::function<void(Expected<HeartbeatReply>)>& done) {
  if (reply && !reply->cancel) {
    reply->move = moves_.requested(job_id);
    if (report.progress_json) observer_.job_progressed(job_id, report.lease.worker_id, *report.progress_json);
  }
  done(std::move(reply));
}

void LeaseReports::heartbeat_async(int64_t job_id, const HeartbeatReport& report,
                                   std::function<void(Expected<HeartbeatReply>)> done) {
  const int64_t now = clock_.now_ms();
  const int64_t expires = now + int64_t{options_.lease_timeout_s} * 1000;
  if (live_.renew(job_id, report.lease, now, report.progress_json)) {
    // Answered from memory: the stored expiry is recent enough (live_leases.h). A cancel or any
    // end of the lease forgets the entry when it commits, so the next heartbeat sees it.
    answer_heartbeat(job_id, report, HeartbeatReply{.cancel = false, .move = false, .lease_expires_ms = expires}, done);
    return;
  }
  auto change = [job_id, report, now, expires](WriteTxn& txn) -> Expected<HeartbeatReply> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return job_not_found(job_id);
    JobRow job = std::move(**found);
    if (auto st = check_lease_holder(job, report.lease); !st) return st.error();
    if (job.state == JobState::cancelled) return HeartbeatReply{.cancel = true};
    if (auto st = require_leased_state(job); !st) return st.error();
    if (report.progress_json) job.progress_json = report.progress_json;
    job.lease_expires_ms = expires;
    if (job.state == JobState::placed) {
      if (auto st = transition_job(txn, job, JobState::running, "started", lease_detail(report.lease), now); !st)
        return st.error();
    } else {
      job.updated_ms = now;
      if (auto st = txn.update_job(job); !st) return st.error();
    }
    // The worker's last_seen_ms to within 10 s: rewriting its row on every heartbeat (every 2 s,
    // thousands of workers) would double the write load for a figure people read in seconds.
    auto w = txn.worker(report.lease.worker_id);
    if (!w) return w.error();
    if (*w && now - (*w)->last_seen_ms >= kLastSeenResolutionMs) {
      (*w)->last_seen_ms = now;
      if (auto st = txn.update_worker(**w); !st) return st.error();
    }
    return HeartbeatReply{.cancel = false, .move = false, .lease_expires_ms = expires};
  };
  store_.write_value_async<HeartbeatReply>(
      std::move(change),
      [this, job_id, report, now, expires, done = std::move(done)](Expected<HeartbeatReply> reply) {
        if (reply && !reply->cancel) live_.stored(job_id, report.lease, now, report.progress_json, expires);
        answer_heartbeat(job_id, report, std::move(reply), done);
      },
      store::Durability::relaxed);  // a lost heartbeat is repeated by the next one (store.h)
}

Expected<JobRow> LeaseReports::complete(int64_t job_id, const CompletionReport& report) {
  return end_lease(job_id, report.lease, Outcome{JobState::succeeded, report.result_json, {}});
}

Expected<JobRow> LeaseReports::fail(int64_t job_id, const FailureReport& report) {
  return end_lease(job_id, report.lease, Outcome{JobState::failed, {}, report.error});
}

Expected<JobRow> LeaseReports::end_lease(int64_t job_id, const LeaseRef& lease, Outcome outcome) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<JobRow>([this, job_id, lease, outcome = std::move(outcome), now](WriteTxn& txn)
                                        -> Expected<JobRow> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return job_not_found(job_id);
    JobRow job = std::move(**found);
    if (auto st = check_lease_holder(job, lease); !st) return st.error();
    if (job.state == outcome.state) return job;  // a retried report: already recorded
    if (auto st = require_leased_state(job); !st) return st.error();
    if (job.state == JobState::placed) {
      if (auto st = transition_job(txn, job, JobState::running, "started", lease_detail(lease), now); !st)
        return st.error();
    }
    const bool succeeded = outcome.state == JobState::succeeded;
    json detail = lease_detail(lease);
    if (succeeded) {
      job.result_json = outcome.result_json;
    } else {
      job.error = outcome.error;
      detail["error"] = outcome.error;
    }
    job.lease_expires_ms.reset();
    if (auto st = end_lease_in(txn, job, now); !st) return st.error();
    if (auto st = transition_job(txn, job, outcome.state, std::string(scheduler::to_string(outcome.state)), detail, now);
        !st)
      return st.error();
    txn.on_commit([this, job_id, worker_id = lease.worker_id, succeeded, result = outcome.result_json] {
      moves_.forget(job_id);
      if (succeeded) observer_.job_succeeded(job_id, worker_id, result);
    });
    return job;
  });
}

Expected<JobRow> LeaseReports::preempt(int64_t job_id, const PreemptionReport& report) {
  const int64_t now = clock_.now_ms();
  const int max_recoveries = options_.max_recoveries;
  return store_.write_value<JobRow>(
      [this, job_id, report, now, max_recoveries](WriteTxn& txn) -> Expected<JobRow> {
        auto found = txn.job(job_id);
        if (!found) return found.error();
        if (!*found) return job_not_found(job_id);
        JobRow job = std::move(**found);
        if (auto st = check_lease(job, report.lease); !st) return st.error();
        json detail = lease_detail(report.lease);
        detail["reason"] = report.reason;
        if (auto st = end_lease_in(txn, job, now); !st) return st.error();
        job.lease_expires_ms.reset();
        // A move is asked for, not suffered: no recovery counted. The request is taken when
        // the change commits (a failed change leaves it for the worker's retry).
        if (const auto move = moves_.request_of(job_id)) {
          if (auto st = transition_job(txn, job, JobState::preempted, "moved", detail, now); !st) return st.error();
          job.worker_id.reset();
          if (auto st = transition_job(txn, job, JobState::queued, "requeued",
                                       json{{"recoveries", job.recoveries}, {"moved", true}}, now);
              !st)
            return st.error();
          if (move->hold) {  // checkpointed, and held where it is (a user over budget)
            if (auto st = transition_job(txn, job, JobState::held, "held", json{{"reason", move->reason}}, now); !st)
              return st.error();
            txn.on_commit([this, id = job.id] { moves_.forget(id); });
            return job;
          }
          txn.on_commit([this, q = queued_from(job)] {
            moves_.given_back(q.id);
            broker_.job_queued(q);
          });
          return job;
        }
        job.recoveries += 1;
        if (auto st = transition_job(txn, job, JobState::preempted, "preempted", detail, now); !st)
          return st.error();
        if (job.recoveries > max_recoveries) {
          job.error = "preempted " + std::to_string(job.recoveries) +
                      " times (more than max_recoveries " + std::to_string(max_recoveries) +
                      "); last reason: " + report.reason;
          if (auto st = transition_job(txn, job, JobState::failed, "failed", json{{"error", *job.error}}, now); !st)
            return st.error();
          return job;
        }
        job.worker_id.reset();
        if (auto st = transition_job(txn, job, JobState::queued, "requeued",
                                 json{{"recoveries", job.recoveries}}, now);
            !st)
          return st.error();
        txn.on_commit([this, q = queued_from(job)] { broker_.job_queued(q); });
        return job;
      });
}

Status LeaseReports::end_lease_in(WriteTxn& txn, store::JobRow& job, int64_t now) {
  if (!job.worker_id) return {};
  if (auto live = live_.find(job.id, LeaseRef{*job.worker_id, job.lease_epoch}); live && live->progress_json)
    job.progress_json = live->progress_json;
  txn.on_commit([this, id = job.id] { live_.forget(id); });
  if (!recorder_) return {};
  return recorder_->lease_ended(txn, job, now);
}

void LeaseReports::add_newest_heartbeat(store::JobRow& job) const {
  if (job.state != JobState::running || !job.worker_id) return;
  auto live = live_.find(job.id, LeaseRef{*job.worker_id, job.lease_epoch});
  if (!live) return;
  if (live->progress_json) job.progress_json = live->progress_json;
  job.lease_expires_ms = live->last_ms + live_.lease_timeout_ms();
}

void LeaseReports::add_newest_heartbeat(store::LeaseSummary& lease) const {
  auto live = live_.find(lease.job_id, LeaseRef{lease.worker_id, lease.epoch});
  if (live && live->progress_json) lease.progress_json = live->progress_json;
}

Status LeaseReports::store_heartbeat_in(WriteTxn& txn, store::JobRow job, const LiveHeartbeat& hb) {
  if (hb.progress_json) job.progress_json = hb.progress_json;
  job.lease_expires_ms = std::max(job.lease_expires_ms.value_or(0), hb.last_ms + live_.lease_timeout_ms());
  if (auto st = txn.update_job(job); !st) return st;
  txn.on_commit([this, id = job.id, hb, expires = *job.lease_expires_ms] {
    live_.stored(id, hb.lease, hb.last_ms, hb.progress_json, expires);
  });
  return {};
}

Status LeaseReports::store_live_heartbeats() {
  auto unstored = live_.unstored();
  if (unstored.empty()) return {};
  return store_.write([this, unstored = std::move(unstored)](WriteTxn& txn) -> Status {
    for (const auto& [id, hb] : unstored) {
      auto found = txn.job(id);
      if (!found) return found.error();
      if (!*found || (*found)->state != JobState::running || !check_lease_holder(**found, hb.lease)) continue;
      if (auto st = store_heartbeat_in(txn, std::move(**found), hb); !st) return st;
    }
    return {};
  });
}

}  // namespace jobctl::daemon::jobs
