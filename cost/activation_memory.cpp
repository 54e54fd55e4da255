#include "cost/activation_memory.h"

#include <algorithm>

namespace jobctl::cost {

double layer_activation_bytes(const ActivationShape& x, train::Recompute recompute) {
  const double sbh = x.seq_len * x.micro_batch * x.hidden;
  const double e = x.element_bytes;
  const double t = std::max(x.tensor_parallel, 1);
  switch (recompute) {
    case train::Recompute::full: return e * sbh;  // the layer's input only
    case train::Recompute::selective: return (16 * e + 2) * sbh / t;  // the a·s² terms recomputed
    case train::Recompute::none: break;
  }
  const double replicated = (4 * e + 2) * sbh;  // 10·s·b·h in 16-bit
  const double split = 12 * e * sbh / t;        // 24·s·b·h/t in 16-bit
  const double attention = (2 * e + 1) * x.heads * x.seq_len * x.seq_len * x.micro_batch / t;  // 5·a·s²·b/t
  return replicated + split + attention;
}

double outside_layers_activation_bytes(const ActivationShape& x) {
  const double sbh = x.seq_len * x.micro_batch * x.hidden;
  const double t = std::max(x.tensor_parallel, 1);
  return (sbh * (1 + 2 * x.element_bytes) + 4 * x.seq_len * x.micro_batch * x.vocab) / t;
}

double loss_peak_bytes(const ActivationShape& x) {
  return 8 * x.seq_len * x.micro_batch * x.vocab / std::max(x.tensor_parallel, 1);
}

double activation_bytes(const ActivationShape& x, train::Recompute recompute) {
  return x.layers * layer_activation_bytes(x, recompute) + outside_layers_activation_bytes(x);
}

}  // namespace jobctl::cost
