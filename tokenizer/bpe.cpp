#include "tokenizer/bpe.h"

#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <queue>

#include <ordo/errors.h>

#include "common/json_value.h"
#include "common/regular_file.h"
#include "tokenizer/utf8.h"

namespace ordo {

namespace {

struct ClassRange {
  uint32_t first, last;
  int cls;
};
#include "tokenizer/bpe_tables.inc"

// A character's class in the pattern: 1 a letter (\p{L}), 2 a number (\p{N}), kSpace whitespace (\s), kOther the rest.
constexpr int kSpace = 4, kOther = 0;

int char_class(uint32_t cp) {
  const ClassRange* end = kClassRanges + sizeof(kClassRanges) / sizeof(kClassRanges[0]);
  const ClassRange* r =
      std::upper_bound(kClassRanges, end, cp, [](uint32_t c, const ClassRange& x) { return c < x.first; });
  return r != kClassRanges && cp <= (r - 1)->last ? (r - 1)->cls : kOther;
}

using nlohmann::json;

JsonValue parse_json(const std::string& path, const std::string& what) {
  constexpr uint64_t kMaxBytes = uint64_t(256) << 20;
  return parse_json_value(read_regular_file(path, kMaxBytes, what), path);
}

bool is_true(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key] == true;
}

// A special token's name in tokenizer_config.json or special_tokens_map.json: "<s>", or {"content": "<s>", ...}
// as transformers saves it; its lstrip and rstrip flags where the object has them.
void token_name(const json& j, const char* key, std::string& out, bool* lstrip = nullptr) {
  const json* v = j.is_object() && j.contains(key) ? &j[key] : nullptr;
  if (v && v->is_object() && v->contains("content")) {
    if (lstrip && v->contains("lstrip") && (*v)["lstrip"].is_boolean()) *lstrip = (*v)["lstrip"].get<bool>();
    v = &(*v)["content"];
  }
  if (v && v->is_string() && !v->get_ref<const std::string&>().empty()) out = v->get<std::string>();
}

std::string shown(const std::string& s) {
  return "\"" + s.substr(0, 40) + (s.size() > 40 ? "..." : "") + "\"";
}

}  // namespace

const std::string& BytePairEncoding::byte_char(unsigned char b) {
  // bytes_to_unicode: the printable bytes ! .. ~, ¡ .. ¬, ® .. ÿ stand for themselves; the other 68, in order,
  // for U+0100, U+0101, ...
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    uint32_t shifted = 0x100;
    for (int c = 0; c < 256; ++c) {
      const bool printable = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
      append_utf8(t[size_t(c)], printable ? uint32_t(c) : shifted++);
    }
    return t;
  }();
  return table[b];
}

