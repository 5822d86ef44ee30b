// ordo: the one place where text meets the engine.
//
//   #include <ordo/ordo.h>
//   ordo::Pipeline pipeline(ordo::default_model_dir());
//   auto out = pipeline.encode({"the cat sat on the mat"}, ordo::Pooling::Mean);
//   // out[0].tokens.pieces, out[0].values: d floats
//
// With a masked-language-model head (config.json "head": "mlm"):
//   auto f = pipeline.fill("the cat sat on the <mask>.", 5);   // f.masks[0].top[0].piece, .prob
//   auto s = pipeline.score({"the cat sat on the mat."});      // s[0].pll, s[0].log_probs
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ordo/compute_type.h>
#include <ordo/config.h>
#include <ordo/errors.h>
#include <ordo/threads.h>
#include <ordo/tokenizer/tokenizer.h>
#include <ordo/trace.h>

namespace ordo {

// The model used when none is named: $ORDO_MODEL; else models/default beside the running
// binary (a build tree); else ../share/ordo/models/default from it (an installed `ordo`); else
// `installed`, which a program built against an installed ordo gets from find_package(ordo) (the
// installation's place, even if moved), or else from <ordo/installed.h>, which `cmake --install`
// writes with the model directory of the prefix it installed to (pkg-config and plain -I builds);
// else the model directory of an installation at the prefix the library was configured with, if it
// exists; else "".
#ifndef ORDO_INSTALLED_MODEL_DIR
#if __has_include(<ordo/installed.h>)
#include <ordo/installed.h>
#else
#define ORDO_INSTALLED_MODEL_DIR ""
#endif
#endif
std::string default_model_dir(const std::string& installed = ORDO_INSTALLED_MODEL_DIR);

// The version, "0.1.0": the CMake project's VERSION, the one place it is written. `ordo --version`,
// `ordo.__version__` and the server's GET /health say it.
const char* version();

// How a text's rows of hidden states (L, d) become its result (t counts the tokens from 0):
//   Mean:         v = (1/L)·Σ_t h_t                       (d)
//   First:        v = h_0                                 (d)
//   Max:          v_j = max_t h_t,j                       (d; each dimension on its own)
//   MeanSqrtLen:  v = (1/√L)·Σ_t h_t                      (d; sentence-transformers' mean_sqrt_len_tokens)
//   WeightedMean: v = Σ_t (t+1)·h_t / Σ_t (t+1)           (d; weightedmean_tokens: later tokens weigh more)
//   Last:         v = h_(L−1)                             (d; lasttoken)
//   None:         the rows themselves (L, d)
// A text of no tokens pools to zeros, or to no rows (None).
enum class Pooling { Mean, First, None, Max, MeanSqrtLen, WeightedMean, Last };
std::vector<float> pool(const float* rows /* (L, d) */, int L, int d, Pooling pooling);
// "mean", "first", "max", "mean-sqrt-len", "weighted-mean", "last" or "none" as a Pooling; false (and *out
// unchanged) for any other name. pooling_names(): those names, "mean, first, ... or none", for messages.
bool pooling_from_name(const std::string& name, Pooling* out);
const char* pooling_names();
const char* pooling_name(Pooling pooling);  // the name pooling_from_name reads

// The lines of a text stream, one at a time, so that input of any length is read in bounded
// memory: a UTF-8 BOM at the start and a CR before each newline are dropped, a UTF-16 BOM is an
// InputError (the whole stream is in another encoding), a read error too. A line is kept up to
// `keep` + 4 bytes (enough to finish a UTF-8 character cut at `keep`); the rest is counted and
// checked, not kept, as far as the bytes already read go: a line that goes on past them is returned
// at once, not `whole`, and skipped to its end by the next call (so an endless line without a
// newline, /dev/zero, is refused as soon as it is too long instead of being read for ever).
class LineReader {
 public:
  LineReader(std::FILE* in, std::string name, size_t keep);
  struct Line {
    std::string text;     // the line, or its first keep + 4 bytes
    uint64_t bytes = 0;   // the whole line's length, without newline and CR (when `whole`)
    bool whole = true;    // false: the line is longer than keep + 4 and goes on past `bytes`
    std::string where;    // "<name>: line N"
    std::string problem;  // what makes the line unusable (a NUL byte), or empty
  };
  // False at the end of the input. A read returns what has arrived (a pipe's line as soon as it is
  // written), so a caller can answer each line before the next one comes.
  bool next(Line* line);
  const std::string& name() const { return name_; }
  // Whether bytes already read wait in the buffer (next() may then not need to wait for input).
  bool buffered() const { return pos_ < end_; }

