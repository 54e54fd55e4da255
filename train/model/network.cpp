#include "train/model/network.h"

#include <string>

namespace jobctl::train {

namespace {

constexpr uint64_t kInitStream = 0x1417;  // derive_seed stream of the initial weights

ActivationFn to_activation_fn(Activation a) { return a == Activation::gelu ? ActivationFn::gelu : ActivationFn::relu; }

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace

Network::Network(const ModelSpec& model, const InputShape& input, int max_batch, Backend& backend)
    : backend_(backend), input_features_(input.features()), classes_(input.classes), max_batch_(max_batch) {
  Shape3 shape{input.height, input.width, input.channels};
  if (model.kind == ModelKind::cnn) {
    int block = 1;
    for (int c : model.channels) {
      const bool first = layers_.empty();
      auto conv = std::make_unique<ConvReluLayer>("conv" + std::to_string(block), backend, shape, c, max_batch, !first);
      shape = conv->output_shape();
      layers_.push_back(std::move(conv));
      auto pool = std::make_unique<MaxPoolLayer>("pool" + std::to_string(block), backend, shape, max_batch);
      shape = pool->output_shape();
      layers_.push_back(std::move(pool));
      ++block;
    }
  }
  int features = shape.size();
  int dense = 1;
  for (int h : model.hidden) {
    layers_.push_back(std::make_unique<DenseLayer>("dense" + std::to_string(dense++), backend, features, h,
                                                   to_activation_fn(model.activation), max_batch));
    features = h;
  }
  layers_.push_back(std::make_unique<DenseLayer>("dense" + std::to_string(dense), backend, features, classes_,
                                                 ActivationFn::none, max_batch));

  size_t total = 0;
  for (const auto& l : layers_) {
    offsets_.push_back(total);
    total += l->parameter_count();
  }
  params_ = DeviceBuffer<float>(backend, total);
  grads_ = DeviceBuffer<float>(backend, total);
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->bind(params_.data() + offsets_[i], grads_.data() + offsets_[i]);

  input_grads_.resize(layers_.size());
  for (size_t i = 1; i < layers_.size(); ++i)
    input_grads_[i] = DeviceBuffer<float>(backend, static_cast<size_t>(max_batch) * layers_[i]->input_shape().size());
  dlogits_ = DeviceBuffer<float>(backend, static_cast<size_t>(max_batch) * classes_);
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

const float* Network::forward(const float* x, int batch) {
  const float* a = x;
  for (auto& l : layers_) a = l->forward(a, batch);
  return a;
}

void Network::backward(int batch) {
  float* dout = dlogits_.data();
  for (size_t i = layers_.size(); i-- > 0;) {
    float* din = i == 0 ? nullptr : input_grads_[i].data();
    layers_[i]->backward(dout, din, batch);
    dout = din;
  }
}

}  // namespace jobctl::train
