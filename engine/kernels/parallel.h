// ordo: the engine's worker threads. The caller and (threads − 1) helpers share each job; the
// helpers wait between jobs (a short spin, then asleep), so a forward pass that hands out dozens
// of jobs pays no thread start-up after the first.
#pragma once

#include <functional>

namespace ordo {

// Threads the engine's kernels use (the caller included). n ≤ 0 picks the number of cores.
void set_kernel_threads(int n);
int kernel_threads();

// Runs body(task, thread) for every task in [0, n_tasks), each exactly once, spread over the
// threads (thread in [0, kernel_threads()) names the one running it: per-thread scratch).
// Returns when all are done. Jobs do not nest: a body must not call parallel_for.
void parallel_for(int n_tasks, const std::function<void(int task, int thread)>& body);

}  // namespace ordo
