#include "train/model/network.h"

#include <algorithm>
#include <string>

namespace jobctl::train {

namespace {

constexpr uint64_t kInitStream = 0x1417;  // derive_seed stream of the initial weights
constexpr size_t kArenaAlign = 256;       // every activation buffer starts on this boundary

ActivationFn to_activation_fn(Activation a) { return a == Activation::gelu ? ActivationFn::gelu : ActivationFn::relu; }

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

size_t aligned(size_t bytes) { return (bytes + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

}  // namespace

Network::Network(const ModelSpec& model, const InputShape& input, int max_batch, Precision precision, bool recompute,
                 Backend& backend)
    : backend_(backend), input_features_(input.features()), classes_(input.classes), max_batch_(max_batch),
      precision_(precision) {
  Shape3 shape{input.height, input.width, input.channels};
  if (model.kind == ModelKind::cnn) {
    int block = 1;
    for (int c : model.channels) {
      const bool first = layers_.empty();
      auto conv = std::make_unique<ConvReluLayer>("conv" + std::to_string(block), backend, precision, shape, c, !first);
      shape = conv->output_shape();
      layers_.push_back(std::move(conv));
      auto pool = std::make_unique<MaxPoolLayer>("pool" + std::to_string(block), backend, precision, shape);
      shape = pool->output_shape();
      layers_.push_back(std::move(pool));
      ++block;
    }
  }
  int features = shape.size();
  int dense = 1;
  for (int h : model.hidden) {
    layers_.push_back(std::make_unique<DenseLayer>("dense" + std::to_string(dense++), backend, precision, features, h,
                                                   to_activation_fn(model.activation)));
    features = h;
  }
  layers_.push_back(std::make_unique<DenseLayer>("dense" + std::to_string(dense), backend, precision, features,
                                                 classes_, ActivationFn::none));

  // Parameters.
  size_t total = 0;
  for (const auto& l : layers_) {
    offsets_.push_back(total);
    total += l->parameter_count();
  }
  const bool bf16 = precision == Precision::bf16;
  params_ = DeviceBuffer<float>(backend, total);
  grads_ = DeviceBuffer<float>(backend, total);
  if (bf16) params16_ = DeviceBuffer<bf16_t>(backend, total);
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->bind(params_.data() + offsets_[i], grads_.data() + offsets_[i],
                     bf16 ? params16_.data() + offsets_[i] : nullptr);

  // Activations: the arena as the plan lays it out. Kept outputs first, then one workspace that
  // every segment uses from its start.
  std::vector<LayerActivationBytes> bytes;
  for (const auto& l : layers_)
    bytes.push_back({static_cast<int64_t>(l->output_bytes_per_sample()), static_cast<int64_t>(l->internal_bytes_per_sample())});
  plan_ = plan_activations(bytes, recompute);
  const size_t batch = static_cast<size_t>(max_batch);
  size_t kept = 0, workspace = 0;
  std::vector<size_t> output_at(layers_.size()), internals_at(layers_.size());
  size_t begin = 0;
  for (int end_int : plan_.segment_ends) {
    const size_t end = static_cast<size_t>(end_int);
    size_t offset = 0;
    for (size_t i = begin; i < end; ++i) {
      internals_at[i] = offset;
      offset += aligned(layers_[i]->internal_bytes_per_sample() * batch);
      if (i + 1 < end) {
        output_at[i] = offset;
        offset += aligned(layers_[i]->output_bytes_per_sample() * batch);
      }
    }
    output_at[end - 1] = kept;
    kept += aligned(layers_[end - 1]->output_bytes_per_sample() * batch);
    workspace = std::max(workspace, offset);
    begin = end;
  }
  activations_ = DeviceBuffer<uint8_t>(backend, kept + workspace);
  uint8_t* arena = activations_.data();
  uint8_t* workspace_base = arena + kept;

  // Scratch shared by the layers, and the gradients passed between them.
  size_t largest_input = 0, dcol = 0, dpre16 = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (i > 0) largest_input = std::max(largest_input, static_cast<size_t>(layers_[i]->input_shape().size()));
    dcol = std::max(dcol, layers_[i]->dcol_floats_per_sample());
    dpre16 = std::max(dpre16, layers_[i]->dpre16_per_sample());
  }
  for (auto& g : layer_grads_) g = DeviceBuffer<float>(backend, batch * largest_input);
  dcol_ = DeviceBuffer<float>(backend, batch * dcol);
  dpre16_ = DeviceBuffer<bf16_t>(backend, batch * dpre16);
  dlogits_ = DeviceBuffer<float>(backend, batch * static_cast<size_t>(classes_));
  if (bf16) x16_ = DeviceBuffer<bf16_t>(backend, batch * static_cast<size_t>(input_features_));
  const LayerScratch scratch{dcol_.data(), dpre16_.data()};
  begin = 0;
  for (int end_int : plan_.segment_ends) {
    const size_t end = static_cast<size_t>(end_int);
    for (size_t i = begin; i < end; ++i) {
      uint8_t* out = i + 1 == end ? arena + output_at[i] : workspace_base + output_at[i];
      layers_[i]->bind_activations(out, workspace_base + internals_at[i], max_batch, scratch);
    }
    begin = end;
  }
  outputs_.resize(layers_.size());
}

uint64_t Network::layout_hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& l : layers_) {
    h = fnv1a(h, l->name().data(), l->name().size());
    const Shape3 in = l->input_shape(), out = l->output_shape();
    const int64_t dims[8] = {in.h, in.w, in.c, out.h, out.w, out.c, static_cast<int64_t>(l->weight_count()),
                             static_cast<int64_t>(l->bias_count())};
    h = fnv1a(h, dims, sizeof dims);
  }
  return h;
}

std::vector<float> Network::initial_parameters(uint64_t seed) const {
  std::vector<float> host(parameter_count());
  Rng rng(derive_seed(seed, kInitStream));
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->initialize(rng, host.data() + offsets_[i]);
  return host;
}

Activations Network::run_forward(size_t begin, size_t end, Activations in, int batch) {
  for (size_t i = begin; i < end; ++i) in = outputs_[i] = layers_[i]->forward(in, batch);
  return in;
}

const float* Network::forward(const float* x, int batch) {
  if (precision_ == Precision::bf16) {
    backend_.to_bf16(params_.data(), params_.size(), params16_.data());
    backend_.to_bf16(x, static_cast<size_t>(batch) * static_cast<size_t>(input_features_), x16_.data());
    input_ = {nullptr, x16_.data()};
  } else {
    input_ = {x, nullptr};
  }
  return run_forward(0, layers_.size(), input_, batch).f32;
}

void Network::backward(int batch, bool accumulate) {
  float* dout = dlogits_.data();
  const auto& ends = plan_.segment_ends;
  for (size_t s = ends.size(); s-- > 0;) {
    const size_t begin = s == 0 ? 0 : static_cast<size_t>(ends[s - 1]);
    const size_t end = static_cast<size_t>(ends[s]);
    // The last segment's workspace still holds its forward pass; every other one is rebuilt
    // from the output kept before it.
    if (s + 1 < ends.size()) run_forward(begin, end, begin == 0 ? input_ : outputs_[begin - 1], batch);
    for (size_t i = end; i-- > begin;) {
      float* din = i == 0 ? nullptr : layer_grads_[i % 2].data();
      layers_[i]->backward(dout, din, batch, accumulate);
      dout = din;
    }
  }
}

}  // namespace jobctl::train
