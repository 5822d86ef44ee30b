// The Tokenizer of tokenizer.h for the WebAssembly build (tools/web), which has no sentencepiece
// library: the same interface over unigram.cpp, which reads the same model file. tokenizer.cpp is
// the build everywhere else; encode_masked.cpp is shared.
#include <algorithm>
#include <cstdint>

#include <ordo/errors.h>
#include <ordo/tokenizer/tokenizer.h>

#include "common/regular_file.h"
#include "tokenizer/charsmap.h"
#include "tokenizer/unigram.h"

namespace sentencepiece {
// What tokenizer.h holds a pointer to here: which way a text is cut (with the model's dummy
// prefix, or inside a word without it).
class SentencePieceProcessor {
 public:
  bool dummy_prefix = true;
};
}  // namespace sentencepiece

namespace ordo {

struct Tokenizer::Joined {
  Unigram model;
  sentencepiece::SentencePieceProcessor inside;  // dummy_prefix false
};

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  constexpr uint64_t kMaxBytes = uint64_t(256) << 20;  // as tokenizer.cpp
  return parse(read_regular_file(path, kMaxBytes, "a sentencepiece model"), path);
}

Tokenizer Tokenizer::parse(const std::string& bytes, const std::string& path) {
  require_sentencepiece_model(bytes, path);
  Tokenizer t;
  t.path_ = path;
  t.charsmap_ = std::string(normalizer_charsmap(bytes));
  t.joined_ = std::shared_ptr<Joined>(new Joined{Unigram::parse(bytes, path), {}});
  t.joined_->inside.dummy_prefix = false;
  t.sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  t.sp_->dummy_prefix = t.joined_->model.add_dummy_prefix();
  return t;
}

sentencepiece::SentencePieceProcessor* Tokenizer::inside_word() const {
  return &joined_->inside;
}

Tokenization Tokenizer::encode(std::string_view text, const std::string& where, std::vector<Span>* spans) const {
  return encode_with(*sp_, text, where, spans);
}

Tokenization Tokenizer::encode_with(sentencepiece::SentencePieceProcessor& sp, std::string_view text,
                                    const std::string& where, std::vector<Span>* spans) const {
  size_t bad = 0;
  if (!valid_utf8(text, &bad)) throw InputError(where, "invalid UTF-8 at byte " + std::to_string(bad));
  return joined_->model.encode(text, sp.dummy_prefix, spans);
}

int Tokenizer::size() const {
  return joined_->model.size();
}
// As sentencepiece: the id of the trainer's BOS (EOS) piece when that is a control piece, else -1;
// the unknown piece's id.
int Tokenizer::bos_id() const {
  const int id = joined_->model.id(joined_->model.bos_piece());
  return joined_->model.is_control(id) ? id : -1;
}
int Tokenizer::eos_id() const {
  const int id = joined_->model.id(joined_->model.eos_piece());
  return joined_->model.is_control(id) ? id : -1;
}
int Tokenizer::unk_id() const {
  const int id = joined_->model.id(joined_->model.unk_piece());
  return joined_->model.is_unknown(id) ? id : -1;
}
int Tokenizer::mask_id() const {
  const int id = joined_->model.id("<mask>");
  return id >= 0 && id < size() && joined_->model.piece(id) == "<mask>" ? id : -1;
}
const char* Tokenizer::mask_marker() const {
  return "<mask>";
}
std::string Tokenizer::piece(int id) const {
  return id >= 0 && id < size() ? joined_->model.piece(id) : std::string("<?>");
}
uint64_t Tokenizer::normalized_bytes(std::string_view text, uint64_t stop, size_t* prefix) const {
  return normalized_bytes_bound(charsmap_, text, stop, prefix);
}

}  // namespace ordo
