#include "worker/lease_reporter.h"

#include <chrono>
#include <ostream>

namespace jobctl::worker {

using nlohmann::json;

namespace {

bool is_transport_error(const Error& e) {
  return e.code == ErrorCode::unavailable || e.code == ErrorCode::storage_unavailable ||
         e.code == ErrorCode::timeout || e.code == ErrorCode::io || e.code == ErrorCode::internal;
}

}  // namespace

void LeaseReporter::complete(const json& result, const RetryWait& wait) {
  const protocol::CompletionReport m{lease_, result.dump()};
  report("succeeded", [&] { return api_.complete(job_id_, protocol::to_json(m)); }, wait);
}

void LeaseReporter::fail(const std::string& why, const RetryWait& wait) {
  log_ << "jobctl-worker: job " << job_id_ << " failed: " << why << "\n";
  const protocol::FailureReport m{lease_, why};
  report("failed", [&] { return api_.fail(job_id_, protocol::to_json(m)); }, wait);
}

void LeaseReporter::preempt(const std::string& reason, const RetryWait& wait) {
  const protocol::PreemptionReport m{lease_, reason};
  report("preempted", [&] { return api_.preempt(job_id_, protocol::to_json(m)); }, wait);
}

void LeaseReporter::image(const std::string& image, const std::string& digest, const RetryWait& wait) {
  const protocol::ImageReport m{lease_, image, digest};
  report("image " + digest, [&] { return api_.report_image(job_id_, protocol::to_json(m)); }, wait);
}

void LeaseReporter::reject_checkpoint(int64_t step, const std::string& why, std::optional<int64_t> fallback_step,
                                      const RetryWait& wait) {
  const protocol::CheckpointRejection m{lease_, why, fallback_step};
  report("checkpoint " + std::to_string(step) + " rejected",
         [&] { return api_.reject_checkpoint(job_id_, step, protocol::to_json(m)); }, wait);
}

void LeaseReporter::report(const std::string& what, const std::function<Expected<json>()>& send,
                           const RetryWait& wait) {
  // Six attempts, pauses from 0.5 s doubling (about 15 s in all).
  constexpr RetryPolicy kReportRetry{.max_attempts = 6,
                                     .first_delay = std::chrono::milliseconds(500),
                                     .max_delay = std::chrono::seconds(8)};
  auto r = retry(
      kReportRetry, wait, send, [](const Expected<json>& a) { return !a && is_transport_error(a.error()); },
      [&](const Expected<json>& a, int attempt, std::chrono::milliseconds pause) {
        log_ << "jobctl-worker: reporting job " << job_id_ << " " << what << " (attempt " << attempt
             << "): " << a.error().message << "; retrying in " << pause.count() << " ms\n";
      });
  if (r.result) {
    log_ << "jobctl-worker: reported job " << job_id_ << " " << what << "\n";
  } else {
    log_ << "jobctl-worker: reporting job " << job_id_ << " " << what << " failed"
         << (r.interrupted ? " (the worker is stopping)" : "") << ": " << r.result.error().message << "\n";
  }
}

}  // namespace jobctl::worker
