#include "tokenizer/wordpiece.h"

#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>

#include "common/json_value.h"
#include "common/regular_file.h"
#include "tokenizer/utf8.h"

namespace ordo {

namespace {

struct CharRange {
  uint32_t first, last;
  int classes;
};
struct CharMap {
  uint32_t cp;
  const char* utf8;
};
#include "tokenizer/wordpiece_tables.inc"

constexpr int kRemoved = 1, kSpace = 2, kPunctuation = 4, kCjk = 8;

int classes(uint32_t cp) {
  const CharRange* end = kCharRanges + sizeof(kCharRanges) / sizeof(kCharRanges[0]);
  const CharRange* r =
      std::upper_bound(kCharRanges, end, cp, [](uint32_t c, const CharRange& x) { return c < x.first; });
  return r != kCharRanges && cp <= (r - 1)->last ? (r - 1)->classes : 0;
}

template <size_t N>
const char* mapped(const CharMap (&table)[N], uint32_t cp) {
  const CharMap* r = std::lower_bound(table, table + N, cp, [](const CharMap& x, uint32_t c) { return x.cp < c; });
  return r != table + N && r->cp == cp ? r->utf8 : nullptr;
}

// One character of the normalized text and the bytes of the text as given it came from.
struct Char {
  uint32_t cp;
  size_t begin, end;
};

// Step 1 of WordPiece::encode, the basic tokenizer: the normalized characters of `text`, each with the
// bytes it came from, appended to chars.
void normalize(const WordPiece& wp, std::string_view text, std::vector<Char>& chars) {
  const auto push = [&](uint32_t cp, size_t b, size_t e) {
    if (!wp.lowercase) {
      chars.push_back({cp, b, e});
      return;
    }
    const char* lower = mapped(kLowercase, cp);
    if (!lower) {
      chars.push_back({cp, b, e});
      return;
    }
    const std::string_view l(lower);
    for (size_t i = 0; i < l.size();) chars.push_back({next_cp(l, i), b, e});
  };
  for (size_t i = 0; i < text.size();) {
    const size_t b = i;
    const uint32_t cp = next_cp(text, i);
    const int k = classes(cp);
    if (k & kRemoved) continue;
    if (k & kSpace) {
      chars.push_back({' ', b, i});
      continue;
    }
    const bool cjk = (k & kCjk) && wp.chinese_chars;
    if (cjk) chars.push_back({' ', b, b});  // a space on each side, before accents and case (as tokenizers orders them)
    if (wp.strip_accents && cp >= 0xAC00 && cp <= 0xD7A3) {  // a Hangul syllable: its NFD is arithmetic (Unicode §3.12)
      const uint32_t s = cp - 0xAC00;
      push(0x1100 + s / 588, b, i);
      push(0x1161 + (s % 588) / 28, b, i);
      if (s % 28) push(0x11A7 + s % 28, b, i);
    } else if (const char* stripped = wp.strip_accents ? mapped(kStripAccents, cp) : nullptr) {
      const std::string_view st(stripped);
      for (size_t j = 0; j < st.size();) push(next_cp(st, j), b, i);
    } else {
      push(cp, b, i);
    }
    if (cjk) chars.push_back({' ', i, i});
  }
}

}  // namespace

namespace {
// The vocabulary of a tokenizer.json whose model is WordPiece: model.vocab, piece → id, the ids 0 .. n − 1.
std::vector<std::string> json_vocabulary(const std::string& path, const std::string& text) {
  using nlohmann::json;
  const JsonValue j = parse_json_value(text, path);
  const json* model = j.is_object() && j.contains("model") && j["model"].is_object() ? &j["model"] : nullptr;
  const std::string type = model && model->contains("type") && (*model)["type"].is_string() ? (*model)["type"] : "";
  if (type != "WordPiece")
    throw InputError(path, "has a " + (type.empty() ? std::string("tokenizer without a model type") : type + " model") +
                               "; ordo reads a WordPiece or byte-level BPE tokenizer.json, vocab.txt, vocab.json, or a "
                               "sentencepiece model");
  if (!model->contains("vocab") || !(*model)["vocab"].is_object() || (*model)["vocab"].empty())
    throw InputError(path, "model.vocab is not an object of pieces and their ids");
  const json& vocab = (*model)["vocab"];
  std::vector<std::string> pieces(vocab.size());
  std::vector<bool> seen(vocab.size());
  for (const auto& [piece, id] : vocab.items()) {
    if (!id.is_number_integer() || id < 0 || id >= json(vocab.size()) || seen[id.get<size_t>()])
      throw InputError(path, "model.vocab's ids are not 0 .. " + std::to_string(vocab.size() - 1) + " once each (\"" +
                                 piece.substr(0, 40) + "\": " + id.dump().substr(0, 40) + ")");
    if (!valid_utf8(piece)) throw InputError(path, "model.vocab has a piece that is not valid UTF-8");
    seen[id.get<size_t>()] = true;
    pieces[id.get<size_t>()] = piece;
  }
  return pieces;
}
}  // namespace

std::unique_ptr<WordPiece> WordPiece::load(const std::string& path) {
  constexpr uint64_t kMaxBytes = uint64_t(64) << 20;
  const std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  auto wp = std::make_unique<WordPiece>();
  if (name == "tokenizer.json") {
    wp->pieces_ = json_vocabulary(path, read_regular_file(path, kMaxBytes, "a tokenizer"));
    for (size_t i = 0; i < wp->pieces_.size(); ++i) wp->ids_[wp->pieces_[i]] = int(i);
  }
  const std::string text = name == "tokenizer.json" ? "" : read_regular_file(path, kMaxBytes, "a WordPiece vocabulary");
  const size_t lines = size_t(std::count(text.begin(), text.end(), '\n')) + 1;
  wp->pieces_.reserve(lines);
  wp->ids_.reserve(lines);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string piece = text.substr(start, end - start);
    if (!valid_utf8(piece))
      throw InputError(path, "line " + std::to_string(wp->pieces_.size() + 1) + " is not valid UTF-8");
    wp->ids_[piece] = int(wp->pieces_.size());  // a repeated piece: its last line's id, as transformers reads it
    wp->pieces_.push_back(std::move(piece));
    start = end + 1;
  }
  if (wp->pieces_.empty()) throw InputError(path, "is empty, not a WordPiece vocabulary");
  std::string unk = "[UNK]";

