#include "engine/kernels/parallel.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "engine/kernels/blas.h"

#ifdef ORDO_OPENMP
#include <omp.h>
#endif

namespace ordo {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The state of the current job in one word, so that a helper can never take a task of a job that has
// ended or not yet begun: generation (24 bits) | tasks in the job (20) | next task to hand out (20).
// A helper takes task i by compare-and-swap of the whole word; a word of an older job no longer matches.
struct JobWord {
  static constexpr int kBits = 20;
  static constexpr uint64_t kMask = (uint64_t(1) << kBits) - 1;
  static constexpr int kMaxTasks = int(kMask);
  static constexpr uint64_t kGenerations = (uint64_t(1) << 24) - 1;  // a mask: generations wrap
  static uint64_t make(uint64_t generation, int n, int next) {
    return (generation << (2 * kBits)) | (uint64_t(n) << kBits) | uint64_t(next);
  }
  static uint64_t generation(uint64_t w) { return w >> (2 * kBits); }
  static int tasks(uint64_t w) { return int((w >> kBits) & kMask); }
  static int next(uint64_t w) { return int(w & kMask); }
};

void reset_after_fork();

std::atomic<void (*)(int)> helper_hook{nullptr};

class Pool {
 public:
  Pool() {
    ::pthread_atfork(nullptr, nullptr, reset_after_fork);  // once: the pool is made once
    blas_setup();  // before the helpers start: OpenBLAS's own idle threads must not take their cores
    try {
      resize(int(std::max(1u, std::thread::hardware_concurrency())));
    } catch (const ThreadStartError&) {
      // One thread for now: set_kernel_threads says so if more are asked for, and --threads 1 runs.
    }
  }
  ~Pool() { resize(1); }

  // In the child of a fork(), which has only the thread that forked: the helpers stayed in the parent,
  // and the mutexes and the condition variable hold the parent's state (a mutex a helper held, the
  // waiters it counted: a notify then waits for threads that do not exist here). The child's pool
  // starts over, with one thread and new synchronisation; set_kernel_threads starts helpers anew.
  // The parent's std::thread handles are kept, untouched, where no destructor runs (joining or
  // detaching them would act on descriptors the child's C library has since reused).
  void after_fork_in_child(bool in_pass) {
    static auto* parents = new std::vector<std::thread>;
    for (std::thread& t : helpers_) parents->push_back(std::move(t));
    helpers_.clear();
    alone_until_ = Clock::time_point();
    alone_factor_ = 1;
    new (&job_mutex_) std::mutex;
    new (&mutex_) std::mutex;
    new (&wake_) std::condition_variable;
    sleepers_.store(0), active_passes_.store(in_pass ? 1 : 0), stop_.store(false);
    size_.store(1);
  }

  int size() const { return size_.load(std::memory_order_acquire); }

