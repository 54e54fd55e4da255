#include "scheduler/placement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/fixed_decimal.h"
#include "base/readable.h"
#include "cost/cpu_peak.h"
#include "cost/gpu_count_fit.h"
#include "cost/gpu_specs.h"
#include "cost/runtime_estimate.h"
#include "cost/spot_risk.h"
#include "cost/transformer_estimate.h"

namespace jobctl::scheduler {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::array<std::string_view, kModelKindCount> kKinds{"mlp", "cnn", "other", "transformer"};
// Distinct interruption rates get their spot factor computed once per job, not once per offer.
constexpr size_t kMaxCachedLambdas = 64;

std::string hours(double h) { return readable::duration_hours(h); }
std::string usd(double v) { return readable::usd(v); }
std::string usd_per_hour(double v) { return readable::usd_per_hour(v); }

}  // namespace

std::string_view to_string(Rejection r) {
  switch (r) {
    case Rejection::none: return "";
    case Rejection::placement_mode: return "placement_mode";
    case Rejection::gpu_constraint: return "gpu_constraint";
    case Rejection::spot_mode: return "spot_mode";
    case Rejection::no_spot_market: return "no_spot_market";
    case Rejection::too_few_gpus: return "too_few_gpus";
    case Rejection::unknown_gpu: return "unknown_gpu";
    case Rejection::memory: return "memory";
    case Rejection::price_cap: return "price_cap";
    case Rejection::no_provider: return "no_provider";
    case Rejection::no_commands: return "no_commands";
    case Rejection::no_containers: return "no_containers";
    case Rejection::too_few_machines: return "too_few_machines";
  }
  return "";
}

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::run_local: return "run_local";
    case Outcome::wait_local: return "wait_local";
    case Outcome::launch_on_demand: return "launch_on_demand";
    case Outcome::launch_spot: return "launch_spot";
    case Outcome::launch_slurm: return "launch_slurm";
    case Outcome::wait_spot: return "wait_spot";
    case Outcome::unplaceable: return "unplaceable";
  }
  return "unplaceable";
}

std::string_view to_string(ReasonCode r) {
  switch (r) {
    case ReasonCode::cheapest_no_deadline: return "cheapest_no_deadline";
    case ReasonCode::cheapest_meeting_deadline: return "cheapest_meeting_deadline";
    case ReasonCode::earliest_missing_deadline: return "earliest_missing_deadline";
    case ReasonCode::nothing_fits: return "nothing_fits";
  }
  return "nothing_fits";
}

int model_kind_index(std::string_view kind) {
  if (kind == "mlp") return 0;
  if (kind == "cnn") return 1;
  if (kind == "transformer") return 3;
  return 2;
}

// ---------------------------------------------------------------------------------------------
// PlacementContext

int PlacementContext::intern_model(const std::string& canonical, const cost::EfficiencyCalibrator& cal) {
  if (auto it = model_ids_.find(canonical); it != model_ids_.end()) return it->second;
  const cost::GpuSpec* spec = cost::find_gpu(canonical);
  if (auto cpu = config_.cpu_peak_tflops.find(canonical); cpu != config_.cpu_peak_tflops.end() && cpu->second > 0) {
    spec = &cpu_specs_.emplace_back(cost::cpu_machine_spec(cpu_names_.emplace_back(canonical), cpu->second));
  } else if (auto unknown = config_.unknown_gpu_memory_gb.find(canonical);
             !spec && unknown != config_.unknown_gpu_memory_gb.end()) {
    spec = &cpu_specs_.emplace_back(cost::unknown_gpu_spec(cpu_names_.emplace_back(canonical), unknown->second));
  }
  const int id = static_cast<int>(models_.size());
  models_.push_back(canonical);
  specs_.push_back(spec);
  model_ids_.emplace(canonical, id);
  std::array<std::array<double, 4>, kModelKindCount> r{};
  for (size_t k = 0; k < kKinds.size(); ++k) {
    for (size_t p = 0; p < 4; ++p) {
      r[k][p] = spec ? cost::effective_flops_per_hour(*spec, static_cast<cost::Precision>(p),
                                                      cal.efficiency(canonical, kKinds[k]))
                     : 0.0;
    }
  }
  rates_.push_back(r);
  std::array<double, kModelKindCount> overhead{};
  for (size_t k = 0; k < kKinds.size(); ++k) overhead[k] = cal.overhead_seconds(canonical, kKinds[k]) / 3600.0;
  overhead_hours_.push_back(overhead);
  // Local price: the first inventory entry whose gpu_model names this device (read as a request:
  // "V100" prices every V100, "A100-80GB" the 80 GB A100s), else the board's power at the default
  // tariff.
  double price = -1;
  for (const auto& inv : inventory_) {
    auto owned = cost::parse_gpu_request(inv.gpu_model);
    if (spec && owned && owned->kind != cost::GpuRequest::Kind::any && owned->matches(*spec)) {
      price = cost::local_hourly_cost(inv, config_.local_pricing);
      break;
    }
  }
  if (price < 0 && spec) price = spec->tdp_w / 1000.0 * config_.default_electricity_usd_per_kwh;
  local_price_.push_back(price);
  return id;
}

