// Data: the IDX reader (plain and gzipped, and its errors), Fashion-MNIST from the installed
// files, the synthetic generator, the per-epoch shuffle and its restore.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <set>

#ifdef JOBCTL_HAVE_ZLIB
#include <zlib.h>
#endif

#include "test_util.h"
#include "train/data/batch_order.h"
#include "train/data/dataset.h"
#include "train/data/idx_reader.h"
#include "train/data/synthetic.h"

namespace jobctl::train {
namespace {

std::vector<uint8_t> idx_bytes(std::vector<uint32_t> dims, std::vector<uint8_t> data) {
  std::vector<uint8_t> b = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(d >> s));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST(Idx, ParsesDimensionsAndData) {
  auto a = parse_idx(idx_bytes({2, 3}, {1, 2, 3, 4, 5, 6}), "t");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->dims, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(a->data, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Idx, RejectsMalformedFiles) {
  auto good = idx_bytes({2, 2}, {1, 2, 3, 4});
  auto bad_magic = good;
  bad_magic.at(0) = 1;
  auto bad_type = good;
  bad_type.at(2) = 0x0D;  // float
  auto truncated = good;
  truncated.pop_back();
  auto padded = good;
  padded.push_back(0);
  for (const auto& [bytes, needle] : std::vector<std::pair<std::vector<uint8_t>, std::string>>{
           {bad_magic, "magic"}, {bad_type, "unsigned byte"}, {truncated, "header says"}, {padded, "header says"},
           {{0, 0}, "too short"}, {{0, 0, 8, 2, 0, 0}, "truncated IDX header"}}) {
    auto r = parse_idx(bytes, "f");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::data);
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  }
}

TEST(Idx, ReadsPlainAndGzippedFiles) {
  testing::TempDir dir("idx");
  const auto bytes = idx_bytes({3}, {7, 8, 9});
  write_file(dir.file("plain"), bytes);
  auto plain = read_idx_file(dir.file("plain"));
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->data, (std::vector<uint8_t>{7, 8, 9}));
#ifdef JOBCTL_HAVE_ZLIB
  gzFile f = gzopen(dir.file("z.gz").c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  auto gz = read_idx_file(dir.file("z.gz"));
  ASSERT_TRUE(gz) << gz.error().message;
  EXPECT_EQ(gz->data, (std::vector<uint8_t>{7, 8, 9}));
  // A gzip stream cut short is an error, not a short file.
  std::ifstream in(dir.file("z.gz"), std::ios::binary);
  std::vector<uint8_t> whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  whole.resize(whole.size() - 6);
  write_file(dir.file("cut.gz"), whole);
  EXPECT_FALSE(read_idx_file(dir.file("cut.gz")));
#endif
  auto missing = read_idx_file(dir.file("nope"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos);
}

TEST(FashionMnist, MissingFolderIsADataError) {
  auto r = load_fashion_mnist("/nonexistent/fashion");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::data);
}

TEST(FashionMnist, LoadsTheInstalledDataset) {
  const std::string dir = kDefaultFashionMnistDir;
  if (!std::ifstream(dir + "/train-images-idx3-ubyte.gz") && !std::ifstream(dir + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST is not installed in " << dir << " (Debian package dataset-fashion-mnist)";
  auto r = load_fashion_mnist(dir);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->train.samples, 60000);
  EXPECT_EQ(r->test.samples, 10000);
  EXPECT_EQ(r->train.features, 784);
  // The first training image is an ankle boot (class 9); classes are balanced (6000 each).
  EXPECT_EQ(r->train.y[0], 9);
  std::vector<int> counts(10);
  for (int32_t y : r->train.y) counts[static_cast<size_t>(y)]++;
  for (int c : counts) EXPECT_EQ(c, 6000);
  // Normalised: pixel 0 maps to -mean/std; the training mean is about 0.
  const float zero = -kFashionMnistMean / kFashionMnistStd;
  EXPECT_FLOAT_EQ(r->train.x[0], zero);  // the top-left pixel of the boot is background
  double mean = 0;
  for (float v : r->train.x) mean += v;
  mean /= static_cast<double>(r->train.x.size());
  EXPECT_NEAR(mean, 0.0, 0.01);
}

TEST(Synthetic, IsAFunctionOfTheSeed) {
  DataSpec d;
  d.dataset = DatasetKind::synthetic;
  d.samples = 100;
  d.test_samples = 20;
  d.features = 9;
  d.classes = 3;
  d.seed = 5;
  const DataSplits a = make_synthetic(d), b = make_synthetic(d);
  EXPECT_EQ(a.train.x, b.train.x);
  EXPECT_EQ(a.train.y, b.train.y);
  EXPECT_EQ(a.test.x, b.test.x);
  EXPECT_NE(a.train.x, a.test.x);
  d.seed = 6;
  EXPECT_NE(make_synthetic(d).train.x, a.train.x);
  EXPECT_EQ(a.train.x.size(), 900u);
  std::set<int32_t> labels(a.train.y.begin(), a.train.y.end());
  EXPECT_EQ(labels, (std::set<int32_t>{0, 1, 2}));
}

TEST(BatchOrder, EachEpochIsASeededPermutation) {
  BatchOrder a(1000, 42), b(1000, 42), c(1000, 43);
  a.new_epoch();
  b.new_epoch();
  c.new_epoch();
  EXPECT_EQ(a.permutation(), b.permutation());
  EXPECT_NE(a.permutation(), c.permutation());
  auto sorted = a.permutation();
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  const auto first = a.permutation();
  a.new_epoch();
  EXPECT_NE(a.permutation(), first);  // a new order every epoch
}

TEST(BatchOrder, RestoreContinuesTheSameSequence) {
  BatchOrder a(500, 1);
  a.new_epoch();
  const auto state = a.rng_state();
  const auto perm = a.permutation();
  a.new_epoch();
  BatchOrder b(500, 999);
  ASSERT_TRUE(b.restore(state, perm));
  EXPECT_EQ(b.permutation(), perm);
  b.new_epoch();
  EXPECT_EQ(b.permutation(), a.permutation());
  // Not a permutation: refused.
  auto broken = perm;
  broken.at(0) = broken.at(1);
  EXPECT_FALSE(b.restore(state, broken));
  EXPECT_FALSE(b.restore(state, std::vector<int32_t>(10, 0)));
}

TEST(Rng, UniformIndexIsInRangeAndStateRoundTrips) {
  Rng r(3);
  for (int i = 0; i < 10000; ++i) ASSERT_LT(r.uniform_index(7), 7u);
  const auto s = r.state();
  const uint64_t next = r.next_u64();
  EXPECT_EQ(Rng::from_state(s).next_u64(), next);
  double sum = 0, sq = 0;
  for (int i = 0; i < 20000; ++i) {
    const double z = r.normal();
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / 20000, 0.0, 0.05);
  EXPECT_NEAR(sq / 20000, 1.0, 0.05);
}

}  // namespace
}  // namespace jobctl::train
