// ordo: each head's weight by offset j − i over many texts (ordo/heads.h has the definitions).
#include <cmath>
#include <limits>
#include <stdexcept>

#include <ordo/heads.h>

namespace ordo {

double HeadsByDistance::mean(int layer, int head, int bucket, int offset) const {
  const uint64_t count = n(bucket, offset);
  return count ? weight[at(layer, head, bucket, offset)] / double(count) : std::numeric_limits<double>::quiet_NaN();
}

double HeadsByDistance::most(int layer, int head, int bucket, int offset) const {
  const uint64_t count = n(bucket, offset);
  return count ? double(most_rows[at(layer, head, bucket, offset)]) / double(count)
               : std::numeric_limits<double>::quiet_NaN();
}

HeadsByDistance heads_by_distance(Pipeline& pipeline, const std::vector<Tokenization>& texts, int max_offset,
                                  const std::vector<int>& starts, bool positions) {
  if (max_offset < 0) throw std::invalid_argument("max_offset must be 0 or more");
  if (starts.empty() || starts[0] != 0) throw std::invalid_argument("the first bucket must start at position 0");
  for (size_t b = 1; b < starts.size(); ++b)
    if (starts[b] <= starts[b - 1]) throw std::invalid_argument("the buckets' starts must increase");
  const Config& c = pipeline.config();
  HeadsByDistance r;
  r.layers = c.n_layers, r.heads = c.n_heads, r.max_offset = max_offset, r.starts = starts;
  const int O = r.offsets();
  r.rows.assign(size_t(r.buckets()) * O, 0);
  r.weight.assign(size_t(r.layers) * r.heads * r.buckets() * O, 0.0);
  r.most_rows.assign(r.weight.size(), 0);
  auto bucket_of = [&](int i) {
    int b = 0;
    while (b + 1 < r.buckets() && i >= starts[b + 1]) ++b;
    return b;
  };
  for (const Tokenization& tok : texts) {
    const int S = static_cast<int>(tok.ids.size());
    if (S == 0) continue;
    ++r.texts;
    for (int i = 0; i < S; ++i)
      for (int o = -max_offset; o <= max_offset; ++o)
        if (i + o >= 0 && i + o < S) ++r.rows[size_t(bucket_of(i)) * O + (o + max_offset)];
    EncodeOptions options;
    options.positions = positions;
    options.observe = [&](const Stage& s) {
      if (s.kind != StageKind::AttentionWeights) return;
      for (int i = 0; i < s.rows; ++i) {
        const float* A = s.data + size_t(i) * s.stride;
        const int b = bucket_of(i);
        int best = 0;
        for (int j = 1; j < s.cols; ++j)
          if (A[j] > A[best]) best = j;
        for (int o = -max_offset; o <= max_offset; ++o) {
          const int j = i + o;
          if (j < 0 || j >= s.cols) continue;
          const size_t k = r.at(s.layer, s.head, b, o);
          r.weight[k] += A[j];
          if (j == best) ++r.most_rows[k];
        }
      }
    };
    pipeline.observe(tok.ids, options);
  }
  return r;
}

}  // namespace ordo
