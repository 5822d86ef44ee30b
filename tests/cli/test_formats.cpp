// `ordo encode --format`: jsonl, tsv and npy hold the same floats; max pooling; --precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_util.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

using namespace test::cli;
const std::string kTexts = " " + quote("the cat sat on the mat") + " " + quote("a") + " " + quote("dogs bark");

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
    out.push_back(line.substr(start, tab - start));
  out.push_back(line.substr(start));
  return out;
}

// A .npy file read by the rules of its format (version 1.0), independently of the writer.
struct Npy {
  std::string header;
  size_t data_offset = 0;
  std::vector<float> values;
};

Npy parse_npy(const std::string& bytes) {
  Npy n;
  EXPECT_GE(bytes.size(), 10u);
  if (bytes.size() < 10) return n;
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(bytes[6], 1) << "major version";
  EXPECT_EQ(bytes[7], 0) << "minor version";
  const size_t len = size_t(uint8_t(bytes[8])) | size_t(uint8_t(bytes[9])) << 8;
  n.header = bytes.substr(10, len);
  n.data_offset = 10 + len;
  EXPECT_EQ(n.data_offset % 64, 0u) << "the data starts on a 64-byte boundary";
  EXPECT_EQ(n.header.back(), '\n');
  const size_t data = bytes.size() - std::min(bytes.size(), n.data_offset);
  EXPECT_EQ(data % 4, 0u);
  for (size_t i = 0; i + 4 <= data; i += 4) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + n.data_offset + i);
    const uint32_t bits = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    float f;
    std::memcpy(&f, &bits, 4);
    n.values.push_back(f);
  }
  return n;
}

std::string header_dict(size_t rows, size_t d) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " + std::to_string(d) +
         "), }";
}

// The header says (3, 64) little-endian float32 in C order, and the floats are the JSON output's,
// bit for bit (JSON prints the shortest decimal that reads back as the same float).
TEST(EncodeFormat, NpyHoldsTheJsonFloats) {
  test::TempDir dir;
  const std::string file = dir.path + "/out.npy";
  const auto r = run_ordo("encode --format npy --output " + file + kModel + kTexts);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "") << "the array goes to the file";
  const Npy n = parse_npy(test::read_file(file));
  EXPECT_EQ(n.header.substr(0, n.header.find_last_not_of(" \n") + 1), header_dict(3, 64));
  const auto lines = json_lines(run_ordo("encode --json" + kModel + kTexts).out);
  ASSERT_EQ(lines.size(), 3u);
  ASSERT_EQ(n.values.size(), 3u * 64);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 64; ++j)
      EXPECT_EQ(n.values[i * 64 + j], lines[i]["embedding"][j].get<float>()) << "text " << i << " dim " << j;

  // To stdout (a file here, not a terminal): the same bytes.
  const auto piped = run_ordo("encode --format npy" + kModel + kTexts);
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(piped.out, test::read_file(file));
}

// --pooling none: one row per token, the texts' tokens in input order.
TEST(EncodeFormat, NpyPerTokenRowsInInputOrder) {
  const auto r = run_ordo("encode --format npy --pooling none" + kModel + kTexts);
  ASSERT_EQ(r.status, 0) << r.err;
  const Npy n = parse_npy(r.out);
  const auto lines = json_lines(run_ordo("encode --json --pooling none" + kModel + kTexts).out);
  std::vector<float> expected;
  for (const json& j : lines)
    for (const json& row : j["hidden"])
      for (const json& v : row) expected.push_back(v.get<float>());
  EXPECT_EQ(n.header.substr(0, n.header.find_last_not_of(" \n") + 1), header_dict(expected.size() / 64, 64));
  EXPECT_EQ(n.values, expected);
}

