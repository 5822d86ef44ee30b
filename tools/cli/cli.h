// ordo command line: shared helpers of the subcommands.
#pragma once

// A text is one whole argument: by default cxxopts splits a vector<string> value at commas.
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cstdio>
#include <cxxopts.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ordo/ordo.h>

namespace ordo::cli {

// A usage mistake: printed as "error: ordo <command>: <message>", exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses argv for `command`; prints help and returns false when --help was asked for.
bool parse(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result);
// parse() for a command whose positional arguments are texts ("texts", shown as `usage`). A
// command that also has --input refuses texts and --input together.
bool parse_with_texts(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result,
                      const char* usage = "[TEXT ...]");
// For a command of options only: a word that is none (`ordo info models/x`) is a UsageError, not
// ignored. `hint` says what was probably meant, with the word as WORD: "--model WORD".
void refuse_stray_arguments(const cxxopts::ParseResult& args, const std::string& hint);

// The model directory: --model if given, else the default one.
std::string model_dir(const cxxopts::ParseResult& args);

// --input FILE (- for stdin), opened for reading and closed when it goes.
class InputFile {
 public:
  explicit InputFile(const std::string& path);  // throws InputError naming the file
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  std::FILE* get() const { return f_; }
  const std::string& name() const { return name_; }  // the path, or "stdin"

