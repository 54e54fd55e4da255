// Fair share between users (Slurm's multifactor priority, classic fair-share form): each user's
// usage decays with a half-life, and a job's place in the queue is a weighted sum of its
// priority, its user's fair-share factor, its age and its size (docs/cost-model.md, "Fair share").
//
// Usage is in price-weighted GPU-hours: each hour of a resource the user's jobs held counts its
// hourly price in USD (an owned GPU with no price counts 1 per hour: its time is never free), and
// an hour that ended `a` ago counts 2^(-a / half_life) of it. A user's factor is
// F = 2^(-U / S): U their share of all users' decayed usage, S their share of the shares. A user
// who used nothing has F = 1; one who used exactly their share has F = 1/2.
//
// The order: score = w_priority * priority / 100 + w_fair_share * F + w_age * min(age / max_age, 1)
// + w_size * gpus / max_gpus; higher first, ties by the plain queue order (priority, then age,
// then id: job_queue.h).
//
// Thread safety: pure functions over values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace jobctl::scheduler {

struct FairShareWeights {
  double priority = 10000;   // times priority / 100 (priority 0..100): 100 per point, over fair share
  double fair_share = 1000;  // times F (0..1]
  double age = 100;          // times min(age / max_age, 1)
  double size = 0;           // times gpus / max_gpus (0: a job's width does not move it)
  int64_t max_age_ms = 7LL * 24 * 3600 * 1000;
};

// Slurm's PriorityDecayHalfLife default.
inline constexpr int64_t kDefaultFairShareHalfLifeMs = 7LL * 24 * 3600 * 1000;

// One interval a user's job held a resource: [start_ms, end_ms) at `usd_per_hour`.
struct UsageInterval {
  std::string user;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  double usd_per_hour = 0;
};

// The decayed, price-weighted GPU-hours of `interval` at `now_ms` (the integral of the decay over
// the interval; the part after now_ms does not count).
double decayed_usage(const UsageInterval& interval, int64_t now_ms, int64_t half_life_ms);

// Every user's decayed usage at now_ms.
std::map<std::string, double> decayed_usage_by_user(const std::vector<UsageInterval>& intervals, int64_t now_ms,
                                                    int64_t half_life_ms);

struct FairShareEntry {
  std::string user;
  double share = 1;        // raw share as configured
  double usage = 0;        // decayed price-weighted GPU-hours
  double norm_share = 0;   // share / sum of shares
  double norm_usage = 0;   // usage / sum of usage (0 when nobody used anything)
  double factor = 1;       // 2^(-norm_usage / norm_share)
};

// The factor of every user in `users`, every user with usage and every user with a share in
// `shares` (a user's share; absent: `default_share`): shares and usage are normalised over them all.
std::map<std::string, FairShareEntry> fair_share_factors(const std::vector<std::string>& users,
                                                         const std::map<std::string, double>& usage,
                                                         const std::map<std::string, double>& shares,
                                                         double default_share = 1);

// A job as the order sees it.
struct OrderedJob {
  int64_t id = 0;
  int priority = 50;
  int64_t submitted_ms = 0;
  int gpus = 1;
  double fair_share_factor = 1;
};

double order_score(const OrderedJob& job, int64_t now_ms, int max_gpus, const FairShareWeights& w);

// The ids of `jobs` in fair-share order (highest score first).
std::vector<int64_t> fair_share_order(const std::vector<OrderedJob>& jobs, int64_t now_ms,
                                      const FairShareWeights& w);

}  // namespace jobctl::scheduler