PlacementContext::PlacementContext(std::vector<cost::Offer> offers, std::vector<cost::LocalGpuInventory> inventory,
                                   const cost::EfficiencyCalibrator& calibration, PlacementConfig config)
    : offers_(std::move(offers)), config_(std::move(config)), inventory_(std::move(inventory)) {
  for (const auto& spec : cost::gpu_specs()) intern_model(std::string(spec.name), calibration);
  for (const auto& inv : inventory_) intern_model(cost::canonical_gpu_name(inv.gpu_model), calibration);
  for (const auto& [key, peak] : config_.cpu_peak_tflops) intern_model(key, calibration);
  for (const auto& [name, memory] : config_.unknown_gpu_memory_gb) intern_model(name, calibration);
  figures_.reserve(offers_.size());
  offer_lambda_.reserve(offers_.size());
  cost::InterruptionRates rates = config_.interruption_rates;
  if (config_.spot_interruptions_per_hour) rates.set("", "", "", *config_.spot_interruptions_per_hour);
  for (const auto& o : offers_) {
    OfferFigures f;
    const std::string canonical = cost::canonical_gpu_name(o.gpu_model, o.gpu_memory_gb);
    f.model = cost::find_gpu(canonical) ? intern_model(canonical, calibration) : -1;
    f.gpu_count = o.gpu_count;
    f.memory_bytes = o.gpu_memory_gb * kGiB;
    f.on_demand = o.on_demand_usd_per_hour;
    f.spot = o.spot_usd_per_hour ? *o.spot_usd_per_hour : -1.0;
    const double lambda = rates.rate(o.cloud, o.region, o.instance_type).per_hour;
    auto at = std::find(lambdas_.begin(), lambdas_.end(), lambda);
    if (at == lambdas_.end() && lambdas_.size() < kMaxCachedLambdas) {
      lambdas_.push_back(lambda);
      at = lambdas_.end() - 1;
    } else if (at == lambdas_.end()) {  // too many distinct rates: round to the nearest kept one
      at = std::min_element(lambdas_.begin(), lambdas_.end(),
                            [&](double a, double b) { return std::abs(a - lambda) < std::abs(b - lambda); });
    }
    f.lambda_index = static_cast<uint32_t>(at - lambdas_.begin());
    offer_lambda_.push_back(f.lambda_index);
    figures_.push_back(f);
  }
  if (lambdas_.empty()) lambdas_.push_back(rates.rate("", "", "").per_hour);
  cpu_model_ = model_id("cpu");
}

int PlacementContext::model_id(std::string_view canonical) const {
  auto it = model_ids_.find(canonical);
  return it == model_ids_.end() ? -1 : it->second;
}

int PlacementContext::device_model_id(std::string_view name, double memory_gb) const {
  if (const int id = model_id(name); id >= 0) return id;
  if (name.starts_with("cpu/")) return cpu_model_;  // a CPU whose peak was not given: the generic row
  return model_id(cost::canonical_gpu_name(name, memory_gb));
}

double PlacementContext::local_usd_per_gpu_hour(std::string_view gpu_model) const {
  const int id = device_model_id(gpu_model);
  return id < 0 ? -1.0 : local_price_[static_cast<size_t>(id)];
}

double PlacementContext::checkpoint_hours(int64_t bytes) const {
  return (static_cast<double>(bytes) / config_.checkpoint_write_bytes_per_second + config_.checkpoint_fixed_seconds) /
         3600.0;
}

double PlacementContext::restart_hours(int64_t bytes) const {
  return config_.provision_hours + config_.warmup_hours +
         static_cast<double>(bytes) / config_.checkpoint_fetch_bytes_per_second / 3600.0;
}

// ---------------------------------------------------------------------------------------------
// place()

