// ordo command line: shared helpers of the subcommands.
#pragma once

// A text is one whole argument: by default cxxopts splits a vector<string> value at commas.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include <ordo/ordo.h>

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

// Formats a float vector for people: "[0.1234, -0.5678, ...]" with the first `k` values.
std::string preview(const float* v, int n, int k = 8);

// Columns of UTF-8 text on screen: one per code point (continuation bytes 10xxxxxx take none, so the
// pieces' "▁the" is 4 wide, not 6).
int columns(const std::string& s);
// `s` padded with spaces to `width` columns (a longer `s` is left whole).
std::string pad_right(const std::string& s, int width);
// `s` cut or padded to exactly `width` columns.
std::string fit(const std::string& s, int width);

// --model and --threads, for the commands that run the encoder.
void add_model_options(cxxopts::Options& o);

// --model, --no-pe and one positional TEXT, for trace and attention; the_text() reads it.
void add_text_options(cxxopts::Options& o);
// One text: a plain string option, not a list, so that commas stay inside the text.
std::string the_text(const cxxopts::ParseResult& args, const char* command);

// A token × token table of attention weights: row t = query token, column u = key token.
void print_attention(const float* A, int L, int stride, const std::vector<std::string>& pieces);
// "t piece", cut or padded to the row-label width of print_attention.
std::string row_label(int t, const std::string& piece);
// Spaces as wide as a row label, above the labels.
std::string row_label_blank();

int cmd_encode(int argc, char** argv);
int cmd_compare(int argc, char** argv);
int cmd_pe(int argc, char** argv);
int cmd_init(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_trace(int argc, char** argv);
int cmd_attention(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_view(int argc, char** argv);

}  // namespace ordo::cli
