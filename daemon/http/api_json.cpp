#include "daemon/http/api_json.h"

#include <cstdio>

#include "daemon/jobs/worker_capabilities.h"
#include "daemon/ledger/job_segments.h"
#include "daemon/store/row_codecs.h"
#include "daemon/store/records.h"
#include "protocol/worker_messages.h"
#include "scheduler/job_state.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

json opt(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

constexpr double kHourMs = 3.6e6;

}  // namespace

json runtime_json(const store::JobRow& job, const std::vector<store::JobEventRow>& events) {
  if (!job.chosen) return nullptr;
  const double estimated = job.chosen->estimated_hours;
  json basis = nullptr;
  if (job.placement_json) {
    // The store's one decoder of placement documents; one that does not decode gives no basis.
    auto placement = store::decode_placement_document(*job.placement_json, "job " + std::to_string(job.id));
    if (placement && placement->contains("runtime_basis")) basis = (*placement)["runtime_basis"];
  }
  json out = {{"estimated_hours", estimated}, {"actual_hours", nullptr}, {"error_fraction", nullptr},
              {"basis", std::move(basis)}};
  if (job.state != store::JobState::succeeded) return out;
  double actual = -1;
  if (job.result_json) {
    const json r = json::parse(*job.result_json, nullptr, false);
    if (r.is_object() && r.contains("elapsed_s") && r["elapsed_s"].is_number())
      actual = r["elapsed_s"].get<double>() / 3600.0;
  }
  if (actual < 0) {
    int64_t start = -1, end = -1;
    for (const auto& ev : events) {
      if (ev.type == "started") start = ev.time_ms;
      if (ev.type == "succeeded") end = ev.time_ms;
    }
    if (start >= 0 && end >= start) actual = static_cast<double>(end - start) / kHourMs;
  }
  if (actual < 0) return out;
  out["actual_hours"] = actual;
  if (actual > 0) out["error_fraction"] = (estimated - actual) / actual;  // > 0: overestimated
  return out;
}

json job_summary_json(const jobs::JobRow& job) {
  if (job.damaged) return {{"id", job.id}, {"name", job.name}, {"state", scheduler::to_string(job.state)}, {"damaged", *job.damaged}};
  return {{"id", job.id},
          {"name", job.name},
          {"state", scheduler::to_string(job.state)},
          {"priority", job.priority},
          {"resources", {{"gpu", job.resource_gpu}, {"gpus", job.resource_gpus}, {"nodes", job.resource_nodes}}},
          {"created_ms", job.created_ms},
          {"updated_ms", job.updated_ms},
          {"worker_id", opt(job.worker_id)},
          {"lease_epoch", job.lease_epoch},
          {"recoveries", job.recoveries},
          {"progress", store::stored_json(job.progress_json)},
          {"result", store::stored_json(job.result_json)},
          {"error", job.error ? json(*job.error) : json(nullptr)},
          {"array_id", opt(job.array_id)}};
}

json event_json(const jobs::JobEventRow& ev) {
  return {{"seq", ev.seq},
          {"time_ms", ev.time_ms},
          {"type", ev.type},
          {"from", ev.from_state ? json(scheduler::to_string(*ev.from_state)) : json(nullptr)},
          {"to", ev.to_state ? json(scheduler::to_string(*ev.to_state)) : json(nullptr)},
          {"detail", store::stored_json(ev.detail_json)}};
}

json wait_json(const jobs::JobWait& w) {
  return {{"reason", w.reason},
          {"queue", w.queue.empty() ? json(nullptr) : json(w.queue)},
          {"position", w.position == 0 ? json(nullptr) : json(w.position)},
          {"queue_length", w.queue_length},
          {"expected_start_ms", opt(w.expected_start.at_ms)},
          {"expected_start_basis", w.expected_start.basis},
          {"fair_share", w.fair_share ? json{{"place", w.fair_share->place},
                                             {"of", w.fair_share->of},
                                             {"user", w.fair_share->user},
                                             {"factor", w.fair_share->factor},
                                             {"priority", w.fair_share->priority},
                                             {"score", w.fair_share->score}}
                                      : json(nullptr)}};
}

