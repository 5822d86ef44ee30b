// ordo: a random model from a seed, the same bytes on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ordo/config.h>
#include <ordo/engine/safetensors.h>

namespace ordo {

// SplitMix64 (Steele, Lea & Flood 2014): a 64-bit counter pushed through a fixed mixing
// function. Integer arithmetic only, so its stream is the same on every machine, unlike
// the distributions of <random>, whose outputs the C++ standard leaves to each library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();  // [0, 1), 53 random bits
  double normal();   // N(0, 1), Box–Muller
 private:
  uint64_t state_;
};

// Every tensor of `c`, in file order:
//   embedding (and learned positions) ~ N(0, 1/d), so that after ×√d a token's entries have unit
//     variance, the same scale as the sinusoids' (whose mean square is ½);
//   weight matrices ~ Xavier-uniform U(−a, a), a = √(6 / (fan_in + fan_out)) (in_proj as one
//     (3d, d) matrix, as PyTorch initialises it);
//   biases 0; LayerNorm γ = 1, β = 0.
std::vector<TensorBytes> random_weights(const Config& c, uint64_t seed);

// Writes config.json and model.safetensors into `dir` (created if missing).
void write_random_model(const Config& c, uint64_t seed, const std::string& dir);

}  // namespace ordo
