#include "train/data/dataset.h"

#include <algorithm>
#include <filesystem>

#include "train/data/huge_pages.h"
#include "train/data/idx_reader.h"
#include "train/data/synthetic.h"

namespace jobctl::train {

namespace {

// base, or base.gz when only that exists.
std::string locate(const std::string& dir, const std::string& base) {
  const std::filesystem::path plain = std::filesystem::path(dir) / base;
  std::error_code ec;
  if (std::filesystem::exists(plain, ec)) return plain.string();
  const std::filesystem::path gz = std::filesystem::path(dir) / (base + ".gz");
  if (std::filesystem::exists(gz, ec)) return gz.string();
  return gz.string();  // reported as missing by the reader
}

Expected<Dataset> load_split(const std::string& dir, const std::string& images_base, const std::string& labels_base,
                             uint32_t expected) {
  auto images = read_idx_file(locate(dir, images_base));
  if (!images) return Unexpected{std::move(images).error()};
  auto labels = read_idx_file(locate(dir, labels_base));
  if (!labels) return Unexpected{std::move(labels).error()};
  const auto& id = images->dims;
  if (id.size() != 3 || id[1] != 28 || id[2] != 28)
    return make_error(ErrorCode::data, dir + "/" + images_base + ": expected N x 28 x 28 images");
  if (labels->dims.size() != 1 || labels->dims[0] != id[0])
    return make_error(ErrorCode::data, dir + "/" + labels_base + ": label count does not match the image count");
  if (id[0] != expected)
    return make_error(ErrorCode::data, dir + "/" + images_base + ": expected " + std::to_string(expected) + " images, found " +
                                  std::to_string(id[0]));
  Dataset d;
  d.samples = id[0];
  d.features = 28 * 28;
  d.classes = 10;
  resize_with_huge_pages(d.x, images->data.size());
  const float inv = 1.0f / 255.0f;
  for (size_t i = 0; i < d.x.size(); ++i)
    d.x[i] = (static_cast<float>(images->data[i]) * inv - kFashionMnistMean) / kFashionMnistStd;
  d.y.resize(labels->data.size());
  for (size_t i = 0; i < d.y.size(); ++i) {
    if (labels->data[i] >= 10)
      return make_error(ErrorCode::data, dir + "/" + labels_base + ": label " + std::to_string(labels->data[i]) +
                                    " at index " + std::to_string(i) + " is not in 0..9");
    d.y[i] = labels->data[i];
  }
  return d;
}

}  // namespace

std::string fashion_mnist_dir(const DataSpec& data, const std::string& override_dir) {
  if (!override_dir.empty()) return override_dir;
  if (!data.path.empty()) return data.path;
  return kDefaultFashionMnistDir;
}

Expected<DataSplits> load_fashion_mnist(const std::string& dir) {
  DataSplits s;
  auto train = load_split(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 60000);
  if (!train) return Unexpected{std::move(train).error()};
  auto test = load_split(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 10000);
  if (!test) return Unexpected{std::move(test).error()};
  s.train = std::move(*train);
  s.test = std::move(*test);
  return s;
}

Expected<DataSplits> load_data(const DataSpec& data, const std::string& override_dir) {
  if (data.dataset == DatasetKind::synthetic) return make_synthetic(data);
  return load_fashion_mnist(fashion_mnist_dir(data, override_dir));
}

Dataset head(const Dataset& d, int64_t n) {
  Dataset h;
  h.samples = std::min(n, d.samples);
  h.features = d.features;
  h.classes = d.classes;
  h.x.assign(d.x.begin(), d.x.begin() + static_cast<std::ptrdiff_t>(h.samples * d.features));
  h.y.assign(d.y.begin(), d.y.begin() + static_cast<std::ptrdiff_t>(h.samples));
  return h;
}

}  // namespace jobctl::train