 private:
  bool fill();
  std::FILE* in_;
  std::string name_;
  size_t keep_;
  uint64_t number_ = 0;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  bool eof_ = false;
  bool rest_of_line_ = false;  // the last line was returned before its end
};

// The lines of a text held whole, one text each, by the rules of LineReader; a NUL byte is an
// InputError naming the line. `where`, if given, receives "<name>: line N" for each text.
std::vector<std::string> split_lines(const std::string& all, const std::string& name,
                                     std::vector<std::string>* where = nullptr);

struct Encoded {
  Tokenization tokens;
  int rows = 0;               // 1 when pooled, else the number of tokens
  std::vector<float> values;  // (rows, d)
};

// One row of a batch: position `position` of sequence `sequence`.
struct Row {
  int sequence = 0;
  int position = 0;
};

// One candidate for a masked piece: p = softmax(logits)[id].
struct Guess {
  int32_t id = 0;
  std::string piece;
  double prob = 0.0;
};

// `ordo fill`: the text's pieces (each <mask> one piece, its id the mask id) and, for each mask
// in order, the top_k pieces by probability (highest first; ties by lower id).
struct Filled {
  struct Mask {
    int position = 0;  // index into tokens.pieces
    std::vector<Guess> top;
    std::vector<float> logits;  // (V): the head's raw output there, p = softmax(logits)
  };
  Tokenization tokens;
  std::vector<Mask> masks;
};

// `ordo score`: a text's pseudo-log-likelihood. log_probs[t] = log p(piece t | the text with
// piece t replaced by <mask>), natural log, one per piece (0 for the BOS/EOS a config adds:
// those are context, not scored); pll = Σ_t log_probs[t] (≤ 0; higher = more natural to the model).
struct Scored {
  Tokenization tokens;
  double pll = 0.0;
  std::vector<double> log_probs;
};

// The top k of one row of logits (n values) as ids and probabilities, highest first (ties: lower
// id first). Probabilities are softmax over all n, in double.
std::vector<std::pair<int32_t, double>> top_k(const float* logits, int n, int k);

// ---- The rules a text meets on its way in ------------------------------------------------------
// One definition for every client: the command line (tools/cli), the server (tools/serve) and
// Python (python/) call these, so the same text gets the same answer and the same message from
// each. A new rule on texts (a bound, a check) goes into Pipeline::prepare and reaches all three.

// The largest count a caller may ask for: pieces, dims, positions, top-k, texts in a batch (and
// the bound on vocab_size and d_model).
constexpr int kMaxCount = 1 << 24;

// The longest text scored by default (ordo score, POST /score, Model.score), and compared at all
// (ordo compare), in pieces. A text of S pieces is S masked copies of S pieces, so its cost grows
// with S³ (S passes, each with S² attention scores): 510 pieces took 1.3 s on a 2-core machine,
// 1,000 took 7.3 s.
constexpr int kScoreMaxPieces = 512;

// The longest text encoded by default, in tokens (the model's or this machine's limit may be lower).
constexpr int kDefaultMaxTokens = 8192;

// The most threads a caller may ask set_num_threads for (0: one per core).
constexpr int kMaxThreads = 1024;

// Bytes of one text that may go to the tokenizer, for a limit of max_tokens: 256 per token (a
// piece is at most 16 characters of up to 4 bytes, with room for runs of spaces), and at most
// 1/256 of this machine's memory (tokenizing takes ~70 bytes of memory per byte of text).
size_t max_text_bytes(int max_tokens);

// The longest prefix of at most n bytes of s that does not split a UTF-8 character.
size_t utf8_prefix(std::string_view s, size_t n);

// What every client says of a text of no tokens (an empty line): it is encoded, to no vector.
constexpr const char* kNoTokens = "the text has no tokens, so it has no vector";

// The limit on one text and what happens past it (Pipeline::prepare). The messages name the
// caller's own options, spelled its way: the defaults are Python's keywords; the command line
// passes "--max-tokens " and "add --truncate", the server "--max-tokens " and "set \"truncate\": true".
struct TextLimits {
  int max_tokens = kDefaultMaxTokens;  // the caller's limit; the model's or this machine's may be lower
  bool truncate = false;               // cut a longer text to the limit instead of refusing it
  std::string max_tokens_name = "max_tokens=";
  std::string truncate_hint = "pass truncate=True";  // empty: the caller has no truncation to offer
};

// A compute type by name, checked before a model loads: "f32", "bf16" or "int8", the last two
// only in a build with oneDNN, and bf16 only where a kernel runs it. Otherwise
// std::invalid_argument: `<option> must be f32, bf16 or int8, got "x"`, `<option> int8: this build
// has no oneDNN (install libdnnl-dev)`, or `<option> bf16: needs a CPU with AVX2 and FMA, or with
// AVX-512 (...)`.
ComputeType compute_type_from_name(const std::string& name, const std::string& option = "compute_type");

// ---- Process start-up -----------------------------------------------------------------------------
// OpenBLAS starts its worker threads when it is loaded, before main, and each maps a 128 MiB buffer
// as it starts, retrying for ever when the mapping fails (blas_memory_alloc in OpenBLAS 0.3.21's
// memory.c); the exit then waits for them. Under a memory limit (ulimit -v, ulimit -d) that was a
// process that printed its result and never ended. ordo's own threads do the work (OpenBLAS is set
// to one thread before its first product), so its workers are not needed, but only the environment
// at load time keeps them from starting (a variable set by this process comes too late). So:
//   true when this process runs under an address-space or data limit (the case that hangs);
bool under_memory_limit();
//   and, called first thing in main(argc, argv): in a process under such a limit whose OpenBLAS
//   has workers, runs the program again (/proc/self/exe, the same argv) with OPENBLAS_NUM_THREADS=1,
//   the user's value passed on and put back in the second start (for `ordo bench` to report);
//   elsewhere it returns at once. `ordo` and `ordo serve` call it; `import ordo` sets
//   OPENBLAS_NUM_THREADS=1 itself under such a limit before the library loads (python/ordo/__init__.py).
void start_without_openblas_workers(char** argv);

// The thread counts the libraries below ordo read as they load: OpenMP's (OMP_NUM_THREADS,
// OMP_THREAD_LIMIT; oneDNN runs on libgomp) and OpenBLAS's (OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS).
// A value that is not a whole number from 1 (OMP_NUM_THREADS: a list of them, "4,2"; OpenBLAS's may
// also be empty, which it reads as unset) is a mistake that libgomp answers with its own warning
// and OpenBLAS ignores in silence; ordo answers it with one line and exit 2. The check runs before
// any library is initialized (`ordo`: a preinit function, tools/cli/preinit.cpp; `import ordo`: the
// same rule in python/ordo/__init__.py, held to this one by tests/python/module/test_behaviour.py),
// so it allocates nothing and reads `envp` (main's third argument). Returns the first bad
// "NAME=value" entry of envp, or null when all are good or unset.
const char* bad_thread_variable(char* const* envp);
//   and the line for it, "error: NAME=value: must be a whole number from 1 (or unset it)", as for
//   ORDO_ISA, into buf (at most n bytes, always terminated): the words `ordo` and `import ordo` say.
void thread_variable_message(const char* entry, char* buf, unsigned long n);

// Threads. A Pipeline (and an Encoder) may be shared by any number of threads: encode() and
// tokenize() may run at the same time from several threads on one Pipeline, and each call gets
// exactly what it would get alone. Every forward pass has its own working memory (kept in a small
// list of idle ones under a mutex, so a thread's next call reuses it). The passes running at once
// share the engine's threads, which take their matrix jobs in turn: several threads encoding
// together are correct, not faster than one.
//
// set_num_threads(n) (<ordo/threads.h>) is process-wide and may be called at any time from any thread:
// it waits until the passes then running have ended (each keeps the thread count it started with)
// and passes that start meanwhile wait for the new count. Calling it from inside an observe
// callback would wait for itself, so it throws std::logic_error there.
// A pass whose activations are not finite (finite weights too large for float32 arithmetic).
// what(): "<model>/model.safetensors: texts[i]: <the message>"; `sequence` is i, the index in the
// call, for a caller that names its texts its own way (a line of a file).
struct NonFiniteActivations : InputError {
  NonFiniteActivations(const std::string& file, const std::string& what, size_t sequence, const std::string& message)
      : InputError(file, what + "[" + std::to_string(sequence) + "]: " + message),
        file(file),
        sequence(sequence),
        message(message) {}
  std::string file;
  size_t sequence;
  std::string message;  // "the activations are not finite (...); the first value that is not is in layer 0, ..."
};

class Model;  // the weights (engine/model.h, not installed)

class Pipeline {
 public:
  // Loads dir/config.json, dir/model.safetensors and the tokenizer the config names, and checks
  // that they fit together. Throws InputError naming the file at fault.
  explicit Pipeline(const std::string& model_dir);
  // A Pipeline moves (the model, the tokenizer and the encoder's working memory stay where they
  // are, behind one pointer) but does not copy. A moved-from Pipeline may only be destroyed or
  // assigned to.
  Pipeline(Pipeline&&) noexcept;
  Pipeline& operator=(Pipeline&&) noexcept;
  ~Pipeline();