  void resize(int threads) {
    std::lock_guard<std::mutex> job(job_mutex_);
#ifdef ORDO_OPENMP
    size_.store(std::max(threads, 1), std::memory_order_release);
    return;
#endif
    stop_helpers();
    alone_until_ = Clock::time_point();
    alone_factor_ = 1;
    cpu_.reset(new std::atomic<int>[size_t(std::max(threads, 1))]);
    for (int i = 0; i < std::max(threads, 1); ++i) cpu_[i].store(-1, std::memory_order_relaxed);
    for (int i = 1; i < threads; ++i) {
      try {
        helpers_.emplace_back([this, i, seen = JobWord::generation(word_.load())] { helper(i, seen); });
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

  // A pass begins or ends (PassThreads). While any pass runs, idle helpers spin for the next job
  // instead of sleeping; the first pass to begin wakes them, so they are awake by its first job.
  void pass_begins() {
    active_passes_.fetch_add(1, std::memory_order_seq_cst);
    pass_epoch_.fetch_add(1, std::memory_order_seq_cst);
    wake_sleepers();
  }
  void pass_ends() {
    active_passes_.fetch_sub(1, std::memory_order_seq_cst);
  }

  void run(int n_tasks, const std::function<void(int, int)>& body) {
    if (size() == 1 || n_tasks <= 1) {
      for (int i = 0; i < n_tasks; ++i) body(i, 0);
      return;
    }
#ifdef ORDO_OPENMP  // the comparison build (cmake -DORDO_OPENMP=ON): libgomp's team does the same tasks
    std::lock_guard<std::mutex> job(job_mutex_);
#pragma omp parallel for schedule(dynamic, 1) num_threads(size())
    for (int i = 0; i < n_tasks; ++i) body(i, omp_get_thread_num());
    return;
#endif
    for (int first = 0; first < n_tasks; first += JobWord::kMaxTasks) {  // never more than a few hundred
      const int n = std::min(JobWord::kMaxTasks, n_tasks - first);
      if (first == 0)
        run_job(n, body);
      else
        run_job(n, [&](int i, int thread) { body(first + i, thread); });
    }
  }

 private:
  void run_job(int n_tasks, const std::function<void(int, int)>& body) {
    std::lock_guard<std::mutex> job(job_mutex_);
    const Clock::time_point start = Clock::now();
    // Resized to one thread while this caller waited for the job lock, or alone for a while after a
    // job that a helper made slower than one thread (below; not while a test holds the helpers back).
    if (helpers_.empty() || (start < alone_until_ && !helper_hook.load(std::memory_order_relaxed))) {
      for (int i = 0; i < n_tasks; ++i) body(i, 0);
      return;
    }
    body_ = &body;
    done_.store(0, std::memory_order_relaxed);
    caller_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
    const uint64_t generation =
        (JobWord::generation(word_.load(std::memory_order_relaxed)) + 1) & JobWord::kGenerations;
    word_.store(JobWord::make(generation, n_tasks, 0), std::memory_order_seq_cst);
    wake_sleepers();
    // The caller works too, and then waits only for tasks a helper has taken and not finished: a
    // helper that is asleep or off the CPU when the job comes holds nothing up, its share is done here.
    const int mine = work(0, generation);
    if (done_.load(std::memory_order_acquire) == n_tasks) {
      if (mine < n_tasks) alone_factor_ = 1;  // a helper took part and held nothing up
      return;
    }
    // Waiting for a helper on another core: spin, it finishes within microseconds. On this core (the
    // scheduler put both threads on one), or after a long wait (the machine is oversubscribed), give
    // the core away, or the helper cannot finish.
    const Clock::time_point own = Clock::now();
    bool share = false;
    for (int spins = 0; done_.load(std::memory_order_acquire) < n_tasks; ++spins) {
      if (spins % 64 == 63) share = helper_on_cpu(caller_cpu_.load(std::memory_order_relaxed));
      if (spins < 4096 && !share)
        cpu_relax();
      else
        std::this_thread::yield();
    }
    // A helper that took a task and then lost its core (another process's turn on it, a kernel
    // thread's) holds the job up by a time slice, milliseconds, where the job itself takes
    // microseconds. When the job took longer than the caller alone would have (its own tasks' pace
    // times all the tasks), the caller works alone for as long as the wait, then tries again; each
    // time in a row that it is held up again, twice as long (at most kMaxAlone). A single stall (a
    // kernel thread's 1–4 ms on a quiet host) costs a few jobs alone; a host busy with other work
    // keeps the caller alone most of the time, as one thread would be.
    const Clock::time_point end = Clock::now();
    if (mine == 0) return;
    const Clock::duration alone = (own - start) * n_tasks / mine, waited = end - own;
    if (end - start > alone + kSlack) {
      alone_until_ = end + std::min(waited * alone_factor_, kMaxAlone);
      alone_factor_ = std::min(alone_factor_ * 2, 1 << 10);
    } else {
      alone_factor_ = 1;
    }
  }

  bool helper_on_cpu(int cpu) const {
    for (size_t i = 1; i <= helpers_.size(); ++i)
      if (cpu_[i].load(std::memory_order_relaxed) == cpu) return true;
    return false;
  }

  void wake_sleepers() {
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
    { std::lock_guard<std::mutex> lock(mutex_); }  // a helper between its check and its wait is now waiting
    wake_.notify_all();
  }

  void stop_helpers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true, std::memory_order_seq_cst);
    }
    wake_.notify_all();
    for (std::thread& t : helpers_) t.join();
    helpers_.clear();
    stop_.store(false, std::memory_order_relaxed);
  }

