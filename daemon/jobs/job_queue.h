// The daemon's queue of jobs waiting for a worker (queued, and placed but not leased yet), held in
// memory in offer order (scheduler/job_queue.h: priority, then age, then id) so that a lease needs
// no query. It mirrors those jobs in the store (loaded at start, updated by commit hooks); the
// store stays the truth: a lease re-checks the job's state inside its transaction, so a stale
// entry costs one refused attempt, never a wrong state.
//
// Thread safety: none; the lease broker (lease_broker.h) guards it with its mutex.
#pragma once

#include "daemon/jobs/worker_capabilities.h"
#include "daemon/store/records.h"
#include "scheduler/job_queue.h"

namespace jobctl::daemon::jobs {

using QueuedJob = store::QueuedJobRow;

struct QueuedJobKey {
  scheduler::QueueKey operator()(const QueuedJob& job) const { return {job.id, job.priority, job.created_ms}; }
};

using JobQueue = scheduler::JobQueue<QueuedJob, QueuedJobKey>;

// Fills q.placement_* from a placed job's chosen candidate (left empty when it has none): what
// the matcher needs of the placement to offer the job only where it was placed.
void set_placement_fields(const store::JobRow& row, QueuedJob& q);

// Fills q.command, q.image and q.mounts from the job's spec.
void set_program_fields(const train::JobSpec& spec, QueuedJob& q);

// Whether `worker` may be offered `job` at all: a command job only to a worker that runs them, a
// job in an image only to one with a container runtime that allows all of its mounts, a node of
// a gang only to a worker that registered its address.
bool worker_takes_kind(const QueuedJob& job, const WorkerCapabilities& worker);

}  // namespace jobctl::daemon::jobs