  // Pieces and ids of one text, with BOS/EOS when the config asks for them. `spans`, if given,
  // receives each piece's bytes in `text` (Span, tokenizer.h): BOS is [0, 0), EOS [n, n).
  Tokenization tokenize(std::string_view text, const std::string& where = "input",
                        std::vector<Span>* spans = nullptr) const;
  // How many of t's pieces are the tokenizer's unknown piece (<unk>).
  int unknown_pieces(const Tokenization& t) const;

  // The most tokens one text can have with this model on this machine: the model's learned
  // position table (max_positions) where it has one, and the working memory of the text's
  // forward pass (the attention scores alone are S² floats) within half of this machine's memory.
  int max_tokens() const;
  // What sets max_tokens(), for messages: "the model's max_positions 512" or
  // "this machine's memory (a text of at most 46341 tokens)".
  std::string max_tokens_reason() const;
  // t cut to its first n tokens (n ≥ 1). When the config adds EOS, the last token is EOS again,
  // so the cut text still ends the way the model expects.
  void truncate(Tokenization& t, int n) const;

  // The token limit in force under `limits`: limits.max_tokens, or max_tokens() where that is less.
  int token_limit(const TextLimits& limits) const { return std::min(limits.max_tokens, max_tokens()); }
  // The bytes of one text that may go to the tokenizer under `limits`: max_text_bytes(token_limit).
  size_t byte_limit(const TextLimits& limits) const { return max_text_bytes(token_limit(limits)); }
  // One text's tokens as they will be encoded, by the rules every client shares. A text of more
  // than byte_limit bytes or token_limit tokens is an InputError(where) naming the limit and how
  // to get past it; with limits.truncate it is cut instead (before the UTF-8 character that
  // crosses byte_limit, then to token_limit tokens, EOS kept) and *truncated says so. Invalid
  // UTF-8 is an InputError naming its byte. `bytes`: the whole text's length when `text` holds
  // only its first part (a line read in bounded memory, LineReader); 0: text.size(). masked: the
  // text's "<mask>" markers are mask pieces (tokenize_masked; such a text is never truncated).
  // whole = false: `bytes` are only those read so far of a line that goes on (Line::whole), "at least".
  Tokenization prepare(std::string_view text, const std::string& where, const TextLimits& limits,
                       bool* truncated = nullptr, uint64_t bytes = 0, bool masked = false, bool whole = true) const;
  // A text longer than this model can run on this machine (max_tokens()) is refused by name
  // before the encoder runs: InputError(where, "text has N tokens, more than <reason> allows").
  void check_runnable(const Tokenization& t, const std::string& where) const;
  // check_runnable, and a text of more than max_pieces pieces (kScoreMaxPieces by default) is
  // refused for scoring, whose cost grows with S³; `option` names the limit the caller's way
  // ("--max-tokens ", "max_tokens=").
  void check_scorable(const Tokenization& t, const std::string& where, int max_pieces, const std::string& option) const;

