// ordo: the engine's worker threads. The caller and (threads − 1) helpers share each job; the
// helpers wait between jobs (a short spin, then asleep), so a forward pass that hands out dozens
// of jobs pays no thread start-up after the first.
//
// The caller never waits for a helper that has not come (it takes the tasks itself), only for tasks
// a helper has taken. A helper that takes a task and then loses its core to another process holds
// the job up by a time slice (milliseconds, where a job at 1 × 8 takes 0.1–0.3 ms): after a job that
// took longer than the caller alone would have, the caller runs the jobs alone for as long as the
// wait, then shares them again; held up again at once, twice as long each time (at most 100 ms). On a
// quiet host that is rare (a kernel thread's turn on the helper's core); on a busy one the caller then
// works alone most of the time, as one thread would.
//
// Several threads may run forward passes at once: their jobs take turns on the one set of helpers
// (one job at a time), so each job still sees every thread index it was promised.
#pragma once

#include <functional>
#include <stdexcept>

namespace ordo {

// The system refused to start a thread (a limit on processes, ulimit -u): says how many of how
// many started and what to pass instead. The engine is left with one thread, and usable.
struct ThreadStartError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Threads the engine's kernels use (the caller included). n ≤ 0 picks the number of cores.
// Waits until no pass holds a PassThreads, then changes the count; passes that start meanwhile
// wait for the new count. Throws ThreadStartError when the threads cannot be started (the
// count is then 1), and std::logic_error when called from inside a pass on the same
// thread (an observe callback), which would otherwise wait for itself.
void set_kernel_threads(int n);
int kernel_threads();

// Held by a forward pass from its start to its end: the thread count cannot change under it, so
// scratch sized by threads() at the start covers every thread index parallel_for hands out.
// Passes hold it at the same time as each other; nested on one thread, the inner one is free.
class PassThreads {
 public:
  PassThreads();
  ~PassThreads();
  PassThreads(const PassThreads&) = delete;
  PassThreads& operator=(const PassThreads&) = delete;
  int threads() const { return threads_; }

 private:
  int threads_ = 1;
};

// Runs body(task, thread) for every task in [0, n_tasks), each exactly once, spread over the
// threads (thread in [0, kernel_threads()) names the one running it: per-thread scratch).
// Returns when all are done. Jobs do not nest: a body must not call parallel_for.
void parallel_for(int n_tasks, const std::function<void(int task, int thread)>& body);

// The same for a job whose whole work is about `flops` floating-point operations: below
// kMinSplitFlops it runs on the calling thread alone. Handing a job to an awake helper costs about
// a microsecond; `bench_kernels --only split` measured the break-even at 1-2 µs of work, which our
// vectorised kernels do in ~2·10^5 FLOPs (the 8 heads of a sequence of 8 tokens are 1.3·10^5).
constexpr double kMinSplitFlops = 2e5;
void parallel_for(int n_tasks, double flops, const std::function<void(int task, int thread)>& body);

// The one place a job's split is decided: how many tasks to cut a job of about `flops` operations
// into, over `threads` threads, when it has `units` pieces that cannot be cut further. One (the
// caller alone) below kMinSplitFlops or with one thread; otherwise kRunsPerThread runs per thread
// (at most `units`), which parallel_for hands out as threads come for them. A helper that comes
// late, or runs slowly because another process shares its core, then holds the job up by one run,
// not by half of it: the caller takes the runs the helper has not come for. With one run per
// thread, two threads at 1 × 8 ran up to 2.0 times as long in one fresh process as in another,
// and some processes were slower than one thread (docs/performance.md).
constexpr int kRunsPerThread = 4;
int split_tasks(double flops, int units, int threads);

// For the tests: called by each helper when it sees a new job, before it takes a task (nullptr:
// nothing). A test holds a helper back with it to check that the job is still done, each task once.
void set_helper_hook(void (*hook)(int thread));

}  // namespace ordo
