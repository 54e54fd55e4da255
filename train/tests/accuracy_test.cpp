// Real accuracy on the Fashion-MNIST test set: MLP 784-256-128-10 >= 0.89, the CNN
// >= 0.92, and the MLP in bf16 mixed precision within 0.5 points of the same MLP in fp32. Trains
// in-process on the best device present (`auto`: the GPU where there is one, else all CPU cores)
// and prints one "ACCURACY ..." line per model with epochs, time and device for bench/RESULTS.md.
//
// Kernels: those jobctl-train selects (main() below).
// Data: $JOBCTL_FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist; skipped when absent.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "train/app/kernel_selection.h"
#include "train/data/dataset.h"
#include "train/kernels/make_backend.h"
#include "train/trainer/trainer.h"

namespace jobctl::train {
namespace {

std::string data_dir() {
  const char* env = std::getenv("JOBCTL_FASHION_MNIST_DIR");
  if (env && *env && (std::ifstream(std::string(env) + "/train-images-idx3-ubyte.gz") ||
                      std::ifstream(std::string(env) + "/train-images-idx3-ubyte")))
    return env;
  return kDefaultFashionMnistDir;
}

class Accuracy : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto d = load_fashion_mnist(data_dir());
    if (d) data_ = new DataSplits(std::move(*d));
    else error_ = new std::string(d.error().message);
  }
  static void TearDownTestSuite() {
    delete data_;
    delete error_;
    data_ = nullptr;
    error_ = nullptr;
  }
  void SetUp() override {
    if (!data_) GTEST_SKIP() << "Fashion-MNIST not available: " << (error_ ? *error_ : "?");
  }

  // Trains to the end and returns the final test accuracy; prints the record line.
  static double train(const std::string& name, const JobSpec& spec) {
    auto backend = make_backend(DeviceChoice::auto_);
    EXPECT_TRUE(backend) << backend.error().message;
    if (!backend) return 0;
    Trainer t(spec, **backend, data_->train, data_->test);
    const auto t0 = std::chrono::steady_clock::now();
    double acc = 0;
    while (!t.finished()) {
      t.step();
      if (t.epoch_just_finished()) {
        const EpochSummary s = t.evaluate_epoch();
        acc = s.test_accuracy;
        std::printf("  %s epoch %lld: train loss %.4f, test loss %.4f, test accuracy %.4f\n", name.c_str(),
                    static_cast<long long>(s.epoch), s.train_loss, s.test_loss, s.test_accuracy);
        std::fflush(stdout);
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("ACCURACY %s (%s): test accuracy %.4f after %d epochs, %.1f s on %s\n", name.c_str(),
                std::string(to_string(spec.train.precision)).c_str(), acc, spec.train.epochs, secs,
                (*backend)->device_name().c_str());
    return acc;
  }

  static DataSplits* data_;
  static std::string* error_;
};
DataSplits* Accuracy::data_ = nullptr;
std::string* Accuracy::error_ = nullptr;

JobSpec fashion_spec() {
  JobSpec s;
  s.data.dataset = DatasetKind::fashion_mnist;
  s.train.optimizer = OptimizerKind::adamw;
  s.train.schedule = ScheduleKind::cosine;
  s.train.weight_decay = 1e-4;
  s.train.seed = 42;
  return s;
}

TEST_F(Accuracy, Mlp784x256x128x10ReachesAtLeast089) {
  JobSpec s = fashion_spec();
  s.model.kind = ModelKind::mlp;
  s.model.hidden = {256, 128};
  s.train.epochs = 12;
  s.train.batch_size = 128;
  s.train.lr = 1e-3;
  const double fp32 = train("MLP 784-256-128-10", s);
  EXPECT_GE(fp32, 0.89);
  // bf16 products with fp32 accumulation and fp32 master weights: within 0.5 points.
  s.train.precision = Precision::bf16;
  const double bf16 = train("MLP 784-256-128-10", s);
  EXPECT_NEAR(bf16, fp32, 0.005);
  EXPECT_GE(bf16, 0.89);
}

TEST_F(Accuracy, CnnReachesAtLeast092) {
  JobSpec s = fashion_spec();
  s.model.kind = ModelKind::cnn;
  // Two conv blocks of 32 and 64 filters, dense 128. Smaller CNNs ([16,32], [16,32,64]) plateau
  // at 0.913-0.917 on this data without augmentation; this one reaches 0.9248 in 10 epochs
  // (0.9199 in 8).
  s.model.channels = {32, 64};
  s.model.hidden = {128};
  s.train.epochs = 10;
  s.train.batch_size = 128;
  s.train.lr = 1e-3;
  s.train.weight_decay = 0.05;
  EXPECT_GE(train("CNN [32,64] + dense 128", s), 0.92);
}

}  // namespace
}  // namespace jobctl::train

// This process trains as a job's jobctl-train would: on the kernels it selects for this CPU
// (train/app/kernel_selection.h), not on a generic core OpenBLAS may have fallen back to.
int main(int argc, char** argv) {
  const jobctl::train::KernelReport kernels = jobctl::train::select_kernels(argv);
  std::printf("KERNELS %s: %s; %s\n", kernels.kernels.c_str(), kernels.selection.c_str(), kernels.self_check.c_str());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
