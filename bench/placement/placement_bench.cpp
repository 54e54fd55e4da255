// Placement decisions per second on one core, with 1,000 owned workers, 200 cloud offers and
// 1,000 / 10,000 / 100,000 queued jobs (the goal: >= 50,000/s at 10,000 jobs).
//
// A decision is what the daemon's scheduler loop does per job: take the next job in queue order,
// evaluate every candidate (each local pool, each offer on-demand and spot), format the reason
// sentence that is stored with the job, and apply the outcome — take a worker, or remove the job
// from the queue for a cloud launch (a new job is submitted in its place so the queue keeps its
// size), or move on when the job waits for a busy local pool. Simulated time advances one second
// per decision and workers are released when their job's expected runtime has passed.
// A second figure: full quotes (the candidate table of every option, serialised to JSON) per second.
//
// Usage: jobctl-bench-placement [decisions per size, default 200000]
#include <sched.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cost/price_catalog.h"
#include "scheduler/job_queue.h"
#include "scheduler/local_capacity.h"
#include "scheduler/placement.h"
#include "scheduler/placement_json.h"

using namespace jobctl;
using namespace jobctl::scheduler;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// 200 offers: the seed catalog's instance types spread over regions and zones with prices that
// differ by up to +-15% (as real zones do), deterministic.
std::vector<cost::Offer> make_offers(std::mt19937_64& rng) {
  const auto& seed = cost::seed_catalog();
  std::uniform_real_distribution<double> jitter(0.85, 1.15);
  const char* regions[] = {"us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "ap-northeast-1"};
  std::vector<cost::Offer> out;
  for (size_t i = 0; out.size() < 200; ++i) {
    cost::Offer o = seed[i % seed.size()];
    o.region = regions[(i / seed.size()) % 6];
    o.zone = o.region + "-az" + std::to_string(i / (seed.size() * 6) + 1);
    o.on_demand_usd_per_hour *= jitter(rng);
    if (o.spot_usd_per_hour) *o.spot_usd_per_hour *= jitter(rng);
    out.push_back(o);
  }
  return out;
}

std::vector<Worker> make_workers() {
  struct Kind {
    const char* model;
    int count, gpus;
    double mem;
  };
  const Kind kinds[] = {{"V100", 300, 1, 16}, {"RTX4090", 200, 1, 24}, {"A100-80GB", 150, 1, 80}, {"T4", 100, 1, 16},
                        {"L4", 100, 1, 24},   {"cpu", 100, 1, 64},      {"A100", 50, 8, 40}};
  std::vector<Worker> out;
  for (const auto& k : kinds)
    for (int i = 0; i < k.count; ++i) {
      Worker w;
      w.id = std::string(k.model) + "-" + std::to_string(i);
      w.gpu_model = k.model;
      w.gpu_count = k.gpus;
      w.gpu_memory_gb = k.mem;
      out.push_back(w);
    }
  return out;
}

std::vector<cost::LocalGpuInventory> make_inventory() {
  auto inv = [](const char* model, double purchase, double kw) {
    cost::LocalGpuInventory g;
    g.gpu_model = model;
    g.purchase_usd = purchase;
    g.setup_usd = 0.1 * purchase;
    g.power_kw = kw;
    g.pue = 1.3;
    g.electricity_usd_per_kwh = 0.15;
    g.maintenance_usd_per_year = 0.05 * purchase;
    return g;
  };
  return {inv("V100", 2000, 0.3), inv("RTX4090", 1599, 0.45), inv("A100-80GB", 15000, 0.4), inv("T4", 800, 0.07),
          inv("L4", 2500, 0.072), inv("cpu", 3000, 0.2), inv("A100", 10000, 0.4)};
}

// Job templates: a realistic mix of sizes, constraints, deadlines and caps — only jobs that some
// option can run (the daemon refuses the others at submission, so they never sit in the queue).
std::vector<Job> make_jobs(std::mt19937_64& rng, size_t n, const PlacementContext& ctx) {
  std::uniform_real_distribution<double> u(0, 1);
  const char* models[] = {"V100", "A100", "T4", "RTX4090", "H100", "L4"};
  const LocalCapacity idle(make_workers());
  std::vector<Job> out;
  while (out.size() < n) {
    Job j;
    const size_t i = out.size();
    j.id = "job-" + std::to_string(i);
    j.priority = static_cast<int>(u(rng) * 101) % 101;
    j.workload.model_kind = u(rng) < 0.6 ? "mlp" : "cnn";
    const double v100_hours = std::exp(std::log(0.1) + u(rng) * std::log(200.0));  // 0.1 .. 20 h
    j.workload.training_flops = v100_hours * 15.7e12 * 0.05 * 3600;
    j.workload.vram_bytes_per_gpu = static_cast<int64_t>(std::exp(u(rng) * std::log(60.0)) * kGiB);
    j.workload.checkpoint_bytes = j.workload.vram_bytes_per_gpu / 4;
    const double g = u(rng);
    j.workload.gpus = g < 0.9 ? 1 : g < 0.95 ? 2 : 8;
    const double c = u(rng);
    j.gpu = c < 0.8 ? "any" : c < 0.95 ? models[static_cast<size_t>(u(rng) * 6) % 6] : "cpu";
    if (u(rng) < 0.5) j.deadline_hours = 2 + u(rng) * 46;
    if (u(rng) < 0.3) j.max_usd_per_hour = 1 + u(rng) * 9;
    const double m = u(rng);
    j.mode = m < 0.8 ? train::PlacementMode::auto_ : m < 0.9 ? train::PlacementMode::local : train::PlacementMode::cloud;
    const double s = u(rng);
    j.spot = s < 0.8 ? train::SpotMode::auto_ : s < 0.9 ? train::SpotMode::never : train::SpotMode::always;
    if (place(j, ctx, idle, 0).outcome != Outcome::unplaceable) out.push_back(std::move(j));
  }
  return out;
}

struct Figures {
  double per_second = 0;
  double micros = 0;
  size_t outcomes[5] = {};
};

// The backlog's queue entries: a job's index in `jobs` is its id.
struct Queued {
  int64_t id = 0;
  int priority = 0;
  int64_t submitted_ms = 0;
};
struct QueuedKey {
  QueueKey operator()(const Queued& q) const { return {q.id, q.priority, q.submitted_ms}; }
};

Figures run(size_t queued, size_t decisions, const PlacementContext& ctx, const std::vector<Job>& templates) {
  LocalCapacity capacity(make_workers());
  std::vector<Job> jobs(queued);
  JobQueue<Queued, QueuedKey> queue;
  size_t next_template = 0;
  int64_t now = 1'700'000'000'000;
  for (size_t h = 0; h < queued; ++h) {
    jobs[h] = templates[next_template++ % templates.size()];
    jobs[h].submitted_ms = now - static_cast<int64_t>(h);
    queue.insert({static_cast<int64_t>(h), jobs[h].priority, jobs[h].submitted_ms});
  }
  Figures f;
  std::string reason;
  size_t reason_bytes = 0;
  auto cursor = queue.begin();
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < decisions; ++i) {
    now += 1000;
    while (auto busy = capacity.earliest_busy()) {
      if (busy->first > now) break;
      capacity.release(busy->second);
    }
    if (cursor == queue.end()) cursor = queue.begin();  // a new scheduling pass
    const auto handle = static_cast<size_t>(cursor->id);
    ++cursor;
    Job& job = jobs[handle];
    const PlacementDecision d = place(job, ctx, capacity, now);
    reason = decision_reason(d, job, ctx, capacity);
    reason_bytes += reason.size();
    ++f.outcomes[static_cast<size_t>(d.outcome)];
    bool placed = false;
    if (d.outcome == Outcome::run_local) {
      placed = capacity.acquire(d.choice.source, now + static_cast<int64_t>(d.choice.estimated_hours * 3.6e6)).has_value();
    } else if (d.outcome == Outcome::launch_on_demand || d.outcome == Outcome::launch_spot) {
      placed = true;
    }
    if (placed) {  // the job leaves the queue; a new one is submitted in its place
      queue.erase(static_cast<int64_t>(handle));
      job = templates[next_template++ % templates.size()];
      job.submitted_ms = now;
      queue.insert({static_cast<int64_t>(handle), job.priority, job.submitted_ms});
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.per_second = static_cast<double>(decisions) / secs;
  f.micros = secs * 1e6 / static_cast<double>(decisions);
  if (reason_bytes == 0) std::printf("(no reasons?)\n");
  return f;
}

// Quotes: the candidate table of every option (as stored on the job), and the same serialised to
// the JSON that GET /v1/jobs/{id} and POST /v1/quote return.
double quotes_per_second(size_t n, const PlacementContext& ctx, const std::vector<Job>& templates, bool json) {
  LocalCapacity capacity(make_workers());
  std::vector<Candidate> table;
  size_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    const Job& job = templates[i % templates.size()];
    const auto d = place(job, ctx, capacity, 0, &table);
    bytes += json ? placement_json(d, table, job, ctx, capacity, PlacementDocumentInfo{"sim", 0, 1.0}).dump().size() : table.size();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (bytes == 0) std::printf("(empty quotes?)\n");
  return static_cast<double>(n) / secs;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t decisions = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  const bool pinned = sched_setaffinity(0, sizeof one, &one) == 0;

  std::mt19937_64 rng(42);
  const auto offers = make_offers(rng);
  cost::EfficiencyCalibrator calibration;
  PlacementContext ctx(offers, make_inventory(), calibration);
  const auto templates = make_jobs(rng, 8192, ctx);
  LocalCapacity probe(make_workers());
  std::printf("placement benchmark: %zu offers, %zu workers in %zu pools, %zu candidates per job, one thread%s\n",
              ctx.offers().size(), probe.worker_count(), probe.pools().size(), probe.pools().size() + 2 * ctx.offers().size(),
              pinned ? " pinned to CPU 0" : "");
  std::printf("%10s %14s %12s   outcomes: run_local wait_local on_demand spot unplaceable\n", "queued", "decisions/s",
              "us/decision");
  double at_10k = 0;
  for (size_t queued : {1000, 10000, 100000}) {
    const Figures f = run(queued, decisions, ctx, templates);
    if (queued == 10000) at_10k = f.per_second;
    std::printf("%10zu %14.0f %12.2f   %zu %zu %zu %zu %zu\n", queued, f.per_second, f.micros, f.outcomes[0],
                f.outcomes[1], f.outcomes[2], f.outcomes[3], f.outcomes[4]);
  }
  const double table = quotes_per_second(decisions, ctx, templates, false);
  const double json = quotes_per_second(decisions / 50, ctx, templates, true);
  std::printf("quotes: candidate table %.0f/s; table serialised to JSON %.0f/s\n", table, json);
  // Reference measured in this run: a scheduler that built and serialised the whole candidate
  // table for every decision (the naive way to store "the table and the reason" on each job).
  std::printf("decisions at 10k queued vs the full-table-as-JSON reference: %.0fx; vs the 50,000/s goal: %.1fx\n",
              at_10k / json, at_10k / 50000.0);
  return 0;
}