  // Texts → vectors. Many texts run as the command line runs them, in batches of similar lengths
  // (encode_sorted, below: no short text padded to the longest one's length), each result in its
  // text's place; with options.observe set, as one padded batch, so that the
  // stages shown are those of the texts in the order given. An error in one text names it by its
  // index: "texts[2]: ...".
  std::vector<Encoded> encode(const std::vector<std::string>& texts, Pooling pooling, bool normalize = false,
                              const EncodeOptions& options = {});
  // The same from tokenizations already made, always as one padded batch.
  // A pooled vector (any pooling but None) goes through the model's Dense modules (Config::dense:
  // v' = act(v·Wᵀ + b), each in turn) before `normalize` scales it to unit length.
  std::vector<Encoded> encode(std::vector<Tokenization> tokens, Pooling pooling, bool normalize = false,
                              const EncodeOptions& options = {});
  // What encode does when its caller says nothing: the model's own pooling (a sentence-transformers
  // directory's Pooling module), else Mean; and its own normalization (a Normalize module).
  Pooling model_pooling() const;
  bool model_normalize() const { return config().normalize; }
  // The numbers in one row of encode's result with `pooling`: None's rows are hidden states (d_model);
  // a pooled vector has the last Dense module's out_features where the model has one, else d_model.
  int width(Pooling pooling) const;
  // Many tokenized texts in batches of similar lengths: sorted by length (stably), each batch at most
  // `max_texts` texts and kBatchTokens padded tokens (or one text, however long). take(i, result)
  // gets text i's result, batch by batch. A text whose activations are not finite is an InputError
  // named by name(i): "<model>/model.safetensors: <name(i)>: <message>".
  // The one batching policy of every client (each may pass its own max_texts): 64 texts, measured
  // against 32 .. 1024 on the default model and the paper's base encoder (docs/performance.md,
  // "Texts per pass"), and 8192 padded tokens.
  static constexpr size_t kBatchTokens = 8192;
  static constexpr size_t kBatchTexts = 64;
  void encode_sorted(std::vector<Tokenization> tokens, Pooling pooling, bool normalize, const EncodeOptions& options,
                     size_t max_texts, const std::function<std::string(size_t)>& name,
                     const std::function<void(size_t, Encoded&)>& take);
  // Texts written in place, encode({"a", "b"}, ...): without this, two string literals also fit
  // std::vector<Tokenization>'s (first, last) constructor, and the call would be ambiguous.
  std::vector<Encoded> encode(std::initializer_list<std::string> texts, Pooling pooling, bool normalize = false,
                              const EncodeOptions& options = {}) {
    return encode(std::vector<std::string>(texts), pooling, normalize, options);
  }