// A text of no tokens keeps its row (NaN), so row i is still line i; none at all: shape (0, d).
TEST(EncodeFormat, NpyEmptyTextIsARowOfNan) {
  const auto r = run_ordo("encode --format npy" + kModel, "a\n\nb\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const Npy n = parse_npy(r.out);
  ASSERT_EQ(n.values.size(), 3u * 64);
  for (size_t j = 0; j < 64; ++j) {
    EXPECT_FALSE(std::isnan(n.values[j]));
    EXPECT_TRUE(std::isnan(n.values[64 + j]));
    EXPECT_FALSE(std::isnan(n.values[128 + j]));
  }
  const auto none = run_ordo("encode --format npy" + kModel, "");
  ASSERT_EQ(none.status, 0) << none.err;
  const Npy empty = parse_npy(none.out);
  EXPECT_EQ(empty.header.substr(0, empty.header.find_last_not_of(" \n") + 1), header_dict(0, 64));
  EXPECT_TRUE(empty.values.empty());
}

// A bad line: the array holds the texts before it (as the other formats print them), exit 2.
// An unwritable --output leaves no file and says why.
TEST(EncodeFormat, NpyBadLineAndBadOutput) {
  test::TempDir dir;
  const std::string file = dir.path + "/out.npy";
  const auto r = run_ordo("encode --format npy --output " + file + kModel, std::string("ok\nbad \xff\nmore\n"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: stdin: line 2: invalid UTF-8 at byte 4\n");
  EXPECT_NE(::access(file.c_str(), F_OK), 0) << "--output is written whole or not at all";

  const std::string nowhere = dir.path + "/no/such/dir/out.npy";
  const auto bad = run_ordo("encode --format npy --output " + nowhere + kModel + "hello");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err.rfind("error: " + nowhere + ": cannot write", 0), 0u) << bad.err;
  EXPECT_EQ(test::count_lines(bad.err), 1);
  EXPECT_NE(::access(nowhere.c_str(), F_OK), 0);
}

// tsv: one line per text (per token with --pooling none), the JSON floats tab-separated; with
// --precision N each value is printed with N digits after the point.
TEST(EncodeFormat, TsvHoldsTheJsonFloats) {
  const auto jl = json_lines(run_ordo("encode --json" + kModel + kTexts).out);
  const auto r = run_ordo("encode --format tsv" + kModel + kTexts);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = lines_of(r.out);
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto cells = split_tabs(rows[i]);
    ASSERT_EQ(cells.size(), 64u);
    for (size_t j = 0; j < 64; ++j)
      EXPECT_EQ(std::strtof(cells[j].c_str(), nullptr), jl[i]["embedding"][j].get<float>()) << i << " " << j;
  }

  const auto p3 = lines_of(run_ordo("encode --format tsv --precision 3" + kModel + kTexts).out);
  ASSERT_EQ(p3.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const auto cells = split_tabs(p3[i]);
    ASSERT_EQ(cells.size(), 64u);
    for (size_t j = 0; j < 64; ++j) {
      char want[64];
      std::snprintf(want, sizeof want, "%.3f", jl[i]["embedding"][j].get<float>());
      EXPECT_EQ(cells[j], want);
    }
  }

  const auto jn = json_lines(run_ordo("encode --json --pooling none" + kModel + kTexts).out);
  const auto tokens = lines_of(run_ordo("encode --format tsv --pooling none" + kModel + kTexts).out);
  size_t k = 0;
  for (const json& j : jn)
    for (const json& row : j["hidden"]) {
      ASSERT_LT(k, tokens.size());
      const auto cells = split_tabs(tokens[k++]);
      ASSERT_EQ(cells.size(), row.size());
      for (size_t c = 0; c < cells.size(); ++c) EXPECT_EQ(std::strtof(cells[c].c_str(), nullptr), row[c].get<float>());
    }
  EXPECT_EQ(k, tokens.size());

  // A text of no tokens: an empty line keeps line i for text i.
  EXPECT_EQ(lines_of(run_ordo("encode --format tsv" + kModel, "a\n\nb\n").out).at(1), "");
}

// --format jsonl is --json; text's --precision sets the digits of the preview and of |v|.
TEST(EncodeFormat, JsonlAliasAndTextPrecision) {
  EXPECT_EQ(run_ordo("encode --format jsonl" + kModel + kTexts).out, run_ordo("encode --json" + kModel + kTexts).out);
  const auto j = json::parse(run_ordo("encode --json" + kModel + "hello").out);
  const auto r = run_ordo("encode --precision 2" + kModel + "hello");
  ASSERT_EQ(r.status, 0) << r.err;
  std::string want = "mean-pooled, d=64: [";
  double sq = 0;
  for (size_t i = 0; i < 64; ++i) {
    const float v = j["embedding"][i].get<float>();
    sq += double(v) * v;
    if (i >= 8) continue;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%6.2f", i ? ", " : "", v);
    want += buf;
  }
  char norm[32];
  std::snprintf(norm, sizeof norm, ", ...]  |v| = %.2f", std::sqrt(sq));
  EXPECT_NE(r.out.find(want + norm), std::string::npos) << r.out << "\nwanted: " << want << norm;
  EXPECT_NE(run_ordo("encode" + kModel + "hello").out.find("|v| = "), std::string::npos);
}

// --pooling max: each dimension's largest value over the text's per-token rows.
TEST(EncodeFormat, MaxPoolingIsTheColumnMaximum) {
  const auto rows = json_lines(run_ordo("encode --json --pooling none" + kModel + kTexts).out);
  const auto maxed = json_lines(run_ordo("encode --json --pooling max" + kModel + kTexts).out);
  ASSERT_EQ(rows.size(), 3u);
  ASSERT_EQ(maxed.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(maxed[i]["embedding"].size(), 64u);
    for (size_t j = 0; j < 64; ++j) {
      float m = -INFINITY;
      for (const json& row : rows[i]["hidden"]) m = std::max(m, row[j].get<float>());
      EXPECT_EQ(maxed[i]["embedding"][j].get<float>(), m) << i << " " << j;
    }
  }
  EXPECT_NE(run_ordo("encode --pooling max" + kModel + "hello").out.find("max-pooled, d=64"), std::string::npos);
}

void expect_usage_error(const test::Run& r, const std::string& must_mention) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(must_mention), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(EncodeFormat, UsageErrors) {
  expect_usage_error(run_ordo("encode --format csv" + kModel + "x"), "--format must be text, jsonl, npy or tsv");
  expect_usage_error(run_ordo("encode --json --format tsv" + kModel + "x"), "--json");
  expect_usage_error(run_ordo("encode --format jsonl --precision 3" + kModel + "x"), "--precision");
  expect_usage_error(run_ordo("encode --precision -1" + kModel + "x"), "--precision must be in 0 ..");
  expect_usage_error(run_ordo("encode --output x.npy" + kModel + "x"), "--output is for --format npy");
  expect_usage_error(run_ordo("encode --pooling maximum" + kModel + "x"),
                     "--pooling must be mean, first, max, mean-sqrt-len, weighted-mean, last or none");
  const auto help = run_ordo("encode --help");
  EXPECT_NE(help.out.find("stderr is a terminal"), std::string::npos) << "the progress display is documented";
  EXPECT_NE(help.out.find("(total tokens, d)"), std::string::npos);
}

// The human output counts unknown pieces, only where there are some (a tokenizer without byte
// fallback: 日本 is one unknown piece).
TEST(EncodeFormat, UnknownPiecesCounted) {
  const std::string tiny = std::string(" --model ") + ORDO_SOURCE_DIR + "/tests/corpus/odd/bos_eos ";
  const auto r = run_ordo("encode" + tiny + quote("the cat \xE6\x97\xA5\xE6\x9C\xAC"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("(1 unknown piece)"), std::string::npos) << r.out;
  const auto known = run_ordo("encode" + tiny + quote("the cat"));
  EXPECT_EQ(known.out.find("unknown"), std::string::npos) << known.out;
}

}  // namespace
}  // namespace ordo
