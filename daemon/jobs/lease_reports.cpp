#include "daemon/jobs/lease_reports.h"

#include <algorithm>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "daemon/jobs/job_service_support.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/jobs/lease_fence.h"
#include "daemon/store/sqlite.h"
#include "scheduler/job_state.h"
#include "train/spec/job_spec.h"

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
  const int64_t steady = clock_.steady_ms();
  const int64_t expires = now + int64_t{options_.lease_timeout_s} * 1000;
  broker_.contacts().heard(report.lease.worker_id, steady, now);  // whatever the answer: it is alive
  if (live_.renew(job_id, report.lease, now, steady, report.progress_json)) {
    // Answered from memory: the stored expiry is recent enough (live_leases.h). A cancel or any
    // end of the lease forgets the entry when it commits, so the next heartbeat sees it.
    answer_heartbeat(job_id, report, HeartbeatReply{.cancel = false, .move = false, .lease_expires_ms = expires}, done);
    return;
  }
  auto change = [this, job_id, report, now, expires](WriteTxn& txn) -> Expected<HeartbeatReply> {
    auto reported = job_reported_under(txn, job_id, report.lease);
    if (!reported) return reported.error();
    JobRow job = std::move(reported->job);
    std::optional<store::GangMemberRow> node = std::move(reported->node);
    if (node) {
      // A gang's other node renews its own lease; its progress is its log's (rank 0 reports the job's).
      node->expires_ms = expires;
      if (auto put = txn.put_gang_member(*node); !put) return put.error();
      return HeartbeatReply{.cancel = false, .move = false, .lease_expires_ms = expires};
    }
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
    // A worker marked lost that heartbeats is active again (worker_contacts.h).
    auto w = txn.worker(report.lease.worker_id);
    if (!w) return w.error();
    if (*w && (now - (*w)->last_seen_ms >= kLastSeenResolutionMs || (*w)->state == store::WorkerState::lost)) {
      if ((*w)->state == store::WorkerState::lost) {
        (*w)->state = store::WorkerState::active;
        txn.on_commit([this, id = report.lease.worker_id] { observer_.worker_available(id); });
      }
      (*w)->last_seen_ms = now;
      if (auto st = txn.update_worker(**w); !st) return st.error();
    }
    return HeartbeatReply{.cancel = false, .move = false, .lease_expires_ms = expires};
  };
  store_.write_value_async<HeartbeatReply>(
      std::move(change),
      [this, job_id, report, now, steady, expires, done = std::move(done)](Expected<HeartbeatReply> reply) {
        if (reply && !reply->cancel) live_.stored(job_id, report.lease, now, steady, report.progress_json, expires);
        // The store could not write (a full disk, I/O errors): a running lease's heartbeat is
        // kept in memory and stored once it writes again (live_leases.h), rather than refused.
        if (!reply && store::is_storage_failure(reply.error()) && hold_unstored(job_id, report, now, steady))
          reply = HeartbeatReply{.cancel = false, .move = false, .lease_expires_ms = expires};
        answer_heartbeat(job_id, report, std::move(reply), done);
      },
      store::Durability::relaxed);  // a lost heartbeat is repeated by the next one (store.h)
}

