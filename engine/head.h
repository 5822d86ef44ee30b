// ordo: the masked-language-model head — hidden states in, one score (logit) per piece out.
//
//   logits_t[v] = Σ_k h_t[k] · E[v][k] + b[v]        v = 0 .. V-1
//
// h_t is the encoder's output at position t (after the final norm when the config has one), E is
// embedding.weight as stored (the input embedding reused as the output matrix, "tied"; not scaled
// by √d) and b is head.bias. p_t = softmax(logits_t) is the model's guess for the piece at t.
// Nothing else for ordo's own models. A Hugging Face checkpoint's head (BertForMaskedLM's
// cls.predictions, XLMRobertaForMaskedLM's lm_head; config head_transform) first transforms h_t:
//
//   u_t = LayerNorm(act(h_t·W_hᵀ + b_h))        then   logits_t[v] = Σ_k u_t[k] · D[v][k] + b[v]
//
// with its own dense layer W_h (d, d), the activation (BERT's hidden_act; RoBERTa's: the erf GELU),
// a LayerNorm of layer_norm_eps, and D = E unless the file holds a decoder matrix of its own.
#pragma once

#include <ordo/engine/model.h>

namespace ordo {

// out (R, V) = h (R, d) · Eᵀ + b (after the transform when the head has one), for R rows of hidden
// states stored one after another. Only the rows asked for are computed: the (R, d)·(d, V) product
// is cblas_sgemm's. The model must have a head (config "head": "mlm", or a Hugging Face checkpoint's);
// R = 0 does nothing.
void mlm_logits(float* out /* (R, V) */, const float* h /* (R, d) */, int R, const Model& m);

// log Σ_v exp(z_v), in double, shifted by the largest z so no exp overflows: log p_v = z_v − this.
double log_sum_exp(const float* z, int n);

}  // namespace ordo
