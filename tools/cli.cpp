#include "tools/cli.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/errors.h"
#include "tools/ordo.h"

namespace ordo::cli {

bool parse(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result) {
  options.add_options("help")("h,help", "show this help");
  result = options.parse(argc, argv);
  if (result.count("help")) {
    std::cout << options.help();
    return false;
  }
  return true;
}

std::string model_dir(const cxxopts::ParseResult& args) {
  if (args.count("model")) return args["model"].as<std::string>();
  const std::string dir = default_model_dir();
  if (dir.empty()) throw UsageError("no model found: pass --model DIR or set ORDO_MODEL");
  return dir;
}

namespace {

void split_lines(const std::string& all, const std::string& name, std::vector<std::string>& texts,
                 std::vector<std::string>* where) {
  size_t start = 0, line = 1;
  if (all.compare(0, 3, "\xEF\xBB\xBF") == 0) start = 3;  // UTF-8 byte-order mark
  while (start < all.size()) {
    size_t end = all.find('\n', start);
    if (end == std::string::npos) end = all.size();
    std::string text = all.substr(start, end - start);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    const std::string at = name + ": line " + std::to_string(line);
    if (text.find('\0') != std::string::npos)
      throw InputError(at, "holds a NUL byte (binary data, not text)");
    texts.push_back(std::move(text));
    if (where) where->push_back(at);
    start = end + 1;
    ++line;
  }
}

}  // namespace

std::vector<std::string> read_texts(const cxxopts::ParseResult& args, std::vector<std::string>* where) {
  std::vector<std::string> texts;
  if (args.count("texts")) {
    texts = args["texts"].as<std::vector<std::string>>();
    if (where)
      for (size_t i = 0; i < texts.size(); ++i) where->push_back("argument " + std::to_string(i + 1));
    return texts;
  }
  std::string name = "stdin";
  std::ostringstream all;
  if (args.count("input") && args["input"].as<std::string>() != "-") {
    name = args["input"].as<std::string>();
    std::ifstream in(name, std::ios::binary);
    if (!in) throw InputError(name, "cannot open");
    all << in.rdbuf();
    if (in.bad()) throw InputError(name, "cannot read");
  } else {
    all << std::cin.rdbuf();
  }
  split_lines(all.str(), name, texts, where);
  return texts;
}

std::string preview(const float* v, int n, int k) {
  std::string s = "[";
  char buf[32];
  for (int i = 0; i < std::min(n, k); ++i) {
    std::snprintf(buf, sizeof buf, "%s%8.4f", i ? ", " : "", v[i]);
    s += buf;
  }
  return s + (n > k ? ", ...]" : "]");
}

}  // namespace ordo::cli