  const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.find_last_of('/'));
  using nlohmann::json;
  // tokenizer.json holds the whole vocabulary again (model.vocab, 30,522 pieces for BERT) beside the
  // few settings read here: parsed into a tree of maps, it was a third of a one-text command's time.
  // Keys at depth 2 named "vocab" or "merges" are skipped as they are parsed (the JSON is still checked whole).
  const json::parser_callback_t skip_vocab = [](int depth, json::parse_event_t event, json& parsed) {
    return !(event == json::parse_event_t::key && depth == 2 && parsed.is_string() &&
             (parsed.get_ref<const std::string&>() == "vocab" || parsed.get_ref<const std::string&>() == "merges"));
  };
  auto read = [&](const std::string& file) {
    return parse_json_value(read_regular_file(file, kMaxBytes, "a tokenizer config"), file, skip_vocab);
  };
  const auto flag = [](const json& j, const char* key, bool& out) {
    if (j.contains(key) && j[key].is_boolean()) out = j[key].get<bool>();
  };
  const auto is_true = [](const json& j, const char* key) { return j.contains(key) && j[key] == true; };
  // a special token's name in tokenizer_config.json: "<s>", or {"content": "<s>", ...} as transformers saves it
  const auto token = [](const json& j, const char* key, std::string& out) {
    const json* v = j.contains(key) ? &j[key] : nullptr;
    if (v && v->is_object() && v->contains("content")) v = &(*v)["content"];
    if (v && v->is_string() && !v->get_ref<const std::string&>().empty()) out = v->get<std::string>();
  };
  bool strip_said = false, strip = true, added_said = false;
  std::string pad = "[PAD]";
  bool mask_lstrip = false;  // MPNetTokenizer's <mask> takes the spaces before it
  if (path_exists(dir + "/tokenizer_config.json")) {
    const JsonValue j = read(dir + "/tokenizer_config.json");
    if (j.is_object()) {
      flag(j, "do_lower_case", wp->lowercase);
      if (j.contains("strip_accents") && j["strip_accents"].is_boolean()) strip_said = true, strip = j["strip_accents"];
      flag(j, "tokenize_chinese_chars", wp->chinese_chars);
      if (j.contains("unk_token") && j["unk_token"].is_string()) unk = j["unk_token"];
      token(j, "cls_token", wp->cls);
      token(j, "sep_token", wp->sep);
      token(j, "mask_token", wp->mask);
      token(j, "pad_token", pad);
      mask_lstrip = j.contains("mask_token") && j["mask_token"].is_object() && is_true(j["mask_token"], "lstrip");
    }
  }
  if (path_exists(dir + "/tokenizer.json")) {  // the fast tokenizer's settings, which transformers uses by default
    const JsonValue j = read(dir + "/tokenizer.json");
    if (j.is_object() && j.contains("normalizer") && j["normalizer"].is_object() && j["normalizer"].contains("type") &&
        j["normalizer"]["type"] == "BertNormalizer") {
      const json& n = j["normalizer"];
      flag(n, "lowercase", wp->lowercase);
      flag(n, "handle_chinese_chars", wp->chinese_chars);
      strip_said = n.contains("strip_accents") && n["strip_accents"].is_boolean();
      if (strip_said) strip = n["strip_accents"];
    }
    if (j.is_object() && j.contains("added_tokens") && j["added_tokens"].is_array()) {
      added_said = true;
      for (const json& t : j["added_tokens"])
        if (t.is_object() && t.contains("content") && t["content"].is_string() && !t["content"].empty() &&
            t.contains("id") && t["id"].is_number_integer() && t["id"] >= 0 && t["id"] < wp->size())
          (is_true(t, "normalized") ? wp->normalized_special : wp->special)
              .push_back({t["content"].get<std::string>(), t["id"].get<int32_t>(), is_true(t, "lstrip"),
                          is_true(t, "rstrip"), is_true(t, "normalized")});
    }
    // the pieces around a text: BertProcessing's and RobertaProcessing's "cls": ["<s>", 0], "sep": ["</s>", 2]
    if (j.is_object() && j.contains("post_processor") && j["post_processor"].is_object()) {
      const json& pp = j["post_processor"];
      for (auto [key, out] : {std::pair<const char*, std::string*>{"cls", &wp->cls}, {"sep", &wp->sep}})
        if (pp.contains(key) && pp[key].is_array() && !pp[key].empty() && pp[key][0].is_string())
          *out = pp[key][0].get<std::string>();
    }
    if (j.is_object() && j.contains("model") && j["model"].is_object()) {
      const json& m = j["model"];
      if (m.contains("max_input_chars_per_word") && m["max_input_chars_per_word"].is_number_integer())
        wp->max_chars_per_word = m["max_input_chars_per_word"];
      if (m.contains("unk_token") && m["unk_token"].is_string()) unk = m["unk_token"];
    }
  }
  wp->strip_accents = strip_said ? strip : wp->lowercase;  // unset: accents go with the case
  if (!added_said)  // BERT's five, and the tokenizer config's own names for them (MPNet's <s>, </s>, <pad>, <mask>)
    for (const std::string& name : {std::string("[PAD]"), std::string("[UNK]"), std::string("[CLS]"),
                                    std::string("[SEP]"), std::string("[MASK]"), pad, unk, wp->cls, wp->sep, wp->mask})
      if (wp->id(name) >= 0 &&
          std::none_of(wp->special.begin(), wp->special.end(), [&](const SpecialToken& t) { return t.text == name; }))
        wp->special.push_back({name, wp->id(name), name == wp->mask && mask_lstrip, false});
  wp->unk_ = wp->id(unk);
  if (wp->unk_ < 0) throw InputError(path, "has no unknown piece " + unk);
  // the normalized special tokens' characters, normalized once as every text will be (as `tokenizers` does)
  for (const SpecialToken& t : wp->normalized_special) {
    std::vector<Char> spelled;
    normalize(*wp, t.text, spelled);
    wp->normalized_cps_.emplace_back();
    for (const Char& ch : spelled) wp->normalized_cps_.back().push_back(ch.cp);
  }
  return wp;
}

