#include "scheduler/fair_share.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "scheduler/job_queue.h"

namespace jobctl::scheduler {

double decayed_usage(const UsageInterval& interval, int64_t now_ms, int64_t half_life_ms) {
  const int64_t end = std::min(interval.end_ms, now_ms);
  if (end <= interval.start_ms) return 0;
  // An owned GPU with no price still counts one per hour.
  const double weight = interval.usd_per_hour > 0 ? interval.usd_per_hour : 1.0;
  const double hours = static_cast<double>(end - interval.start_ms) / 3.6e6;
  if (half_life_ms <= 0) return weight * hours;
  // Integral of 2^(-(now - t) / h) over [start, end), in hours: h/ln2 * (2^(-(now-end)/h) - 2^(-(now-start)/h)).
  const double h = static_cast<double>(half_life_ms);
  const double a_end = static_cast<double>(now_ms - end) / h;
  const double a_start = static_cast<double>(now_ms - interval.start_ms) / h;
  const double integral_ms = h / std::log(2.0) * (std::exp2(-a_end) - std::exp2(-a_start));
  return weight * integral_ms / 3.6e6;
}

std::map<std::string, double> decayed_usage_by_user(const std::vector<UsageInterval>& intervals, int64_t now_ms,
                                                    int64_t half_life_ms) {
  std::map<std::string, double> out;
  for (const auto& i : intervals) out[i.user] += decayed_usage(i, now_ms, half_life_ms);
  return out;
}

std::map<std::string, FairShareEntry> fair_share_factors(const std::vector<std::string>& users,
                                                         const std::map<std::string, double>& usage,
                                                         const std::map<std::string, double>& shares,
                                                         double default_share) {
  std::set<std::string> all(users.begin(), users.end());
  for (const auto& [user, _] : usage) all.insert(user);
  for (const auto& [user, _] : shares) all.insert(user);
  std::map<std::string, FairShareEntry> out;
  double share_sum = 0, usage_sum = 0;
  for (const auto& user : all) {
    FairShareEntry e;
    e.user = user;
    auto s = shares.find(user);
    e.share = std::max(0.0, s == shares.end() ? default_share : s->second);
    auto u = usage.find(user);
    e.usage = u == usage.end() ? 0 : std::max(0.0, u->second);
    share_sum += e.share;
    usage_sum += e.usage;
    out.emplace(user, e);
  }
  for (auto& [_, e] : out) {
    e.norm_share = share_sum > 0 ? e.share / share_sum : 0;
    e.norm_usage = usage_sum > 0 ? e.usage / usage_sum : 0;
    // A user with no share comes after everyone with one, unless nobody used anything.
    if (e.norm_share > 0)
      e.factor = std::exp2(-e.norm_usage / e.norm_share);
    else
      e.factor = e.norm_usage > 0 ? 0 : 1;
  }
  return out;
}

double order_score(const OrderedJob& job, int64_t now_ms, int max_gpus, const FairShareWeights& w) {
  const double age = w.max_age_ms > 0 ? std::clamp(static_cast<double>(now_ms - job.submitted_ms) /
                                                       static_cast<double>(w.max_age_ms), 0.0, 1.0)
                                      : 0.0;
  const double size = max_gpus > 0 ? static_cast<double>(job.gpus) / max_gpus : 0.0;
  return w.priority * job.priority / 100.0 + w.fair_share * job.fair_share_factor + w.age * age + w.size * size;
}

std::vector<int64_t> fair_share_order(const std::vector<OrderedJob>& jobs, int64_t now_ms,
                                      const FairShareWeights& w) {
  int max_gpus = 1;
  for (const auto& j : jobs) max_gpus = std::max(max_gpus, j.gpus);
  std::vector<std::pair<double, const OrderedJob*>> scored;
  scored.reserve(jobs.size());
  for (const auto& j : jobs) scored.emplace_back(order_score(j, now_ms, max_gpus, w), &j);
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return queued_before({a.second->id, a.second->priority, a.second->submitted_ms},
                         {b.second->id, b.second->priority, b.second->submitted_ms});
  });
  std::vector<int64_t> out;
  out.reserve(scored.size());
  for (const auto& [_, j] : scored) out.push_back(j->id);
  return out;
}

}  // namespace jobctl::scheduler