  // ---- The masked-language-model head ------------------------------------------------------
  // logits_t = h_t·Eᵀ + b (engine/head.h): ordo's own head ("head": "mlm" in config.json), or a
  // Hugging Face checkpoint's (BertForMaskedLM, XLMRobertaForMaskedLM), found by its tensors, which
  // transforms h_t first. has_head() is true for either. Every entry below throws InputError naming
  // <dir>/config.json when the model has no head, and those that need the mask piece name
  // the tokenizer file when it has none.

  bool has_head() const { return config().head == Head::MaskedLM; }
  int mask_id() const { return tokenizer().mask_id(); }  // -1: the tokenizer has no <mask>
  // Throws as described above (need_mask: the tokenizer must have <mask> too).
  void require_head(bool need_mask = true) const;
  // True when the encoder can see word order: positions asked for and the model has some.
  bool sees_order(bool positions) const {
    return positions && config().positional_encoding != PositionalEncoding::None;
  }

  // Text with literal "<mask>" markers (Tokenizer::encode_masked), BOS/EOS added per config.
  // `masks` receives the mask positions (after any BOS).
  Tokenization tokenize_masked(std::string_view text, const std::string& where = "input",
                               std::vector<int>* masks = nullptr) const;

  // The low-level entry: runs `ids` (B sequences of ids, any ids in [0, V), the mask id where the
  // caller put it) as ONE padded batch and returns the head's logits at the rows asked for,
  // (rows.size(), V) row-major. Only those rows go through the V×d product.
  // positions = false (or a model without positions) sees no order: a permutation of a sequence
  // only permutes its outputs. Each such sequence then runs with its ids sorted (the rows mapped
  // to match), so any reordering of the same pieces gives bit-identical logits at the same piece,
  // not values that differ in the last bits by summation order; a row asked for twice, or equal to
  // another without order, is computed once.
  // Throws InputError for an id out of range or a sequence past a learned position table.
  // first_position: where each sequence's first token stands (ordo eval --offset).
  std::vector<float> logits(const std::vector<std::vector<int32_t>>& ids, const std::vector<Row>& rows,
                            bool positions = true, int first_position = 0);

