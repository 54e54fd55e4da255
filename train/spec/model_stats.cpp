#include "train/spec/model_stats.h"

namespace jobctl::train {

namespace {

constexpr int64_t kFloatBytes = 4;

struct Accumulator {
  ModelStats stats;
  int64_t kept_elements = 0;  // per-sample fp32 elements the backward pass keeps

  void add(std::string name, int64_t params, double flops, int64_t out_elems, int64_t kept) {
    stats.layers.push_back(LayerStats{std::move(name), params, flops, out_elems});
    stats.parameters += params;
    stats.forward_flops_per_sample += flops;
    kept_elements += kept;
  }
};

// dense(in -> out) [+ activation]: weights in*out + bias out; 2*in*out multiply-adds, one op per
// output for the bias and one for the activation; keeps the pre-activation and the output.
void add_dense(Accumulator& acc, const std::string& name, int64_t in, int64_t out, bool activation) {
  const double flops = 2.0 * static_cast<double>(in) * static_cast<double>(out) +
                       static_cast<double>(out) * (activation ? 2.0 : 1.0);
  acc.add(name, in * out + out, flops, out, activation ? 2 * out : out);
}

}  // namespace

ModelStats model_stats(const JobSpec& spec) {
  const InputShape in = input_shape(spec.data);
  Accumulator acc;
  acc.kept_elements = in.features();  // the input batch itself

  int64_t features = in.features();
  if (spec.model.kind == ModelKind::cnn) {
    int64_t c = in.channels, h = in.height, w = in.width;
    int block = 1;
    for (int cout : spec.model.channels) {
      const int64_t hw = h * w;
      // conv 3x3, stride 1, pad 1: output cout x h x w. The im2col buffer (c*9 x h*w) is kept for
      // the weight gradient, so it counts towards the activations.
      const double conv_flops = 2.0 * static_cast<double>(c) * 9.0 * static_cast<double>(cout) *
                                    static_cast<double>(hw) +
                                static_cast<double>(cout * hw);  // + bias
      acc.add("conv" + std::to_string(block), c * 9 * cout + cout, conv_flops, cout * hw,
              c * 9 * hw + cout * hw);
      acc.add("relu" + std::to_string(block), 0, static_cast<double>(cout * hw), cout * hw, cout * hw);
      // max-pool 2x2 stride 2 reads every input element once; keeps output and argmax indices.
      const int64_t ph = h / 2, pw = w / 2;
      acc.add("pool" + std::to_string(block), 0, static_cast<double>(cout * hw), cout * ph * pw,
              2 * cout * ph * pw);
      c = cout;
      h = ph;
      w = pw;
      ++block;
    }
    features = c * h * w;
  }

  int layer = 1;
  for (int hidden : spec.model.hidden) {
    add_dense(acc, "dense" + std::to_string(layer++), features, hidden, true);
    features = hidden;
  }
  add_dense(acc, "dense" + std::to_string(layer), features, in.classes, false);
  // softmax cross-entropy: max, exp, sum, divide, log per class; keeps the probabilities.
  acc.add("softmax_xent", 0, 5.0 * in.classes, 1, in.classes);

  ModelStats s = std::move(acc.stats);
  s.training_flops_per_sample = 3.0 * s.forward_flops_per_sample;
  s.activation_bytes_per_sample = acc.kept_elements * kFloatBytes;
  s.weight_bytes = s.parameters * kFloatBytes;
  s.gradient_bytes = s.weight_bytes;
  switch (spec.train.optimizer) {
    case OptimizerKind::adamw: s.optimizer_state_bytes = 2 * s.weight_bytes; break;
    case OptimizerKind::sgd: s.optimizer_state_bytes = spec.train.momentum > 0 ? s.weight_bytes : 0; break;
  }
  s.train_samples_per_epoch = in.train_samples;
  return s;
}

}  // namespace jobctl::train