  // Takes tasks of job `generation` until none is left; returns how many it ran.
  int work(int thread, uint64_t generation) {
    uint64_t w = word_.load(std::memory_order_acquire);
    for (int ran = 0;;) {
      if (JobWord::generation(w) != generation || JobWord::next(w) >= JobWord::tasks(w)) return ran;
      if (!word_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      if (thread > 0) cpu_[thread].store(sched_getcpu(), std::memory_order_relaxed);
      (*body_)(JobWord::next(w), thread);
      done_.fetch_add(1, std::memory_order_release);
      ++ran;
      w = word_.load(std::memory_order_acquire);
    }
  }

  // `seen`: the last job when the helper was made (resize holds the job lock, so none was running).
  // Read by the thread itself, a job handed out before it first ran would be taken for an old one.
  void helper(int thread, uint64_t seen) {
    std::chrono::steady_clock::time_point next_step_off;  // when it may look at the cores again
    CpuTimes cpu_times;                                   // what it saw then
    for (;;) {
      // Between jobs of a pass, spin (a pass hands out a job every few to few hundred µs, and waking
      // a sleeping thread costs tens of µs on a virtual machine); with no pass running, or after
      // kSpin without a job, sleep.
      constexpr auto kSpin = std::chrono::milliseconds(2);
      auto until = std::chrono::steady_clock::now() + kSpin;
      for (int spins = 0;; ++spins) {
        if (stop_.load(std::memory_order_acquire)) return;
        if (JobWord::generation(word_.load(std::memory_order_acquire)) != seen) break;
        cpu_relax();
        if (spins % 64 != 63) continue;
        // Spinning on the caller's core would take the core from the thread that hands out the work.
        if (active_passes_.load(std::memory_order_acquire) > 0 && std::chrono::steady_clock::now() < until) {
          const int caller = caller_cpu_.load(std::memory_order_relaxed);
          if (sched_getcpu() != caller || step_off(caller, cpu_times, next_step_off)) continue;
        }
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        const uint64_t epoch = pass_epoch_.load(std::memory_order_seq_cst);
        wake_.wait(lock, [&] {  // a job, a new pass, or stop
          return stop_.load(std::memory_order_seq_cst) ||
                 JobWord::generation(word_.load(std::memory_order_seq_cst)) != seen ||
                 pass_epoch_.load(std::memory_order_seq_cst) != epoch;
        });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        until = std::chrono::steady_clock::now() + kSpin;
      }
      seen = JobWord::generation(word_.load(std::memory_order_acquire));
      if (auto* hook = helper_hook.load(std::memory_order_acquire)) hook(thread);
      work(thread, seen);
    }
  }

  // A helper on the caller's core during a pass was put there by the kernel at a wake-up, and as it
  // sleeps at once there, it is never waiting long enough to be moved. When the other cores are
  // busy that is right (they have no room for it). But the kernel skips its search for an idle core
  // at a wake-up when the cores have been busy in the last tens of milliseconds (as they are right
  // after the previous process), so a helper can stay on the caller's core while another is idle, and
  // the process runs at the speed of one thread (traced on a quiet host: 4 of 8 processes). So when
  // another core of its set was idle at least half the time since the helper last looked (/proc/stat,
  // 10–200 ms ago), the helper steps off: its CPU set without the caller's core, which moves it at
  // once, then its own set again, so the kernel is as free as before (a set the user narrowed stays
  // as it was). Looked at most every 10 ms. Returns whether the helper is now on another core.
  struct CpuTimes {
    std::vector<long long> idle, total;  // [cpu]: jiffies
    std::chrono::steady_clock::time_point at;
  };
  static bool step_off(int caller, CpuTimes& last, std::chrono::steady_clock::time_point& next) {
    const Clock::time_point now = Clock::now();
    if (caller < 0 || now < next) return false;
    next = now + std::chrono::milliseconds(10);
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
    CpuTimes times;
    times.at = now;
    if (!read_cpu_times(times)) return false;
    const CpuTimes before = std::move(last);
    last = std::move(times);
    if (before.total.empty() || now - before.at > std::chrono::milliseconds(200)) return false;  // look again
    cpu_set_t own, off;
    if (sched_getaffinity(0, sizeof own, &own) != 0 || CPU_COUNT(&own) < 2 || !CPU_ISSET(caller, &own)) return false;
    bool idle_core = false;
    for (size_t c = 0; c < last.total.size() && c < before.total.size() && c < CPU_SETSIZE; ++c) {
      const long long total = last.total[c] - before.total[c], idle = last.idle[c] - before.idle[c];
      if (int(c) != caller && CPU_ISSET(int(c), &own) && total > 0 && 2 * idle >= total) idle_core = true;
    }
    if (!idle_core) return false;  // the other cores are busy: beside the caller is the better place
    off = own;
    CPU_CLR(caller, &off);
    const bool moved = sched_setaffinity(0, sizeof off, &off) == 0;
    sched_setaffinity(0, sizeof own, &own);
    return moved && sched_getcpu() != caller;
#else  // no CPU sets (the WebAssembly build, whose pool has no helpers)
    (void)last;
    return false;
#endif
  }

  // Each CPU's idle (idle + iowait) and total jiffies from /proc/stat's "cpuN" lines; false if unreadable.
  static bool read_cpu_times(CpuTimes& times) {
    const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    std::string text(1 << 16, '\0');
    const ssize_t n = ::read(fd, &text[0], text.size() - 1);
    ::close(fd);
    if (n <= 0) return false;
    text.resize(size_t(n));
    size_t at = text.find('\n');  // past the machine's "cpu " line
    while (at != std::string::npos && text.compare(at + 1, 3, "cpu") == 0) {
      int cpu = -1;
      long long v[8] = {};
      if (std::sscanf(text.c_str() + at + 1, "cpu%d %lld %lld %lld %lld %lld %lld %lld %lld", &cpu, &v[0], &v[1], &v[2],
                      &v[3], &v[4], &v[5], &v[6], &v[7]) != 9 ||
          cpu < 0 || cpu > 4096)
        return false;
      if (size_t(cpu) >= times.total.size()) times.total.resize(size_t(cpu) + 1), times.idle.resize(size_t(cpu) + 1);
      times.idle[size_t(cpu)] = v[3] + v[4];
      times.total[size_t(cpu)] = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
      at = text.find('\n', at + 1);
    }
    return !times.total.empty();
  }

  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kSlack = std::chrono::microseconds(20);      // a wake-up, a cache miss
  static constexpr Clock::duration kMaxAlone = std::chrono::milliseconds(100);  // then try again

  std::vector<std::thread> helpers_;
  Clock::time_point alone_until_;  // the caller runs jobs alone until then (job lock)
  int alone_factor_ = 1;           // times the wait it runs alone at the next hold-up (job lock)
  std::mutex job_mutex_;           // one job at a time
  std::mutex mutex_;               // guards sleeping on wake_
  std::condition_variable wake_;
  std::atomic<uint64_t> word_{0};
  std::atomic<int> done_{0};
  std::atomic<int> sleepers_{0}, active_passes_{0};
  std::atomic<uint64_t> pass_epoch_{0};      // passes begun: a sleeping helper wakes for each
  std::atomic<int> caller_cpu_{-1};          // the core of the thread running the current job
  std::unique_ptr<std::atomic<int>[]> cpu_;  // [thread]: the core each helper last took a task on
  std::atomic<bool> stop_{false};
  std::atomic<int> size_{1};  // helpers + 1, readable without the job lock
  const std::function<void(int, int)>* body_ = nullptr;
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

// pthread_atfork's child handler: the gate and the pool as they are in a process of one thread
// (the one that forked, inside a pass or not).
void reset_after_fork() {
  Gate& g = gate();
  new (&g.mutex) std::mutex;
  new (&g.changed) std::condition_variable;
  g.passes = pass_depth > 0 ? 1 : 0;
  g.waiting_writers = 0;
  g.writing = false;
  pool().after_fork_in_child(pass_depth > 0);
}

}  // namespace

PassThreads::PassThreads() {
  if (pass_depth++ == 0) {
    Gate& g = gate();
    std::unique_lock<std::mutex> lock(g.mutex);
    g.changed.wait(lock, [&] { return !g.writing && g.waiting_writers == 0; });
    ++g.passes;
    pool().pass_begins();
  }
  threads_ = pool().size();
}

PassThreads::~PassThreads() {
  if (--pass_depth == 0) {
    Gate& g = gate();
    std::lock_guard<std::mutex> lock(g.mutex);
    pool().pass_ends();
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

int split_tasks(double flops, int units, int threads) {
  if (threads <= 1 || units <= 1 || flops < kMinSplitFlops) return 1;
  return std::min(units, threads * kRunsPerThread);
}

void set_helper_hook(void (*hook)(int)) {
  helper_hook.store(hook, std::memory_order_release);
}

void parallel_for(int n_tasks, double flops, const std::function<void(int, int)>& body) {
  if (flops < kMinSplitFlops)
    for (int i = 0; i < n_tasks; ++i) body(i, 0);
  else
    pool().run(n_tasks, body);
}

}  // namespace ordo
