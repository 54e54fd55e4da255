#include "train/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace jobctl::train {

double learning_rate(const TrainSpec& train, int64_t step, int64_t steps_per_epoch, int64_t total_steps) {
  const int64_t warmup = train.warmup_steps;
  const double warm = step < warmup ? static_cast<double>(step + 1) / static_cast<double>(warmup) : 1.0;
  double decay = 1.0;
  switch (train.schedule) {
    case ScheduleKind::constant: break;
    case ScheduleKind::step: {
      const int64_t epoch = steps_per_epoch > 0 ? step / steps_per_epoch : 0;
      decay = std::pow(train.step_gamma, static_cast<double>(epoch / std::max(1, train.step_epochs)));
      break;
    }
    case ScheduleKind::cosine: {
      if (step >= warmup) {
        const double span = static_cast<double>(std::max<int64_t>(1, total_steps - warmup));
        const double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
        decay = 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
      }
      break;
    }
  }
  return train.lr * warm * decay;
}

}  // namespace jobctl::train