json job_cost_json(const ledger::JobCost& cost) {
  // null on-demand and saved figures: no on-demand equivalent (no offer of the job's GPU model).
  const bool known = cost.has_equivalent();
  return {{"usd", cost.usd},
          {"on_demand_usd", known ? json(cost.on_demand_usd) : json(nullptr)},
          {"no_on_demand_equivalent_usd", cost.no_equivalent_usd},
          {"saved_usd", known ? json(cost.saved_usd()) : json(nullptr)}};
}

json job_detail_json(const jobs::JobDetail& d) {
  json j = job_summary_json(d.job);
  j["spec"] = store::stored_json(d.job.spec_json);
  // What its image's tag resolved to when its newest lease pulled it (null: no image, or not yet).
  j["image_digest"] = d.job.image_digest ? json(*d.job.image_digest) : json(nullptr);
  j["lease_expires_ms"] = opt(d.job.lease_expires_ms);
  j["placement"] = store::stored_json(d.job.placement_json);
  j["runtime"] = runtime_json(d.job, d.events);
  // A gang holds one node per rank while leased: where each runs.
  json nodes = json::array();
  for (const auto& n : d.nodes)
    // A vacant rank (a lost node awaiting its replacement) has no worker.
    nodes.push_back({{"rank", n.rank},
                     {"worker_id", n.vacant() ? json(nullptr) : json(n.worker_id)},
                     {"address", n.address},
                     {"gpus", n.gpus}});
  j["nodes"] = std::move(nodes);
  const ledger::JobCost cost = ledger::job_cost(d.ledger);
  json segments = json::array();
  for (const auto& seg : cost.segments)
    segments.push_back({{"where", seg.where},
                        {"option", seg.kind},
                        {"start_ms", seg.start_ms},
                        {"end_ms", seg.end_ms},
                        {"billed_seconds", seg.billed_seconds},
                        {"usd", seg.usd},
                        {"on_demand_usd", seg.has_equivalent ? json(seg.on_demand_usd) : json(nullptr)},
                        {"open", seg.open}});
  j["segments"] = std::move(segments);
  j["cost"] = job_cost_json(cost);
  json events = json::array();
  for (const auto& ev : d.events) events.push_back(event_json(ev));
  j["events"] = std::move(events);
  return j;
}

json worker_json(const jobs::WorkerInfo& info) {
  // What its GPUs are (cost::identify_gpu), once, so clients need not parse driver names.
  json identified = json::array();
  for (const auto& g : info.capabilities.gpus) {
    const cost::GpuSpec* spec = g.identity();
    identified.push_back(spec ? json(std::string(spec->name)) : json(nullptr));
  }
  return {{"id", info.row.id},
          {"name", info.row.name},
          {"state", store::to_string(info.row.state)},
          {"simulated", info.capabilities.simulated},
          {"gpus", identified},
          {"capabilities", jobs::to_json(info.capabilities)},
          {"registered_ms", info.row.registered_ms},
          {"last_seen_ms", info.row.last_seen_ms},
          {"jobs", info.job_ids},
          {"warnings", jobs::worker_warnings(info.capabilities)}};
}

json lease_json(const jobs::LeaseGrant& g) {
  protocol::LeaseOffer offer;
  offer.job_id = g.job_id;
  offer.epoch = g.epoch;
  offer.name = g.name;
  offer.spec_json = g.spec_json;
  offer.lease_expires_ms = g.lease_expires_ms;
  offer.gpus = g.gpus;
  offer.gang = g.gang;
  offer.owner = g.owner;
  offer.registry_credential = g.registry_credential;
  json j = protocol::to_json(offer);
  // The checkpoint to resume from as every checkpoint answer shows it (the worker reads its
  // step, size and CRC: protocol::ResumePoint).
  j["resume"] = g.resume ? checkpoint_json(*g.resume) : json(nullptr);
  return j;
}

json checkpoint_json(const store::CheckpointRow& c) {
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", c.crc32c);
  return {{"step", c.step},
          {"bytes", c.bytes},
          {"crc32c", crc},
          {"worker_id", c.worker_id},
          {"epoch", c.epoch},
          {"created_ms", c.created_ms},
          {"url", "/v1/jobs/" + std::to_string(c.job_id) + "/checkpoints/" + std::to_string(c.step)}};
}

}  // namespace jobctl::daemon::http
