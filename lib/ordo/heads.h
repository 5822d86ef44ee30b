// ordo: what each attention head does across many texts (`ordo attention --by-distance`).
//
//   ordo::Pipeline pipeline("models/default");
//   std::vector<ordo::Tokenization> texts = ...;            // pipeline.tokenize(line) for each line
//   ordo::HeadsByDistance r = ordo::heads_by_distance(pipeline, texts, 4, {0, 32});
//   r.mean(1, 1, 0, -1)   // layer 1, head 1, query positions 0-31: mean weight on the piece before
//
// For every head (l, h), query piece i of a text and offset o = j − i (key minus query; −1 = the
// piece before), with A = softmax(q·kᵀ/√dh (+ bias)) the head's weights in that text:
//   mean(l, h, b, o)  = Σ A[i, i + o] / n(b, o)           over the rows i in bucket b whose key i + o exists
//   most(l, h, b, o)  = #{ i : argmax_j A[i, j] = i + o } / n(b, o)   (ties: the first key)
//   n(b, o)           = the number of such rows, the same for every head
// Bucket b holds the query positions [starts[b], starts[b + 1]), the last one to the end of the text:
// {0, 32} separates the positions inside a training length of 32 from those past it. Each text runs
// alone (Pipeline::observe), with the masked heads (Pipeline::set_masked_heads) and `positions` as given.
#pragma once

#include <cstdint>
#include <vector>

#include <ordo/ordo.h>

namespace ordo {

struct HeadsByDistance {
  int layers = 0, heads = 0;
  int max_offset = 0;               // offsets −max_offset .. +max_offset
  std::vector<int> starts;          // each bucket's first query position, increasing, starts[0] = 0
  int texts = 0;                    // texts of at least one piece
  std::vector<uint64_t> rows;       // n(b, o): (buckets, offsets)
  std::vector<double> weight;       // Σ A[i, i + o]: (layers, heads, buckets, offsets)
  std::vector<uint64_t> most_rows;  // rows whose largest weight is at i + o: (layers, heads, buckets, offsets)

  int offsets() const { return 2 * max_offset + 1; }
  int buckets() const { return static_cast<int>(starts.size()); }
  size_t at(int layer, int head, int bucket, int offset) const {
    return ((size_t(layer) * heads + head) * buckets() + bucket) * offsets() + (offset + max_offset);
  }
  uint64_t n(int bucket, int offset) const { return rows[size_t(bucket) * offsets() + (offset + max_offset)]; }
  // NaN where n(b, o) is 0.
  double mean(int layer, int head, int bucket, int offset) const;
  double most(int layer, int head, int bucket, int offset) const;
};

// Throws std::invalid_argument for max_offset < 0 or starts not increasing from 0, and InputError
// for a text the model cannot run (Encoder::forward's errors).
HeadsByDistance heads_by_distance(Pipeline& pipeline, const std::vector<Tokenization>& texts, int max_offset,
                                  const std::vector<int>& starts = {0}, bool positions = true);

}  // namespace ordo
