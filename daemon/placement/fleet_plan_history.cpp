#include "daemon/placement/fleet_plan_history.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cost/gpu_specs.h"
#include "daemon/jobs/worker_capabilities.h"
#include "daemon/ledger/job_segments.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::placement {

namespace {

constexpr double kMsPerHour = 3'600'000.0;

Error invalid_parameter(const std::string& field, const std::string& message) {
  return make_error(ErrorCode::invalid_argument, message, field);
}

// The canonical variant of a GPU name ("NVIDIA Tesla V100-SXM2-16GB" -> "V100"); "" for none.
std::string canonical(const std::string& name) {
  if (name.empty() || name == "any" || name == "cpu") return "";
  const cost::GpuSpec* spec = cost::find_gpu(name);
  return spec ? std::string(spec->name) : "";
}

// One job of the history, before the model is chosen.
struct HistoryJob {
  std::string model;
  cost::PlanJob job;
  double cloud_hours = 0, cloud_usd = 0;   // its cloud segments
  double on_demand_usd = 0;                // the ledger's on-demand reference for all its rows
  std::set<std::string> owned_gpus;        // "local:<worker>:gpu<k>" it was billed for
  double owned_gpu_hours = 0, owned_usd = 0;
};

std::string chosen_gpu(const store::JobRow& row) {
  if (row.chosen && !row.chosen->gpu.empty()) {
    std::string m = canonical(row.chosen->gpu);
    if (!m.empty()) return m;
  }
  return canonical(row.resource_gpu);
}

// The cheapest on-demand hour of the model for a job of `gpus` GPUs, per GPU of the job (an
// instance larger than the job is paid whole).
std::optional<double> cheapest_on_demand_per_gpu(const std::vector<cost::Offer>& offers, const std::string& model, int gpus) {
  std::optional<double> best;
  for (const auto& o : offers) {
    if (o.gpu_count < gpus || cost::canonical_gpu_name(o.gpu_model, o.gpu_memory_gb) != model) continue;
    const double per_gpu = o.on_demand_usd_per_hour / gpus;
    if (!best || per_gpu < *best) best = per_gpu;
  }
  return best;
}

// Owned GPUs of the model on registered owned machines (workers not gone, not cloud instances).
Expected<int> registered_owned_gpus(store::Store& store, const std::string& model) {
  auto workers = store.list_workers();
  if (!workers) return workers.error();
  int n = 0;
  for (const auto& w : *workers) {
    if (w.state == store::WorkerState::gone) continue;
    const jobs::WorkerCapabilities& caps = w.capabilities;
    if (caps.instance || caps.simulated) continue;
    for (const auto& g : caps.gpus)
      if (const cost::GpuSpec* s = g.identity(); s && s->name == model) ++n;
  }
  return n;
}

// The GPU model of an owned ledger resource "local:<worker>:gpu<k>", from the worker's registered
// GPUs; "" for a CPU ("local:<worker>:cpu"), an unknown worker or GPU index.
std::string owned_resource_model(const std::string& resource, const std::map<int64_t, const store::WorkerRow*>& workers) {
  const auto gpu = resource.rfind(":gpu");
  if (resource.rfind("local:", 0) != 0 || gpu == std::string::npos || gpu <= 6) return "";
  try {
    const int64_t worker = std::stoll(resource.substr(6, gpu - 6));
    const size_t k = std::stoul(resource.substr(gpu + 4));
    auto it = workers.find(worker);
    if (it == workers.end() || k >= it->second->capabilities.gpus.size()) return "";
    const cost::GpuSpec* s = it->second->capabilities.gpus[k].identity();
    return s ? std::string(s->name) : "";
  } catch (const std::exception&) {
    return "";
  }
}

double clipped(const store::LedgerRecord& r, int64_t from_ms, int64_t to_ms) {
  if (r.end_ms <= r.start_ms) return (r.start_ms >= from_ms && r.start_ms < to_ms) ? r.usd : 0.0;
  const int64_t lo = std::max(r.start_ms, from_ms), hi = std::min(r.end_ms, to_ms);
  if (hi <= lo) return 0.0;
  return r.usd * static_cast<double>(hi - lo) / static_cast<double>(r.end_ms - r.start_ms);
}

}  // namespace

