// `ordo bench`: its JSON carries the keys, and its figures agree with each other.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"

namespace ordo {
namespace {

using nlohmann::json;
using test::run_ordo;

TEST(Bench, JsonHasTheKeysAndConsistentFigures) {
  const auto r =
      run_ordo(std::string("bench --json --batch 2 --seq 5 --repeat 3 --threads 1 --model ") + ORDO_DEFAULT_MODEL);
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  for (const char* key : {"batch", "seq", "threads", "ms_median", "ms_min", "tokens_per_s", "gflops"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.size(), 7u);
  EXPECT_EQ(j["batch"], 2);
  EXPECT_EQ(j["seq"], 5);
  EXPECT_EQ(j["threads"], 1);
  const double ms = j["ms_median"];
  EXPECT_GT(ms, 0.0);
  EXPECT_LE(double(j["ms_min"]), ms);
  EXPECT_NEAR(double(j["tokens_per_s"]), 10 / (ms / 1e3), 1e-6 * double(j["tokens_per_s"]));
  // The default model: d=64, F=256, 2 layers. FLOPs = layers·(2·T·d·3d + 2·T·d² + 4·B·S²·d + 4·T·d·F), T = B·S
  const double T = 10, d = 64, F = 256,
               flops = 2 * (2 * T * d * 3 * d + 2 * T * d * d + 4 * 2 * 25 * d + 4 * T * d * F);
  EXPECT_NEAR(double(j["gflops"]), flops / (ms / 1e3) / 1e9, 1e-6 * double(j["gflops"]));
}

TEST(Bench, StdinModeAnswersEachLine) {
  const auto r = run_ordo(std::string("bench --stdin --model ") + ORDO_DEFAULT_MODEL, "1 3 2\n2 4 2\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  std::string a, b;
  ASSERT_TRUE(std::getline(in, a) && std::getline(in, b));
  EXPECT_EQ(json::parse(a)["seq"], 3);
  EXPECT_EQ(json::parse(b)["batch"], 2);
}

TEST(Bench, BadShapeIsAUsageError) {
  const auto r = run_ordo(std::string("bench --batch 0 --model ") + ORDO_DEFAULT_MODEL);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
}

}  // namespace
}  // namespace ordo
