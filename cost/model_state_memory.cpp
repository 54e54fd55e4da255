#include "cost/model_state_memory.h"

#include <algorithm>

namespace jobctl::cost {

BytesPerParameter bytes_per_parameter(train::WorkloadPrecision precision, train::WorkloadOptimizer optimizer) {
  const bool mixed = precision != train::WorkloadPrecision::fp32;
  // Moments per parameter: AdamW two fp32 (8 bytes), SGD one (4), 8-bit Adam two of one byte (2).
  int moments = 8;
  if (optimizer == train::WorkloadOptimizer::sgd) moments = 4;
  if (optimizer == train::WorkloadOptimizer::adam8bit) moments = 2;
  if (!mixed) return {4, 4, moments};
  // Mixed precision keeps an fp32 master copy of the weights with the optimizer.
  return {2, 2, 4 + moments};
}

ModelStateBytes model_state_bytes(double parameters, BytesPerParameter p, int zero_stage, int data_parallel,
                                  int tensor_parallel) {
  const double psi = parameters / std::max(tensor_parallel, 1);
  const double nd = std::max(data_parallel, 1);
  ModelStateBytes m;
  m.weights = p.weights * psi / (zero_stage >= 3 ? nd : 1.0);
  m.gradients = p.gradients * psi / (zero_stage >= 2 ? nd : 1.0);
  m.optimizer = p.optimizer * psi / (zero_stage >= 1 ? nd : 1.0);
  return m;
}

}  // namespace jobctl::cost