bool LeaseReports::hold_unstored(int64_t job_id, const HeartbeatReport& report, int64_t now, int64_t steady) {
  std::optional<int64_t> stored_expires;
  if (auto live = live_.find(job_id, report.lease)) {
    stored_expires = live->stored_expires_ms;  // an entry matching the lease is its current one
  } else {
    // A restarted jobctld has no entries yet: the lease is checked on the stored job (reads work
    // while writes fail). A job not yet started (placed) needs its first heartbeat stored.
    auto job = store_.get_job(job_id);
    if (!job || !*job || (*job)->state != JobState::running || !check_lease_holder(**job, report.lease) ||
        !(*job)->lease_expires_ms)
      return false;
    stored_expires = *(*job)->lease_expires_ms;
  }
  live_.stored(job_id, report.lease, now, steady, report.progress_json, *stored_expires);
  held_heartbeats_.fetch_add(1, std::memory_order_relaxed);
  return true;
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
    auto reported = job_reported_under(txn, job_id, lease);
    if (!reported) return reported.error();
    JobRow job = std::move(reported->job);
    std::optional<store::GangMemberRow> node = std::move(reported->node);
    if (node) return gang_node_ended_in(txn, std::move(job), node->rank, lease, outcome, now);
    if (job.state == outcome.state) return job;  // a retried report: already recorded
    if (auto st = require_leased_state(job); !st) return st.error();
    // A gang whose rank 0 failed restarts from its newest checkpoint (a recovery counted), as
    // when any other node fails: a node's failure is most often a peer's loss seen from the other side.
    if (outcome.state == JobState::failed && job.resource_nodes > 1)
      return gang_node_ended_in(txn, std::move(job), 0, lease, outcome, now);
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

Expected<JobRow> LeaseReports::report_image(int64_t job_id, const ImageReport& report) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<JobRow>([job_id, report, now](WriteTxn& txn) -> Expected<JobRow> {
    auto reported = job_reported_under(txn, job_id, report.lease);
    if (!reported) return reported.error();
    JobRow job = std::move(reported->job);
    std::optional<store::GangMemberRow> node = std::move(reported->node);
    if (auto st = require_leased_state(job); !st) return st.error();
    auto decoded = job.decoded_spec();
    if (!decoded) return decoded.error();
    const train::JobSpec* spec = *decoded;
    if (spec->image.empty())
      return make_error(ErrorCode::invalid_argument, "job " + std::to_string(job_id) + " has no image", "image");
    if (report.image != spec->image)
      return make_error(ErrorCode::invalid_argument,
                        "image is not the job's (" + spec->image + ")", "image");
    if (job.image_digest == report.digest) return job;  // a retried report, or the same image again
    if (auto st = txn.set_job_image_digest(job_id, report.digest); !st) return st.error();
    json detail = lease_detail(report.lease);
    if (node) detail["rank"] = node->rank;
    detail["image"] = report.image;
    detail["digest"] = report.digest;
    detail["message"] = "running image " + report.image + " (" + report.digest + ")";
    if (auto st = note_job_event(txn, job_id, "image", detail, now); !st) return st.error();
    job.image_digest = report.digest;
    return job;
  });
}

