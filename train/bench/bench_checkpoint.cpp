// Checkpoint write throughput against the disk's own sequential write, measured in the same run
// on the same folder.
//
//   jobctl-train-bench-checkpoint [--dir DIR] [--reps N]
//
// Reference: write() of the same number of bytes in 1 MiB chunks to a new file, then fsync
// (what any durable write must at least pay). Checkpoint: encode_checkpoint (the CRCs included)
// + write_file_atomic (temp file, write, fsync, rename, directory fsync), as jobctl-train does.
// Sizes: the AdamW state (weights + two moments) of three MLPs. Each figure is the median of
// --reps runs (default 5).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_common.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/checkpoint/file_system.h"
#include "train/data/rng.h"

using namespace jobctl::train;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds to write `bytes` sequentially and fsync them.
double raw_write_seconds(const std::string& path, size_t bytes) {
  std::vector<char> chunk(size_t{1} << 20, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::perror(path.c_str());
    std::exit(1);
  }
  size_t done = 0;
  while (done < bytes) {
    const size_t n = std::min(chunk.size(), bytes - done);
    if (::write(fd, chunk.data(), n) != static_cast<ssize_t>(n)) {
      std::perror("write");
      std::exit(1);
    }
    done += n;
  }
  ::fsync(fd);
  ::close(fd);
  const double s = bench::seconds_since(t0);
  ::unlink(path.c_str());
  return s;
}

TrainingState state_for(size_t params) {
  TrainingState s;
  s.global_step = 1000;
  s.steps_per_epoch = 469;
  s.batch_size = 128;
  s.train_samples = 60000;
  s.permutation.resize(60000);
  for (size_t i = 0; i < s.permutation.size(); ++i) s.permutation[i] = static_cast<int32_t>(i);
  Rng rng(1);
  s.params.resize(params);
  for (auto& p : s.params) p = static_cast<float>(rng.uniform(-1, 1));
  s.moment1 = s.params;
  s.moment2 = s.params;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::filesystem::temp_directory_path().string();
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    if (f == "--dir") dir = argv[i + 1];
    else if (f == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: %s [--dir DIR] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  const std::string work = dir + "/jobctl-ckpt-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(work);
  std::printf("folder: %s (%s)\n\n", work.c_str(), bench::cpu_model().c_str());
  std::printf("| state | bytes | disk seq write + fsync MB/s | checkpoint write MB/s | ratio | encode ms |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  struct Model {
    const char* name;
    size_t params;
  };
  PosixFileSystem fs;
  for (const Model& m : {Model{"MLP 784-256-128-10 AdamW", 235146}, Model{"MLP 784-1024-1024-10 AdamW", 1863690},
                         Model{"MLP 784-2048-2048-10 AdamW", 5824522}}) {
    const TrainingState s = state_for(m.params);
    std::vector<double> raw, ckpt, encode;
    size_t bytes = 0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto data = encode_checkpoint(s);
      encode.push_back(bench::seconds_since(t0));
      bytes = data.size();
      auto st = write_file_atomic(fs, work, "bench.ckpt", data);
      if (!st) {
        std::fprintf(stderr, "%s\n", st.error().message.c_str());
        return 1;
      }
      ckpt.push_back(bench::seconds_since(t0));
      raw.push_back(raw_write_seconds(work + "/raw.bin", bytes));
    }
    const double mb = static_cast<double>(bytes) / 1e6;
    const double raw_mbs = mb / median(raw), ckpt_mbs = mb / median(ckpt);
    std::printf("| %s | %zu | %.0f | %.0f | %.2f | %.1f |\n", m.name, bytes, raw_mbs, ckpt_mbs, ckpt_mbs / raw_mbs,
                1000 * median(encode));
    std::fflush(stdout);
  }
  std::filesystem::remove_all(work);
  return 0;
}
