#include "engine/kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace ordo {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class Pool {
 public:
  Pool() {
    try {
      resize(int(std::max(1u, std::thread::hardware_concurrency())));
    } catch (const ThreadStartError&) {
      // One thread for now: set_kernel_threads says so if more are asked for, and --threads 1 runs.
    }
  }
  ~Pool() { resize(1); }

  int size() const { return size_.load(std::memory_order_acquire); }

  void resize(int threads) {
    std::lock_guard<std::mutex> job(job_mutex_);
    stop_helpers();
    // A helper starts from the generation current now: a job posted before its thread first runs is still its job.
    const uint64_t start = generation_.load(std::memory_order_acquire);
    for (int i = 1; i < threads; ++i) {
      try {
        helpers_.emplace_back([this, i, start] { helper(i, start); });
      } catch (const std::system_error& e) {
        const int started = int(helpers_.size()) + 1;
        stop_helpers();
        size_.store(1, std::memory_order_release);
        throw ThreadStartError("could start only " + std::to_string(started) + " of " + std::to_string(threads) +
                               " threads (" + e.code().message() +
                               ": a limit on processes or threads, ulimit -u?); pass --threads " +
                               std::to_string(started) + (started > 1 ? " or fewer" : ""));
      }
    }
    size_.store(int(helpers_.size()) + 1, std::memory_order_release);
  }

  void run(int n_tasks, const std::function<void(int, int)>& body) {
    if (size() == 1 || n_tasks <= 1) {
      for (int i = 0; i < n_tasks; ++i) body(i, 0);
      return;
    }
    std::lock_guard<std::mutex> job(job_mutex_);
    if (helpers_.empty()) {  // resized to one thread while this caller waited for the job lock
      for (int i = 0; i < n_tasks; ++i) body(i, 0);
      return;
    }
    body_ = &body;
    n_tasks_ = n_tasks;
    next_.store(0, std::memory_order_relaxed);
    busy_.store(int(helpers_.size()), std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work(0);
    // The helpers finish within microseconds unless the machine is oversubscribed; then give way.
    for (int spins = 0; busy_.load(std::memory_order_acquire) > 0; ++spins)
      if (spins < 4096)
        cpu_relax();
      else
        std::this_thread::yield();
  }

 private:
  void stop_helpers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : helpers_) t.join();
    helpers_.clear();
    stop_ = false;
  }

  void work(int thread) {
    for (int i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n_tasks_;) (*body_)(i, thread);
  }

  void helper(int thread, uint64_t seen) {
    for (;;) {
      // Jobs come in bursts (one per matrix product of a layer): spin ~50 µs before sleeping.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      for (int spins = 0; generation_.load(std::memory_order_acquire) == seen; ++spins) {
        cpu_relax();
        if (spins % 64 == 63 && std::chrono::steady_clock::now() > until) {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      work(thread);
      busy_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::vector<std::thread> helpers_;
  std::mutex job_mutex_;  // one job at a time
  std::mutex mutex_;      // guards sleeping on wake_
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> next_{0}, busy_{0};
  std::atomic<int> size_{1};  // helpers + 1, readable without the job lock
  const std::function<void(int, int)>* body_ = nullptr;
  int n_tasks_ = 0;
  bool stop_ = false;
};

Pool& pool() {
  static Pool p;
  return p;
}

// The gate between passes (PassThreads, many at once) and a change of the thread count (one, alone).
// A waiting change goes first: passes that start after it wait, so a steady stream of passes
// cannot hold it off for ever.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  int passes = 0;           // passes running
  int waiting_writers = 0;  // set_kernel_threads calls waiting for the passes to end
  bool writing = false;
};

Gate& gate() {
  static Gate g;
  return g;
}

thread_local int pass_depth = 0;  // passes this thread is inside (an observer may start another)

}  // namespace

PassThreads::PassThreads() {
  if (pass_depth++ == 0) {
    Gate& g = gate();
    std::unique_lock<std::mutex> lock(g.mutex);
    g.changed.wait(lock, [&] { return !g.writing && g.waiting_writers == 0; });
    ++g.passes;
  }
  threads_ = pool().size();
}

PassThreads::~PassThreads() {
  if (--pass_depth == 0) {
    Gate& g = gate();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (--g.passes == 0) g.changed.notify_all();
  }
}

void set_kernel_threads(int n) {
  if (pass_depth > 0) throw std::logic_error("set_num_threads called inside a forward pass (from an observer)");
  if (n <= 0) n = int(std::max(1u, std::thread::hardware_concurrency()));
  Gate& g = gate();
  {
    std::unique_lock<std::mutex> lock(g.mutex);
    ++g.waiting_writers;
    g.changed.wait(lock, [&] { return !g.writing && g.passes == 0; });
    --g.waiting_writers;
    g.writing = true;
  }
  struct Done {  // reopens the gate however resize() ends
    Gate& g;
    ~Done() {
      {
        std::lock_guard<std::mutex> lock(g.mutex);
        g.writing = false;
      }
      g.changed.notify_all();
    }
  } done{g};
  if (n != pool().size()) pool().resize(n);
}

int kernel_threads() {
  return pool().size();
}

void parallel_for(int n_tasks, const std::function<void(int, int)>& body) {
  pool().run(n_tasks, body);
}

}  // namespace ordo
