// docs/walkthrough.md stays true: every `ordo ...` command in its ```sh blocks runs and exits 0; the
// ```text block after a command holds lines of what it prints (a "..." line stands for lines left
// out), compared token by token with numbers allowed float-rounding slack; and a picture the doc
// shows under docs/img/ is, pixel for pixel, what its command draws.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/cli_util.h"
#include "paths.h"
#include "teach/png_read.h"
#include "test_util.h"

namespace ordo {
namespace {

struct Example {
  int section;                        // the number of its "## N." heading (0 before the first)
  int line;                           // in the doc
  std::string command;                // "ordo pe --positions 6"
  std::vector<std::string> expected;  // the text block after it, if any
};

void PrintTo(const Example& e, std::ostream* os) {
  *os << e.command;
}  // how ctest lists a test's command

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::vector<Example> examples(const std::string& doc) {
  std::vector<Example> out;
  const auto lines = lines_of(doc);
  bool last_was_sh = false;  // the previous fenced block was ```sh (blank lines between are fine)
  int section = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("## ", 0) == 0) section = std::atoi(lines[i].c_str() + 3);
    if (lines[i] == "```sh" || lines[i] == "```text") {
      const bool sh = lines[i] == "```sh";
      std::vector<std::string> body;
      size_t j = i + 1;
      for (; j < lines.size() && lines[j] != "```"; ++j) body.push_back(lines[j]);
      if (sh) {
        for (size_t k = 0; k < body.size(); ++k)
          if (body[k].rfind("ordo ", 0) == 0) out.push_back({section, int(i + k + 2), body[k], {}});
      } else if (last_was_sh && !out.empty()) {
        out.back().expected = body;
      }
      last_was_sh = sh;
      i = j;
    } else if (!lines[i].empty()) {
      last_was_sh = false;
    }
  }
  return out;
}

