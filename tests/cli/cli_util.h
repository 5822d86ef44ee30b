// Runs the built `ordo` binary and captures what it prints.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "paths.h"

namespace ordo::test {

struct Run {
  int status;       // exit code
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `args` is pasted into a shell command line after the binary; quote texts with quote().
inline Run run_ordo(const std::string& args, const std::string& stdin_text = "") {
  const std::string base = ::testing::TempDir() + "ordo-run-" + std::to_string(::getpid());
  {
    std::ofstream in(base + ".in");
    in << stdin_text;
  }
  const std::string cmd = std::string(ORDO_BINARY) + " " + args + " <" + base + ".in 2>" + base + ".err";
  Run r{-1, "", ""};
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  std::ifstream err(base + ".err");
  std::stringstream ss;
  ss << err.rdbuf();
  r.err = ss.str();
  std::remove((base + ".in").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// One JSON value per line of `out` (what --json prints: one object per text).
inline std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// A run that failed as bad input must: exit 2, one "error:" line that mentions `must_mention`, and
// nothing on stdout.
inline void expect_one_error(const Run& r, const std::string& must_mention) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(must_mention), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "nothing should be half-written";
}

// The names most command-line tests use, brought in by `using namespace test::cli;`.
namespace cli {
using nlohmann::json;
using test::expect_one_error;
using test::json_lines;
using test::quote;
using test::run_ordo;
// " --model <the default model> ", for command lines.
inline const std::string kModel = std::string(" --model ") + ORDO_DEFAULT_MODEL + " ";
}  // namespace cli

}  // namespace ordo::test
