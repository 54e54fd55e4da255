#include "scheduler/placement_json.h"

#include "cost/gpu_specs.h"

namespace jobctl::scheduler {

using nlohmann::json;

namespace {

json candidate_json(const Candidate& c, const Job& job, const PlacementContext& ctx, const LocalCapacity& capacity,
                    const PlacementDocumentInfo& info) {
  json r;
  r["option"] = std::string(option_name(c.kind));
  r["label"] = option_label(c, ctx, capacity);
  if (c.kind == OptionKind::local || c.kind == OptionKind::slurm) {
    r["provider"] = std::string(option_name(c.kind));
    r["cloud"] = nullptr;
    r["region"] = nullptr;
    r["instance_type"] = nullptr;
    if (c.kind == OptionKind::local) {
      const auto& pool = capacity.pools()[c.source];
      r["gpu"] = pool.gpu_model;
      r["gpu_memory_gib"] = pool.gpu_memory_gb;
    } else {
      const auto& partition = capacity.partitions()[c.source];
      r["partition"] = partition.name;
      r["gpu"] = partition.gpu_model;
      r["gpu_memory_gib"] = partition.gpu_memory_gb;
    }
  } else {
    const auto& o = ctx.offers()[c.source];
    r["provider"] = info.cloud_provider.empty() ? json(nullptr) : json(info.cloud_provider);
    r["cloud"] = o.cloud;
    r["region"] = o.region;
    r["zone"] = o.zone;
    r["instance_type"] = o.instance_type;
    r["gpu"] = cost::canonical_gpu_name(o.gpu_model, o.gpu_memory_gb);
    r["gpu_memory_gib"] = o.gpu_memory_gb;
    // The rate the spot time factor was priced with (cost/interruption_rates.h: configured, else
    // the traces' rate for this offer); a gang's is its N instances' together, since any one
    // interruption stops it.
    if (c.kind == OptionKind::spot)
      r["interruptions_per_hour"] = ctx.interruptions_per_hour(c.source) * std::max(job.nodes, 1);
  }
  // What the job takes there: its GPUs (resources.gpus, or with "auto" the count chosen to fit;
  // "job_gpus" the same, for readers of older documents) and its estimated memory on each; the
  // machine's GPUs (an instance's, a Slurm node's) apart, since the job pays for its own.
  r["gpus"] = c.gpus;
  r["job_gpus"] = c.gpus;
  r["machine_gpus"] = machine_gpus(c, ctx, capacity);
  r["memory_gib_per_gpu"] = static_cast<double>(c.vram_bytes_per_gpu) / (1024.0 * 1024.0 * 1024.0);
  // An offer with no spot market has no spot price: null, never "spot at $0/h" (whichever rejection
  // the row was given first).
  const bool no_spot_price = c.kind == OptionKind::spot && !ctx.offers()[c.source].spot_usd_per_hour;
  r["usd_per_hour"] = no_spot_price ? json(nullptr) : json(c.usd_per_hour);
  r["queue_wait_hours"] = c.queue_wait_hours;
  r["estimated_hours"] = c.estimated_hours;
  r["estimated_cost_usd"] = c.estimated_cost_usd;
  r["completion_hours"] = c.completion_hours;
  r["meets_deadline"] = c.meets_deadline;
  r["chosen"] = c.chosen;
  if (c.rejection != Rejection::none) {
    r["rejection"] = to_string(c.rejection);
    r["rejected"] = rejection_text(c, job, ctx, capacity);
  }
  return r;
}

// What the job is, as the cost model sees it: a built-in model's figures (train::model_stats) or a
// command job's estimate.model, in the same fields. Memory per GPU on the GPUs it asks for (with
// "auto" the least it runs on; each option's own is in its row).
json workload_json(const cost::Workload& w) {
  const int64_t vram = cost::vram_bytes_for(w, w.gpus);  // 0: a command job with no described model
  return {{"model_kind", w.model_kind},
          {"parameters", w.parameters > 0 ? json(w.parameters) : json(nullptr)},
          {"training_flops", w.assumed_hours ? json(nullptr) : json(w.training_flops)},
          {"gpus", w.gpus},
          {"gpus_auto", w.gpus_auto},
          {"memory_gib_per_gpu", vram > 0 ? json(static_cast<double>(vram) / (1024.0 * 1024.0 * 1024.0)) : json(nullptr)}};
}

}  // namespace

json placement_json(const PlacementDecision& d, const std::vector<Candidate>& table, const Job& job,
                    const PlacementContext& ctx, const LocalCapacity& capacity, const PlacementDocumentInfo& info) {
  json rows = json::array();
  for (const auto& c : table) rows.push_back(candidate_json(c, job, ctx, capacity, info));
  json chosen = nullptr;
  if (d.outcome != Outcome::unplaceable && d.outcome != Outcome::wait_spot) {
    chosen = candidate_json(d.choice, job, ctx, capacity, info);
    chosen.erase("chosen");
  }
  return {{"chosen", std::move(chosen)},
          {"candidates", std::move(rows)},
          {"reason", decision_reason(d, job, ctx, capacity)},
          {"workload", workload_json(job.workload)},
          {"decided_ms", info.decided_ms},
          {"outcome", to_string(d.outcome)},
          {"reason_code", to_string(d.reason_code)},
          {"deadline_left_hours", d.deadline_left_hours ? json(*d.deadline_left_hours) : json(nullptr)},
          {"remaining_fraction", info.remaining_fraction},
          {"considered", d.considered},
          {"fitting", d.fitting},
          {"meeting_deadline", d.meeting_deadline},
          {"deadline_policy", nullptr}};
}

}  // namespace jobctl::scheduler