namespace {

struct Best {
  int32_t row = -1;
  Candidate c;
  bool set = false;
};

// Cheapest; ties: the earlier finish.
bool cheaper(const Candidate& a, const Candidate& b) {
  if (a.estimated_cost_usd != b.estimated_cost_usd) return a.estimated_cost_usd < b.estimated_cost_usd;
  return a.completion_hours < b.completion_hours;
}
// Earliest finish; ties: the cheaper.
bool earlier(const Candidate& a, const Candidate& b) {
  if (a.completion_hours != b.completion_hours) return a.completion_hours < b.completion_hours;
  return a.estimated_cost_usd < b.estimated_cost_usd;
}

// Every input of a candidate's rejection that comes from the job, and nothing else: reject()
// reads the job only through this record and rejection_key() is its fields, so the rules and the
// key that groups unplaceable jobs cannot drift apart. The size of the work, the deadline, the
// priority and the submission time are not here: they change prices and times, never a rejection.
struct RejectionInputs {
  train::PlacementMode mode = train::PlacementMode::auto_;
  train::SpotMode spot = train::SpotMode::auto_;
  std::string_view gpu;  // resources.gpu as the job gives it (the job outlives this); `request` is its parse
  Expected<cost::GpuRequest> request = cost::GpuRequest{};
  int gpus = 1;
  int64_t vram_bytes_per_gpu = 0;
  int kind = 0;       // model_kind_index
  int precision = 0;  // cost::Precision
  std::optional<double> max_usd_per_hour;
  bool command = false;
  int nodes = 1;
  bool image = false;
  const std::vector<train::MountSpec>* mounts = nullptr;  // the job's (it outlives this)
};

RejectionInputs rejection_inputs(const Job& job) {
  const auto& w = job.workload;
  return {job.mode,
          job.spot,
          job.gpu,
          cost::parse_gpu_request(job.gpu),
          std::max(w.gpus, 1),
          w.vram_bytes_per_gpu,
          model_kind_index(w.model_kind),
          static_cast<int>(w.precision),
          job.max_usd_per_hour,
          job.command,
          std::max(job.nodes, 1),
          job.image,
          &job.mounts};
}

// What one option offers a job, as reject() needs it.
struct OptionFacts {
  OptionKind kind = OptionKind::local;
  int model = -1;              // the context's dense model id; -1 unknown
  int gpu_count = 0;           // GPUs of one machine (one node of a partition)
  double memory_bytes = 0;     // per GPU
  double usd_per_hour = 0;     // what the job would pay there
  bool launchable = true;      // something can start the job there
  bool spot_market = true;     // spot: the offer has a spot price
  bool runs_commands = true;   // a command job can run there
  int machines = 1;            // machines one job may take at once (a local pool's workers)
  const ContainerSupport* containers = nullptr;  // jobs in an image there; null: none
};

bool takes_containers(const RejectionInputs& in, const OptionFacts& o) {
  static const std::vector<train::MountSpec> kNoMounts;
  return !in.image || (o.containers && o.containers->takes(true, in.mounts ? *in.mounts : kNoMounts));
}

// The rejection rules, in the order their reasons are reported: the first that applies wins.
Rejection reject(const RejectionInputs& in, const OptionFacts& o, const PlacementContext& ctx) {
  static_assert(kRejectionCount == 13,
                "a new rejection belongs in reject(), to_string(Rejection) and rejection_text()");
  const bool cloud = o.kind == OptionKind::on_demand || o.kind == OptionKind::spot;
  const bool owned_wanted = in.mode != train::PlacementMode::cloud;
  const bool cloud_wanted = in.mode != train::PlacementMode::local;
  if (cloud ? !cloud_wanted : !owned_wanted) return Rejection::placement_mode;
  // The GPU request against the option's device: "any" takes every device (a CPU only when no GPU
  // option fits: see the choice in place()); "cpu" CPUs only; a model name the variants it names.
  const cost::GpuSpec* spec = o.model >= 0 ? ctx.gpu_spec(o.model) : nullptr;
  bool gpu_ok = false;
  if (in.request) {
    switch (in.request->kind) {
      case cost::GpuRequest::Kind::any: gpu_ok = true; break;
      case cost::GpuRequest::Kind::cpu: gpu_ok = spec && spec->family == "cpu"; break;
      case cost::GpuRequest::Kind::model: gpu_ok = spec && in.request->matches(*spec); break;
    }
  }
  if (!gpu_ok) return Rejection::gpu_constraint;
  if (o.gpu_count < in.gpus) return Rejection::too_few_gpus;
  if (o.machines < in.nodes) return Rejection::too_few_machines;
  if (o.model < 0 || ctx.flops_per_hour(o.model, in.kind, in.precision) <= 0) return Rejection::unknown_gpu;
  if (static_cast<double>(in.vram_bytes_per_gpu) > o.memory_bytes) return Rejection::memory;
  const double cap = in.max_usd_per_hour.value_or(kInf);
  if (!cloud) {
    if (o.usd_per_hour > cap) return Rejection::price_cap;
    if (!o.launchable) return Rejection::no_provider;
    if (in.command && !o.runs_commands) return Rejection::no_commands;
    if (!takes_containers(in, o)) return Rejection::no_containers;
    return Rejection::none;
  }
  if (!o.launchable) return Rejection::no_provider;
  if (in.command && !o.runs_commands) return Rejection::no_commands;
  if (!takes_containers(in, o)) return Rejection::no_containers;
  if (o.kind == OptionKind::on_demand && in.spot == train::SpotMode::always) return Rejection::spot_mode;
  if (o.kind == OptionKind::spot && in.spot == train::SpotMode::never) return Rejection::spot_mode;
  if (o.kind == OptionKind::spot && !o.spot_market) return Rejection::no_spot_market;
  if (o.usd_per_hour > cap) return Rejection::price_cap;
  return Rejection::none;
}

}  // namespace

