// safetensors written and read back, half-precision conversions, and malformed files.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <tuple>

#include <ordo/engine/safetensors.h>
#include <ordo/errors.h>

#include "test_util.h"

namespace ordo {
namespace {

TEST(Half, KnownBitPatterns) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);                      // largest half
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                      // rounds up to infinity
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // a tie rounds to even
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_FLOAT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_FLOAT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half_to_float(0xfc00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  for (uint32_t h = 0; h < 0x7c00; ++h) ASSERT_EQ(float_to_half(half_to_float(uint16_t(h))), h) << h;
}

TEST(BFloat16, KnownBitPatterns) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-2.5f), 0xc020);
  EXPECT_FLOAT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_FLOAT_EQ(bf16_to_float(0x4049), 3.140625f);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
}

TEST(SafeTensors, WriteThenReadF32F16BF16) {
  test::TempDir dir;
  const std::string path = dir.path + "/t.safetensors";
  const std::vector<float> values = {0.5f, -2.0f, 3.25f, 1e-3f, 0.0f, 65504.0f};
  TensorBytes f16{"half", "F16", {2, 3}, {}}, bf16{"brain", "BF16", {6}, {}};
  for (float v : values) {
    const uint16_t h = float_to_half(v), b = float_to_bf16(v);
    f16.bytes.insert(f16.bytes.end(), {uint8_t(h), uint8_t(h >> 8)});
    bf16.bytes.insert(bf16.bytes.end(), {uint8_t(b), uint8_t(b >> 8)});
  }
  write_safetensors(path, {f32_tensor("single", {3, 2}, values), f16, bf16}, {{"note", "test"}});

  SafeTensors st(path);
  ASSERT_EQ(st.tensors().size(), 3u);
  EXPECT_EQ(st.metadata().at("note"), "test");
  const TensorInfo* s = st.find("single");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->shape, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data) % 8, 0u) << "the data buffer should start 8-byte aligned";
  EXPECT_EQ(std::memcmp(s->data, values.data(), 24), 0);
  const TensorInfo* h = st.find("half");
  const TensorInfo* b = st.find("brain");
  ASSERT_TRUE(h && b);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t hv, bv;
    std::memcpy(&hv, h->data + 2 * i, 2);
    std::memcpy(&bv, b->data + 2 * i, 2);
    EXPECT_NEAR(half_to_float(hv), values[i], std::fabs(values[i]) * 1e-3) << i;
    EXPECT_NEAR(bf16_to_float(bv), values[i], std::fabs(values[i]) * 8e-3) << i;
  }
}

// Builds a safetensors image from a header text and a data size.
std::string image(const std::string& header, size_t data_bytes) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = char(uint64_t(header.size()) >> (8 * i));
  return s + header + std::string(data_bytes, '\0');
}

std::string parse_error(const std::string& bytes) {
  try {
    parse_safetensors(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), "f");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SafeTensors, RejectsMalformedHeaders) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(parse_error(image(ok, 8)), "");
  EXPECT_EQ(parse_error(image(ok + "    ", 8)), "") << "trailing spaces are allowed";
  EXPECT_NE(parse_error("abc").find("too short"), std::string::npos);
  EXPECT_NE(parse_error(image(ok, 8).substr(0, 20)).find("runs past the end"), std::string::npos);
  EXPECT_NE(parse_error(image(ok, 4)).find("past the end of the data"), std::string::npos);
  EXPECT_NE(parse_error(image(ok, 12)).find("cover 8 bytes of a 12-byte"), std::string::npos);
  // (header, data bytes, what the error must say)
  const std::tuple<const char*, int, const char*> headers[] = {
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
       8, "repeats the key \"a\""},
      {R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8, "unknown dtype \"Q4\""},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "needs 12"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8, "overflows"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})",
       6, "overlap"},
  };
  for (const auto& [header, data_bytes, want] : headers)
    EXPECT_NE(parse_error(image(header, data_bytes)).find(want), std::string::npos) << header;
  EXPECT_NE(parse_error(image(R"({"__metadata__":{"k":1}})", 0)).find("not a string"), std::string::npos);
  // An optional map in the format's reference parser: null is valid and means none.
  EXPECT_EQ(parse_error(image(R"({"__metadata__":null,"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8)), "");
  EXPECT_NE(parse_error(image(R"({"__metadata__":[]})", 0)).find("not an object of strings"), std::string::npos);
  EXPECT_NE(parse_error("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n").find("Git LFS"),
            std::string::npos);
  EXPECT_NE(parse_error(image("[1,2]", 0)).find("not an object"), std::string::npos);
}

}  // namespace
}  // namespace ordo
