#include "train/spec/model_stats.h"

#include <algorithm>

namespace jobctl::train {

namespace {

constexpr int64_t kFloatBytes = 4;
constexpr int64_t kInt32Bytes = 4;
constexpr int64_t kBf16Bytes = 2;

struct Accumulator {
  ModelStats stats;
  int64_t act_bytes = kFloatBytes;      // bytes of one activation element (bf16 or fp32)
  std::vector<LayerActivationBytes> network;  // the Network's layers, in order
  std::vector<double> network_flops;          // their forward FLOPs per sample
  std::vector<int64_t> input_elements;        // their input elements per sample
  int64_t dcol_floats = 0;                    // the largest im2col gradient (conv layers after the first)
  int64_t dpre16 = 0;                         // the largest pre-activation (bf16 product operand)

  void add(std::string name, int64_t params, double flops, int64_t out_elems) {
    stats.layers.push_back(LayerStats{std::move(name), params, flops, out_elems});
    stats.parameters += params;
    stats.forward_flops_per_sample += flops;
  }
  void add_network_layer(int64_t output, int64_t internals, double flops, int64_t inputs) {
    network.push_back({output, internals});
    network_flops.push_back(flops);
    input_elements.push_back(inputs);
  }
};

// dense(in -> out) [+ activation]: weights in*out + bias out; 2*in*out multiply-adds, one op per
// output for the bias and one for the activation. Keeps its output (activation type) and, for
// GELU or in bf16, its fp32 pre-activation (an fp32 ReLU's output tells its backward all it needs);
// the output layer's output is its pre-activation, the fp32 logits.
void add_dense(Accumulator& acc, const std::string& name, int64_t in, int64_t out, bool activation, bool keeps_pre) {
  const double flops = 2.0 * static_cast<double>(in) * static_cast<double>(out) +
                       static_cast<double>(out) * (activation ? 2.0 : 1.0);
  acc.add(name, in * out + out, flops, out);
  if (activation) acc.add_network_layer(out * acc.act_bytes, keeps_pre ? out * kFloatBytes : 0, flops, in);
  else acc.add_network_layer(out * kFloatBytes, 0, flops, in);
  acc.dpre16 = std::max(acc.dpre16, out);
}

}  // namespace

ModelStats model_stats(const JobSpec& spec) {
  const InputShape in = input_shape(spec.data);
  const bool bf16 = spec.train.precision == Precision::bf16;
  Accumulator acc;
  acc.act_bytes = bf16 ? kBf16Bytes : kFloatBytes;

  int64_t features = in.features();
  if (spec.model.kind == ModelKind::cnn) {
    int64_t c = in.channels, h = in.height, w = in.width;
    int block = 1;
    for (int cout : spec.model.channels) {
      const int64_t hw = h * w;
      // conv 3x3, stride 1, pad 1: output cout x h x w. Keeps the im2col matrix (c*9 x h*w,
      // activation type) for the weight gradient and, in bf16, the fp32 pre-activation (in fp32
      // the ReLU output is enough for its backward).
      const double conv_flops = 2.0 * static_cast<double>(c) * 9.0 * static_cast<double>(cout) *
                                    static_cast<double>(hw) +
                                static_cast<double>(cout * hw);  // + bias
      acc.add("conv" + std::to_string(block), c * 9 * cout + cout, conv_flops, cout * hw);
      acc.add("relu" + std::to_string(block), 0, static_cast<double>(cout * hw), cout * hw);
      acc.add_network_layer(cout * hw * acc.act_bytes, (bf16 ? cout * hw * kFloatBytes : 0) + c * 9 * hw * acc.act_bytes,
                            conv_flops + static_cast<double>(cout * hw), c * hw);
      if (block > 1) acc.dcol_floats = std::max(acc.dcol_floats, c * 9 * hw);
      acc.dpre16 = std::max(acc.dpre16, cout * hw);
      // max-pool 2x2 stride 2 reads every input element once; keeps its output and arg-max bytes.
      const int64_t ph = h / 2, pw = w / 2;
      acc.add("pool" + std::to_string(block), 0, static_cast<double>(cout * hw), cout * ph * pw);
      acc.add_network_layer(cout * ph * pw * acc.act_bytes, cout * ph * pw, static_cast<double>(cout * hw), cout * hw);
      c = cout;
      h = ph;
      w = pw;
      ++block;
    }
    features = c * h * w;
  }

  int layer = 1;
  for (int hidden : spec.model.hidden) {
    add_dense(acc, "dense" + std::to_string(layer++), features, hidden, true,
              bf16 || spec.model.activation == Activation::gelu);
    features = hidden;
  }
  add_dense(acc, "dense" + std::to_string(layer), features, in.classes, false, false);
  // softmax cross-entropy: max, exp, sum, divide, log per class; writes the logits' gradient.
  acc.add("softmax_xent", 0, 5.0 * in.classes, 1);

  ModelStats s = std::move(acc.stats);
  s.activation_plan = plan_activations(acc.network, spec.train.recompute);
  s.training_flops_per_sample = 3.0 * s.forward_flops_per_sample;
  if (spec.train.recompute && !s.activation_plan.segment_ends.empty()) {
    const int recomputed = s.activation_plan.segment_ends.size() > 1
                               ? s.activation_plan.segment_ends[s.activation_plan.segment_ends.size() - 2]
                               : 0;
    for (int i = 0; i < recomputed; ++i) s.training_flops_per_sample += acc.network_flops[static_cast<size_t>(i)];
  }

  // Per sample of a micro-batch: the gathered inputs (fp32), labels and batch indices; a bf16
  // copy of the inputs; the layers' activations; the two gradients passed between layers (the
  // largest layer input, fp32); the logits' gradient; the shared scratch.
  int64_t largest_input = 0;
  for (size_t i = 1; i < acc.input_elements.size(); ++i) largest_input = std::max(largest_input, acc.input_elements[i]);
  s.activation_bytes_per_sample = in.features() * kFloatBytes + 2 * kInt32Bytes +
                                  (bf16 ? in.features() * kBf16Bytes : 0) + s.activation_plan.bytes() +
                                  2 * largest_input * kFloatBytes + in.classes * kFloatBytes +
                                  acc.dcol_floats * kFloatBytes + (bf16 ? acc.dpre16 * kBf16Bytes : 0);
  s.step_bytes_per_sample = kFloatBytes;  // the row losses of the whole step
  s.weight_bytes = s.parameters * kFloatBytes;
  s.weight_copy_bytes = bf16 ? s.parameters * kBf16Bytes : 0;
  s.gradient_bytes = s.weight_bytes;
  switch (spec.train.optimizer) {
    case OptimizerKind::adamw: s.optimizer_state_bytes = 2 * s.weight_bytes; break;
    case OptimizerKind::sgd: s.optimizer_state_bytes = s.weight_bytes; break;
  }
  s.train_samples_per_epoch = in.train_samples;
  // Features (fp32) and labels (int32) of both sets; each test sample's loss and correctness;
  // the step's scalars (16 bytes) and clip state (8).
  s.data_bytes = (in.train_samples + in.test_samples) * (in.features() * kFloatBytes + kInt32Bytes) +
                 in.test_samples * 2 * kFloatBytes + 16 + 8;
  s.accumulate_steps = spec.train.accumulate_steps;
  return s;
}

}  // namespace jobctl::train
