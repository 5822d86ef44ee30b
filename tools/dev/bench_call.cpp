// The library's own time for one small call, the baseline of `import ordo`'s call overhead
// (tools/dev/bench_python.py, docs/python.md): Pipeline::encode({text}, Mean), the call
// Model.encode([text]) makes, and Encoder::forward on the text's ids alone (what `ordo bench` times).
//
//   env -u OPENBLAS_CORETYPE build/bench_call MODEL_DIR "a short text" [CALLS [THREADS [COMPUTE_TYPE]]]
//
// Prints one JSON object: the median and minimum of each, in microseconds, over CALLS calls each
// (default 20000) after 1000 of warm-up; the two take turns call by call. THREADS: the engine's
// threads (default 0, one per core). COMPUTE_TYPE: f32 (default), bf16 or int8.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ordo/ordo.h>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_call MODEL_DIR TEXT [CALLS [THREADS [COMPUTE_TYPE]]]\n");
    return 2;
  }
  const std::string text = argv[2];
  const int calls = argc > 3 ? std::max(1, std::atoi(argv[3])) : 20000;
  ordo::set_num_threads(argc > 4 ? std::max(0, std::atoi(argv[4])) : 0);
  ordo::Pipeline pipeline(argv[1]);
  if (argc > 5) pipeline.set_compute_type(ordo::compute_type_from_name(argv[5]));
  const std::vector<int32_t> ids = pipeline.tokenize(text).ids;
  std::vector<double> encode_us, forward_us;
  float sink = 0;  // a use of each result, so that no call is optimised away
  for (int i = -1000; i < calls; ++i) {
    const auto t0 = Clock::now();
    const auto out = pipeline.encode({text}, ordo::Pooling::Mean);
    const auto t1 = Clock::now();
    const std::vector<float> h = pipeline.observe(ids, {});  // the pass alone, observed by nobody
    const auto t2 = Clock::now();
    sink += out[0].values[0] + h[0];
    if (i < 0) continue;
    encode_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    forward_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  std::printf(
      "{\"tokens\": %zu, \"calls\": %d, \"encode_us_median\": %.3f, \"encode_us_min\": %.3f, "
      "\"forward_us_median\": %.3f, \"forward_us_min\": %.3f, \"sink\": %g}\n",
      ids.size(), calls, median(encode_us), *std::min_element(encode_us.begin(), encode_us.end()), median(forward_us),
      *std::min_element(forward_us.begin(), forward_us.end()), double(sink));
  return 0;
}
