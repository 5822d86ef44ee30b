// Encodes its arguments with the installed default model and prints each vector's size and norm.
#include <cmath>
#include <cstdio>

#include <ordo/ordo.h>

int main(int argc, char** argv) {
  ordo::Pipeline pipeline(ordo::default_model_dir());
  const std::vector<std::string> texts(argv + 1, argv + argc);
  for (const ordo::Encoded& e : pipeline.encode(texts, ordo::Pooling::Mean, /*normalize=*/true)) {
    double sq = 0;
    for (float v : e.values) sq += v * v;
    std::printf("%zu pieces -> %zu floats, norm %.4f\n", e.tokens.ids.size(), e.values.size(), std::sqrt(sq));
  }
}
