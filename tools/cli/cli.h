// ordo command line: shared helpers of the subcommands.
#pragma once

// A text is one whole argument: by default cxxopts splits a vector<string> value at commas.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <ordo/ordo.h>

#include <cxxopts.hpp>
#include <stdexcept>
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

// Columns of UTF-8 text on screen: one per code point (continuation bytes 10xxxxxx take none, so the
// pieces' "▁the" is 4 wide, not 6).
int columns(const std::string& s);
// `s` padded with spaces to `width` columns (a longer `s` is left whole).
std::string pad_right(const std::string& s, int width);
// `s` cut or padded to exactly `width` columns.
std::string fit(const std::string& s, int width);

// A text too long for this machine's memory (the attention scores alone are S² floats) is refused
// by name here rather than by the encoder (or the out-of-memory killer) later.
void check_fits(Pipeline& pipeline, const Tokenization& t, const std::string& where);
// check_fits, and a text past a learned position table refused by name (fill, score, compare).
void check_runnable(Pipeline& pipeline, const Tokenization& t, const std::string& where, bool positions);

// --model and --threads, for the commands that run the encoder.
void add_model_options(cxxopts::Options& o);

// --model, --no-pe and one positional TEXT, for trace and attention; the_text() reads it.
void add_text_options(cxxopts::Options& o);
// One text: a plain string option, not a list, so that commas stay inside the text.
std::string the_text(const cxxopts::ParseResult& args, const char* command);

// --vmin and --vmax: the ends of a picture's colour scale. scale() replaces *vmin and *vmax (the
// command's defaults) with those given, and refuses a scale that is empty or not finite.
void add_scale_options(cxxopts::Options& o);
void scale(const cxxopts::ParseResult& args, double* vmin, double* vmax);

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
int cmd_fill(int argc, char** argv);
int cmd_score(int argc, char** argv);
int cmd_eval(int argc, char** argv);

}  // namespace ordo::cli
