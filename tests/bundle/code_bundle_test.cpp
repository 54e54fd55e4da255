#include "bundle/code_bundle.h"

#include <sys/stat.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "tests/support/temp_dir.h"

namespace jobctl::bundle {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}
std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct RawEntry {
  char type;
  std::string path;
  std::string data;
};

void le(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A bundle as an attacker would write it: any entries, and optionally a header that lies about
// the unpacked size.
std::string craft(const std::vector<RawEntry>& entries, std::optional<uint64_t> announced = std::nullopt) {
  std::string raw;
  for (const auto& e : entries) {
    raw.push_back(e.type);
    raw.push_back(0);
    le(raw, e.path.size(), 2);
    le(raw, 0, 4);
    le(raw, e.data.size(), 8);
    raw += e.path + e.data;
  }
  uLongf n = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(n, '\0');
  compress2(reinterpret_cast<Bytef*>(packed.data()), &n, reinterpret_cast<const Bytef*>(raw.data()),
            static_cast<uLong>(raw.size()), 9);
  packed.resize(n);
  std::string out = "JCBUNDL1";
  le(out, packed.size(), 8);
  le(out, announced.value_or(raw.size()), 8);
  le(out, entries.size(), 4);
  le(out, crc32c::value(packed.data(), packed.size()), 4);
  le(out, 0, 8);
  return out + packed;
}

// Expects the refusal, its field and a message containing `says`, and that nothing was written.
void expect_refused(const std::string& bundle, const std::string& says, uint64_t limit = kDefaultMaxUnpacked) {
  jobctl::testing::TempDir tmp;
  const std::string dest = tmp.file("out");
  auto r = unpack_bundle(bundle, dest, limit);
  ASSERT_FALSE(r) << "unpacked a bundle that should be refused (" << says << ")";
  EXPECT_EQ(r.error().field, "bundle");
  EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  EXPECT_FALSE(fs::exists(dest)) << "something was written before the refusal";
}

TEST(CodeBundle, PacksAFolderWithoutGitAndUnpacksItTheSame) {
  jobctl::testing::TempDir tmp;
  const fs::path src = tmp.path() / "src";
  write(src / "train.py", "print('hi')\n");
  write(src / "lib" / "model.py", "x = 1\n");
  write(src / "run.sh", "#!/bin/sh\n");
  fs::permissions(src / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
  write(src / ".git" / "HEAD", "ref: refs/heads/main\n");
  write(src / "lib" / ".git" / "config", "x");
  fs::create_symlink("lib/model.py", src / "model.py");
  BundleStats packed;
  auto bundle = pack_directory(src.string(), kDefaultMaxPackedInput, &packed);
  ASSERT_TRUE(bundle) << bundle.error().message;
  EXPECT_EQ(packed.files, 3u);
  EXPECT_EQ(packed.links, 1u);
  auto again = pack_directory(src.string());
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *bundle) << "packing is deterministic";

  const fs::path dest = tmp.path() / "dest";
  auto st = unpack_bundle(*bundle, dest.string());
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->files, 3u);
  EXPECT_EQ(read(dest / "train.py"), "print('hi')\n");
  EXPECT_EQ(read(dest / "lib" / "model.py"), "x = 1\n");
  EXPECT_EQ(read(dest / "model.py"), "x = 1\n") << "the link inside the bundle is kept";
  EXPECT_TRUE(fs::is_symlink(dest / "model.py"));
  EXPECT_NE(fs::status(dest / "run.sh").permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_FALSE(fs::exists(dest / ".git"));
  EXPECT_FALSE(fs::exists(dest / "lib" / ".git"));
}

TEST(CodeBundle, PackingRefusesLinksOutSpecialFilesAndTooMuch) {
  jobctl::testing::TempDir tmp;
  const fs::path src = tmp.path() / "src";
  write(src / "a.py", std::string(2000, 'a'));
  auto over = pack_directory(src.string(), 1000);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().field, "workdir");
  EXPECT_NE(over.error().message.find("bundle limit"), std::string::npos) << over.error().message;

  fs::create_symlink("/etc/passwd", src / "passwd");
  auto out = pack_directory(src.string());
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("link out of"), std::string::npos) << out.error().message;
  fs::remove(src / "passwd");

  ASSERT_EQ(::mkfifo((src / "pipe").c_str(), 0600), 0);
  auto fifo = pack_directory(src.string());
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().message.find("FIFO"), std::string::npos) << fifo.error().message;

  EXPECT_FALSE(pack_directory((src / "a.py").string())) << "a file is not a folder";
}

TEST(CodeBundle, UnpackingRefusesEscapingPaths) {
  expect_refused(craft({{'f', "/etc/cron.d/x", "evil"}}), "an absolute path");
  expect_refused(craft({{'f', "../x", "evil"}}), "'..'");
  expect_refused(craft({{'f', "a/../../x", "evil"}}), "'..'");
  expect_refused(craft({{'f', "a//b", "x"}}), "empty or '.'");
  expect_refused(craft({{'f', "", "x"}}), "an empty path");
}

TEST(CodeBundle, UnpackingRefusesLinksOutOfTheBundleAndEntriesThroughLinks) {
  expect_refused(craft({{'l', "passwd", "/etc/passwd"}}), "link out of the bundle");
  expect_refused(craft({{'l', "up", "../.."}}), "link out of the bundle");
  expect_refused(craft({{'l', "a/up", "../../x"}}), "link out of the bundle");
  // A link inside is fine, but nothing may be written through it.
  expect_refused(craft({{'d', "real", ""}, {'l', "alias", "real"}, {'f', "alias/x", "y"}}), "lies under the link alias");
  expect_refused(craft({{'f', "alias/x", "y"}, {'l', "alias", "real"}}), "lies under the link alias");
}

TEST(CodeBundle, UnpackingRefusesDeviceFilesAndDuplicates) {
  expect_refused(craft({{'c', "dev/sda", ""}}), "device files");
  expect_refused(craft({{'b', "disk", ""}}), "device files");
  expect_refused(craft({{'f', "x", "1"}, {'f', "x", "2"}}), "appears twice");
}

TEST(CodeBundle, UnpackingRefusesCorruptAndTruncatedBundles) {
  std::string good = craft({{'f', "train.py", "print(1)"}});
  expect_refused("not a bundle at all, just some text that is long enough", "no JCBUNDL1 header");
  std::string flipped = good;
  flipped.back() ^= 0x40;
  expect_refused(flipped, "checksum mismatch");
  expect_refused(good.substr(0, good.size() - 3), "payload bytes");
  // An entry count larger than the entries: truncated.
  std::string more = good;
  more[24] = 2;
  expect_refused(more, "truncated entry");
}

TEST(CodeBundle, UnpackingRefusesDecompressionBombs) {
  // Announced beyond the limit: refused before inflating anything.
  expect_refused(craft({{'f', "zeros", std::string(1 << 20, '\0')}}), "more than the limit", 64 << 10);
  // A header that under-announces: inflation stops at the announced size.
  expect_refused(craft({{'f', "zeros", std::string(1 << 20, '\0')}}, 4096), "more than the 4096 bytes");
}

TEST(CodeBundle, UnpackingNeverWritesOverWhatIsThere) {
  jobctl::testing::TempDir tmp;
  const fs::path dest = tmp.path() / "dest";
  write(dest / "train.py", "mine");
  auto r = unpack_bundle(craft({{'f', "train.py", "theirs"}}), dest.string());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exists already"), std::string::npos) << r.error().message;
  EXPECT_EQ(read(dest / "train.py"), "mine");
}

}  // namespace
}  // namespace jobctl::bundle
