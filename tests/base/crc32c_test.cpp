#include "base/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace jobctl::crc32c {
namespace {

// Test vectors from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32c, Rfc3720Vectors) {
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
    dec[static_cast<size_t>(i)] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(value(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(value(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(value(inc.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(value(dec.data(), 32), 0x113FDB5Cu);
  EXPECT_EQ(value("123456789", 9), 0xE3069283u);
}

TEST(Crc32c, HardwareAndPortableAgreeAndExtendComposes) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(4099);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 4099u}) {
    EXPECT_EQ(value(buf.data(), n), value_portable(buf.data(), n)) << n;
    for (size_t cut : {size_t{0}, n / 3, n}) {
      EXPECT_EQ(extend(value(buf.data(), cut), buf.data() + cut, n - cut), value(buf.data(), n));
    }
  }
}

TEST(Crc32c, DetectsASingleFlippedBit) {
  std::string s(1000, 'x');
  const uint32_t before = value(s.data(), s.size());
  s[500] ^= 0x10;
  EXPECT_NE(before, value(s.data(), s.size()));
}

}  // namespace
}  // namespace jobctl::crc32c