int WordPiece::id(const std::string& piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

Tokenization WordPiece::encode(std::string_view text, std::vector<Span>* spans) const {
  // 1. The basic tokenizer: the normalized characters, each with the bytes it came from.
  std::vector<Char> chars;
  normalize(*this, text, chars);

  // 2. Words: split at spaces, each punctuation character a word of its own; 3. WordPiece on each.
  Tokenization out;
  std::string word;
  std::vector<size_t> offsets;  // the byte in `word` where each of its characters starts
  std::vector<const Char*> from;
  const auto finish = [&]() {
    if (from.empty()) return;
    const size_t n = from.size();
    offsets.push_back(word.size());
    const auto emit = [&](int id, size_t c0, size_t c1) {  // characters [c0, c1) of the word
      out.ids.push_back(id);
      out.pieces.push_back(pieces_[size_t(id)]);
      if (spans) spans->push_back({from[c0]->begin, from[c1 - 1]->end});
    };
    if (int(n) > max_chars_per_word) {
      emit(unk_, 0, n);
    } else {
      const size_t before = out.ids.size();
      const size_t spans_before = spans ? spans->size() : 0;
      size_t c = 0;
      bool bad = false;
      while (c < n && !bad) {
        size_t e = n;
        int found = -1;
        for (; e > c; --e) {
          const std::string sub = (c ? "##" : "") + word.substr(offsets[c], offsets[e] - offsets[c]);
          if ((found = id(sub)) >= 0) break;
        }
        if (found < 0) {
          bad = true;
        } else {
          emit(found, c, e);
          c = e;
        }
      }
      if (bad) {  // no spelling: the whole word is [UNK]
        out.ids.resize(before), out.pieces.resize(before);
        if (spans) spans->resize(spans_before);
        emit(unk_, 0, n);
      }
    }
    word.clear(), offsets.clear(), from.clear();
  };
  const std::vector<std::vector<uint32_t>>& wanted = normalized_cps_;
  // the longest normalized special token that chars[c ..] spells, or -1
  const auto special_at = [&](size_t c) {
    int best = -1;
    for (size_t w = 0; w < wanted.size(); ++w) {
      const std::vector<uint32_t>& cps = wanted[w];
      if (cps.empty() || c + cps.size() > chars.size() || (best >= 0 && cps.size() <= wanted[size_t(best)].size()))
        continue;
      size_t j = 0;
      while (j < cps.size() && chars[c + j].cp == cps[j]) ++j;
      if (j == cps.size()) best = int(w);
    }
    return best;
  };
  for (size_t c = 0; c < chars.size(); ++c) {
    const Char& ch = chars[c];
    const int k = classes(ch.cp);
    if (const int w = wanted.empty() ? -1 : special_at(c); w >= 0) {  // a normalized special token: a piece alone
      finish();
      const SpecialToken& s = normalized_special[size_t(w)];
      const size_t last = c + wanted[size_t(w)].size() - 1;
      out.ids.push_back(s.id);
      out.pieces.push_back(pieces_[size_t(s.id)]);
      if (spans) spans->push_back({ch.begin, chars[last].end});
      c = last;
    } else if (ch.cp == ' ' || (k & kSpace)) {
      finish();
    } else if (k & kPunctuation) {
      finish();
      offsets.push_back(0), from.push_back(&ch);
      append_utf8(word, ch.cp);
      finish();
    } else {
      offsets.push_back(word.size()), from.push_back(&ch);
      append_utf8(word, ch.cp);
    }
  }
  finish();
  return out;
}

}  // namespace ordo