// "0.4357," -> 0.4357; false when the token is not a number.
bool number(std::string token, double* v) {
  while (!token.empty() && std::string("[(").find(token.front()) != std::string::npos) token.erase(0, 1);
  while (!token.empty() && std::string(",;:)]").find(token.back()) != std::string::npos) token.pop_back();
  if (token.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(token.c_str(), &end);
  return *end == '\0';
}

// Two numbers within float-rounding slack (the last printed digit, and noise below 2e-4).
bool same_number(const std::string& x, const std::string& y) {
  double u, v;
  return number(x, &u) && number(y, &v) && (u == v || std::fabs(u - v) <= 2e-4 + 1e-3 * std::fabs(u));  // ±inf too
}

// Same words; numbers within float-rounding slack. A doc word "A|B" (two numbers) takes either: a
// count that one instruction set's kernels decide one way and another's the other (a tie within
// rounding), which the doc says beside it.
bool same_line(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string x, y;
  while (true) {
    const bool more_a = bool(a >> x), more_b = bool(b >> y);
    if (more_a != more_b) return false;
    if (!more_a) return true;
    const size_t bar = x.find('|');
    double u;
    if (bar != std::string::npos && bar > 0 && number(x.substr(0, bar), &u)) {
      if (!same_number(x.substr(0, bar), y) && !same_number(x.substr(bar + 1), y)) return false;
    } else if (number(x, &u) && number(y, &u)) {
      if (!same_number(x, y)) return false;
    } else if (x != y) {
      return false;
    }
  }
}

// Each run of expected lines between "..." lines appears in `got` as consecutive lines, runs in order.
// "" when it does; else the first line of the doc that is not matched where the run matched longest
// (the line that differs, not the run's first line), and the output's line in its place, if any.
std::string mismatch(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  size_t from = 0, i = 0;
  while (i < want.size()) {
    if (want[i] == "..." || want[i].empty()) {
      ++i;
      continue;
    }
    size_t n = 0;
    while (i + n < want.size() && want[i + n] != "...") ++n;
    bool found = false;
    size_t best = 0, best_at = got.size();  // the longest matched prefix of the run, and where
    for (size_t s = from; s + n <= got.size() && !found; ++s) {
      size_t k = 0;
      while (k < n && same_line(want[i + k], got[s + k])) ++k;
      if (k == n) found = true, from = s + n;
      if (k > best) best = k, best_at = s;
    }
    if (!found) {
      if (best == 0) return want[i];
      return want[i + best] + "\n  (the output has there: " + got[best_at + best] + ")";
    }
    i += n;
  }
  return "";
}

std::vector<Example> the_walkthrough() {
  std::ifstream in(std::string(ORDO_SOURCE_DIR) + "/docs/walkthrough.md");
  std::stringstream doc;
  doc << in.rdbuf();
  return examples(doc.str());
}

// One test per command, each in a directory of its own, so that ctest -j runs them side by side.
// Named by the doc's line and subcommand; an edited doc rebuilds this file's binary (OBJECT_DEPENDS in
// tests/CMakeLists.txt), and ctest lists the tests again at its next run (DISCOVERY_MODE PRE_TEST).
class WalkthroughCommand : public ::testing::TestWithParam<Example> {};

TEST(Walkthrough, ShowsItsCommandsAndWhatTheyPrint) {
  const auto all = the_walkthrough();
  ASSERT_GE(all.size(), 8u) << "docs/walkthrough.md should show its commands in ```sh blocks";
  int with_output = 0;
  for (const Example& e : all) with_output += !e.expected.empty();
  EXPECT_GE(with_output, 5) << "the walkthrough should show what its commands print";
}

TEST_P(WalkthroughCommand, RunsAndPrintsWhatTheDocShows) {
  const Example& e = GetParam();
  SCOPED_TRACE("docs/walkthrough.md:" + std::to_string(e.line) + ": " + e.command);
  test::TempDir dir;
  // The commands name the committed models and held-out files as models/... from the repository's top.
  ASSERT_EQ(::symlink((std::string(ORDO_SOURCE_DIR) + "/models").c_str(), (dir.path + "/models").c_str()), 0);
  {
    const std::string cmd =
        "cd " + test::quote(dir.path) + " && " + std::string(ORDO_BINARY) + e.command.substr(4) + " 2>&1";
    std::string out;
    int status = -1;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[65536];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
      const int st = ::pclose(p);
      status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    ASSERT_EQ(status, 0) << out;
    if (!e.expected.empty()) {
      EXPECT_EQ(mismatch(e.expected, lines_of(out)), "") << "this line of the doc is not in the output:\n" << out;
    }
    // A picture: the one under docs/img/ must show what the command draws now: the same title, table
    // and scale, and every cell the same colour (compared through the layout numbers each PNG
    // carries, so a font version that sets the labels a pixel wider does not matter).
    std::istringstream words(e.command);
    for (std::string w, prev; words >> w; prev = w) {
      if (prev != "--png" && prev != "--similarity-png") continue;
      const std::string made_path = dir.path + "/" + w, shown_path = std::string(ORDO_SOURCE_DIR) + "/docs/img/" + w;
      const auto made = test::read_png(made_path), shown = test::read_png(shown_path);
      ASSERT_GT(made.width, 0) << w;
      ASSERT_GT(shown.width, 0) << "docs/img/" << w << " is missing";
      auto made_text = test::read_png_text(made_path), shown_text = test::read_png_text(shown_path);
      if (made_text.count("ordo:axes")) {
        // A line chart: the same title and axes, and every pixel of the plot the same, below the strip
        // at its top where a marker's label is set in the font.
        for (const char* key : {"Title", "ordo:axes", "ordo:plot"})
          EXPECT_EQ(made_text[key], shown_text[key]) << "docs/img/" << w << ": " << key;
        const auto at = test::numbers_of(made_text["ordo:plot"]), at_shown = test::numbers_of(shown_text["ordo:plot"]);
        ASSERT_EQ(at.size(), 4u);
        ASSERT_EQ(at_shown.size(), 4u) << "docs/img/" << w << " was not drawn by the current renderer";
        constexpr int kLabelStrip = 20;
        int differ = 0;
        for (int y = kLabelStrip; y < int(at[3]); ++y)
          for (int x = 0; x < int(at[2]); ++x)
            differ += made.at(int(at[0]) + x, int(at[1]) + y) != shown.at(int(at_shown[0]) + x, int(at_shown[1]) + y);
        EXPECT_EQ(differ, 0) << "docs/img/" << w << " differs from what the command draws in " << differ << " pixels";
        continue;
      }
      for (const char* key : {"Title", "ordo:cells", "ordo:scale"})
        EXPECT_EQ(made_text[key], shown_text[key]) << "docs/img/" << w << ": " << key;
      const auto cells = test::numbers_of(made_text["ordo:cells"]);
      const auto at_made = test::numbers_of(made_text["ordo:plot"]),
                 at_shown = test::numbers_of(shown_text["ordo:plot"]);
      ASSERT_EQ(cells.size(), 4u);
      ASSERT_EQ(at_made.size(), 4u);
      ASSERT_EQ(at_shown.size(), 4u) << "docs/img/" << w << " was not drawn by the current renderer";
      int differ = 0;
      for (int r = 0; r < int(cells[0]); ++r)
        for (int c = 0; c < int(cells[1]); ++c) {
          const double dx = (c + 0.5) * cells[2], dy = (r + 0.5) * cells[3];
          differ += made.at(int(at_made[0] + dx), int(at_made[1] + dy)) !=
                    shown.at(int(at_shown[0] + dx), int(at_shown[1] + dy));
        }
      EXPECT_EQ(differ, 0) << "docs/img/" << w << " differs from what the command draws in " << differ << " cells";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Walkthrough, WalkthroughCommand, ::testing::ValuesIn(the_walkthrough()),
                         [](const ::testing::TestParamInfo<Example>& info) {
                           std::string sub = info.param.command.substr(5);  // after "ordo "
                           sub = sub.substr(0, sub.find(' '));
                           // the section first: tests/CMakeLists.txt runs section 9's at every ISA level
                           return "s" + std::to_string(info.param.section) + "_line_" +
                                  std::to_string(info.param.line) + "_" + sub;
                         });

TEST(Walkthrough, TheCheckerCatchesAChangedNumber) {
  const std::vector<std::string> got = {"a 1.0000 b", "c 2.5000", "d 3", "e"};
  EXPECT_EQ(mismatch({"a 1.0000 b", "...", "d 3"}, got), "");
  EXPECT_EQ(mismatch({"c 2.50004"}, got), "");         // rounding in the last digit
  EXPECT_EQ(mismatch({"c 2.5100"}, got), "c 2.5100");  // a different number
  EXPECT_EQ(mismatch({"a 1.0000 b", "d 3"}, got),      // not consecutive without "...": the second line is named
            "d 3\n  (the output has there: c 2.5000)");
  EXPECT_EQ(mismatch({"d 3", "...", "a 1.0000 b"}, got), "a 1.0000 b");  // out of order
  // The line that differs is named, not the first of its run.
  EXPECT_EQ(mismatch({"a 1.0000 b", "c 2.5000", "d 4"}, got), "d 4\n  (the output has there: d 3)");
}

}  // namespace
}  // namespace ordo