Expected<JobRow> LeaseReports::preempt(int64_t job_id, const PreemptionReport& report) {
  const int64_t now = clock_.now_ms();
  const int max_recoveries = options_.max_recoveries;
  return store_.write_value<JobRow>(
      [this, job_id, report, now, max_recoveries](WriteTxn& txn) -> Expected<JobRow> {
        auto reported = job_reported_under(txn, job_id, report.lease);
        if (!reported) return reported.error();
        JobRow job = std::move(reported->job);
        std::optional<store::GangMemberRow> node = std::move(reported->node);
        // Another node of a gang gives it back (its machine is being reclaimed): the gang stops
        // as on a move, rank 0 checkpointing first, and is placed again.
        if (node) return gang_node_given_back_in(txn, std::move(job), *node, report.reason, now);
        if (auto st = require_leased_state(job); !st) return st.error();
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
  if (job.resource_nodes > 1)  // every node's lease ends with the job's
    if (auto st = txn.delete_gang_members(job.id); !st) return st;
  if (auto live = live_.find(job.id, LeaseRef{*job.worker_id, job.lease_epoch}); live && live->progress_json)
    job.progress_json = live->progress_json;
  txn.on_commit([this, id = job.id] { live_.forget(id); });
  if (!recorder_) return {};
  return recorder_->lease_ended(txn, job, now);
}

Status LeaseReports::interrupt_in(WriteTxn& txn, store::JobRow& job, const json& detail, const std::string& reason,
                                  int64_t now) {
  if (auto st = end_lease_in(txn, job, now); !st) return st;
  job.lease_expires_ms.reset();
  job.recoveries += 1;
  // A move asked of this lease cannot happen now: the job is placed anew as after any loss.
  txn.on_commit([this, id = job.id] { moves_.forget(id); });
  // A job leased but never started counts too: its lease was lost all the same.
  if (auto st = transition_job(txn, job, JobState::preempted, "preempted", detail, now); !st) return st;
  if (job.recoveries > options_.max_recoveries) {
    job.error = "interrupted " + std::to_string(job.recoveries) + " times (more than max_recoveries " +
                std::to_string(options_.max_recoveries) + "); last reason: " + reason;
    return transition_job(txn, job, JobState::failed, "failed", json{{"error", *job.error}}, now);
  }
  job.worker_id.reset();
  if (auto st = transition_job(txn, job, JobState::queued, "requeued", json{{"recoveries", job.recoveries}}, now); !st)
    return st;
  // Queued again with no placement: placement re-places it.
  txn.on_commit([this, q = queued_from(job)] { broker_.job_queued(q); });
  return {};
}

Expected<JobRow> LeaseReports::gang_node_ended_in(WriteTxn& txn, store::JobRow job, int rank, const LeaseRef& lease,
                                                  const Outcome& outcome, int64_t now) {
  json detail = lease_detail(lease);
  detail["rank"] = rank;
  if (outcome.state == JobState::succeeded) {
    // The job's outcome is rank 0's report; the other nodes' ends are noted.
    if (auto st = note_job_event(txn, job.id, "node_succeeded", detail, now); !st) return st.error();
    return job;
  }
  const std::string reason = "gang node " + std::to_string(rank) + " (worker " + std::to_string(lease.worker_id) +
                             ") failed: " + outcome.error;
  detail["reason"] = reason;
  if (auto st = interrupt_in(txn, job, detail, reason, now); !st) return st.error();
  return job;
}

bool LeaseReports::replaces_lost_nodes(const store::JobRow& job) {
  if (job.resource_nodes <= 1) return false;
  return job.spec && job.spec->resources.on_node_loss == train::NodeLoss::replace_node;
}

Status LeaseReports::vacate_node_in(WriteTxn& txn, const store::JobRow& job, int rank, const std::string& reason,
                                    int64_t now) {
  auto members = txn.gang_members(job.id);
  if (!members) return members.error();
  auto node = std::find_if(members->begin(), members->end(), [rank](const auto& m) { return m.rank == rank; });
  if (rank <= 0 || node == members->end() || node->vacant()) return {};
  const int64_t lost_worker = node->worker_id;
  const int64_t until = now + int64_t{options_.gang_assembly_s} * 1000;
  json detail = lease_detail(LeaseRef{lost_worker, node->epoch});
  detail["rank"] = rank;
  detail["reason"] = reason;
  detail["replace_by_ms"] = until;
  node->worker_id = 0;
  node->address.clear();
  node->gpus.clear();
  node->expires_ms = until;
  if (auto st = txn.put_gang_member(*node); !st) return st;
  if (recorder_)
    if (auto st = recorder_->node_ended(txn, job, lost_worker, now); !st) return st;
  if (auto st = note_job_event(txn, job.id, "node_lost", detail, now); !st) return st;
  std::set<int64_t> nodes;
  for (const auto& m : *members)
    if (!m.vacant()) nodes.insert(m.worker_id);
  if (job.worker_id) nodes.insert(*job.worker_id);
  // Offered where the gang was placed (its pool, its instance type).
  QueuedJob q = queued_from(job);
  set_placement_fields(job, q);
  txn.on_commit([this, q = std::move(q), rank, epoch = job.lease_epoch, nodes = std::move(nodes)] {
    broker_.node_vacant(GangVacancy{q, rank, epoch, nodes});
  });
  return {};
}

Expected<JobRow> LeaseReports::gang_node_given_back_in(WriteTxn& txn, store::JobRow job,
                                                       const store::GangMemberRow& node, const std::string& reason,
                                                       int64_t now) {
  json detail = lease_detail(LeaseRef{node.worker_id, node.epoch});
  detail["rank"] = node.rank;
  detail["reason"] = reason;
  if (auto st = note_job_event(txn, job.id, "node_given_back", detail, now); !st) return st.error();
  // A gang that replaces lost nodes leases another machine for this one; the others go on.
  if (replaces_lost_nodes(job)) {
    if (auto st = vacate_node_in(txn, job, node.rank, "given back: " + reason, now); !st) return st.error();
    return job;
  }
  // Its worker stops; the gang stops with it once rank 0 has checkpointed (unless already moving).
  if (!moves_.requested(job.id)) {
    const std::string why = "gang node " + std::to_string(node.rank) + " (worker " + std::to_string(node.worker_id) +
                            ") was given back: " + reason;
    txn.on_commit([this, id = job.id, why] { moves_.request(id, MoveRequest(MoveTarget::anywhere, why)); });
  }
  return job;
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
  // The expiry is the newest heartbeat plus the timeout, in the wall clock's time of that heartbeat.
  job.lease_expires_ms = std::max(job.lease_expires_ms.value_or(0), hb.last_ms + live_.lease_timeout_ms());
  if (auto st = txn.update_job(job); !st) return st;
  txn.on_commit([this, id = job.id, hb, expires = *job.lease_expires_ms] {
    live_.stored(id, hb.lease, hb.last_ms, hb.last_steady_ms, hb.progress_json, expires);
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