// GPT-2's pattern, 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+, by hand: at
// each place the first alternative that matches, as a backtracking matcher (Oniguruma's) takes it.
std::vector<Span> BytePairEncoding::words(std::string_view text) {
  struct Char {
    uint32_t cp;
    size_t begin;
    int cls;
  };
  std::vector<Char> chars;
  for (size_t i = 0; i < text.size();) {
    const size_t b = i;
    const uint32_t cp = next_cp(text, i);
    chars.push_back({cp, b, char_class(cp)});
  }
  const size_t n = chars.size();
  const auto at = [&](size_t c) { return c < n ? chars[c].begin : text.size(); };
  const auto run = [&](size_t c, int cls) {  // the end of the run of class `cls` from c
    while (c < n && chars[c].cls == cls) ++c;
    return c;
  };
  std::vector<Span> out;
  for (size_t c = 0; c < n;) {
    const Char& ch = chars[c];
    const uint32_t c1 = c + 1 < n ? chars[c + 1].cp : 0, c2 = c + 2 < n ? chars[c + 2].cp : 0;
    size_t end = 0;
    if (ch.cp == '\'' && (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')) {  // 's 't 'm 'd
      end = c + 2;
    } else if (ch.cp == '\'' && ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l'))) {
      end = c + 3;  // 're 've 'll
    } else if (ch.cp == ' ' && c + 1 < n && chars[c + 1].cls != kSpace) {
      end = run(c + 1, chars[c + 1].cls);  // " ?" then letters, numbers, or the rest
    } else if (ch.cls != kSpace) {
      end = run(c, ch.cls);
    } else {  // whitespace: the run, less its last character when something follows (\s+(?!\S)), at least one (\s+)
      end = run(c, kSpace);
      if (end < n && end - c >= 2) --end;
    }
    out.push_back({ch.begin, at(end)});
    c = end;
  }
  return out;
}

int BytePairEncoding::id(const std::string& piece) const {
  const auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

void BytePairEncoding::merge(std::string_view word, std::vector<int>& ids, std::vector<size_t>& ends) const {
  ids.clear(), ends.clear();
  if (ignore_merges_) {  // the word whole, when the vocabulary holds it
    std::string chars;
    for (char b : word) chars += byte_char(static_cast<unsigned char>(b));
    if (const int whole = id(chars); whole >= 0) {
      ids.push_back(whole), ends.push_back(word.size());
      return;
    }
  }
  struct Symbol {
    int id;
    int prev, next;  // neighbours' indexes, -1 for none
    size_t end;      // where it ends in the word; a symbol joined into the one before it has end 0
  };
  std::vector<Symbol> s;
  s.reserve(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    int id = byte_id_[static_cast<unsigned char>(word[i])];
    if (id < 0 && unk_ < 0) continue;  // no piece and no unknown piece: the byte is dropped, as tokenizers does
    if (id < 0 && fuse_unk_ && !s.empty() && s.back().id == unk_) {
      s.back().end = i + 1;
      continue;
    }
    if (id < 0) id = unk_;
    s.push_back({id, int(s.size()) - 1, int(s.size()) + 1, i + 1});
  }
  if (s.empty()) return;
  s.back().next = -1;
  // The pairs to join, the lowest rank first and, at one rank, the leftmost (the left symbol's index).
  struct Candidate {
    int rank, pos, id;
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate> queue;
  const auto consider = [&](int left) {
    if (left < 0 || s[size_t(left)].next < 0) return;
    const auto m = merges_.find(key(s[size_t(left)].id, s[size_t(s[size_t(left)].next)].id));
    if (m != merges_.end()) queue.push({m->second.rank, left, m->second.id});
  };
  for (int i = 0; i + 1 < int(s.size()); ++i) consider(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = s[size_t(top.pos)];
    if (left.end == 0 || left.next < 0) continue;  // joined away, or the last symbol now
    Symbol& right = s[size_t(left.next)];
    const auto m = merges_.find(key(left.id, right.id));
    if (m == merges_.end() || m->second.id != top.id) continue;  // the pair has changed since it was queued
    left.id = top.id;
    left.end = right.end;
    right.end = 0;
    left.next = right.next;
    if (left.next >= 0) s[size_t(left.next)].prev = top.pos;
    consider(left.prev);
    consider(top.pos);
  }
  for (int i = 0; i >= 0; i = s[size_t(i)].next) ids.push_back(s[size_t(i)].id), ends.push_back(s[size_t(i)].end);
}

void BytePairEncoding::merge_cached(std::string_view word, std::vector<int>& ids, std::vector<size_t>& ends) const {
  if (word.size() > kCacheBytes) return merge(word, ids, ends);
  const std::string key(word);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (const auto it = cache_.find(key); it != cache_.end()) {
      ids = it->second.ids, ends = it->second.ends;
      return;
    }
  }
  merge(word, ids, ends);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() < kCacheWords) cache_.emplace(key, Pieces{ids, ends});
}

Tokenization BytePairEncoding::encode(std::string_view text, std::vector<Span>* spans) const {
  Tokenization out;
  if (text.empty()) return out;
  // add_prefix_space: a space before a stretch that does not start with one; it has no byte in the text
  const size_t prefix = add_prefix_space && text[0] != ' ' ? 1 : 0;
  std::string prefixed;
  if (prefix) prefixed = " " + std::string(text);
  const std::string_view s = prefix ? std::string_view(prefixed) : text;
  // a byte of s as a byte of text, moved back to the start of its character
  const auto in_text = [&](size_t at) {
    size_t t = at > prefix ? at - prefix : 0;
    while (t > 0 && t < text.size() && (static_cast<unsigned char>(text[t]) & 0xC0) == 0x80) --t;
    return t;
  };
  std::vector<int> ids;
  std::vector<size_t> ends;
  for (const Span& w : words(s)) {
    merge_cached(s.substr(w.begin, w.end - w.begin), ids, ends);
    for (size_t k = 0; k < ids.size(); ++k) {
      out.ids.push_back(ids[k]);
      out.pieces.push_back(pieces_[size_t(ids[k])]);
      if (spans) spans->push_back({in_text(w.begin + (k ? ends[k - 1] : 0)), in_text(w.begin + ends[k])});
    }
  }
  return out;
}

std::unique_ptr<BytePairEncoding> BytePairEncoding::load(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  auto bpe = std::make_unique<BytePairEncoding>();
  const bool from_json = name == "tokenizer.json";

  JsonValue tok;                                               // tokenizer.json, without model.vocab and model.merges
  std::vector<std::pair<std::string, JsonValue>> vocab_items;  // piece → id
  std::vector<std::pair<std::string, std::string>> merges;
  std::string merges_where;  // the file the merges came from, for errors
  if (from_json) {
    // model.vocab's members and model.merges' elements are taken out as they are parsed, not built into the
    // tree (50,000 of each for RoBERTa): the keys at depths 1 and 2 say where the parser is.
    std::vector<JsonValue> merge_items;
    std::string k1, k2, key;
    bool keyed = false;
    using Event = json::parse_event_t;
    const json::parser_callback_t take = [&](int depth, Event event, json& parsed) {
      if (event == Event::key && depth <= 3) {
        std::string& k = depth == 1 ? k1 : depth == 2 ? k2 : key;
        k = parsed.get<std::string>();
        if (depth == 1) k2.clear();
        keyed = depth == 3;
        return true;
      }
      if (depth != 3 || k1 != "model" ||
          !(event == Event::value || event == Event::object_end || event == Event::array_end))
        return true;
      if (k2 == "vocab" && keyed) {
        vocab_items.emplace_back(std::move(key), std::move(parsed));
        keyed = false;
        return false;
      }
      if (k2 == "merges") {
        merge_items.emplace_back(std::move(parsed));
        return false;
      }
      return true;
    };
    tok = parse_json_value(read_regular_file(path, uint64_t(256) << 20, "a tokenizer"), path, take);
    const json* model = tok.is_object() && tok.contains("model") && tok["model"].is_object() ? &tok["model"] : nullptr;
    if (!model || (model->contains("type") && (*model)["type"] != "BPE")) throw InputError(path, "has no BPE model");
    const json& m = *model;
    const auto refuse_unless = [&](bool ok, const std::string& what) {
      if (!ok) throw InputError(path, what + ", which ordo's byte-level BPE (RoBERTa's) does not have");
    };
    const auto empty_or_null = [&](const char* key) {
      return !m.contains(key) || m[key].is_null() ||
             (m[key].is_string() && m[key].get_ref<const std::string&>().empty());
    };
    refuse_unless(!m.contains("dropout") || m["dropout"].is_null() || m["dropout"] == 0,
                  "model.dropout is set (pieces drawn at random)");
    refuse_unless(empty_or_null("continuing_subword_prefix"), "model has a continuing_subword_prefix");
    refuse_unless(empty_or_null("end_of_word_suffix"), "model has an end_of_word_suffix");
    refuse_unless(!is_true(m, "byte_fallback"), "model has byte_fallback");
    refuse_unless(!tok.contains("normalizer") || tok["normalizer"].is_null(), "it has a normalizer");
    const json* pre = tok.contains("pre_tokenizer") ? &tok["pre_tokenizer"] : nullptr;
    refuse_unless(pre && pre->is_object() && pre->contains("type") && (*pre)["type"] == "ByteLevel",
                  "its pre_tokenizer is not ByteLevel (GPT-2's pattern and bytes)");
    refuse_unless(!pre->contains("use_regex") || (*pre)["use_regex"] == true,
                  "its ByteLevel pre_tokenizer has use_regex false");
    bpe->add_prefix_space = is_true(*pre, "add_prefix_space");
    bpe->fuse_unk_ = is_true(m, "fuse_unk");
    bpe->ignore_merges_ = is_true(m, "ignore_merges");
    if (!m.contains("vocab") || !m["vocab"].is_object() || vocab_items.empty())
      throw InputError(path, "model.vocab is not an object of pieces and their ids");
    if (!m.contains("merges") || !m["merges"].is_array())
      throw InputError(path, "model.merges is not a list of pairs of pieces");
    for (const json& e : merge_items) {  // "a b", or ["a", "b"] as tokenizers 0.20 and later write them
      const std::string at = "model.merges[" + std::to_string(merges.size()) + "]";
      if (e.is_string()) {
        const std::string& s = e.get_ref<const std::string&>();
        const size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
          throw InputError(path, at + " " + shown(s) + " is not two pieces with a space between");
        merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      } else {
        throw InputError(path, at + " is not a pair of pieces");
      }
    }
    merges_where = path;
  } else {  // vocab.json and merges.txt, as transformers' RobertaTokenizer reads them
    JsonValue vocab_file = parse_json(path, "a BPE vocabulary");
    if (!vocab_file.is_object() || vocab_file.empty())
      throw InputError(path, "is not an object of pieces and their ids");
    for (auto& [piece, id] : vocab_file.items()) vocab_items.emplace_back(piece, std::move(id));
    merges_where = dir + "/merges.txt";
    const std::string text = read_regular_file(merges_where, uint64_t(256) << 20, "a BPE merges file");
    // RobertaTokenizer: the lines between the first (the "#version: 0.2" header) and the end, each two pieces
    // with whitespace between (Python's str.split())
    size_t start = text.find('\n');
    int line = 1;
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
    while (start != std::string::npos) {
      const size_t next = text.find('\n', start + 1);
      if (next == std::string::npos) break;  // the text after the last newline is not read
      ++line;
      const std::string_view l(text.data() + start + 1, next - start - 1);
      std::vector<std::string> parts;
      for (size_t i = 0; i < l.size();) {
        while (i < l.size() && space(l[i])) ++i;
        const size_t b = i;
        while (i < l.size() && !space(l[i])) ++i;
        if (i > b) parts.emplace_back(l.substr(b, i - b));
      }
      if (parts.size() != 2)
        throw InputError(merges_where, "line " + std::to_string(line) + " is not two pieces with a space between");
      merges.emplace_back(std::move(parts[0]), std::move(parts[1]));
      start = next;
    }
  }

  // The vocabulary: ids 0 .. n − 1, once each.
  const size_t n = vocab_items.size();
  bpe->pieces_.resize(n);
  std::vector<bool> seen(n);
  for (const auto& [piece, id] : vocab_items) {
    if (!id.is_number_integer() || id < 0 || id >= json(n) || seen[id.get<size_t>()])
      throw InputError(path, std::string(from_json ? "model.vocab's " : "") + "ids are not 0 .. " +
                                 std::to_string(n - 1) + " once each (" + shown(piece) + ": " +
                                 id.dump().substr(0, 40) + ")");
    seen[id.get<size_t>()] = true;
    bpe->pieces_[id.get<size_t>()] = piece;
  }
  bpe->ids_.reserve(bpe->pieces_.size());
  for (size_t i = 0; i < bpe->pieces_.size(); ++i) bpe->ids_[bpe->pieces_[i]] = int(i);

  // The merges, by rank (a pair listed twice: its later rank, as tokenizers builds its table).
  bpe->merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const auto& [a, b] = merges[r];
    const int ia = bpe->id(a), ib = bpe->id(b), joined = bpe->id(a + b);
    const std::string missing = ia < 0 ? a : ib < 0 ? b : joined < 0 ? a + b : "";
    if (ia < 0 || ib < 0 || joined < 0)
      throw InputError(merges_where,
                       (from_json ? "model.merges[" + std::to_string(r) + "]" : "merge " + std::to_string(r + 1)) +
                           " (" + shown(a + " " + b) + ") needs " + shown(missing) +
                           ", which the vocabulary does not have");
    bpe->merges_[key(ia, ib)] = {int(r), joined};
  }
  for (int b = 0; b < 256; ++b) bpe->byte_id_[b] = bpe->id(byte_char(static_cast<unsigned char>(b)));

  // Settings and special tokens.
  JsonValue config;  // tokenizer_config.json, as RobertaTokenizerFast takes it
  if (path_exists(dir + "/tokenizer_config.json"))
    config = parse_json(dir + "/tokenizer_config.json", "a tokenizer config");
  JsonValue map;  // special_tokens_map.json
  if (!from_json && path_exists(dir + "/special_tokens_map.json"))
    map = parse_json(dir + "/special_tokens_map.json", "a special tokens map");
  // RobertaTokenizerFast(add_prefix_space=False) sets its pre-tokenizer to the config's value, or false
  bpe->add_prefix_space = is_true(config, "add_prefix_space");
  std::string bos = "<s>", eos = "</s>", unk = "<unk>", pad = "<pad>";
  bool mask_lstrip = true;
  for (const json* j : {&map, &config}) {  // the config's names over the map's
    token_name(*j, "bos_token", bos);
    token_name(*j, "eos_token", eos);
    token_name(*j, "unk_token", unk);
    token_name(*j, "pad_token", pad);
    token_name(*j, "cls_token", bpe->cls);
    token_name(*j, "sep_token", bpe->sep);
    token_name(*j, "mask_token", bpe->mask, &mask_lstrip);
  }
  // added tokens: id, content and flags, from tokenizer.json's added_tokens or the config's added_tokens_decoder
  struct Added {
    int64_t id;
    SpecialToken token;
    std::string where;
  };
  std::vector<Added> added;
  const auto add = [&](const json& t, const json& id, const std::string& where) {
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string() ||
        t["content"].get_ref<const std::string&>().empty() || !id.is_number_integer())
      throw InputError(where, "is not an added token with a content and an id");
    if (is_true(t, "single_word"))
      throw InputError(where, "(" + shown(t["content"].get<std::string>()) +
                                  ") is single_word, which ordo's byte-level BPE does not read");
    Added a;
    a.id = id.get<int64_t>();
    a.token.text = t["content"].get<std::string>();
    a.token.lstrip = is_true(t, "lstrip");
    a.token.rstrip = is_true(t, "rstrip");
    a.token.normalized = is_true(t, "normalized");
    a.where = where;
    added.push_back(std::move(a));
  };
  if (from_json && tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (size_t i = 0; i < tok["added_tokens"].size(); ++i) {
      const json& t = tok["added_tokens"][i];
      add(t, t.is_object() && t.contains("id") ? t["id"] : json(), path + ": added_tokens[" + std::to_string(i) + "]");
    }
  } else if (!from_json && config.is_object() && config.contains("added_tokens_decoder") &&
             config["added_tokens_decoder"].is_object()) {
    for (const auto& [id, t] : config["added_tokens_decoder"].items()) {
      const std::string where = dir + "/tokenizer_config.json: added_tokens_decoder[\"" + id.substr(0, 20) + "\"]";
      char* end = nullptr;
      const long long n = std::strtoll(id.c_str(), &end, 10);
      if (id.empty() || *end != '\0') throw InputError(where, "is not an id");
      add(t, json(n), where);
    }
  } else if (!from_json) {  // RobertaTokenizer's own: <s> <pad> </s> <unk>, and <mask> taking the spaces before it;
    // one the vocabulary lacks is added after it, in transformers' order (bos, eos, unk, sep, pad, cls, mask)
    int64_t next = int64_t(bpe->pieces_.size());
    for (const std::string& s : {bos, eos, unk, bpe->sep, pad, bpe->cls, bpe->mask})
      if (std::none_of(added.begin(), added.end(), [&](const Added& a) { return a.token.text == s; })) {
        Added a;
        a.id = bpe->id(s) >= 0 ? bpe->id(s) : next++;
        a.token.text = s;
        a.token.lstrip = s == bpe->mask && mask_lstrip;
        a.where = path;
        added.push_back(std::move(a));
      }
  }
  // an added token's id: a piece's, or the next after the vocabulary (tokenizers numbers new ones so)
  std::stable_sort(added.begin(), added.end(), [](const Added& a, const Added& b) { return a.id < b.id; });
  for (Added& a : added) {
    if (a.id < 0 || a.id > int64_t(bpe->pieces_.size()))
      throw InputError(a.where, "(" + shown(a.token.text) + ") has id " + std::to_string(a.id) +
                                    ", not a piece's id nor the next after the " + std::to_string(bpe->pieces_.size()) +
                                    " pieces");
    if (a.id == int64_t(bpe->pieces_.size())) {
      bpe->pieces_.push_back(a.token.text);
      bpe->ids_.emplace(a.token.text, int(a.id));
    }
    a.token.id = int32_t(a.id);
    bpe->special.push_back(a.token);
  }
  // the pieces around a text: RobertaProcessing's (or BertProcessing's) "cls": ["<s>", 0], "sep": ["</s>", 2]
  if (from_json && tok.contains("post_processor") && tok["post_processor"].is_object()) {
    const json& pp = tok["post_processor"];
    for (auto [k, out] : {std::pair<const char*, std::string*>{"cls", &bpe->cls}, {"sep", &bpe->sep}})
      if (pp.contains(k) && pp[k].is_array() && !pp[k].empty() && pp[k][0].is_string())
        *out = pp[k][0].get<std::string>();
  }
  if (from_json && tok["model"].contains("unk_token") && tok["model"]["unk_token"].is_string()) {
    const std::string u = tok["model"]["unk_token"];
    bpe->unk_ = bpe->id(u);
    if (bpe->unk_ < 0) throw InputError(path, "model.unk_token " + shown(u) + " is not in the vocabulary");
  }
  return bpe;
}

}  // namespace ordo
