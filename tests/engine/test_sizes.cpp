// Valid files of pathological size: a safetensors header of many tensors, a config of many keys,
// a model of 5,000 layers. Each must load, and load right; these tests assert only that (no
// timing), but the ctest TIMEOUT of this binary ends a load that takes quadratic time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <ordo/config.h>
#include <ordo/engine/encoder.h>
#include <ordo/engine/model.h>
#include <ordo/engine/safetensors.h>

#include "engine/init.h"
#include "engine/reference.h"
#include "test_util.h"

namespace ordo {
namespace {

// 200,000 one-element tensors, each found by name at its own offset.
TEST(Sizes, HeaderOfManyTensors) {
  constexpr int n = 200000;
  std::vector<TensorBytes> tensors;
  tensors.reserve(n);
  for (int i = 0; i < n; ++i) tensors.push_back(f32_tensor("t." + std::to_string(i), {1}, {float(i)}));
  test::TempDir dir;
  write_safetensors(dir.path + "/many.safetensors", tensors);
  const SafeTensors st(dir.path + "/many.safetensors");
  ASSERT_EQ(st.tensors().size(), size_t(n));
  for (int i : {0, 1, 99999, n - 1}) {
    const TensorInfo* t = st.find("t." + std::to_string(i));
    ASSERT_NE(t, nullptr) << i;
    float v;
    std::memcpy(&v, t->data, 4);
    EXPECT_EQ(v, float(i));
  }
  EXPECT_EQ(st.find("t.200000"), nullptr);
}

// A config with 100,000 keys it does not know (each holding an array) reads like the plain one.
TEST(Sizes, ConfigOfManyKeys) {
  std::string text = R"({"vocab_size": 50, "d_model": 12, "n_heads": 3, "d_ff": 20, "n_layers": 2,
                         "positional_encoding": "sinusoidal")";
  for (int i = 0; i < 100000; ++i) text += ", \"extra." + std::to_string(i) + "\": [" + std::to_string(i) + "]";
  text += "}";
  const Config c = parse_config(text, "config.json");
  EXPECT_EQ(c.vocab_size, 50);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.d_ff, 20);
}

// 5,000 layers (60,002 tensors): loads, and the encoder still agrees with the plain one.
TEST(Sizes, FiveThousandLayers) {
  Config c = test::sized_config(16, 4, 2, 4, 5000);
  c.norm_first = true;  // pre-LN with a final norm: the residual stream stays a sum, the output finite
  c.final_norm = true;
  test::TempDir dir;
  write_random_model(c, 7, dir.path);
  const Model m = Model::load(dir.path);
  ASSERT_EQ(m.weights().layers.size(), 5000u);
  EXPECT_EQ(m.parameter_count(), expected_parameters(c, "config"));
  Encoder enc(m);
  const std::vector<int32_t> ids = {1, 5, 9, 2};
  const Hidden h = enc.forward({ids});
  const std::vector<double> ref = reference::forward(m, ids);
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_TRUE(std::isfinite(ref[i]));
    worst = std::max(worst, std::fabs(h.row(0, int(i / c.d_model))[i % c.d_model] - ref[i]));
  }
  EXPECT_LT(worst, 1e-3) << "5,000 float layers against the same in double";
}

}  // namespace
}  // namespace ordo