std::string rejection_key(const Job& job) {
  const RejectionInputs in = rejection_inputs(job);
  std::string key = std::string(train::to_string(in.mode)) + "|" + std::string(train::to_string(in.spot)) + "|" +
                    std::string(in.gpu) + "|" + std::to_string(in.gpus) + "|" + std::to_string(in.vram_bytes_per_gpu) + "|" +
                    std::to_string(in.kind) + "|" + std::to_string(in.precision) + "|" + (in.command ? "command|" : "|") +
                    std::to_string(in.nodes) + "|";
  if (in.image) {
    key += "image";
    for (const auto& m : job.mounts) key += ":" + m.source + (m.writable ? "+rw" : "");
    key += "|";
  }
  // gpus "auto": the count, and so the memory per GPU, follows each option's GPUs from the
  // described workload; everything of it that sizes the memory is in the key.
  if (job.workload.gpus_auto && job.workload.transformer) {
    const auto& m = *job.workload.transformer;
    for (int64_t v : {int64_t{m.layers}, int64_t{m.hidden}, int64_t{m.heads}, int64_t{m.vocab}, m.parameters,
                      int64_t{m.seq_len}, int64_t{m.micro_batch}, int64_t{static_cast<int>(m.precision)},
                      int64_t{static_cast<int>(m.optimizer)}, int64_t{static_cast<int>(m.recompute)},
                      int64_t{m.zero_stage}, int64_t{m.tensor_parallel}})
      key += std::to_string(v) + ",";
    key += "auto|";
  }
  if (in.max_usd_per_hour) {
    char cap[32];
    std::snprintf(cap, sizeof cap, "%a", *in.max_usd_per_hour);  // exact: the cap compares prices exactly
    key += cap;
  }
  return key;
}

