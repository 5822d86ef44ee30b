#include "engine/init.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <ordo/engine/model.h>
#include <ordo/errors.h>

#include "common/atomic_file.h"

namespace ordo {

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return double(next() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::vector<TensorBytes> random_weights(const Config& c, uint64_t seed) {
  Rng rng(seed);
  std::vector<TensorBytes> out;
  for (const TensorSpec& spec : expected_tensors(c)) {
    uint64_t n = 1;
    for (uint64_t s : spec.shape) n *= s;
    std::vector<float> v(n);
    const std::string& name = spec.name;
    auto ends_with = [&](const char* suffix) {
      const size_t k = std::strlen(suffix);
      return name.size() >= k && name.compare(name.size() - k, k, suffix) == 0;
    };
    if (name == "embedding.weight" || name == "position_embedding.weight") {
      const double sd = 1.0 / std::sqrt(double(c.d_model));
      for (float& x : v) x = static_cast<float>(rng.normal() * sd);
    } else if (spec.shape.size() == 2) {
      const double a = std::sqrt(6.0 / double(spec.shape[0] + spec.shape[1]));
      for (float& x : v) x = static_cast<float>((2.0 * rng.uniform() - 1.0) * a);
    } else {
      const bool norm_gain = (ends_with("norm1.weight") || ends_with("norm2.weight") || name == "norm.weight");
      std::fill(v.begin(), v.end(), norm_gain ? 1.0f : 0.0f);
    }
    out.push_back(f32_tensor(name, spec.shape, v));
  }
  return out;
}

void write_random_model(const Config& c, uint64_t seed, const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw InputError(dir, std::string("cannot create directory: ") + std::strerror(errno));
  write_safetensors(dir + "/model.safetensors", random_weights(c, seed),
                    {{"format", "pt"}, {"ordo.seed", std::to_string(seed)}});
  const std::string json = config_to_json(c);
  write_atomically(dir + "/config.json", [&](std::FILE* f) { std::fwrite(json.data(), 1, json.size(), f); });
}

}  // namespace ordo
