// tests/corpus/: every malformed case must fail cleanly, every odd one must work.
//
// bad/<case>: `ordo encode` (or the case's `command`) exits 2 and prints exactly one line, on
// stderr, starting "error: ", naming the case's file (its path) and holding each line of
// expect.txt; nothing reaches stdout but the lines of the input before a bad one. odd/<case>: exit 0, nothing on
// stderr, every output line is JSON with finite numbers, and a case with `same_as` prints exactly what that case
// prints. tests/corpus/make_corpus.py writes the corpus; see its header for the files of a case.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_util.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

using nlohmann::json;

const std::string kCorpus = std::string(ORDO_SOURCE_DIR) + "/tests/corpus/";

std::vector<std::string> cases(const std::string& kind) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir((kCorpus + kind).c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(test::read_file(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// The command line a case asks for, after the binary.
std::string command_of(const std::string& dir) {
  std::string cmd = exists(dir + "/command") ? lines_of(dir + "/command").at(0) : "encode --json";
  cmd += " --model " + test::quote(dir);
  if (exists(dir + "/args")) cmd += " " + lines_of(dir + "/args").at(0);
  if (cmd.rfind("encode", 0) == 0)
    cmd += exists(dir + "/input.txt") ? " --input " + test::quote(dir + "/input.txt") : " 'the cat sat on the mat'";
  return cmd;
}

bool all_finite(const json& j) {
  if (j.is_number()) return std::isfinite(j.get<double>());
  if (j.is_null()) return false;  // how nlohmann writes NaN and infinity
  if (j.is_array() || j.is_object())
    for (const json& v : j)
      if (!all_finite(v)) return false;
  return true;
}

class Bad : public testing::TestWithParam<std::string> {};
class Odd : public testing::TestWithParam<std::string> {};

TEST_P(Bad, FailsWithOneErrorLineNamingFileAndField) {
  const std::string dir = kCorpus + "bad/" + GetParam();
  const test::Run r = test::run_ordo(command_of(dir));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("error: " + dir + "/", 0), 0u) << "the error should start by naming a file of the case:\n"
                                                       << r.err;
  for (const std::string& want : lines_of(dir + "/expect.txt"))
    EXPECT_NE(r.err.find(want), std::string::npos) << "missing \"" << want << "\" in\n" << r.err;
  // A bad line of the input stops `encode` after the lines before it are printed; anything else
  // prints nothing.
  const size_t at = r.err.find(": line ");
  const int printed = at == std::string::npos ? 0 : std::atoi(r.err.c_str() + at + 7) - 1;
  EXPECT_EQ(test::count_lines(r.out), printed) << "only the lines before the bad one:\n" << r.out;
}

TEST_P(Odd, LoadsAndEncodes) {
  const std::string dir = kCorpus + "odd/" + GetParam();
  const test::Run r = test::run_ordo(command_of(dir));
  ASSERT_EQ(r.status, 0) << r.err;
  // Only notes on stderr: an empty line's text has no tokens and no vector, and says so.
  std::istringstream err(r.err);
  for (std::string line; std::getline(err, line);) EXPECT_EQ(line.rfind("note: ", 0), 0u) << r.err;
  std::istringstream out(r.out);
  int n = 0;
  for (std::string line; std::getline(out, line); ++n) {
    const json j = json::parse(line);
    // encode gives vectors; fill (masks) and score (pll) are the masked-language-model head's.
    ASSERT_TRUE(j.contains("embedding") || j.contains("masks") || j.contains("pll")) << line;
    if (j.contains("embedding") && j["embedding"].is_null())
      EXPECT_TRUE(j["ids"].empty()) << "only an empty text has no vector: " << line;
    else
      EXPECT_TRUE(all_finite(j.contains("embedding") ? j["embedding"] : j)) << line;
    EXPECT_EQ(j["pieces"].size(), j["ids"].size());
  }
  if (exists(dir + "/input.txt")) {
    const std::string text = test::read_file(dir + "/input.txt");
    const size_t lines = std::count(text.begin(), text.end(), '\n') + (!text.empty() && text.back() != '\n');
    EXPECT_EQ(size_t(n), lines) << "one output line per input line";
  }
  if (exists(dir + "/expect.txt")) {
    for (const std::string& want : lines_of(dir + "/expect.txt"))
      EXPECT_NE(r.out.find(want), std::string::npos) << "missing \"" << want << "\" in\n" << r.out;
  }
  if (exists(dir + "/same_as")) {
    const std::string other = kCorpus + "odd/" + lines_of(dir + "/same_as").at(0);
    const test::Run ref = test::run_ordo(command_of(other));
    ASSERT_EQ(ref.status, 0) << ref.err;
    EXPECT_EQ(r.out, ref.out) << "should print exactly what " << other << " prints";
  }
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Corpus, Bad, testing::ValuesIn(cases("bad")), test_name);
INSTANTIATE_TEST_SUITE_P(Corpus, Odd, testing::ValuesIn(cases("odd")), test_name);

TEST(Corpus, IsThere) {
  EXPECT_GE(cases("bad").size(), 100u);
  EXPECT_GE(cases("odd").size(), 30u);
}

}  // namespace
}  // namespace ordo
