// What running on spot costs once interruptions are priced in (docs/architecture.md "The cost model").
//
// With an interruption rate lambda per hour (MTBF M = 1/lambda), a checkpoint write time C and a
// restart time R (provision + fetch checkpoint + warm-up), all in hours:
//   Young (1974):  tau = sqrt(2 C / lambda) = sqrt(2 C M)
//   Daly (2006), the higher-order optimum, for C < 2M:
//                  tau = sqrt(2 C M) * (1 + sqrt(C / 2M) / 3 + (C / 2M) / 9) - C,   else tau = M
//   expected run time  T_spot = T * (1 + C/tau + lambda * (tau/2 + R))
//   expected cost      spot_price * T_spot
// The interval used is Daly's: it agrees with Young's to first order and is the better optimum
// where C is not small against 1/lambda. With lambda = 0 there is nothing to insure against:
// no periodic checkpoints are needed and T_spot = T.
//
// Thread safety: pure functions.
#pragma once

namespace jobctl::cost {

double young_interval_hours(double checkpoint_hours, double interruptions_per_hour);
double daly_interval_hours(double checkpoint_hours, double mtbf_hours);

struct SpotRunEstimate {
  double checkpoint_interval_hours = 0;  // +inf when lambda = 0
  double expected_hours = 0;             // T_spot
  double expected_cost_usd = 0;
  double overhead_fraction = 0;          // T_spot / T - 1
};

// T: compute hours without interruptions. Inputs must be >= 0 (negative values are treated as 0).
SpotRunEstimate spot_run_estimate(double compute_hours, double checkpoint_hours, double restart_hours,
                                  double interruptions_per_hour, double spot_usd_per_hour);

// The expected-time factor alone (T_spot / T); what placement multiplies by.
double spot_time_factor(double checkpoint_hours, double restart_hours, double interruptions_per_hour);

}  // namespace jobctl::cost
