// Reliability of the command line: long and broken input, closed pipes, full disks, huge configs.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "cli/cli_util.h"
#include "test_util.h"

namespace ordo {
namespace {

using test::quote;
using test::run_ordo;

const std::string kModel = std::string(" --model ") + ORDO_DEFAULT_MODEL + " ";

TEST(Input, TenMegabyteLineFailsCleanlyOrIsCut) {
  test::TempDir dir;
  const std::string file = dir.path + "/long.txt";
  {
    std::ofstream out(file);
    for (int i = 0; i < 10 * 1024 * 1024 / 23; ++i) out << "the cat sat on the mat ";
    out << "\nshort line\n";
  }
  const auto r = run_ordo("encode" + kModel + "--input " + file);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(file + ": line 1: text is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-tokens 8192"), std::string::npos) << r.err;
  const auto cut = run_ordo("encode --json --max-tokens 100 --truncate" + kModel + "--input " + file);
  ASSERT_EQ(cut.status, 0) << cut.err;
  std::istringstream lines(cut.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(nlohmann::json::parse(first)["ids"].size(), 100u);
  EXPECT_EQ(nlohmann::json::parse(second)["text"], "short line");
}

TEST(Input, ClosedPipeEndsQuietly) {
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "the cat sat on the mat number " + std::to_string(i) + "\n";
  test::TempDir dir;
  std::ofstream(dir.path + "/in.txt") << many;
  // bash reports each stage's status; ordo's output far exceeds the pipe buffer, so it meets EPIPE.
  const std::string cmd =
      "bash -c " + quote(std::string(ORDO_BINARY) + " encode" + kModel + "--json --input " + dir.path + "/in.txt 2>" +
                         dir.path + "/err | head -c 100 >/dev/null; echo ${PIPESTATUS[0]}");
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[64] = {0};
  ASSERT_NE(std::fgets(buf, sizeof buf, p), nullptr);
  ::pclose(p);
  const int status = std::atoi(buf);
  EXPECT_TRUE(status == 141 || status == 0) << "status " << status << ": SIGPIPE (128 + 13) or a clean exit";
  std::ifstream err(dir.path + "/err");
  const std::string err_text((std::istreambuf_iterator<char>(err)), {});
  EXPECT_EQ(err_text, "") << "a reader that went away is not an error";
}

TEST(Input, FullDiskIsAnError) {
  const auto r = run_ordo("encode" + kModel + "hello >/dev/full");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "error: ordo encode: cannot write to stdout: No space left on device\n");
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

TEST(InitCommand, RefusesAConfigTooLargeForMemory) {
  test::TempDir dir;
  std::ofstream(dir.path + "/huge.json") << R"({"vocab_size": 16777216, "d_model": 16777216, "n_heads": 1,
    "d_ff": 1, "n_layers": 16777216, "positional_encoding": "none"})";
  std::ofstream(dir.path + "/big.json") << R"({"vocab_size": 16777216, "d_model": 65536, "n_heads": 1,
    "d_ff": 1, "n_layers": 1, "positional_encoding": "none"})";
  auto r = test::run_ordo("init --config " + dir.path + "/huge.json --out " + dir.path + "/m");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: " + dir.path + "/huge.json: the parameter count overflows 64 bits\n");
  r = test::run_ordo("init --config " + dir.path + "/big.json --out " + dir.path + "/m");
  EXPECT_EQ(r.status, 2);
  // V·d + 4d² + 2F·d + F + 9d = 2^40 + 2^34 + 2^17 + 1 + 9·2^16 floats = 4466769395428 bytes
  EXPECT_NE(r.err.find("big.json: asks for 4259842 MiB of weights"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ordo
