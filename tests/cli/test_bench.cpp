// `ordo bench`: its JSON carries the keys, and its figures agree with each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "paths.h"

namespace ordo {
namespace {

using nlohmann::json;
using test::run_ordo;

TEST(Bench, JsonHasTheKeysAndConsistentFigures) {
  const auto r =
      run_ordo(std::string("bench --json --batch 2 --seq 5 --repeat 3 --threads 1 --model ") + ORDO_DEFAULT_MODEL);
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  for (const char* key : {"batch", "seq", "threads", "ms_median", "ms_min", "tokens_per_s", "gflops", "ms",
                          "compute_type", "conversion_ms"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.size(), 10u);
  ASSERT_EQ(j["ms"].size(), 3u);  // each run, in order: the median and minimum are theirs
  std::vector<double> each = j["ms"];
  std::sort(each.begin(), each.end());
  EXPECT_EQ(double(j["ms_median"]), each[1]);
  EXPECT_EQ(double(j["ms_min"]), each[0]);
  EXPECT_EQ(j["compute_type"], "f32");
  EXPECT_EQ(j["conversion_ms"], 0.0);  // f32 uses the model's floats as they are
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

// --processes N: N fresh processes; the median of their medians, the fastest and slowest of them.
TEST(Bench, ProcessesReportsEachProcessAndTheSpread) {
  const auto r =
      run_ordo(std::string("bench --json --seq 4 --repeat 3 --threads 1 --processes 3 --model ") + ORDO_DEFAULT_MODEL);
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["processes"], 3);
  std::vector<double> m = j["process_medians"];
  ASSERT_EQ(m.size(), 3u);
  std::sort(m.begin(), m.end());
  EXPECT_EQ(double(j["ms_median"]), m[1]);
  EXPECT_EQ(double(j["ms_min"]), m[0]);
  EXPECT_EQ(double(j["ms_max"]), m[2]);
  EXPECT_NEAR(double(j["slowest_over_fastest"]), m[2] / m[0], 1e-12);
  const auto bad = run_ordo(std::string("bench --stdin --processes 2 --model ") + ORDO_DEFAULT_MODEL);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--processes times the forward pass only"), std::string::npos) << bad.err;
}

// --compute-type int8 says so, and what converting the weights took (none of it timed).
TEST(Bench, ReportsTheComputeTypeAndItsConversion) {
  const auto r = run_ordo(std::string("bench --json --batch 1 --seq 4 --repeat 2 --compute-type int8 --model ") +
                          ORDO_DEFAULT_MODEL);
  if (r.status == 2 && r.err.find("no oneDNN") != std::string::npos) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["compute_type"], "int8");
  EXPECT_GT(double(j["conversion_ms"]), 0.0);
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

// The report says which kernels OpenBLAS picked, and says so plainly when the environment forced them.
TEST(Bench, ReportNamesOpenBlasKernelsAndAForcedCoreType) {
  const std::string args =
      std::string("bench --batch 1 --seq 4 --repeat 2 --threads 1 --peak 100 --model ") + ORDO_DEFAULT_MODEL;
  const char* saved = std::getenv("OPENBLAS_CORETYPE");
  const std::string keep = saved ? saved : "";
  ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  const auto forced = run_ordo(args);
  ::unsetenv("OPENBLAS_CORETYPE");
  const auto free = run_ordo(args);
  if (saved) ::setenv("OPENBLAS_CORETYPE", keep.c_str(), 1);
  ASSERT_EQ(forced.status, 0) << forced.err;
  ASSERT_EQ(free.status, 0) << free.err;
  EXPECT_NE(forced.out.find("OPENBLAS_CORETYPE=Haswell is set"), std::string::npos) << forced.out;
  EXPECT_NE(forced.out.find("OpenBLAS picked its Haswell kernels"), std::string::npos) << forced.out;
  EXPECT_NE(free.out.find("OPENBLAS_CORETYPE is not set"), std::string::npos) << free.out;
  EXPECT_EQ(free.out.find("OPENBLAS_CORETYPE="), std::string::npos) << free.out;
}

TEST(Bench, BadShapeIsAUsageError) {
  const auto r = run_ordo(std::string("bench --batch 0 --model ") + ORDO_DEFAULT_MODEL);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
}

}  // namespace
}  // namespace ordo
