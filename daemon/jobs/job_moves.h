// Moves of running jobs (docs/api.md, "Moving a running job"): a job asked to move is told so in
// its next heartbeat reply; its worker checkpoints at once (the path of a spot notice), uploads
// and gives the job back; the job is queued again, not counted as a recovery, and placed anew —
// on the option the move named, when it named one.
//
// This is the bookkeeping between those steps: which running jobs are asked to move, and which
// queued jobs must be placed on a named option. It lives in memory: a daemon restarted between
// the request and the worker's next heartbeat forgets the move (the job keeps running where it
// is; ask again), and a target forgotten after the job was given back leaves the job placed where
// it is cheapest. Every request and every move is also a job event, so the record survives.
//
// Thread safety: every method is safe from any thread; none calls out while holding its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "base/mutex.h"

namespace jobctl::daemon::jobs {

// Where a moved job may be placed: the placement document's option names.
enum class MoveTarget { anywhere, local, on_demand, spot };
// "local", "on_demand", "spot" (nullopt for any other text); to_string gives them back ("anywhere").
std::optional<MoveTarget> move_target_from_string(const std::string& s);
std::string to_string(MoveTarget t);

struct MoveRequest {
  MoveRequest() = default;
  MoveRequest(MoveTarget to, std::string why, std::map<std::string, double> weighed = {})
      : target(to), reason(std::move(why)), figures(std::move(weighed)) {}

  MoveTarget target = MoveTarget::anywhere;
  std::string reason;  // why (a person's words, or the rule that asked), shown in the events
  // The figures a rule weighed (e.g. "saving_usd", "move_cost_usd"), written into the
  // `move_requested` event's detail beside the reason so that the ledger of moves can be summed.
  std::map<std::string, double> figures;
  // Once checkpointed the job is held (`held`, with the reason) rather than queued again: a user
  // over budget under limits.over_budget "stop".
  bool hold = false;
};

class JobMoves {
 public:
  // The running job is to move; replaces an earlier request for it.
  void request(int64_t job_id, MoveRequest request) JOBCTL_EXCLUDES(mu_);
  // Whether the job is asked to move (its heartbeat says so).
  bool requested(int64_t job_id) const JOBCTL_EXCLUDES(mu_);
  // The request asked for the job (nullopt: none).
  std::optional<MoveRequest> request_of(int64_t job_id) const JOBCTL_EXCLUDES(mu_);
  // The job was given back: its request becomes the target its next placement must keep.
  // Returns the request (nullopt: the job was not asked to move, it was preempted).
  std::optional<MoveRequest> given_back(int64_t job_id) JOBCTL_EXCLUDES(mu_);
  // The option the queued job must be placed on (anywhere when it was not moved).
  MoveTarget target(int64_t job_id) const JOBCTL_EXCLUDES(mu_);
  // The job was leased again: its target was kept.
  void leased(int64_t job_id) JOBCTL_EXCLUDES(mu_);
  // The job ended (completed, failed, cancelled): nothing more to do for it.
  void forget(int64_t job_id) JOBCTL_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::map<int64_t, MoveRequest> requested_ JOBCTL_GUARDED_BY(mu_);
  std::map<int64_t, MoveTarget> targets_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::jobs
