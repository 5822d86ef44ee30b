// ordo: the engine's threads, process-wide. Public: <ordo/threads.h>.
#pragma once

namespace ordo {

// Threads for the matrix work, the caller included (OpenBLAS runs single-threaded inside each).
// 0: one per core. Process-wide. Safe to call while other threads encode: it waits until the
// passes running then have ended (a pass keeps the count it started with), and passes that start
// meanwhile wait for the new count. Not from inside an observe callback (std::logic_error).
void set_num_threads(int n);
int num_threads();

}  // namespace ordo
