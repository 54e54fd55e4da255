// Datasets in host memory, ready to upload: float features and int32 labels.
//
// Fashion-MNIST (Xiao et al. 2017): 60,000 training and 10,000 test images, 28x28 grey, 10
// classes, read from the four IDX files (gzipped or plain) in a folder. Pixels are normalised to
// (p / 255 - 0.2860) / 0.3530, the mean and standard deviation of the training images, so inputs
// have roughly zero mean and unit variance. Images are stored row by row, one channel (NHWC with
// C = 1 is the same as a flat 784-vector).
//
// Synthetic (data.dataset "synthetic"): Gaussian clusters, see synthetic.h.
//
// Errors are Expected values with code "data" and a message naming the file and what is wrong.
// Thread safety: pure functions; a Dataset is a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/expected.h"
#include "train/spec/job_spec.h"

namespace jobctl::train {

inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

struct Dataset {
  int64_t samples = 0;
  int features = 0;  // floats per sample
  int classes = 0;
  std::vector<float> x;    // samples x features
  std::vector<int32_t> y;  // samples, each in [0, classes)
};

struct DataSplits {
  Dataset train;
  Dataset test;
};

// The folder Fashion-MNIST is read from: `override_dir` when not empty (jobctl-train --data-dir),
// else data.path, else kDefaultFashionMnistDir.
std::string fashion_mnist_dir(const DataSpec& data, const std::string& override_dir);

// Loads both splits of the dataset the spec names.
Expected<DataSplits> load_data(const DataSpec& data, const std::string& override_dir = {});

// Reads Fashion-MNIST from `dir` (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
// t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]).
Expected<DataSplits> load_fashion_mnist(const std::string& dir);

// The first `n` samples of a dataset (tests and quick runs).
Dataset head(const Dataset& d, int64_t n);

}  // namespace jobctl::train
