#include "engine/kernels/blas.h"

#include <cblas.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <mutex>
#include <new>

#include "engine/kernels/parallel.h"

namespace ordo {

// OpenBLAS (the pthreads build) starts its own worker threads when it is loaded, and each one spins
// for about 2^28 cycles (its THREAD_TIMEOUT, ~90 ms here) before it sleeps: in a short process, the
// whole of `ordo encode "a sentence"`, one core was taken by a thread that never gets work, and the
// engine's helper thread was placed on the core it left (perf sched timehist: the helper and the
// spinning OpenBLAS thread taking turns on one core for 70 ms while the passes ran 3-4x slower).
// Those workers are stopped here; OpenBLAS starts them again if a call asks for more than one thread
// (bench --gemm). blas_thread_shutdown_ is not in cblas.h, so it is called only where the library has it.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

void blas_setup() {
  // The engine's own threads share the work, so OpenBLAS must not start threads inside them.
  static const bool once = [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
    return true;
  }();
  (void)once;
}

// Each thread's first cblas_sgemm maps OpenBLAS's work buffer (128 MiB of address space in 0.3.21,
// kept for the thread's life), and a mapping that fails is retried for ever (blas_memory_alloc in
// its memory.c): under a memory limit that was a hang inside the forward pass. So when the process
// has an address-space or data limit, the room for one buffer per thread is tried first, each time
// more threads are about to call it than before; no room is std::bad_alloc ("out of memory").
void blas_check_room(int threads) {
  static std::mutex mutex;
  static int checked = 1;  // the calling thread's own buffer: checked below on its first call too
  static bool first = true;
  std::lock_guard<std::mutex> lock(mutex);
  if (!first && threads <= checked) return;
  bool limited = false;
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit r {};
    if (::getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY) limited = true;
  }
  if (limited) {
    constexpr size_t kOpenBlasBuffer = (size_t(128) << 20) + (size_t(1) << 20);
    const size_t bytes = size_t(first ? threads : threads - checked) * kOpenBlasBuffer;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::munmap(p, bytes);
  }
  first = false;
  checked = std::max(checked, threads);
}

// The threads take column blocks of y (row blocks of W), so each packs only its part of W.
void linear_blas(float* y, const float* x, const float* w, const float* b, int M, int K, int N) {
  if (M == 0 || N == 0) return;
  blas_setup();
  // Two blocks per thread, handed out as threads come free: a thread the OS pauses holds up one
  // block, not half the product. Each block packs x again, so blocks stay ≥ 128 columns.
  const int parts = std::min(2 * kernel_threads(), std::max(1, N / 128));
  blas_check_room(kernel_threads());
  const int cols = (N + parts - 1) / parts;
  parallel_for(parts, [&](int part, int) {
    const int n0 = part * cols, n = std::min(N, n0 + cols) - n0;
    if (n <= 0) return;
    if (b)
      for (int m = 0; m < M; ++m) std::copy(b + n0, b + n0 + n, y + size_t(m) * N + n0);
    // y[:, n0:n0+n] (M, n) = x (M, K) · W[n0:n0+n]ᵀ (K, n) + β·y, with β = 1 when y already holds the bias.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n, K, 1.0f, x, K, w + size_t(n0) * K, K, b ? 1.0f : 0.0f,
                y + n0, N);
  });
}

}  // namespace ordo
