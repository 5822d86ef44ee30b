#include <sentencepiece_processor.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

#include "common/json_value.h"
#include "common/regular_file.h"
#include "tokenizer/bpe.h"
#include "tokenizer/charsmap.h"
#include "tokenizer/wordpiece.h"

// Not in sentencepiece's installed headers, but exported by its library (0.1.9x): the lowest
// level of its log messages that reach stderr (0 info, 1 warning, 2 error, 3 fatal).
namespace sentencepiece::logging {
void SetMinLogLevel(int v);
}  // namespace sentencepiece::logging

namespace ordo {

namespace {
constexpr int kSentencepieceFatal = 3;

// Whether a tokenizer.json's model is BPE: its type says "BPE", or it has no type and has merges (as tokenizers
// wrote it before it named the type, and still reads it). Read without building the vocabulary and merges; an
// error in the file is left for the reader of its model to report.
bool has_bpe_model(const std::string& path) {
  using nlohmann::json;
  constexpr uint64_t kMaxBytes = uint64_t(256) << 20;
  bool merges = false;
  const json::parser_callback_t skip = [&merges](int depth, json::parse_event_t event, json& parsed) {
    if (event != json::parse_event_t::key || depth != 2 || !parsed.is_string()) return true;
    const std::string& key = parsed.get_ref<const std::string&>();
    merges = merges || key == "merges";
    return key != "vocab" && key != "merges";
  };
  const JsonValue j = parse_json_value(read_regular_file(path, kMaxBytes, "a tokenizer"), path, skip, false);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) return false;
  return j["model"].contains("type") ? j["model"]["type"] == "BPE" : merges;
}
}  // namespace

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  // The largest published sentencepiece models are a few MB; past this it is not a tokenizer.
  constexpr uint64_t kMaxBytes = uint64_t(256) << 20;
  const std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  if (name == "vocab.json" || (name == "tokenizer.json" && has_bpe_model(path))) {
    Tokenizer t;
    t.path_ = path;
    t.bpe_ = BytePairEncoding::load(path);
    t.specials_ = t.bpe_->special;
    t.white_space_ = true;
    return t;
  }
  if (name == "vocab.txt" || name == "tokenizer.json") {
    Tokenizer t;
    t.path_ = path;
    t.wp_ = WordPiece::load(path);
    t.specials_ = t.wp_->special;
    return t;
  }
  Tokenizer t = parse(read_regular_file(path, kMaxBytes, "a sentencepiece model"), path);
  if (name == "sentencepiece.bpe.model") {
    if (t.sp_->unk_id() != 0 || t.sp_->bos_id() != 1 || t.sp_->eos_id() != 2)
      throw InputError(path, "is not XLM-RoBERTa's sentencepiece model (it has <unk> 0, <s> 1, </s> 2)");
    t.fairseq_ = true;
    t.joined_.reset();
    // XLMRobertaTokenizer's special tokens, in fairseq's numbering
    t.specials_ = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}, {"<mask>", t.size() - 1, true, false}};
  } else if (name == "spiece.model") {
    // T5Tokenizer's: 100 sentinels after the model's pieces, counted down, then </s>, <unk> and <pad>,
    // each the model's piece or, where it has none, the next id after the sentinels
    constexpr int kExtraIds = 100;
    for (int i = 0; i < kExtraIds; ++i)
      t.specials_.push_back({"<extra_id_" + std::to_string(i) + ">", t.size() + kExtraIds - 1 - i, true, true});
    int next = t.size() + kExtraIds;
    for (const char* special : {"</s>", "<unk>", "<pad>"}) {
      const int id = t.sp_->PieceToId(special);
      t.specials_.push_back({special, id >= 0 && t.sp_->IdToPiece(id) == special ? id : next++});
    }
  }
  return t;
}

const SpecialToken* Tokenizer::special_at(std::string_view text, size_t i) const {
  const SpecialToken* best = nullptr;
  for (const SpecialToken& s : specials_)
    if (s.text[0] == text[i] && text.compare(i, s.text.size(), s.text) == 0 &&
        (!best || s.text.size() > best->text.size()))
      best = &s;
  return best;
}

// fairseq's numbering of XLM-R's pieces: <s> 0, <pad> 1, </s> 2, <unk> 3, sentencepiece's id + 1 after.
int Tokenizer::from_sp(int id) const {
  if (!fairseq_) return id;
  return id == 0 ? 3 : id == 1 ? 0 : id == 2 ? 2 : id + 1;
}

struct Tokenizer::Joined {
  std::once_flag once;
  std::string bytes;                                          // the model with add_dummy_prefix off
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp;  // null if it did not load
};

