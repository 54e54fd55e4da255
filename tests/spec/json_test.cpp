#include "train/spec/json.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace jobctl::train::json {
namespace {

TEST(Json, ParsesEveryKindOfValue) {
  auto v = parse(R"( {"a": [1, -2, 3.5, 1e3, true, false, null], "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}} )");
  ASSERT_TRUE(v) << v.error().message;
  const Value* a = v->find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->as_array().size(), 7u);
  EXPECT_TRUE(a->as_array()[0].is_integer());
  EXPECT_EQ(a->as_array()[1].as_int(), -2);
  EXPECT_DOUBLE_EQ(a->as_array()[2].as_double(), 3.5);
  EXPECT_FALSE(a->as_array()[3].is_integer());
  EXPECT_DOUBLE_EQ(a->as_array()[3].as_double(), 1000.0);
  EXPECT_TRUE(a->as_array()[4].as_bool());
  EXPECT_TRUE(a->as_array()[6].is_null());
  EXPECT_EQ(v->find("s")->as_string(), "x\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_TRUE(v->find("o")->is_object());
}

TEST(Json, RejectsWhatRfc8259Rejects) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "NaN", "Infinity",
                          "'a'", "\"\\x\"", "\"a", "{\"a\" 1}", "{1:2}", "[1 2]", "tru", "nul", "1 2",
                          "\"\\ud800\"", "\"\\udc00x\"", "\"\x01\"", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"", "1e999",
                          "// c\n1"}) {
    auto v = parse(bad);
    EXPECT_FALSE(v) << "accepted: " << bad;
    if (!v) {
      EXPECT_EQ(v.error().code, ErrorCode::malformed_json);
    }
  }
}

TEST(Json, RejectsDuplicateKeysAndDeepNesting) {
  auto dup = parse(R"({"a":1,"b":2,"a":3})");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message.find("duplicate key \"a\""), std::string::npos);
  std::string deep(kMaxDepth + 1, '[');
  deep += std::string(kMaxDepth + 1, ']');
  EXPECT_FALSE(parse(deep));
  std::string ok(kMaxDepth, '[');
  ok += std::string(kMaxDepth, ']');
  EXPECT_TRUE(parse(ok));
}

TEST(Json, ErrorsSayWhere) {
  auto v = parse("{\n  \"a\": tru\n}");
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("line 2, column 8"), std::string::npos) << v.error().message;
}

TEST(Json, IntegersStayExact) {
  auto v = parse("[9223372036854775807, -9223372036854775808, 9223372036854775808]");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->as_array()[0].as_int(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(v->as_array()[1].as_int(), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(v->as_array()[2].is_integer());  // beyond int64: a double
}

TEST(Json, NumbersRoundTripExactly) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    auto back = parse(Value(d).dump());
    ASSERT_TRUE(back);
    EXPECT_EQ(back->as_double(), d);
    uint32_t fbits = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &fbits, sizeof f);
    if (!std::isfinite(f)) continue;
    const std::string text = Value(f).dump();
    auto fb = parse(text);
    ASSERT_TRUE(fb);
    EXPECT_EQ(static_cast<float>(fb->as_double()), f) << text;
  }
  EXPECT_EQ(Value(0.1f).dump(), "0.1");  // float precision, not 0.10000000149011612
  EXPECT_EQ(Value(std::numeric_limits<double>::quiet_NaN()).dump(), "null");
}

TEST(Json, WriteEscapesAndRoundTrips) {
  Value v(Object{{"k\n", Value("a\"b\x01")}, {"n", Value(Array{Value(1), Value(nullptr), Value(false)})}});
  const std::string text = v.dump();
  EXPECT_EQ(text, R"({"k\n":"a\"b\u0001","n":[1,null,false]})");
  auto back = parse(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, v);
}

TEST(Json, SetReplacesOrAppendsAndCopiesOnWrite) {
  Value a(Object{{"x", Value(1)}});
  Value b = a;  // shares the object
  b.set("x", Value(2));
  b.set("y", Value(3));
  EXPECT_EQ(a.find("x")->as_int(), 1);
  EXPECT_EQ(a.find("y"), nullptr);
  EXPECT_EQ(b.find("x")->as_int(), 2);
  EXPECT_EQ(b.find("y")->as_int(), 3);
}

}  // namespace
}  // namespace jobctl::train::json
