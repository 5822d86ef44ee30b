// Before any shared library is initialized: a junk thread count (OMP_NUM_THREADS=abc) is ordo's one
// line and exit 2, not libgomp's warning followed by a run on a number the user did not mean
// (<ordo/ordo.h>, bad_thread_variable). The dynamic loader runs an executable's preinit functions
// first, with main's arguments.
#include <unistd.h>

#include <cstring>

#include "ordo/ordo.h"

namespace {

void check_thread_variables(int, char**, char** envp) {
  const char* bad = ordo::bad_thread_variable(envp);
  if (!bad) return;
  char line[256];
  ordo::thread_variable_message(bad, line, sizeof line - 1);
  const size_t n = std::strlen(line);
  line[n] = '\n';
  [[maybe_unused]] const ssize_t written = ::write(2, line, n + 1);
  ::_exit(2);
}

}  // namespace

__attribute__((section(".preinit_array"), used)) void (*const ordo_preinit)(int, char**,
                                                                            char**) = check_thread_variables;
