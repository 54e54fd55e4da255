#include "train/optim/optimizer.h"

#include <cmath>

namespace jobctl::train {

Optimizer::Optimizer(const TrainSpec& train, Backend& backend, size_t parameters)
    : backend_(backend), kind_(train.optimizer), n_(parameters), beta1_(static_cast<float>(train.beta1)),
      beta2_(static_cast<float>(train.beta2)), eps_(static_cast<float>(train.eps)),
      weight_decay_(static_cast<float>(train.weight_decay)), momentum_(static_cast<float>(train.momentum)),
      m1_(backend, parameters), m2_(backend, kind_ == OptimizerKind::adamw ? parameters : 0) {}

float Optimizer::bias_correction1(int64_t t) const {
  if (kind_ != OptimizerKind::adamw) return 1.0f;
  return static_cast<float>(1.0 - std::pow(static_cast<double>(beta1_), static_cast<double>(t)));
}

float Optimizer::bias_correction2(int64_t t) const {
  if (kind_ != OptimizerKind::adamw) return 1.0f;
  return static_cast<float>(1.0 - std::pow(static_cast<double>(beta2_), static_cast<double>(t)));
}

void Optimizer::update(float* params, const float* grads, const StepScalars* scalars, const ClipState* clip) {
  if (kind_ == OptimizerKind::adamw) {
    backend_.adamw_update(n_, params, grads, m1_.data(), m2_.data(), scalars, clip, beta1_, beta2_, eps_, weight_decay_);
  } else {
    backend_.sgd_momentum_update(n_, params, grads, m1_.data(), scalars, clip, momentum_, weight_decay_);
  }
}

}  // namespace jobctl::train