Tokenizer Tokenizer::parse(const std::string& bytes, const std::string& path) {
  require_sentencepiece_model(bytes, path);  // sentencepiece trusts its normalization tables

  // sentencepiece logs to stderr (a failed self-test prints the samples, raw bytes and all);
  // ordo reports what went wrong in its one error line instead.
  static std::once_flag quiet;
  std::call_once(quiet, [] { sentencepiece::logging::SetMinLogLevel(kSentencepieceFatal); });
  Tokenizer t;
  t.path_ = path;
  t.sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = t.sp_->LoadFromSerializedProto(absl::string_view(bytes.data(), bytes.size()));
  if (!status.ok()) {
    // Its message for a failed self-test points at the log ordo keeps off; say what it means.
    const std::string why = status.ToString().find("Self-test") != std::string::npos
                                ? "the samples in its self_test_data do not tokenize as the file records"
                                : status.ToString();
    throw InputError(path, "not a sentencepiece model (" + why + ")");
  }
  if (t.sp_->GetPieceSize() <= 0) throw InputError(path, "sentencepiece model has no pieces");
  // The model once more, with normalizer_spec.add_dummy_prefix = false: a protobuf parser merges
  // a second occurrence of a message field into the first, so field 3 (normalizer_spec) holding
  // only its field 3 (add_dummy_prefix) = 0 is appended: 0x1A (field 3, length-delimited), length
  // 2, 0x18 (field 3, varint), 0.
  t.charsmap_ = std::string(normalizer_charsmap(bytes));
  t.joined_ = std::make_shared<Joined>();
  t.joined_->bytes = bytes + std::string("\x1A\x02\x18\x00", 4);
  return t;
}

sentencepiece::SentencePieceProcessor* Tokenizer::inside_word() const {
  if (!joined_) return nullptr;
  Joined& j = *joined_;
  std::call_once(j.once, [&] {
    auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
    // A model whose self-test samples were recorded with the prefix fails to load this way; then
    // the segment is encoded as before and a lone leading "▁" dropped.
    if (sp->LoadFromSerializedProto(absl::string_view(j.bytes.data(), j.bytes.size())).ok()) j.sp = std::move(sp);
    j.bytes.clear();
    j.bytes.shrink_to_fit();
  });
  return j.sp.get();
}