 private:
  std::string name_;
  std::FILE* f_ = nullptr;
};

// --input-format lines|jsonl|nul, for a command with --input: how the input holds its texts.
//   lines  one text per line (the default)
//   jsonl  one JSON object per line, its text under "text" ({"text": "two\nlines"}), as Python's lists
//          and the server's JSON can hold texts with newlines
//   nul    texts ended by a NUL byte (find -print0, xargs -0), newlines and all
void add_input_format_option(cxxopts::Options& options);

// Where a command's texts come from: its arguments, or the lines of --input FILE (- or no --input:
// stdin), read one at a time by LineReader, so input of any length is read in bounded memory (or,
// with --input-format, its JSON lines or NUL-ended records; a record that is not a text is named
// by line->problem, "<file>: line N" or "<file>: record N").
class TextSource {
 public:
  TextSource(const cxxopts::ParseResult& args, size_t keep);
  bool next(LineReader::Line* line);  // false at the end
  // next() for a command that takes every text whole: a line that is not text (line->problem) or
  // longer than `keep` bytes is an InputError naming it.
  bool next_text(LineReader::Line* line);
  // What names the input in a summary: the file, or "arguments".
  std::string name() const { return file_ ? file_->name() : "arguments"; }
  // True when the next text has not arrived yet (a pipe or a terminal whose writer has not written
  // it): a command answers the texts it has before it waits, so a line comes out per line in.
  bool would_wait() const;
  // The input's size in bytes when it is a regular file (for progress), else 0; and the bytes read
  // so far, newlines included.
  uint64_t total_bytes() const { return total_bytes_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  enum class Format { Lines, Jsonl, Nul };
  bool next_record(LineReader::Line* line);  // --input-format nul
  std::vector<std::string> args_;
  size_t next_arg_ = 0;
  size_t keep_;
  Format format_ = Format::Lines;
  uint64_t records_ = 0;
  uint64_t total_bytes_ = 0, bytes_read_ = 0;
  std::unique_ptr<InputFile> file_;
  std::unique_ptr<LineReader> reader_;
};

// Every text of a TextSource, for a command that needs them all at once (ordo eval): a line of
// more than max_bytes, or with a NUL byte, is an InputError naming it. `where`, if given, gets
// each text's "argument N" or "<file>: line N".
std::vector<std::string> read_texts(const cxxopts::ParseResult& args, size_t max_bytes,
                                    std::vector<std::string>* where = nullptr);

// The length of the texts the model in `model_dir` was trained on, in pieces (training.json's
// "max_len", written by tools/train/train_mlm.py); 0 when the directory does not record it. Read as the
// model's own files are (at most 16 MB, a regular file), as the overload below reads each directory's.
int training_length(const std::string& model_dir);

// A message on one line: control characters (from a file name or a text) escaped as \xNN, and so
// are the bytes of `also` (the server's log escapes spaces and backslashes too).
std::string one_line(const std::string& message, std::string_view also = "");

// "1 piece", "2 pieces": a count with its noun in the right number.
std::string count(long long n, const std::string& one, const std::string& many);

// Formats a float vector for people: "[0.1234, -0.5678, ...]" with the first `k` values, each
// with `precision` digits after the point.
std::string preview(const float* v, int n, int k = 8, int precision = 4);

// Columns of UTF-8 text on a terminal: one per code point ("▁the" is 4 wide, not 6 bytes), two for
// East Asian wide characters (日本語 is 6), none for combining marks.
int columns(const std::string& s);
int display_width(char32_t code_point);
// `s` padded with spaces to `width` columns (a longer `s` is left whole).
std::string pad_right(const std::string& s, int width);
// `s` cut or padded to exactly `width` columns.
std::string fit(const std::string& s, int width);

// --model and --threads, for the commands that run the encoder.
void add_model_options(cxxopts::Options& o);
// A numeric option, checked the one way every command checks them: a value outside lo .. hi
// (or not finite) is UsageError("--NAME must be in LO .. HI<note>, got V").
int int_option(const cxxopts::ParseResult& args, const std::string& name, int lo, int hi, const char* note = "");
double number_option(const cxxopts::ParseResult& args, const std::string& name, double lo, double hi,
                     const char* note = "");
// The text rules (kMaxCount, kScoreMaxPieces, max_text_bytes, TextLimits, Pipeline::prepare and
// check_runnable) are the library's, in <ordo/ordo.h>: the server and Python share them.

// The value of --threads, checked: 0 (one per core) .. kMaxThreads (<ordo/ordo.h>).
int threads_option(const cxxopts::ParseResult& args);

// --compute-type f32|bf16|int8 (in add_model_options and text_command_options; bench and eval add it
// themselves). compute_type_option() checks it — a name not known, or bf16/int8 in a build without
// oneDNN, is a UsageError (the library's compute_type_from_name) — before the model loads;
// Pipeline::set_compute_type then applies it.
void add_compute_type_option(cxxopts::Options& o);
ComputeType compute_type_option(const cxxopts::ParseResult& args);

// --mask-head L,H (repeatable; attention, trace, score, eval, fill): heads switched off, their A·v
// zeros in the concatenation (Pipeline::set_masked_heads). mask_heads() reads and checks the values
// ("L,H", two integers) before the model loads; apply_mask_heads() sets them on a loaded model,
// a head it does not have being a UsageError naming the model's layers and heads.
void add_mask_head_option(cxxopts::Options& o);
std::vector<HeadIndex> mask_heads(const cxxopts::ParseResult& args);
void apply_mask_heads(Pipeline& pipeline, const std::vector<HeadIndex>& heads);
// The model --model names, with --compute-type and --mask-head applied (both read and checked
// before it loads, so a wrong value costs no load): what every command that runs the model starts with.
Pipeline load_pipeline(const cxxopts::ParseResult& args);
// "layer 1 head 1, layer 0 head 3" for a report's first line; "" for none.
std::string masked_heads_text(const std::vector<HeadIndex>& heads);

// The length the models were trained at, as their training.json says ("max_len", written by
// tools/train/train_mlm.py); 0 when none says or they disagree.
int training_length(const std::vector<std::string>& dirs);

// The options of `ordo <command>` for a command of one text (trace, attention, fill): --model,
// --no-pe, --compute-type and the positional TEXT come first, the command adds its own after them;
// the_text() reads the text.
cxxopts::Options text_command_options(const std::string& command, const std::string& description);
// One text: a plain string option, not a list, so that commas stay inside the text.
std::string the_text(const cxxopts::ParseResult& args, const char* command);

// --vmin and --vmax: the ends of a picture's colour scale. scale() replaces *vmin and *vmax (the
// command's defaults) with those given, and refuses a scale that is empty or not finite.
void add_scale_options(cxxopts::Options& o);
void scale(const cxxopts::ParseResult& args, double* vmin, double* vmax);

// A token × token table of attention weights: row t = query token, column u = key token.
void print_attention(const float* A, int L, int stride, const std::vector<std::string>& pieces);
// The same table with numbers `width` wide and `precision` decimals (scores of any sign and size).
void print_token_table(const float* A, int L, int stride, const std::vector<std::string>& pieces, int width,
                       int precision);
// "t piece", cut or padded to the row-label width of print_attention.
std::string row_label(int t, const std::string& piece);
// Spaces as wide as a row label, above the labels.
std::string row_label_blank();

// Each subcommand's main(): `ordo <name> ...` with argc and argv from the name on; returns the exit status.
using CommandMain = int(int argc, char** argv);
CommandMain cmd_encode, cmd_tokenize, cmd_compare, cmd_pe, cmd_init, cmd_info, cmd_trace, cmd_attention, cmd_fill,
    cmd_score, cmd_bench, cmd_view, cmd_eval;

}  // namespace ordo::cli
