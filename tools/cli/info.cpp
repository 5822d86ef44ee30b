// ordo info: a model's config, parameter count, bytes and tokenizer.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include <ordo/engine/model.h>
#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "engine/kernels/cpu.h"
#include "tools/cli/cli.h"

namespace ordo::cli {

int cmd_info(int argc, char** argv) {
  cxxopts::Options o("ordo info", "Describe a model: its config, parameter count, bytes and tokenizer.");
  o.add_options()("model", "model directory (default: the built-in model)", cxxopts::value<std::string>());
  cxxopts::ParseResult args;
  if (!parse(o, argc, argv, args)) return 0;
  refuse_stray_arguments(args, "--model WORD");
  Pipeline pipeline(model_dir(args));
  const Model& m = pipeline.model();
  const Config& c = m.config();
  struct stat st {};
  ::stat(m.file().path().c_str(), &st);
  std::printf("model       %s\n", m.dir.c_str());
  std::printf("sizes       d_model %d, n_heads %d (head size %d", c.d_model, c.n_heads, c.head_dim());
  if (c.attention_width() != c.d_model) std::printf(", attention %d wide", c.attention_width());
  std::printf("), d_ff %d, n_layers %d, vocab_size %d\n", c.d_ff, c.n_layers, c.vocab_size);
  const char* norm = c.norm == Norm::RMS ? "RMSNorm" : "LayerNorm";
  std::printf("layers      %s (%s), %s%s%s%s, layer_norm_eps %g\n", c.norm_first ? "pre-LN" : "post-LN", norm,
              c.gated_ffn ? "gated " : "", to_string(c.activation), c.final_norm ? ", a final norm" : "",
              c.scale_attention ? "" : ", scores not divided by sqrt(dh)", c.layer_norm_eps);
  std::printf("positions   %s", to_string(c.positional_encoding));
  if (c.positional_encoding == PositionalEncoding::Sinusoidal)
    std::printf(", %s layout, base %g", to_string(c.pe_layout), c.pe_base);
  if (c.positional_encoding == PositionalEncoding::Learned) std::printf(", max_positions %d", c.max_positions);
  if (c.bucket_bias())
    std::printf("%s%d buckets to distance %d",
                c.positional_encoding == PositionalEncoding::T5Buckets ? ", " : " + t5-buckets, ", c.relative_buckets,
                c.relative_max_distance);
  std::printf("; embeddings %s sqrt(d)\n", c.scale_embedding ? "scaled by" : "not scaled by");
  const char* use = pipeline.mask_id() >= 0 ? "; ordo fill and ordo score use it" : "; the tokenizer has no mask piece";
  if (c.head == Head::MaskedLM && c.head_transform)
    std::printf("head        masked-language-model (%s*): logits = LayerNorm(%s(h W^T + b)) D^T + bias (%s)%s\n",
                c.head_prefix.c_str(), to_string(c.head_activation),
                c.head_decoder ? "D its own decoder" : "D the token embedding, tied", use);
  else if (c.head == Head::MaskedLM)
    std::printf("head        masked-language-model: logits = h E^T + head.bias (E the token embedding, tied)%s\n", use);
  else
    std::printf("head        none (ordo fill and ordo score need a masked-language-model head)\n");
  // What encode gives by default: the pooling, each Dense module, Normalize, and the vector's width
  const Pooling pooling = pipeline.model_pooling();
  std::string vectors =
      std::string(pooling_name(pooling)) + " pooling" + (c.pooling.empty() ? " (ordo's default)" : "");
  for (const DenseModule& d : c.dense)
    vectors += ", Dense " + std::to_string(d.in_features) + " -> " + std::to_string(d.out_features) + " (" +
               to_string(d.activation) + (d.bias ? "" : ", no bias") + ", " + d.path + ")";
  if (pipeline.model_normalize()) vectors += ", normalized";
  std::printf("vectors     %s: %d numbers\n", vectors.c_str(), pipeline.width(pooling));
  std::printf("parameters  %llu (%.2f MB as float32); file %lld bytes\n", (unsigned long long)m.parameter_count(),
              m.parameter_count() * 4.0 / 1e6, (long long)st.st_size);
  if (const int n = training_length(m.dir))
    std::printf("trained on  texts of at most %d pieces (training.json); longer ones run, at positions it never saw\n",
                n);
  else
    std::printf("trained on  texts of a length not recorded (no training.json with max_len)\n");
  std::printf("tokenizer   %s: %d pieces%s%s\n", pipeline.tokenizer().path().c_str(), pipeline.tokenizer().size(),
              c.add_bos ? ", adds BOS" : "", c.add_eos ? ", adds EOS" : "");
  std::printf("cpu         %s\n", cpu_feature_names().c_str());
  std::string kernels = kernels_chosen();  // lines after the first indented under it
  for (size_t i = kernels.find('\n'); i != std::string::npos && i + 1 < kernels.size(); i = kernels.find('\n', i + 1))
    kernels.insert(i + 1, 12, ' ');
  std::printf("kernels     %s", kernels.c_str());
  return 0;
}

}  // namespace ordo::cli
