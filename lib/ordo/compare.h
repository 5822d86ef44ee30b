// The word-order report (ordo compare, Model.compare, POST /compare, the page of `ordo view`): its
// numbers, computed once, and their JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <ordo/ordo.h>

namespace ordo {

// Two texts encoded with and without the positional encoding: how far apart their mean-pooled
// vectors are, and, when B holds A's pieces reordered, how far each piece's output moved.
struct Comparison {
  bool reordered = false;  // B holds the same pieces as A, in some order
  double cosine_pe = 0, cosine_nope = 0;
  double max_abs_diff_pe = 0, max_abs_diff_nope = 0;
  struct Move {
    int i, j;                    // the piece at i in A is at j in B: the k-th occurrence of an id in A is its k-th in B
    double with_pe, without_pe;  // |h_i(A) − h_j(B)|
  };
  std::vector<Move> moves;  // one per piece of A when reordered, else none
  // With a masked-language-model head: each text's pseudo-log-likelihood (ordo score) with and
  // without positions, and which order the model prefers.
  bool scored = false;
  double pll_a_pe = 0, pll_b_pe = 0, pll_a_nope = 0, pll_b_nope = 0;
  std::string prefers;   // "a", "b" or "neither", with positions ("neither" for texts of different pieces)
  std::string verdict;   // one plain sentence
  std::string unscored;  // why there is no score though the model has a head (texts too long), or ""
};

Comparison compare_texts(Pipeline& pipeline, const Tokenization& a, const Tokenization& b);

// The report's numbers as `ordo compare --json` prints them: same_tokens_reordered, cosine,
// max_abs_diff and tokens, in that order (an undefined cosine is null), then pll, prefers and
// verdict when the model has a head.
nlohmann::ordered_json comparison_json(const Comparison& c, const Tokenization& a);

// The whole of `ordo compare --json`: a and b (text, pieces, ids), then comparison_json's keys.
nlohmann::ordered_json compare_json(const std::string& text_a, const std::string& text_b, const Tokenization& a,
                                    const Tokenization& b, const Comparison& c);

}  // namespace ordo