PlacementDecision place(const Job& job, const PlacementContext& ctx, const LocalCapacity& capacity, int64_t now_ms,
                        std::vector<Candidate>* table) {
  PlacementDecision d;
  if (table) table->clear();
  const auto& w = job.workload;
  const RejectionInputs in = rejection_inputs(job);
  const int kind = in.kind;
  const int precision = in.precision;
  const int gpus = in.gpus;
  // The GPUs the job takes on a machine of `gpu_count` GPUs of `memory_bytes` each: its own count,
  // or with gpus "auto" the smallest that holds it (all the machine's when none does: rejected for
  // memory with that count's figure).
  auto sized = [&](int gpu_count, double memory_bytes) {
    RejectionInputs r = in;
    if (w.gpus_auto) {
      const int n = cost::smallest_fitting_gpus(w, gpu_count, memory_bytes);
      r.gpus = n > 0 ? n : std::max(gpu_count, gpus);
      r.vram_bytes_per_gpu = cost::vram_bytes_for(w, r.gpus);
    }
    return r;
  };
  const bool any_device = in.request && in.request->kind == cost::GpuRequest::Kind::any;
  // For "any": 0 a GPU option, 1 a CPU one (chosen only when no GPU option fits).
  auto device_class = [&](int model) {
    const cost::GpuSpec* spec = model >= 0 ? ctx.specs_[static_cast<size_t>(model)] : nullptr;
    return any_device && spec && spec->family == "cpu" ? 1 : 0;
  };
  if (job.deadline_hours)
    d.deadline_left_hours = *job.deadline_hours - static_cast<double>(now_ms - job.submitted_ms) / 3.6e6;
  const double deadline = d.deadline_left_hours.value_or(kInf);

  // Spot time factors, once per distinct interruption rate. A gang runs on N instances, each
  // interrupted at lambda independently, and any one interruption stops (and restarts) the whole
  // gang: the gang is interrupted at N lambda. C (rank 0 writes the checkpoint) and R (the N
  // instances boot at once) stay one node's.
  const double c_hours = ctx.checkpoint_hours(w.checkpoint_bytes);
  const double r_hours = ctx.restart_hours(w.checkpoint_bytes);
  std::array<double, kMaxCachedLambdas> spot_factor{};
  for (size_t i = 0; i < ctx.lambdas_.size(); ++i)
    spot_factor[i] = cost::spot_time_factor(c_hours, r_hours, ctx.lambdas_[i] * in.nodes);

  std::array<Best, 2> best_meet, best_any;  // per device class
  Best best_idle;  // the cheapest fitting local option whose pool has the GPUs free now
  int best_idle_class = 0;
  double fastest = kInf;
  int32_t row = 0;
  auto consider = [&](Candidate& c, int cls, bool idle) {
    ++d.considered;
    if (c.rejection != Rejection::none) {
      ++d.rejected[static_cast<size_t>(c.rejection)];
    } else {
      ++d.fitting;
      c.meets_deadline = c.completion_hours <= deadline;
      fastest = std::min(fastest, c.completion_hours);
      if (c.meets_deadline) {
        ++d.meeting_deadline;
        if (!best_meet[cls].set || cheaper(c, best_meet[cls].c)) best_meet[cls] = {row, c, true};
      }
      if (!best_any[cls].set || earlier(c, best_any[cls].c)) best_any[cls] = {row, c, true};
      if (idle && (!best_idle.set || cheaper(c, best_idle.c))) {
        best_idle = {row, c, true};
        best_idle_class = cls;
      }
    }
    if (table) table->push_back(c);
    ++row;
  };

  // Owned GPUs, a local pool's or a Slurm partition's: the same rejections and the same price per
  // GPU the job takes. `gpu_count`: GPUs of one machine; `idle`: the GPUs are free now;
  // `launchable`: something can start the job there; `wait()`: the queue wait, asked only when the
  // run can be timed.
  auto owned = [&](OptionKind option, uint32_t source, std::string_view gpu_model, int gpu_count, double memory_gb,
                   int machines, auto idle, bool launchable, bool runs_commands, const ContainerSupport& containers,
                   auto wait) {
    Candidate c;
    c.kind = option;
    c.source = source;
    const RejectionInputs sin = sized(gpu_count, memory_gb * kGiB);
    c.gpus = sin.gpus;
    c.vram_bytes_per_gpu = sin.vram_bytes_per_gpu;
    const int model = ctx.device_model_id(gpu_model, memory_gb);
    if (model >= 0) {
      // A job pays for the GPUs it takes, not the whole machine: the rest run other jobs. A
      // gang takes as many on each of its nodes.
      const double per_gpu = ctx.local_price_[static_cast<size_t>(model)];
      c.usd_per_hour = std::max(per_gpu, 0.0) * std::min(c.gpus, std::max(gpu_count, 1)) * in.nodes;
    }
    c.rejection = reject(
        sin, {option, model, gpu_count, memory_gb * kGiB, c.usd_per_hour, launchable, true, runs_commands, machines, &containers},
        ctx);
    if (model >= 0) {
      const double rate = ctx.flops_per_hour(model, kind, precision) * c.gpus * in.nodes;
      if (rate > 0) {
        c.queue_wait_hours = wait(c.gpus);
        c.estimated_hours = w.assumed_hours ? *w.assumed_hours
                                             : cost::training_flops_for(w, c.gpus) / rate + ctx.run_overhead_hours(model, kind);
        c.estimated_cost_usd = c.usd_per_hour * c.estimated_hours;
        c.completion_hours = c.queue_wait_hours + c.estimated_hours;
      }
    }
    consider(c, device_class(model), idle(c.gpus));
  };

  // Local pools.
  const auto pools = capacity.pools();
  for (uint32_t p = 0; p < pools.size(); ++p) {
    const auto& pool = pools[p];
    owned(OptionKind::local, p, pool.gpu_model, pool.gpu_count, pool.gpu_memory_gb, static_cast<int>(pool.workers),
          [&](int g) { return capacity.has_free(p, g) && static_cast<int>(pool.free.size()) >= in.nodes; }, true,
          pool.runs_commands, pool.containers,
          [&](int g) { return capacity.expected_wait_hours(p, now_ms, g); });
  }

  // Slurm partitions: waiting in Slurm's queue rather than for a worker; a job takes one node of
  // the partition, and Slurm's estimate says how many GPUs of one node can ever start. A gang's
  // nodes are tasks of one Slurm job, up to tasks_per_node of them sharing a Slurm node's GPUs.
  const auto partitions = capacity.partitions();
  for (uint32_t p = 0; p < partitions.size(); ++p) {
    const auto& part = partitions[p];
    const int startable = static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(part.gpus_per_node, 0)),
                                                            part.wait_hours.size()));
    const int sharing = std::clamp(std::min(in.nodes, part.tasks_per_node), 1, std::max(startable, 1));
    owned(OptionKind::slurm, p, part.gpu_model, startable / sharing, part.gpu_memory_gb, part.machines,
          [](int) { return false; }, ctx.config_.slurm_launchable, true, ctx.config_.slurm_containers, [&](int g) {
            const int node_gpus = g * sharing;
            return g >= 1 && node_gpus <= startable ? part.wait_hours[static_cast<size_t>(node_gpus - 1)] : 0.0;
          });
  }

  // Cloud offers: on-demand, then spot. A gang takes one instance of the offer per node: it pays
  // for every one, and the work is spread over every node's GPUs.
  const double provision = ctx.config_.provision_hours;
  const bool cloud_launchable = ctx.config_.cloud_launchable;
  // One machine is always there to judge: a cap of 0 launches nothing, and says so elsewhere.
  const int cloud_machines = std::max(ctx.config_.cloud_max_instances, 1);
  const int instances = in.nodes;
  for (uint32_t i = 0; i < ctx.figures_.size(); ++i) {
    const auto& f = ctx.figures_[i];
    const RejectionInputs sin = sized(f.gpu_count, f.memory_bytes);
    const double rate = f.model >= 0 ? ctx.flops_per_hour(f.model, kind, precision) * sin.gpus * instances : 0.0;
    const double t = rate <= 0 ? 0.0
                     : w.assumed_hours ? *w.assumed_hours
                                       : cost::training_flops_for(w, sin.gpus) / rate + ctx.run_overhead_hours(f.model, kind);

    Candidate od;
    od.kind = OptionKind::on_demand;
    od.source = i;
    od.usd_per_hour = f.on_demand * instances;
    od.gpus = sin.gpus;
    od.vram_bytes_per_gpu = sin.vram_bytes_per_gpu;
    od.rejection = reject(sin, {od.kind, f.model, f.gpu_count, f.memory_bytes, od.usd_per_hour, cloud_launchable, true,
                                ctx.config_.cloud_runs_commands, cloud_machines, &ctx.config_.cloud_containers}, ctx);
    if (rate > 0) {
      od.queue_wait_hours = provision;
      od.estimated_hours = t;
      od.estimated_cost_usd = od.usd_per_hour * (t + provision);
      od.completion_hours = provision + t;
    }
    consider(od, device_class(f.model), false);

    Candidate sp;
    sp.kind = OptionKind::spot;
    sp.source = i;
    sp.usd_per_hour = std::max(f.spot, 0.0) * instances;
    sp.gpus = sin.gpus;
    sp.vram_bytes_per_gpu = sin.vram_bytes_per_gpu;
    sp.rejection =
        reject(sin, {sp.kind, f.model, f.gpu_count, f.memory_bytes, sp.usd_per_hour, cloud_launchable, f.spot >= 0,
                     ctx.config_.cloud_runs_commands, cloud_machines, &ctx.config_.cloud_containers}, ctx);
    if (rate > 0 && f.spot >= 0) {
      const double ts = t * spot_factor[f.lambda_index];
      sp.queue_wait_hours = provision;
      sp.estimated_hours = ts;
      sp.estimated_cost_usd = sp.usd_per_hour * (ts + provision);
      sp.completion_hours = provision + ts;
    }
    consider(sp, device_class(f.model), false);
  }

  d.fastest_completion_hours = std::isfinite(fastest) ? fastest : 0.0;
  // A GPU option when one fits ("any" prefers a GPU), else a CPU one.
  const int cls = best_any[0].set ? 0 : 1;
  const Best* pick = nullptr;
  if (best_meet[cls].set) {
    pick = &best_meet[cls];
    d.reason_code = job.deadline_hours ? ReasonCode::cheapest_meeting_deadline : ReasonCode::cheapest_no_deadline;
  } else if (best_any[cls].set) {
    pick = &best_any[cls];
    d.reason_code = ReasonCode::earliest_missing_deadline;
  }
  if (!pick) {
    d.outcome = Outcome::unplaceable;
    d.reason_code = ReasonCode::nothing_fits;
    return d;
  }
  // The idle-worker rule: a job does not wait for a busy pool while a worker that fits it is
  // idle, unless waiting is cheaper and the busy pool frees in time for the job's deadline.
  if (pick->c.kind == OptionKind::local && !capacity.has_free(pick->c.source, pick->c.gpus) && best_idle.set) {
    const bool wait = job.deadline_hours && pick->c.meets_deadline &&
                      pick->c.estimated_cost_usd < best_idle.c.estimated_cost_usd;
    d.idle_alternative = wait ? best_idle.c : pick->c;
    d.waits_over_idle = wait;
    if (!wait) pick = &best_idle;
  }
  d.choice = pick->c;
  d.choice.chosen = true;
  const int chosen_class = pick == &best_idle ? best_idle_class : cls;
  if (chosen_class == 0 && best_meet[1].set && best_meet[1].c.estimated_cost_usd < d.choice.estimated_cost_usd)
    d.cheaper_cpu = best_meet[1].c;
  d.chosen_row = table ? pick->row : -1;
  if (table) (*table)[static_cast<size_t>(pick->row)].chosen = true;
  switch (d.choice.kind) {
    case OptionKind::local:
      d.outcome = capacity.has_free(d.choice.source, d.choice.gpus) ? Outcome::run_local : Outcome::wait_local;
      break;
    case OptionKind::on_demand: d.outcome = Outcome::launch_on_demand; break;
    case OptionKind::spot: d.outcome = Outcome::launch_spot; break;
    case OptionKind::slurm: d.outcome = Outcome::launch_slurm; break;
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Words

namespace {

// The machine a candidate names: its GPU model, its GPUs (one machine's, one node's for a Slurm
// partition) and its memory per GPU.
struct CandidateMachine {
  std::string_view gpu_model;
  int gpus = 0;
  double gpu_memory_gb = 0;
};

CandidateMachine machine_of(const Candidate& c, const PlacementContext& ctx, const LocalCapacity& capacity) {
  switch (c.kind) {
    case OptionKind::local: {
      const auto& p = capacity.pools()[c.source];
      return {p.gpu_model, p.gpu_count, p.gpu_memory_gb};
    }
    case OptionKind::slurm: {
      const auto& p = capacity.partitions()[c.source];
      return {p.gpu_model, p.gpus_per_node, p.gpu_memory_gb};
    }
    case OptionKind::on_demand:
    case OptionKind::spot: break;
  }
  const auto& o = ctx.offers()[c.source];
  return {o.gpu_model, o.gpu_count, o.gpu_memory_gb};
}

}  // namespace

std::string gpu_label(const Candidate& c, const PlacementContext& ctx, const LocalCapacity& capacity) {
  const CandidateMachine m = machine_of(c, ctx, capacity);
  // The GPUs the job takes; the machine only when it has a different count (the rest run other
  // jobs, and the job pays for its own).
  std::string s = cost::device_label(m.gpu_model, c.gpus > 0 ? c.gpus : m.gpus);
  if (c.gpus > 0 && c.gpus != m.gpus && !s.starts_with("CPU"))
    s += " (" + std::to_string(m.gpus) + "-GPU " + (c.kind == OptionKind::slurm ? "node" : "machine") + ")";
  return s;
}

int machine_gpus(const Candidate& c, const PlacementContext& ctx, const LocalCapacity& capacity) {
  return machine_of(c, ctx, capacity).gpus;
}

std::string option_label(const Candidate& c, const PlacementContext& ctx, const LocalCapacity& capacity) {
  if (c.kind == OptionKind::local) return "local " + gpu_label(c, ctx, capacity);
  if (c.kind == OptionKind::slurm)
    return "slurm " + capacity.partitions()[c.source].name + " " + gpu_label(c, ctx, capacity);
  const auto& o = ctx.offers()[c.source];
  std::string where = o.region;
  if (!o.zone.empty()) where += "/" + o.zone;
  return std::string(to_string(c.kind)) + " " + o.name() + " " + where;
}

std::string rejection_text(const Candidate& c, const Job& job, const PlacementContext& ctx,
                           const LocalCapacity& capacity) {
  const int64_t need_bytes = c.gpus > 0 ? c.vram_bytes_per_gpu : job.workload.vram_bytes_per_gpu;
  const double need_gib = static_cast<double>(need_bytes) / kGiB;
  const CandidateMachine machine = machine_of(c, ctx, capacity);
  const double have_gib = machine.gpu_memory_gb;
  const int have_gpus = machine.gpus;
  const std::string model(machine.gpu_model);
  switch (c.rejection) {
    case Rejection::none: return "";
    case Rejection::placement_mode:
      return std::string("placement mode is ") + std::string(train::to_string(job.mode));
    case Rejection::gpu_constraint:
      return "the job asks for " + job.gpu + ", this is " + model;
    case Rejection::spot_mode: return std::string("spot is ") + std::string(train::to_string(job.spot));
    case Rejection::no_spot_market: return "no spot price for this offer";
    case Rejection::too_few_gpus:
      return "needs " + readable::count(c.gpus > 0 ? c.gpus : job.workload.gpus, "GPU") + "; has " + std::to_string(have_gpus);
    case Rejection::unknown_gpu: return "no specs for GPU model '" + model + "': runtime cannot be estimated";
    case Rejection::memory:
      // A described workload says how it was spread: "with ZeRO-2 on 2 GPUs".
      if (job.workload.transformer)
        return "needs " + fixed_decimal(need_gib, 2) + " GiB per GPU " +
               cost::parallelism_text(*job.workload.transformer, c.gpus > 0 ? c.gpus : job.workload.gpus) + "; " +
               model + " has " + fixed_decimal(have_gib, 1) + " GiB";
      return "needs " + fixed_decimal(need_gib, 2) + " GiB per GPU; has " + fixed_decimal(have_gib, 1);
    case Rejection::price_cap:
      return usd_per_hour(c.usd_per_hour) + " is above the cap of " + "$" + fixed_decimal(job.max_usd_per_hour.value_or(0), 2) + "/h";
    case Rejection::no_provider:
      return c.kind == OptionKind::slurm ? "no Slurm cluster is configured to submit it"
                                         : "no cloud provider is configured to launch it";
    case Rejection::too_few_machines:
      if (is_cloud(c.kind))
        return "needs " + readable::count(job.nodes, "instance") + " at once; at most " +
               std::to_string(std::max(ctx.config().cloud_max_instances, 1)) + " run at once (cloud.max_instances)";
      if (c.kind == OptionKind::slurm) {
        const auto& part = capacity.partitions()[c.source];
        return "needs " + readable::count(job.nodes, "machine") + " at once; this partition runs " +
               std::to_string(part.machines) + " (" +
               readable::count(part.machines / std::max(part.tasks_per_node, 1), "usable node") + " x " +
               readable::count(part.tasks_per_node, "task") + ")";
      }
      return "needs " + readable::count(job.nodes, "machine") + " at once; this pool has " +
             readable::count(static_cast<int>(capacity.pools()[c.source].workers), "worker");
    case Rejection::no_commands:
      return c.kind == OptionKind::local
                 ? "a command job, and no worker here runs them (start one with jobctl-worker --allow-commands)"
                 : "a command job, and the cloud's worker command cannot start a worker for it "
                   "(cloud.exec.worker_command has no {job_flags})";
    case Rejection::no_containers: {
      const ContainerSupport* there = c.kind == OptionKind::local   ? &capacity.pools()[c.source].containers
                                      : c.kind == OptionKind::slurm ? &ctx.config().slurm_containers
                                                                    : &ctx.config().cloud_containers;
      const std::string where = c.kind == OptionKind::local   ? "no worker here"
                                : c.kind == OptionKind::slurm ? "the Slurm workers jobctld starts"
                                                              : "the cloud instances jobctld starts";
      if (!there->runs_images)
        return "a job in an image, and " + where + (c.kind == OptionKind::local ? " runs" : " run no") +
               " containers (" +
               (c.kind == OptionKind::local ? "start one with jobctl-worker --container-runtime podman"
                : c.kind == OptionKind::slurm ? "slurm.containers"
                                              : "cloud.containers") + ")";
      std::string refused;
      for (const auto& m : job.mounts)
        if (!train::mount_allowed(m.source, m.writable, there->mounts))
          refused += (refused.empty() ? "" : ", ") + m.source + (m.writable ? " (writable)" : "");
      return "its mounts " + refused + " are not allowed there (" +
             (c.kind == OptionKind::local ? "jobctl-worker --allow-mount" : c.kind == OptionKind::slurm ? "slurm.allowed_mounts" : "cloud.allowed_mounts") + ")";
    }
  }
  return "";
}

void hold_for_spot(PlacementDecision& d, std::vector<Candidate>* table) {
  if (table && d.chosen_row >= 0) (*table)[static_cast<size_t>(d.chosen_row)].chosen = false;
  d.chosen_row = -1;
  d.choice.chosen = false;
  d.outcome = Outcome::wait_spot;
}

std::string decision_reason(const PlacementDecision& d, const Job& job, const PlacementContext& ctx,
                            const LocalCapacity& capacity) {
  std::string s;
  const std::string counts = std::to_string(d.fitting) + " of " + std::to_string(d.considered) + " options fit";
  if (d.outcome == Outcome::unplaceable) {
    s = "no option can run this job:";
    bool first = true;
    for (size_t r = 1; r < kRejectionCount; ++r) {
      if (!d.rejected[r]) continue;
      s += first ? " " : ", ";
      first = false;
      s += std::to_string(d.rejected[r]) + " " + std::string(to_string(static_cast<Rejection>(r)));
      if (static_cast<Rejection>(r) == Rejection::memory)
        s += " (needs " + fixed_decimal(static_cast<double>(job.workload.vram_bytes_per_gpu) / kGiB, 2) + " GiB per GPU)";
      if (static_cast<Rejection>(r) == Rejection::price_cap)
        s += " (cap $" + fixed_decimal(job.max_usd_per_hour.value_or(0), 2) + "/h)";
    }
    return s;
  }
  const Candidate& c = d.choice;
  const std::string what = option_label(c, ctx, capacity) + " at " + usd_per_hour(c.usd_per_hour) +
                           ", expected " + hours(c.estimated_hours) + " for " +
                           usd(c.estimated_cost_usd) + ", done in " + hours(c.completion_hours);
  if (d.outcome == Outcome::wait_spot) {
    // No figures that change from one re-evaluation to the next: the reason is compared with the
    // stored one to decide whether the decision is news.
    return "waiting for spot capacity: no spot offer can be launched now and the deadline leaves time to wait; "
           "otherwise " + option_label(c, ctx, capacity) + " at " + usd_per_hour(c.usd_per_hour);
  }
  // With a cheaper CPU option passed over, the rule comes first and the choice is the cheapest GPU
  // option, not the cheapest of all.
  std::string cheapest = "cheapest option";
  if (d.cheaper_cpu) {
    const Candidate& cpu = *d.cheaper_cpu;
    s = "GPU preferred: " + option_label(c, ctx, capacity) + " " + usd(c.estimated_cost_usd) + " over " +
        option_label(cpu, ctx, capacity) + " " + usd(cpu.estimated_cost_usd) +
        " (gpu: any prefers a GPU when one fits); ";
    cheapest = "cheapest GPU option";
  }
  switch (d.reason_code) {
    case ReasonCode::cheapest_no_deadline:
      s += cheapest + " (no deadline): " + what + "; " + counts;
      break;
    case ReasonCode::cheapest_meeting_deadline:
      s += cheapest + " meeting the deadline (" + hours(d.deadline_left_hours.value_or(0)) +
           " left): " + what + "; " + counts + ", " + std::to_string(d.meeting_deadline) + " meet the deadline";
      break;
    case ReasonCode::earliest_missing_deadline:
      s += "no " + std::string(d.cheaper_cpu ? "GPU option" : "option") + " meets the deadline (" + hours(d.deadline_left_hours.value_or(0)) +
          " left); chose the earliest finishing within the price cap: " + what + "; " + counts;
      break;
    case ReasonCode::nothing_fits: break;
  }
  if (d.outcome == Outcome::wait_local)
    s += "; waiting for a worker, expected free in " + hours(c.queue_wait_hours);
  if (!job.workload.runtime_note.empty()) s += "; " + job.workload.runtime_note;
  if (d.outcome == Outcome::launch_slurm)
    s += "; Slurm's queue is expected to start it in " + hours(c.queue_wait_hours);
  if (d.idle_alternative) {
    const Candidate& alt = *d.idle_alternative;
    if (d.waits_over_idle)
      s += "; rather than the idle " + option_label(alt, ctx, capacity) + " (" + usd(alt.estimated_cost_usd) +
           "): waiting is cheaper and done in " + hours(c.completion_hours) + ", within the deadline";
    else
      s += "; " + option_label(c, ctx, capacity) + " is idle: taken rather than waiting " +
           hours(alt.queue_wait_hours) + " for " + option_label(alt, ctx, capacity) + " (" +
           usd(alt.estimated_cost_usd) + (job.deadline_hours ? "" : ", no deadline") + ")";
  }
  return s;
}

}  // namespace jobctl::scheduler
