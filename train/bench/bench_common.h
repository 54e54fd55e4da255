// Helpers shared by the train benchmarks: a spec for a named model, synthetic data of the
// Fashion-MNIST geometry (28x28, 10 classes), timing, and the machine's description.
#pragma once

#include <chrono>
#include <fstream>
#include <string>

#include "train/data/dataset.h"
#include "train/data/synthetic.h"
#include "train/spec/job_spec.h"

namespace jobctl::train::bench {

inline JobSpec model_spec(ModelKind kind, std::vector<int> hidden, std::vector<int> channels, int batch,
                          int64_t samples) {
  JobSpec s;
  s.model.kind = kind;
  s.model.hidden = std::move(hidden);
  s.model.channels = std::move(channels);
  s.data.dataset = DatasetKind::synthetic;
  s.data.features = 784;  // a 28x28 image, as Fashion-MNIST
  s.data.classes = 10;
  s.data.samples = samples;
  s.data.test_samples = 256;
  s.train.batch_size = batch;
  s.train.epochs = 1000;  // never the limit in a benchmark
  s.train.optimizer = OptimizerKind::adamw;
  s.train.schedule = ScheduleKind::constant;
  return s;
}

inline std::string model_name(const JobSpec& s) {
  std::string n = s.model.kind == ModelKind::mlp ? "MLP 784" : "CNN [";
  if (s.model.kind == ModelKind::cnn) {
    for (size_t i = 0; i < s.model.channels.size(); ++i) n += (i ? "," : "") + std::to_string(s.model.channels[i]);
    n += "] 784";
  }
  for (int h : s.model.hidden) n += "-" + std::to_string(h);
  return n + "-10";
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace jobctl::train::bench
