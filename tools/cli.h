// ordo command line: shared helpers of the subcommands.
#pragma once

// A text is one whole argument: by default cxxopts splits a vector<string> value at commas.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>
#include <string>
#include <vector>

namespace ordo::cli {

// A usage mistake: printed as "error: ordo <command>: <message>", exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses argv for `command`; prints help and returns false when --help was asked for.
bool parse(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result);

// The model directory: --model if given, else the default one.
std::string model_dir(const cxxopts::ParseResult& args);

// Texts from positional arguments, else lines of --input FILE or of stdin. A UTF-8 BOM at
// the start and a CR before each newline are dropped.
std::vector<std::string> read_texts(const cxxopts::ParseResult& args, std::vector<std::string>* where);

// The lines of a text file: a leading UTF-8 BOM and a CR before each newline are dropped; a NUL
// byte is an InputError naming `name` and the line. `where` receives "<name>: line N" for each.
std::vector<std::string> split_lines(const std::string& all, const std::string& name, std::vector<std::string>* where);

// Formats a float vector for people: "[0.1234, -0.5678, ...]" with the first `k` values.
std::string preview(const float* v, int n, int k = 8);

int cmd_encode(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_pe(int argc, char** argv);
int cmd_init(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_trace(int argc, char** argv);
int cmd_attention(int argc, char** argv);
int cmd_bench(int argc, char** argv);

}  // namespace ordo::cli
