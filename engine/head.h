// ordo: the masked-language-model head — hidden states in, one score (logit) per piece out.
//
//   logits_t[v] = Σ_k h_t[k] · E[v][k] + b[v]        v = 0 .. V-1
//
// h_t is the encoder's output at position t (after the final norm when the config has one), E is
// embedding.weight as stored (the input embedding reused as the output matrix, "tied"; not scaled
// by √d) and b is head.bias. p_t = softmax(logits_t) is the model's guess for the piece at t.
// Nothing else: no dense layer, activation or LayerNorm of the head's own.
#pragma once

#include <ordo/engine/model.h>

namespace ordo {

// out (R, V) = h (R, d) · Eᵀ + b, for R rows of hidden states stored one after another. Only the
// rows asked for are computed: the (R, d)·(d, V) product is cblas_sgemm's. The model must have a
// head (config "head": "mlm"); R = 0 does nothing.
void mlm_logits(float* out /* (R, V) */, const float* h /* (R, d) */, int R, const Model& m);

// log Σ_v exp(z_v), in double, shifted by the largest z so no exp overflows: log p_v = z_v − this.
double log_sum_exp(const float* z, int n);

}  // namespace ordo