namespace {
// The characters Python's str.isspace() calls whitespace (bidirectional class WS, B or S, or category
// Zs), which transformers' tokenizers strip beside a special token that asks for it (lstrip, rstrip).
bool python_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
// The code point that starts at s[i] (valid UTF-8) and its length.
uint32_t code_point(std::string_view s, size_t i, size_t* len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  *len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  uint32_t cp = *len == 1 ? c : c & (0xFF >> (*len + 1));
  for (size_t k = 1; k < *len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}
// Unicode's White_Space, which Rust's char::is_whitespace (and so tokenizers' lstrip and rstrip) reads: str.isspace()'s
// characters but U+001C .. U+001F.
bool white_space(uint32_t c) {
  return python_space(c) && !(c >= 0x1C && c <= 0x1F);
}
// How many bytes of whitespace s starts with, and ends with (white: Unicode's White_Space, else str.isspace()).
size_t python_space_prefix(std::string_view s, bool white) {
  size_t i = 0, len = 0;
  while (i < s.size() && (white ? white_space : python_space)(code_point(s, i, &len))) i += len;
  return i;
}
size_t python_space_suffix(std::string_view s, bool white) {
  size_t end = s.size();
  while (end > 0) {
    size_t begin = end - 1, len = 0;
    while (begin > 0 && (static_cast<unsigned char>(s[begin]) & 0xC0) == 0x80) --begin;
    if (!(white ? white_space : python_space)(code_point(s, begin, &len))) break;
    end = begin;
  }
  return s.size() - end;
}
}  // namespace

// Each special token's text is its piece; the text between two (or before the first, after the last)
// is tokenized alone, as Hugging Face's tokenizers split a text at its added tokens first.
// A text with no special token in it (most texts) goes to encode_text whole, checked once.
Tokenization Tokenizer::encode(std::string_view text, const std::string& where, std::vector<Span>* spans) const {
  std::string firsts;  // the bytes a special token can start with ("[" or "<")
  for (const SpecialToken& s : specials_)
    if (firsts.find(s.text[0]) == std::string::npos) firsts += s.text[0];
  size_t i = firsts.empty() ? std::string_view::npos : text.find_first_of(firsts);
  while (i != std::string_view::npos && !special_at(text, i)) i = text.find_first_of(firsts, i + 1);
  if (i == std::string_view::npos) return encode_text(text, where, spans);
  size_t bad = 0;
  if (!valid_utf8(text, &bad)) throw InputError(where, "invalid UTF-8 at byte " + std::to_string(bad));
  Tokenization out;
  size_t start = 0;                      // where the text not yet tokenized begins
  const SpecialToken* before = nullptr;  // the special token just before it
  auto flush = [&](size_t end, const SpecialToken* after) {
    if (before && before->rstrip) start += python_space_prefix(text.substr(start, end - start), white_space_);
    if (after && after->lstrip) end -= python_space_suffix(text.substr(start, end - start), white_space_);
    if (end <= start) return;
    const size_t first = spans ? spans->size() : 0;
    Tokenization part = encode_text(text.substr(start, end - start), where, spans);
    if (spans)
      for (size_t k = first; k < spans->size(); ++k) (*spans)[k].begin += start, (*spans)[k].end += start;
    out.pieces.insert(out.pieces.end(), part.pieces.begin(), part.pieces.end());
    out.ids.insert(out.ids.end(), part.ids.begin(), part.ids.end());
  };
  while (i < text.size()) {  // i: a byte a special token may start at
    const SpecialToken* s = special_at(text, i);
    if (!s) {
      i = std::min(text.find_first_of(firsts, i + 1), text.size());
      continue;
    }
    flush(i, s);
    out.pieces.push_back(s->text);
    out.ids.push_back(s->id);
    if (spans) spans->push_back({i, i + s->text.size()});
    i += s->text.size();
    start = i;
    before = s;
  }
  flush(text.size(), nullptr);
  return out;
}

Tokenization Tokenizer::encode_text(std::string_view text, const std::string& where, std::vector<Span>* spans) const {
  if (wp_ || bpe_) {
    size_t bad = 0;
    if (!valid_utf8(text, &bad)) throw InputError(where, "invalid UTF-8 at byte " + std::to_string(bad));
    return wp_ ? wp_->encode(text, spans) : bpe_->encode(text, spans);
  }
  return encode_with(*sp_, text, where, spans);
}

Tokenization Tokenizer::encode_with(sentencepiece::SentencePieceProcessor& sp, std::string_view text,
                                    const std::string& where, std::vector<Span>* spans) const {
  size_t bad = 0;
  if (!valid_utf8(text, &bad)) throw InputError(where, "invalid UTF-8 at byte " + std::to_string(bad));
  Tokenization out;
  sentencepiece::ImmutableSentencePieceText spt;
  const auto status = sp.Encode(absl::string_view(text.data(), text.size()), spt.mutable_proto());
  if (!status.ok()) throw InputError(where, "cannot tokenize: " + status.ToString());
  for (const auto& p : spt.pieces()) {
    out.pieces.push_back(p.piece());
    out.ids.push_back(static_cast<int32_t>(from_sp(int(p.id()))));
    if (spans) spans->push_back({p.begin(), p.end()});
  }
  return out;
}

int Tokenizer::size() const {
  if (wp_) return wp_->size();
  if (bpe_) return bpe_->size();
  return sp_->GetPieceSize() + (fairseq_ ? 2 : 0);  // fairseq's <pad> and <mask>
}
int Tokenizer::bos_id() const {
  if (wp_) return wp_->id(wp_->cls);
  if (bpe_) return bpe_->id(bpe_->cls);
  return fairseq_ ? 0 : sp_->bos_id();
}
int Tokenizer::eos_id() const {
  if (wp_) return wp_->id(wp_->sep);
  if (bpe_) return bpe_->id(bpe_->sep);
  return fairseq_ ? 2 : sp_->eos_id();
}
int Tokenizer::unk_id() const {
  if (wp_) return wp_->unk_id();
  if (bpe_) return bpe_->unk_id() >= 0 ? bpe_->unk_id() : bpe_->id("<unk>");  // RoBERTa's model names none
  return fairseq_ ? 3 : sp_->unk_id();
}
int Tokenizer::mask_id() const {
  if (wp_) return wp_->id(wp_->mask);
  if (bpe_) return bpe_->id(bpe_->mask);
  if (fairseq_) return size() - 1;
  // PieceToId answers the unknown piece's id for a piece it does not hold: check the way back.
  const int id = sp_->PieceToId("<mask>");
  return id >= 0 && id < size() && sp_->IdToPiece(id) == "<mask>" ? id : -1;
}

const char* Tokenizer::mask_marker() const {
  return wp_ ? wp_->mask.c_str() : bpe_ ? bpe_->mask.c_str() : "<mask>";
}

// A WordPiece model has no table (the count is then the text's bytes, each space 3): its own
// normalization makes at most one character and 3 bytes per byte of the text (docs/robustness.md),
// so the byte limit alone bounds its memory, and this count stays within Pipeline's bound for it.
uint64_t Tokenizer::normalized_bytes(std::string_view text, uint64_t stop, size_t* prefix) const {
  return normalized_bytes_bound(charsmap_, text, stop, prefix);
}

std::string Tokenizer::piece(int id) const {
  if (id >= size())  // T5's sentinels
    for (const SpecialToken& s : specials_)
      if (s.id == id) return s.text;
  if (id < 0 || id >= size()) return "<?>";
  if (wp_) return wp_->piece(id);
  if (bpe_) return bpe_->piece(id);
  if (fairseq_) {
    if (id == 1) return "<pad>";
    if (id == size() - 1) return "<mask>";
    return sp_->IdToPiece(id == 0 ? 1 : id == 2 ? 2 : id == 3 ? 0 : id - 1);
  }
  return sp_->IdToPiece(id);
}

}  // namespace ordo
