#include "train/data/synthetic.h"

#include <cmath>

#include "train/data/rng.h"

namespace jobctl::train {

namespace {

constexpr uint64_t kCentreStream = 0x5e1;
constexpr uint64_t kTrainStream = 0x5e2;
constexpr uint64_t kTestStream = 0x5e3;
constexpr double kNoise = 0.7;

Dataset sample(const std::vector<double>& centres, int features, int classes, int64_t n, uint64_t seed) {
  Dataset d;
  d.samples = n;
  d.features = features;
  d.classes = classes;
  d.x.resize(static_cast<size_t>(n) * features);
  d.y.resize(static_cast<size_t>(n));
  Rng rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<int32_t>(rng.uniform_index(static_cast<uint64_t>(classes)));
    d.y[static_cast<size_t>(i)] = k;
    const double* c = centres.data() + static_cast<size_t>(k) * features;
    float* x = d.x.data() + static_cast<size_t>(i) * features;
    for (int f = 0; f < features; ++f) x[f] = static_cast<float>(c[f] + kNoise * rng.normal());
  }
  return d;
}

}  // namespace

DataSplits make_synthetic(const DataSpec& data) {
  const int f = data.features;
  const int k = data.classes;
  std::vector<double> centres(static_cast<size_t>(k) * f);
  Rng rng(derive_seed(data.seed, kCentreStream));
  const double scale = 2.0 / std::sqrt(static_cast<double>(f));
  for (double& c : centres) c = scale * rng.normal();
  DataSplits s;
  s.train = sample(centres, f, k, data.samples, derive_seed(data.seed, kTrainStream));
  s.test = sample(centres, f, k, data.test_samples, derive_seed(data.seed, kTestStream));
  return s;
}

}  // namespace jobctl::train