Expected<cost::FleetPlan> fleet_plan(store::Store& store, const PlacementSettings& settings,
                                     const std::vector<cost::Offer>& offers, const FleetPlanRequest& req,
                                     int64_t now_ms) {
  const int64_t from = req.from_ms;
  const int64_t to = std::min(req.to_ms, now_ms);
  if (req.to_ms <= from) return invalid_parameter("to", "to must be after from");
  if (to <= from) return invalid_parameter("from", "from is in the future: there is no history yet");
  std::string want;
  if (!req.gpu.empty()) {
    want = canonical(req.gpu);
    if (want.empty()) {
      std::string near;
      for (const auto& n : cost::closest_gpu_names(req.gpu)) near += (near.empty() ? "" : ", ") + n;
      return invalid_parameter("gpu", "unknown GPU model '" + req.gpu.substr(0, 40) + "'; closest known names: " + near);
    }
  }
  if (!(std::isfinite(req.max_wait_hours) && req.max_wait_hours >= 0))
    return invalid_parameter("max_wait_hours", "max_wait_hours must be >= 0");
  if (req.max_extra_gpus && (*req.max_extra_gpus < 0 || *req.max_extra_gpus > cost::kMaxPlanExtraGpus))
    return invalid_parameter("max_extra_gpus", "max_extra_gpus must be 0 to " + std::to_string(cost::kMaxPlanExtraGpus));

  // The jobs: every job billed in the period that arrived in it.
  auto rows = store.ledger_rows(from, to);
  if (!rows) return rows.error();
  auto worker_rows = store.list_workers();
  if (!worker_rows) return worker_rows.error();
  std::map<int64_t, const store::WorkerRow*> workers;
  for (const auto& w : *worker_rows) workers[w.id] = &w;
  std::set<int64_t> ids;
  for (const auto& r : *rows)
    if (r.job_id > 0) ids.insert(r.job_id);
  std::map<int64_t, HistoryJob> history;
  for (int64_t id : ids) {
    auto row = store.get_job(id);
    if (!row) return row.error();
    if (!*row || (*row)->created_ms < from || (*row)->created_ms >= to) continue;
    const store::JobRow& j = **row;
    auto job_rows = store.ledger_rows_of_job(id);
    if (!job_rows) return job_rows.error();
    HistoryJob h;
    h.model = chosen_gpu(j);
    if (h.model.empty()) continue;  // CPU jobs: no GPU to buy
    h.job.id = id;
    h.job.arrival_ms = j.created_ms;
    h.job.gpus = std::max(1, j.resource_gpus);
    if (auto d = j.spec ? j.spec->placement.deadline_hours : std::nullopt)
      h.job.deadline_ms = j.created_ms + static_cast<int64_t>(std::llround(*d * kMsPerHour));
    const ledger::JobCost cost = ledger::job_cost(*job_rows);
    // Today's owned GPUs of the model and their price: only owned rows on a GPU of the job's model
    // (a CPU segment, or a move to another model's GPU, is no owned GPU of this one).
    std::set<std::string> model_machines;  // "local:<worker>" whose GPUs of the model it ran on
    for (const auto& r : *job_rows) {
      if (r.kind != "local" || owned_resource_model(r.resource, workers) != h.model) continue;
      h.owned_gpus.insert(r.resource);
      h.owned_usd += r.usd;
      h.owned_gpu_hours += static_cast<double>(r.billed_seconds) / 3600.0;
      model_machines.insert(r.resource.substr(0, r.resource.rfind(':')));
    }
    double owned_hours = 0, hours = 0;
    for (const auto& s : cost.segments) {
      const double seg_hours = static_cast<double>(s.end_ms - s.start_ms) / kMsPerHour;
      hours += seg_hours;
      if (s.kind == "local") {
        if (model_machines.count(s.where)) owned_hours += seg_hours;
      } else {
        h.cloud_hours += seg_hours;
        h.cloud_usd += s.usd;
      }
    }
    if (hours <= 0) continue;  // granted and ended at once: nothing ran
    h.job.runtime_hours = hours;
    h.job.ran_owned = owned_hours * 2 >= hours;
    h.job.paid_usd = cost.usd;
    h.on_demand_usd = cost.on_demand_usd;
    history.emplace(id, std::move(h));
  }

  // The model: the one asked for, else the one with the most GPU-hours of demand.
  if (want.empty()) {
    std::map<std::string, double> demand;
    for (const auto& [id, h] : history) demand[h.model] += h.job.gpus * h.job.runtime_hours;
    for (const auto& [model, gpu_hours] : demand)
      if (want.empty() || gpu_hours > demand[want]) want = model;
    if (want.empty())
      return invalid_parameter("from", "no GPU jobs ran between the period's start and its end: there is no history to plan from");
  }
  const cost::GpuSpec* spec = cost::find_gpu(want);

  // The GPU to buy.
  cost::LocalGpuInventory bought;
  bool purchase_known = false;
  bought.power_kw = spec ? spec->tdp_w / 1000.0 : 0;
  bought.electricity_usd_per_kwh = settings.default_electricity_usd_per_kwh;
  for (const auto& inv : settings.local_gpus)
    if (canonical(inv.gpu_model) == want) {
      bought = inv;
      purchase_known = true;
    }
  bought.gpu_model = want;
  bought.count = 1;
  struct Override { const std::optional<double>& value; double* target; };
  for (Override o : {Override{req.purchase_usd, &bought.purchase_usd}, Override{req.setup_usd, &bought.setup_usd},
                     Override{req.lifetime_years, &bought.lifetime_years}, Override{req.power_kw, &bought.power_kw},
                     Override{req.pue, &bought.pue}, Override{req.electricity_usd_per_kwh, &bought.electricity_usd_per_kwh},
                     Override{req.maintenance_usd_per_year, &bought.maintenance_usd_per_year},
                     Override{req.utilisation, &bought.utilisation}})
    if (o.value) *o.target = *o.value;
  if (!req.purchase_usd && !purchase_known)
    return invalid_parameter("purchase_usd", "purchase_usd is required: what would one " + want +
                                   " cost to buy? (no cost.local_gpus entry states it)");
  if (Status st = cost::validate(bought); !st) return st.error();

  // The history of the model, today's fleet and what the rest of the ledger spent.
  cost::FleetPlanInput in;
  in.gpu_model = want;
  in.from_ms = from;
  in.to_ms = to;
  in.bought = bought;
  in.max_wait_hours = req.max_wait_hours;
  std::set<std::string> owned_seen;
  double owned_usd = 0, owned_gpu_hours = 0;
  for (auto& [id, h] : history) {
    if (h.model != want) continue;
    cost::PlanJob& j = h.job;
    if (h.cloud_hours > 0 && h.cloud_usd > 0) {
      j.cloud_usd_per_gpu_hour = h.cloud_usd / (j.gpus * h.cloud_hours);
    } else if (auto od = cheapest_on_demand_per_gpu(offers, want, j.gpus)) {
      j.cloud_usd_per_gpu_hour = *od;
    } else {
      j.cloud_usd_per_gpu_hour = h.on_demand_usd / (j.gpus * j.runtime_hours);
    }
    owned_seen.insert(h.owned_gpus.begin(), h.owned_gpus.end());
    owned_usd += h.owned_usd;
    owned_gpu_hours += h.owned_gpu_hours;
    in.ledger_usd += j.paid_usd;
    in.jobs.push_back(j);
  }
  for (const auto& r : *rows) {
    auto it = history.find(r.job_id);
    if (r.job_id > 0 && it != history.end() && it->second.model == want) continue;
    in.other_usd += clipped(r, from, to);
  }
  in.ledger_usd += in.other_usd;
  auto registered = registered_owned_gpus(store, want);
  if (!registered) return registered.error();
  in.owned_gpus_today = std::max(*registered, static_cast<int>(owned_seen.size()));
  if (owned_gpu_hours > 0) {
    in.owned_usd_per_gpu_hour_today = owned_usd / owned_gpu_hours;
  } else {
    bool priced = false;
    for (const auto& inv : settings.local_gpus)
      if (canonical(inv.gpu_model) == want) {
        in.owned_usd_per_gpu_hour_today = cost::local_hourly_cost(inv, settings.pricing);
        priced = true;
      }
    if (!priced) in.owned_usd_per_gpu_hour_today = bought.power_kw * settings.default_electricity_usd_per_kwh;
  }
  in.max_extra_gpus = req.max_extra_gpus.value_or(
      std::min(cost::kMaxPlanExtraGpus, std::max(4, static_cast<int>(std::ceil(cost::peak_concurrent_gpus(in.jobs))) + 1)));
  return cost::plan_fleet(in);
}

}  // namespace jobctl::daemon::placement
