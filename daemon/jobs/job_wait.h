// Why a job that has not started waits (docs/api.md, "Why a job waits"): for a queued, held or
// placed-but-not-leased job, the reason in words a user can act on (the placement's rejections
// summed up — "no worker can run commands", "needs 38.00 GiB per GPU, the largest has 24.0" —,
// the budget hold, the option it waits for), its position among the waiting jobs that want the
// same resources (in offer order: scheduler/job_queue.h), and when it is expected to start.
// `GET /v1/jobs` and `GET /v1/jobs/{id}` carry it as `waiting`, so the CLI and the dashboard read
// one source.
//
// Thread safety: free functions; job_waits() reads the store (safe from any thread); queue_places()
// reads a queue its caller guards (the lease broker's, which is in offer order already).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "daemon/jobs/fair_share_place.h"
#include "daemon/jobs/job_queue.h"
#include "daemon/store/records.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

struct ExpectedStart {
  std::optional<int64_t> at_ms;  // nullopt: none can be given
  std::string basis;             // how at_ms was estimated, or why there is none
};

struct JobWait {
  std::string reason;
  std::string queue;      // what the jobs of its queue want ("local V100 x1", "unplaced: any x1, command")
  int position = 0;       // 1: first of its queue; 0: in none (held)
  int queue_length = 0;
  ExpectedStart expected_start;
  // With fair share on: its place in the order the start plan takes waiting jobs in (its reason
  // ends with fair_share_note()); none for a job the last pass did not order.
  std::optional<FairSharePlace> fair_share;
};

// Whether `job` is one a JobWait describes: queued, held, or placed and not yet leased.
bool is_waiting(const store::JobRow& job);

// An unplaceable placement document's rejected candidates summed up as what would let the job
// run: the most actionable kind of rejection among them, in words.
std::string unplaceable_summary(const nlohmann::json& placement);

// The reason of a waiting job, from its state, its placement document (null: none decoded) and,
// held, the reason its last `held` event gave.
std::string wait_reason(const store::JobRow& job, const nlohmann::json* placement, std::string_view held_reason);

// The resources a waiting job wants, as its queue is named: where it was placed, or what it asks
// for while it is not placed.
std::string wanted_resources(const store::QueuedJobRow& job);

// A waiting job's place among the jobs that want the same resources.
struct QueuePlace {
  std::string queue;  // wanted_resources() of its jobs
  int position = 0;   // 1: first
  int length = 0;
};

// The places of `ids` in `queue` (those not in it are left out): one walk in offer order.
std::map<int64_t, QueuePlace> queue_places(const JobQueue& queue, const std::set<int64_t>& ids);

// When a waiting job is expected to start. A placed job: when its decision expected the chosen
// option to be free (the placement's queue wait, from the running jobs' estimated remaining
// time; a cloud option's provisioning), never before now. One function on purpose: reservations
// for wide jobs replace its body.
ExpectedStart expected_start(const store::JobRow& job, const nlohmann::json* placement, int position, int64_t now_ms);

// The JobWait of every waiting job among `jobs` (rows from a listing or a single read: a row
// without its placement document is read again), with their queue places and, when given, their
// fair-share places (a lookup each). Errors: the store's.
Expected<std::map<int64_t, JobWait>> job_waits(store::Store& store, const std::vector<store::JobRow>& jobs,
                                               const std::map<int64_t, QueuePlace>& places, int64_t now_ms,
                                               const FairSharePlaces* fair_share = nullptr);

}  // namespace jobctl::daemon::jobs
