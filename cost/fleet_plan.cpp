#include "cost/fleet_plan.h"

#include <algorithm>
#include <limits>
#include <cmath>
#include <numeric>
#include <sstream>

#include "base/fixed_decimal.h"
#include "base/strings.h"
#include "base/utc_time.h"

namespace jobctl::cost {

using nlohmann::json;

namespace {

constexpr double kMsPerHour = 3'600'000.0;
constexpr double kEpsilonHours = 1e-9;

Status bad(std::string field, std::string message) {
  return Status(make_error(ErrorCode::invalid_argument, std::move(message), std::move(field)));
}

double hours_since(int64_t from_ms, int64_t t_ms) { return static_cast<double>(t_ms - from_ms) / kMsPerHour; }

Status validate_input(const FleetPlanInput& in) {
  if (in.gpu_model.empty()) return bad("gpu", "a plan needs a GPU model");
  if (in.to_ms <= in.from_ms) return bad("to", "to must be after from");
  if (in.max_extra_gpus < 0 || in.max_extra_gpus > kMaxPlanExtraGpus)
    return bad("max_extra_gpus", "max_extra_gpus must be 0 to " + std::to_string(kMaxPlanExtraGpus));
  if (!(std::isfinite(in.max_wait_hours) && in.max_wait_hours >= 0))
    return bad("max_wait_hours", "max_wait_hours must be >= 0");
  if (in.owned_gpus_today < 0) return bad("owned_gpus", "owned_gpus must be >= 0");
  if (!(std::isfinite(in.owned_usd_per_gpu_hour_today) && in.owned_usd_per_gpu_hour_today >= 0))
    return bad("owned_usd_per_gpu_hour", "owned_usd_per_gpu_hour must be >= 0");
  LocalGpuInventory bought = in.bought;
  bought.gpu_model = in.gpu_model;
  bought.count = 1;
  if (Status st = validate(bought); !st) return st;
  const double period = hours_since(in.from_ms, in.to_ms);
  // No job of the model arrived: a plan all the same (no demand: buying only adds its purchase and
  // power, so the cheapest is to buy none), which clients say as such.
  if (period < kMinPlanHistoryHours)
    return bad("from", "the period is " + fixed_decimal(period, 1) + " h; a plan needs at least " +
                           fixed_decimal(kMinPlanHistoryHours, 0) +
                           " h (7 days) of history, or it extrapolates a burst (start the period earlier)");
  for (const auto& j : in.jobs) {
    if (j.gpus < 1) return bad("jobs", "job " + std::to_string(j.id) + " has " + std::to_string(j.gpus) + " GPUs");
    if (!(std::isfinite(j.runtime_hours) && j.runtime_hours > 0))
      return bad("jobs", "job " + std::to_string(j.id) + " has no runtime");
    if (!(std::isfinite(j.cloud_usd_per_gpu_hour) && j.cloud_usd_per_gpu_hour >= 0))
      return bad("jobs", "job " + std::to_string(j.id) + " has no cloud price");
  }
  return ok_status();
}

// Demand as submitted: every job started on arrival, its GPUs spread over the hours it ran.
void measure_demand(const FleetPlanInput& in, FleetPlan& plan) {
  plan.demand_by_hour_of_day.assign(24, 0.0);
  plan.demand_by_day.assign(static_cast<size_t>(std::ceil(plan.period_hours / 24.0 - 1e-9)), 0.0);
  for (const auto& j : in.jobs) {
    plan.demand_gpu_hours += j.gpus * j.runtime_hours;
    // Hour buckets of the UTC clock: `from` need not be on an hour.
    const double abs_start = static_cast<double>(j.arrival_ms) / kMsPerHour;
    for (double t = abs_start; t < abs_start + j.runtime_hours - kEpsilonHours;) {
      const double next = std::min(std::floor(t) + 1.0, abs_start + j.runtime_hours);
      const double gpu_hours = (next - t) * j.gpus;
      plan.demand_by_hour_of_day[static_cast<size_t>(static_cast<int64_t>(std::floor(t)) % 24)] += gpu_hours;
      const double rel = t - static_cast<double>(in.from_ms) / kMsPerHour;
      const auto day = static_cast<size_t>(std::max(0.0, std::floor(rel / 24.0)));
      if (day < plan.demand_by_day.size()) plan.demand_by_day[day] += gpu_hours;
      t = next;
    }
  }
  plan.peak_concurrent_gpus = peak_concurrent_gpus(in.jobs);
}

json row_json(const FleetPlanRow& r) {
  return {{"extra_gpus", r.extra_gpus},           {"owned_gpus", r.owned_gpus},
          {"total_usd", r.total_usd},             {"fleet_usd", r.fleet_usd},
          {"purchase_usd", r.purchase_usd},       {"maintenance_usd", r.maintenance_usd},
          {"power_usd", r.power_usd},             {"cloud_usd", r.cloud_usd},
          {"other_usd", r.other_usd},             {"owned_gpu_hours", r.owned_gpu_hours},
          {"cloud_gpu_hours", r.cloud_gpu_hours}, {"utilisation", r.utilisation},
          {"jobs_owned", r.jobs_owned},           {"jobs_cloud", r.jobs_cloud},
          {"jobs_waited", r.jobs_waited},         {"wait_hours_total", r.wait_hours_total},
          {"wait_hours_max", r.wait_hours_max},   {"deadlines_missed", r.deadlines_missed}};
}

}  // namespace

double peak_concurrent_gpus(const std::vector<PlanJob>& jobs) {
  std::vector<std::pair<double, int>> events;
  for (const auto& j : jobs) {
    const double start = static_cast<double>(j.arrival_ms) / kMsPerHour;
    events.emplace_back(start, j.gpus);
    events.emplace_back(start + j.runtime_hours, -j.gpus);
  }
  // Ends before starts at the same instant: a job that ends as another begins does not overlap it.
  std::sort(events.begin(), events.end());
  double level = 0, peak = 0;
  for (const auto& [t, delta] : events) {
    level += delta;
    peak = std::max(peak, level);
  }
  return peak;
}

FleetPlanRow replay_fleet(const FleetPlanInput& in, int extra_gpus) {
  FleetPlanRow row;
  row.extra_gpus = extra_gpus;
  const int today = in.owned_gpus_today;
  const int owned = today + extra_gpus;
  row.owned_gpus = owned;
  const double period = hours_since(in.from_ms, in.to_ms);

  // What placement charges for an hour of each owned GPU: today's at the ledger's price, a
  // bought one at the amortised price the daemon would give it (cost/local_gpu.h).
  const double bought_price = local_hourly_cost(in.bought, LocalPricing::amortised);
  const double bought_energy = energy_per_hour(in.bought);
  std::vector<double> free_at(static_cast<size_t>(owned), -std::numeric_limits<double>::infinity());
  std::vector<size_t> order(static_cast<size_t>(owned));
  auto price_of = [&](size_t gpu) { return static_cast<int>(gpu) < today ? in.owned_usd_per_gpu_hour_today : bought_price; };

  std::vector<const PlanJob*> jobs;
  for (const auto& j : in.jobs) jobs.push_back(&j);
  std::stable_sort(jobs.begin(), jobs.end(), [](const PlanJob* a, const PlanJob* b) {
    return a->arrival_ms != b->arrival_ms ? a->arrival_ms < b->arrival_ms : a->id < b->id;
  });

  for (const PlanJob* j : jobs) {
    const double arrival = hours_since(in.from_ms, j->arrival_ms);
    const double r = j->runtime_hours;
    const std::optional<double> deadline =
        j->deadline_ms ? std::optional<double>(hours_since(in.from_ms, *j->deadline_ms)) : std::nullopt;
    const double cloud_cost = j->gpus * r * j->cloud_usd_per_gpu_hour;
    const bool cloud_meets = !deadline || arrival + r <= *deadline + kEpsilonHours;

    bool owned_possible = j->gpus <= owned;
    double wait = 0, owned_cost = 0;
    if (owned_possible) {
      // The k GPUs ready first; among equals today's before bought ones (they are already paid for).
      std::iota(order.begin(), order.end(), size_t{0});
      auto ready = [&](size_t g) { return std::max(free_at[g], arrival); };
      std::partial_sort(order.begin(), order.begin() + j->gpus, order.end(), [&](size_t a, size_t b) {
        return ready(a) != ready(b) ? ready(a) < ready(b) : a < b;
      });
      const double start = ready(order[static_cast<size_t>(j->gpus - 1)]);
      wait = start - arrival;
      for (int i = 0; i < j->gpus; ++i) owned_cost += r * price_of(order[static_cast<size_t>(i)]);
    }
    const bool owned_meets =
        owned_possible && (deadline ? arrival + wait + r <= *deadline + kEpsilonHours : wait <= in.max_wait_hours + kEpsilonHours);

    // The placement rule: the cheapest option meeting the deadline (ties: the earlier finish);
    // none meeting it: the earliest finish (ties: the cheaper), and the deadline is missed.
    bool take_owned = false;
    bool missed = false;
    if (owned_meets && cloud_meets) {
      take_owned = owned_cost < cloud_cost || (owned_cost == cloud_cost && wait <= kEpsilonHours);
    } else if (owned_meets) {
      take_owned = true;
    } else if (cloud_meets) {
      take_owned = false;
    } else {
      missed = true;
      // The cloud starts at once: the owned option finishes as early only when it needs no wait.
      take_owned = owned_possible && wait <= kEpsilonHours && owned_cost <= cloud_cost;
    }
    if (missed) ++row.deadlines_missed;

    if (take_owned) {
      const double start = arrival + wait;
      for (int i = 0; i < j->gpus; ++i) {
        const size_t g = order[static_cast<size_t>(i)];
        free_at[g] = start + r;
        if (static_cast<int>(g) < today)
          row.fleet_usd += r * in.owned_usd_per_gpu_hour_today;
        else
          row.power_usd += r * bought_energy;
      }
      row.owned_gpu_hours += j->gpus * r;
      ++row.jobs_owned;
      if (wait > kEpsilonHours) {
        ++row.jobs_waited;
        row.wait_hours_total += wait;
        row.wait_hours_max = std::max(row.wait_hours_max, wait);
      }
    } else {
      row.cloud_usd += cloud_cost;
      row.cloud_gpu_hours += j->gpus * r;
      ++row.jobs_cloud;
    }
  }
  row.purchase_usd = extra_gpus * (in.bought.purchase_usd + in.bought.setup_usd) * period / (in.bought.lifetime_years * kHoursPerYear);
  row.maintenance_usd = extra_gpus * in.bought.maintenance_usd_per_year * period / kHoursPerYear;
  row.other_usd = in.other_usd;
  row.utilisation = owned > 0 ? row.owned_gpu_hours / (owned * period) : 0;
  row.total_usd = row.fleet_usd + row.purchase_usd + row.maintenance_usd + row.power_usd + row.cloud_usd + row.other_usd;
  return row;
}

Expected<FleetPlan> plan_fleet(const FleetPlanInput& input) {
  if (Status st = validate_input(input); !st) return st.error();
  FleetPlan plan;
  plan.input = input;
  plan.input.bought.gpu_model = input.gpu_model;
  plan.period_hours = hours_since(input.from_ms, input.to_ms);
  plan.job_count = static_cast<int>(input.jobs.size());
  measure_demand(input, plan);
  for (int n = 0; n <= input.max_extra_gpus; ++n) plan.rows.push_back(replay_fleet(plan.input, n));
  const FleetPlanRow* best = &plan.rows.front();
  for (const auto& r : plan.rows)
    if (r.total_usd < best->total_usd - 1e-9) best = &r;  // ties: the fewer GPUs
  const FleetPlanRow& today = plan.rows.front();
  plan.cheapest_extra_gpus = best->extra_gpus;
  plan.saving_usd = today.total_usd - best->total_usd;
  const double months = plan.period_hours / kHoursPerMonth;
  plan.saving_usd_per_month = plan.saving_usd / months;
  if (best->extra_gpus > 0) {
    const double monthly_before_purchase = (today.total_usd - (best->total_usd - best->purchase_usd)) / months;
    if (monthly_before_purchase > 0)
      plan.payback_months = best->extra_gpus * (input.bought.purchase_usd + input.bought.setup_usd) / monthly_before_purchase;
  }
  plan.replay_vs_ledger = input.ledger_usd > 0 ? today.total_usd / input.ledger_usd - 1.0 : 0.0;
  return plan;
}

json to_json(const FleetPlan& p) {
  const auto& in = p.input;
  json rows = json::array();
  for (const auto& r : p.rows) rows.push_back(row_json(r));
  return {{"gpu", in.gpu_model},
          {"from_ms", in.from_ms},
          {"to_ms", in.to_ms},
          {"period_hours", p.period_hours},
          {"jobs", p.job_count},
          {"demand_gpu_hours", p.demand_gpu_hours},
          {"demand_by_hour_of_day", p.demand_by_hour_of_day},
          {"demand_by_day", p.demand_by_day},
          {"peak_concurrent_gpus", p.peak_concurrent_gpus},
          {"assumptions",
           {{"owned_gpus_today", in.owned_gpus_today},
            {"owned_usd_per_gpu_hour_today", in.owned_usd_per_gpu_hour_today},
            {"purchase_usd", in.bought.purchase_usd},
            {"setup_usd", in.bought.setup_usd},
            {"lifetime_years", in.bought.lifetime_years},
            {"power_kw", in.bought.power_kw},
            {"pue", in.bought.pue},
            {"electricity_usd_per_kwh", in.bought.electricity_usd_per_kwh},
            {"maintenance_usd_per_year", in.bought.maintenance_usd_per_year},
            {"utilisation", in.bought.utilisation},
            {"bought_usd_per_gpu_hour", local_hourly_cost(in.bought, LocalPricing::amortised)},
            {"max_extra_gpus", in.max_extra_gpus},
            {"max_wait_hours", in.max_wait_hours},
            {"other_usd", in.other_usd},
            {"text", fleet_plan_assumptions(p)}}},
          {"ledger_usd", in.ledger_usd},
          {"replay_vs_ledger", p.replay_vs_ledger},
          {"rows", rows},
          {"cheapest_extra_gpus", p.cheapest_extra_gpus},
          {"saving_usd", p.saving_usd},
          {"saving_usd_per_month", p.saving_usd_per_month},
          {"payback_months", p.payback_months ? json(*p.payback_months) : json(nullptr)}};
}

Expected<FleetPlan> fleet_plan_from_json(const json& j) {
  try {
    FleetPlan p;
    auto& in = p.input;
    in.gpu_model = j.at("gpu").get<std::string>();
    in.from_ms = j.at("from_ms").get<int64_t>();
    in.to_ms = j.at("to_ms").get<int64_t>();
    p.period_hours = j.at("period_hours").get<double>();
    p.job_count = j.at("jobs").get<int>();
    p.demand_gpu_hours = j.at("demand_gpu_hours").get<double>();
    p.demand_by_hour_of_day = j.at("demand_by_hour_of_day").get<std::vector<double>>();
    p.demand_by_day = j.at("demand_by_day").get<std::vector<double>>();
    p.peak_concurrent_gpus = j.at("peak_concurrent_gpus").get<double>();
    const json& a = j.at("assumptions");
    in.owned_gpus_today = a.at("owned_gpus_today").get<int>();
    in.owned_usd_per_gpu_hour_today = a.at("owned_usd_per_gpu_hour_today").get<double>();
    in.bought.gpu_model = in.gpu_model;
    in.bought.purchase_usd = a.at("purchase_usd").get<double>();
    in.bought.setup_usd = a.at("setup_usd").get<double>();
    in.bought.lifetime_years = a.at("lifetime_years").get<double>();
    in.bought.power_kw = a.at("power_kw").get<double>();
    in.bought.pue = a.at("pue").get<double>();
    in.bought.electricity_usd_per_kwh = a.at("electricity_usd_per_kwh").get<double>();
    in.bought.maintenance_usd_per_year = a.at("maintenance_usd_per_year").get<double>();
    in.bought.utilisation = a.at("utilisation").get<double>();
    in.max_extra_gpus = a.at("max_extra_gpus").get<int>();
    in.max_wait_hours = a.at("max_wait_hours").get<double>();
    in.other_usd = a.at("other_usd").get<double>();
    in.ledger_usd = j.at("ledger_usd").get<double>();
    p.replay_vs_ledger = j.at("replay_vs_ledger").get<double>();
    for (const auto& r : j.at("rows")) {
      FleetPlanRow row;
      row.extra_gpus = r.at("extra_gpus").get<int>();
      row.owned_gpus = r.at("owned_gpus").get<int>();
      row.total_usd = r.at("total_usd").get<double>();
      row.fleet_usd = r.at("fleet_usd").get<double>();
      row.purchase_usd = r.at("purchase_usd").get<double>();
      row.maintenance_usd = r.at("maintenance_usd").get<double>();
      row.power_usd = r.at("power_usd").get<double>();
      row.cloud_usd = r.at("cloud_usd").get<double>();
      row.other_usd = r.at("other_usd").get<double>();
      row.owned_gpu_hours = r.at("owned_gpu_hours").get<double>();
      row.cloud_gpu_hours = r.at("cloud_gpu_hours").get<double>();
      row.utilisation = r.at("utilisation").get<double>();
      row.jobs_owned = r.at("jobs_owned").get<int>();
      row.jobs_cloud = r.at("jobs_cloud").get<int>();
      row.jobs_waited = r.at("jobs_waited").get<int>();
      row.wait_hours_total = r.at("wait_hours_total").get<double>();
      row.wait_hours_max = r.at("wait_hours_max").get<double>();
      row.deadlines_missed = r.at("deadlines_missed").get<int>();
      p.rows.push_back(row);
    }
    if (p.rows.empty()) return make_error(ErrorCode::invalid_argument, "not a fleet plan: no rows");
    p.cheapest_extra_gpus = j.at("cheapest_extra_gpus").get<int>();
    p.saving_usd = j.at("saving_usd").get<double>();
    p.saving_usd_per_month = j.at("saving_usd_per_month").get<double>();
    if (!j.at("payback_months").is_null()) p.payback_months = j.at("payback_months").get<double>();
    return p;
  } catch (const json::exception& e) {
    return make_error(ErrorCode::invalid_argument, std::string("not a fleet plan: ") + e.what());
  }
}

std::string fleet_plan_csv(const FleetPlan& p) {
  std::ostringstream out;
  out << "gpu,extra_gpus,owned_gpus,total_usd,fleet_usd,purchase_usd,maintenance_usd,power_usd,cloud_usd,other_usd,"
         "owned_gpu_hours,cloud_gpu_hours,utilisation,jobs_owned,jobs_cloud,jobs_waited,wait_hours_total,wait_hours_max,"
         "deadlines_missed,cheapest,saving_usd,payback_months\n";
  for (const auto& r : p.rows) {
    out << csv_field(p.input.gpu_model) << "," << r.extra_gpus << "," << r.owned_gpus << "," << fixed_decimal(r.total_usd, 4) << ","
        << fixed_decimal(r.fleet_usd, 4) << "," << fixed_decimal(r.purchase_usd, 4) << "," << fixed_decimal(r.maintenance_usd, 4) << ","
        << fixed_decimal(r.power_usd, 4) << "," << fixed_decimal(r.cloud_usd, 4) << "," << fixed_decimal(r.other_usd, 4) << ","
        << fixed_decimal(r.owned_gpu_hours, 4) << "," << fixed_decimal(r.cloud_gpu_hours, 4) << "," << fixed_decimal(r.utilisation, 4)
        << "," << r.jobs_owned << "," << r.jobs_cloud << "," << r.jobs_waited << "," << fixed_decimal(r.wait_hours_total, 4) << ","
        << fixed_decimal(r.wait_hours_max, 4) << "," << r.deadlines_missed << ","
        << (r.extra_gpus == p.cheapest_extra_gpus ? "true" : "false") << "," << fixed_decimal(p.saving_usd, 4) << ","
        << (p.payback_months ? fixed_decimal(*p.payback_months, 2) : "") << "\n";
  }
  return out.str();
}

std::string fleet_plan_assumptions(const FleetPlan& p) {
  const auto& in = p.input;
  const auto& g = in.bought;
  std::ostringstream s;
  s << "History: " << p.job_count << " " << in.gpu_model << " jobs, " << fixed_decimal(p.demand_gpu_hours, 1) << " GPU-hours over "
    << fixed_decimal(p.period_hours / 24.0, 1) << " days; arrivals, GPUs and runtimes as they ran. Today: "
    << in.owned_gpus_today << " owned " << in.gpu_model << " at $" << fixed_decimal(in.owned_usd_per_gpu_hour_today, 4)
    << "/GPU-hour as the ledger billed them. A bought " << in.gpu_model << ": $" << fixed_decimal(g.purchase_usd + g.setup_usd, 2)
    << " over " << fixed_decimal(g.lifetime_years, 1) << " years by calendar time (idle hours cost the same), "
    << fixed_decimal(g.power_kw, 3) << " kW x PUE " << fixed_decimal(g.pue, 2) << " at $" << fixed_decimal(g.electricity_usd_per_kwh, 3)
    << "/kWh while busy, maintenance $" << fixed_decimal(g.maintenance_usd_per_year, 0)
    << "/year; placement prices it at $" << fixed_decimal(local_hourly_cost(g, LocalPricing::amortised), 4) << "/GPU-hour ("
    << fixed_decimal(100 * g.utilisation, 0) << "% assumed utilisation). Cloud: each job at the price it paid, "
    << "or the cheapest on-demand offer of the model for jobs that ran on owned GPUs. A job with no deadline waits at most "
    << fixed_decimal(in.max_wait_hours, 2) << " h for an owned GPU. Ledger spend not replayed (idle instances, other models): $"
    << fixed_decimal(in.other_usd, 2) << ", the same for every N.";
  return s.str();
}

}  // namespace jobctl::cost