  // Pseudo-log-likelihood of id sequences: for each sequence of L ids, the L copies with one
  // position replaced by the mask id run as one batch (split only past kPllBatchTokens tokens),
  // and log p of the true id is read at the masked position. Positions [skip_front, L − skip_back)
  // are scored; the others get 0. Returns (pll, log_probs) per sequence, input order.
  static constexpr int kPllBatchTokens = 16384;
  std::vector<Scored> pseudo_log_likelihood(const std::vector<std::vector<int32_t>>& ids, bool positions = true,
                                            int skip_front = 0, int skip_back = 0);

  // `ordo fill`: each <mask> of the text (at least one; else InputError(where)) with its top_k
  // pieces, from one run of the text. words: only pieces that start a word ("▁" and at least one
  // more character), each still with its probability over the whole vocabulary.
  Filled fill(std::string_view text, int top_k = 5, bool positions = true, const std::string& where = "input",
              bool words = false, int first_position = 0);

  // `ordo score`: texts tokenized (no <mask> markers: "<mask>" is ordinary text here), each
  // text's pseudo-log-likelihood. An empty text scores 0 with no pieces.
  std::vector<Scored> score(const std::vector<std::string>& texts, bool positions = true);
  std::vector<Scored> score(std::vector<Tokenization> tokens, bool positions = true);
  // score({"a", "b"}): see encode(std::initializer_list<std::string>, ...).
  std::vector<Scored> score(std::initializer_list<std::string> texts, bool positions = true) {
    return score(std::vector<std::string>(texts), positions);
  }

  // ---- Looking inside ----------------------------------------------------------------------
  // One sequence's forward pass with every stage handed to options.observe as it is computed
  // (<ordo/trace.h>'s Stage: its name, equation and rows): what `ordo trace`, `ordo attention`, the
  // page of `ordo view` and Python's trace and attention look at. reference: the plain
  // double-precision encoder (engine/reference.h) instead of the fast one, its stages handed over
  // as floats. Returns the final hidden states, (S, d). Check the length first (check_runnable).
  std::vector<float> observe(const std::vector<int32_t>& ids, const EncodeOptions& options, bool reference = false);

  // The model's config.json (<ordo/config.h>) and its directory.
  const Config& config() const;
  const std::string& model_dir() const;
  const Tokenizer& tokenizer() const;
  // The masked-language-model head on rows of final hidden states (observe's result):
  // logits_t = h_t·Eᵀ + b, (rows, V). Throws as require_head(false) does.
  std::vector<float> head_logits(const float* hidden /* (rows, d) */, int rows) const;
  // The precision of the layers' weight products (compute_type_from_name checks a name first).
  void set_compute_type(ComputeType type);
  ComputeType compute_type() const;
  // Heads switched off from the next pass on (--mask-head L,H): a masked head's A·v is zeros in its
  // slot of the concatenation, in every entry above, observe() and its plain encoder included.
  // {} switches every head on. Throws std::invalid_argument for a head the model does not have.
  void set_masked_heads(const std::vector<HeadIndex>& heads);
  std::vector<HeadIndex> masked_heads() const;
  // The weights themselves, for the engine's own tools and tests (engine/model.h, in the source
  // tree only; a program built against an installed ordo sees a declared type it cannot open).
  const Model& model() const;

 private:
  // InputError(where) when the tokenizer would make more bytes of `text` than this model and machine
  // allow (Tokenizer::normalized_bytes, found before it makes them): tokenize and tokenize_masked call it.
  void check_normalized(std::string_view text, const std::string& where) const;

  // The model, the tokenizer and the encoder (with its working memory, its locks and its
  // reduced-precision weights), in lib/ordo.cpp.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ordo
