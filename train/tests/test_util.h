// Helpers shared by the train tests: seeded random arrays, small specs, temporary folders.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "train/data/rng.h"
#include "train/spec/job_spec.h"

namespace jobctl::train::testing {

inline std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

inline std::vector<int32_t> random_labels(size_t n, int classes, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = static_cast<int32_t>(rng.uniform_index(static_cast<uint64_t>(classes)));
  return v;
}

// A small synthetic job: `features` inputs (a square number makes an image for a CNN).
inline JobSpec small_spec(ModelKind kind, int features = 64, int64_t samples = 512, int batch = 32, int epochs = 2) {
  JobSpec s;
  s.model.kind = kind;
  s.model.hidden = {32};
  if (kind == ModelKind::cnn) s.model.channels = {4, 8};
  s.data.dataset = DatasetKind::synthetic;
  s.data.features = features;
  s.data.classes = 5;
  s.data.samples = samples;
  s.data.test_samples = 200;
  s.data.seed = 7;
  s.train.epochs = epochs;
  s.train.batch_size = batch;
  s.train.lr = 0.01;
  s.train.seed = 11;
  return s;
}

// A fresh empty folder under the system temp directory, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("jobctl-train-" + tag + "-XXXXXX")).string();
    char* p = ::mkdtemp(tmpl.data());
    path_ = p ? std::string(p) : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace jobctl::train::testing
